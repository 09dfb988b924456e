import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// An answer's head reads the same whether the transport handed over its header lines (``FMCurlTransport``)
/// or an `HTTPURLResponse` (any other transport).
@Suite("Answer head: header lines and HTTPURLResponse read alike")
struct AnswerHeadTests {
    static let fields = ["Content-Type": "application/json", "Content-Length": "42", "X-FM-Data-Access-Token": "abc"]

    @Test func bothSourcesAnswerTheSameHeadersWhateverTheCase() throws {
        let url = try #require(URL(string: "https://fms.example/fmi/data/vLatest"))
        let response = try #require(HTTPURLResponse(url: url, statusCode: 401, httpVersion: "HTTP/1.1", headerFields: Self.fields))
        for head in [AnswerHead(status: 401, fields: Self.fields), AnswerHead(response)] {
            #expect(head.status == 401)
            #expect(head.header("content-type") == "application/json")
            #expect(head.header("X-FM-DATA-ACCESS-TOKEN") == "abc")
            #expect(head.header("Location") == nil)
            #expect(head.expectedContentLength == 42)
            #expect(head.headers.count == 3)
        }
    }

    @Test func aDeclaredLengthIsReadOrMinusOne() {
        let cases: [([String: String], Int64)] = [([:], -1), (["content-length": " 7 "], 7), (["Content-Length": "\t7\t"], 7),
                                                  (["Content-Length": "7", "Content-Encoding": " gzip\t"], -1),
                                                  (["Content-Length": "7", "Content-Encoding": " identity "], 7), (["Content-Length": "-3"], -1),
                                                  (["Content-Length": "lots"], -1), (["Content-Length": "99999999999999999999999"], -1)]
        for (fields, expected) in cases {
            #expect(AnswerHead(status: 200, fields: fields).expectedContentLength == expected, "\(fields)")
        }
    }

    /// Spaces and tabs around a value are not part of it, whichever transport handed the head over.
    @Test func aValueIsReadWithoutTheBlanksAroundIt() throws {
        let fields = ["X-Note": " \tsome words\t ", "Location": "/x"]
        let url = try #require(URL(string: "https://fms.example/fmi/data/vLatest"))
        let response = try #require(HTTPURLResponse(url: url, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: fields))
        for head in [AnswerHead(status: 302, fields: fields), AnswerHead(response)] {
            #expect(head.header("x-note") == "some words")
            #expect(head.header("Location") == "/x")
        }
    }

    @Test func anEndpointResponseReadsItsHeadersThroughItsHead() {
        let response = Endpoint<String>.Response(status: 200, headers: ["Set-Cookie": "a=b"], body: Data())
        let other = Endpoint<Int>.Response(response)
        #expect(other.header("set-cookie") == "a=b")
        #expect(other.status == 200 && other.head.status == 200)
    }
}

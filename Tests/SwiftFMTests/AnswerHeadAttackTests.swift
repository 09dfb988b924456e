import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The head's declared length against what the transport hands over: both transports decode
/// `Content-Encoding` (gzip, deflate), so a declared `Content-Length` counts bytes SwiftFM never sees.
@Suite("Answer head: a declared length and a decoded body")
struct AnswerHeadAttackTests {

    @Test func anEncodedBodysLengthIsUnknownWhicheverTheSource() throws {
        let url = try #require(URL(string: "https://fms.example/Streaming_SSL/x.bin"))
        for (fields, expected) in [(["Content-Length": "40", "Content-Encoding": "gzip"], Int64(-1)),
                                   (["content-length": "40", "content-encoding": "Deflate"], -1),
                                   (["Content-Length": "40", "Content-Encoding": "identity"], 40),
                                   (["Content-Length": "40", "Content-Encoding": ""], 40),
                                   (["Content-Length": "40"], 40)] {
            let response = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields))
            #expect(AnswerHead(status: 200, fields: fields).expectedContentLength == expected, "\(fields)")
            #expect(AnswerHead(response).expectedContentLength == expected, "\(fields) (HTTPURLResponse)")
        }
    }

    /// A container served deflated (FileMaker's nginx compresses what it may): the progress of the download
    /// to a file never announces a total the bytes written then pass (it announced the compressed length,
    /// 1.5 KB, while 5.6 KB were written: 380 %).
    @Test(arguments: Wire.allCases)
    func anEncodedContainersProgressNeverPassesItsTotal(_ wire: Wire) async throws {
        let deflated = try #require(Data(base64Encoded: CurlTransportTests.zlibbed, options: .ignoreUnknownCharacters))
        let decoded = CurlTransportTests.records.utf8.count
        #expect(deflated.count < decoded)
        let server = HostileServer { _, _ in
            .endless(head: HostileServer.head("200 OK", ["Content-Encoding": "deflate", "Content-Length": "\(deflated.count)",
                                                         "Content-Type": "application/octet-stream"]),
                     chunk: deflated, limit: deflated.count)
        }
        defer { server.stop() }
        let configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 60)
        let api = DataAPI(configuration: configuration, transport: wire.transport(idleTimeout: 60))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("encoded-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let reports = Locked<[(written: Int64, expected: Int64)]>([])
        let saved = try await api.downloadContainer(url: try #require(URL(string: server.url + "/Streaming_SSL/MainDB/a.bin")), to: file) { written, expected in
            reports.withLock { $0.append((written, expected)) }
        }
        #expect(try Data(contentsOf: saved).count == decoded)
        let seen = reports.value
        #expect(seen.last?.written == Int64(decoded))
        for report in seen {
            #expect(report.expected == -1 || report.expected == Int64(decoded), "progress \(report.written) of \(report.expected)")
        }
    }
}

extension AnswerHeadAttackTests {
    /// Names match whatever their case (ASCII letters folded), never by length or prefix alone.
    @Test func headerNamesMatchCaseInsensitivelyAndOnlyWhole() {
        let fields = ["content-TYPE": "a", "X-FM-Data-Access-Token": "t", "Set-Cookie": "c", "Retry-After-": "no", "@": "at"]
        #expect(HTTPHeader.value("Content-Type", in: fields) == "a")
        #expect(HTTPHeader.value("x-fm-data-access-token", in: fields) == "t")
        #expect(HTTPHeader.value("SET-COOKIE", in: fields) == "c")
        #expect(HTTPHeader.value("Retry-After", in: fields) == nil)
        #expect(HTTPHeader.value("Set-Cookiz", in: fields) == nil)
        #expect(HTTPHeader.value("`", in: fields) == nil)   // 0x60 is not @ (0x40) folded
        #expect(HTTPHeader.value("@", in: fields) == "at")
        #expect(HTTPHeader.value("", in: fields) == nil)
    }
}

extension AnswerHeadAttackTests {
    /// A login whose token comes only in the header, its name in lower case (as HTTP/2 sends every name), read
    /// through the head each transport hands over: the next request carries it.
    @Test(arguments: Wire.allCases)
    func aLoginTokenOnlyInALowerCaseHeaderIsUsed(_ wire: Wire) async throws {
        let body = #"{"response":{},"messages":[{"code":"0","message":"OK"}]}"#
        let server = HostileServer { head, _ in
            if HostileServer.isLogin(head) {
                return .answer(HostileServer.json(body, headers: ["x-fm-data-access-token": "from-the-header"]))
            }
            let authorised = head.lowercased().components(separatedBy: "\r\n").contains("authorization: bearer from-the-header")
            return .answer(authorised ? HostileServer.json(Bodies.value("ok")) : HostileServer.json(Bodies.expired, status: "401 Unauthorized"))
        }
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 60)
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: wire.transport(idleTimeout: 60), tokenStore: FMMemoryTokenStore())
        let value = try? await api.bridge(TestEndpoints.records())
        #expect(value == "ok", "\(server.heads)")
        #expect(server.count("POST ") == 1)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// The incremental parser on its own, without sockets.
@Suite("HTTP request parser")
struct HTTPRequestParserTests {
    private static let limits = HTTPParserLimits(maxHeaderBytes: 64 * 1024, maxBodyBytes: 1024 * 1024)

    /// A readable summary of an event, for comparisons.
    private static func describe(_ event: HTTPRequestParser.Event) -> String {
        switch event {
        case let .request(request, keepAlive):
            let headers = request.headers.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
            return "\(request.method) \(request.target) [\(headers)] body=\(String(decoding: request.body, as: UTF8.self)) keepAlive=\(keepAlive)"
        case .sendContinue:
            return "continue"
        case let .failure(status, _):
            return "failure \(status)"
        }
    }

    /// Feeds `pieces` one after the other, collecting every event.
    private static func run(_ pieces: [[UInt8]], limits: HTTPParserLimits = limits) -> [String] {
        var parser = HTTPRequestParser(limits: limits)
        var events: [String] = []
        for piece in pieces {
            parser.append(piece)
            while let event = parser.next() { events.append(describe(event)) }
        }
        return events
    }

    private static let stream = Array((
        "\r\nGET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"
        + "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
        + "POST /c HTTP/1.1\nTransfer-Encoding: chunked\n\n3;x=y\r\nhel\r\n2\nlo\n0\r\nT: v\r\n\r\n"
        + "GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        + "DELETE /e HTTP/1.1\r\nConnection: close\r\n\r\n"
    ).utf8)

    @Test("Pipelined requests parse the same whatever way the bytes are split")
    func everySplitPoint() {
        let whole = Self.run([Self.stream])
        #expect(whole == [
            "GET /a?x=1 [Host=h] body= keepAlive=true",
            "POST /b [Content-Length=3] body=abc keepAlive=true",
            "POST /c [Transfer-Encoding=chunked] body=hello keepAlive=true",
            "GET /d [Connection=keep-alive] body= keepAlive=true",
            "DELETE /e [Connection=close] body= keepAlive=false",
        ])
        for split in 1..<Self.stream.count {
            let events = Self.run([Array(Self.stream[..<split]), Array(Self.stream[split...])])
            #expect(events == whole, "split at \(split)")
        }
        let oneByOne = Self.run(Self.stream.map { [$0] })
        #expect(oneByOne == whole)
    }

    @Test("100-continue is requested only when no body bytes arrived yet")
    func expectContinue() {
        let head = Array("PUT /u HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8)
        #expect(Self.run([head, Array("ok".utf8)]) == [
            "continue",
            "PUT /u [Expect=100-continue,Content-Length=2] body=ok keepAlive=true",
        ])
        #expect(Self.run([head + Array("ok".utf8)]) == ["PUT /u [Expect=100-continue,Content-Length=2] body=ok keepAlive=true"])
        let chunkedHead = Array("PUT /u HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        #expect(Self.run([chunkedHead, Array("0\r\n\r\n".utf8)]) == [
            "continue",
            "PUT /u [Expect=100-continue,Transfer-Encoding=chunked] body= keepAlive=true",
        ])
    }

    @Test("After a failure the parser stays failed")
    func failedStaysFailed() {
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(Array("BAD\r\n\r\nGET / HTTP/1.1\r\n\r\n".utf8))
        guard case .failure(400, _)? = parser.next() else {
            Issue.record("expected a 400")
            return
        }
        #expect(parser.next().map(Self.describe) == nil)
        parser.append(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        #expect(parser.next().map(Self.describe) == nil)
    }

    @Test("Content-Length and Transfer-Encoding together: chunked wins and the connection closes")
    func lengthAndChunked() {
        let events = Self.run([Array("POST / HTTP/1.1\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n".utf8)])
        #expect(events == ["POST / [Content-Length=99,Transfer-Encoding=chunked] body=x keepAlive=false"])
    }

    @Test("Limits: a huge chunk size, a long chunk line, a body over the limit")
    func limits() {
        let small = HTTPParserLimits(maxHeaderBytes: 1024, maxBodyBytes: 10)
        #expect(Self.run([Array("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n".utf8)], limits: small)
            == ["failure 400"])
        #expect(Self.run([Array("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nB\r\n".utf8)], limits: small)
            == ["failure 413"])
        #expect(Self.run([Array("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;".utf8) + Array(repeating: 0x61, count: 5000)],
                         limits: small) == ["failure 400"])
        #expect(Self.run([Array("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n".utf8)], limits: small) == ["failure 413"])
        #expect(Self.run([Array("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n".utf8)], limits: small)
            == ["failure 400"])
    }
}

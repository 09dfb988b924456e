#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// A plain-HTTP request sent to the port that speaks TLS while every connection is busy (``HTTPServer/maxConnections``
/// reached) gets the answer it gets under the cap: `400 Bad Request` in plain HTTP, saying that the port speaks HTTPS,
/// with `Connection: close`, then the close. Not the `503` a TLS client gets there: retrying as told would meet the same
/// mistake, and the scheme is what the user has to change. The answer runs where refused TLS connections are answered
/// (``TLSRefusals``: one thread for all, at most its capacity at once, each within its bound), never on the accepting
/// thread. Before, the refusal began a TLS handshake on the plain bytes, which failed, and the connection was closed
/// without a word. Needs `python3` (its `ssl` module is the busy TLS client).
@Suite("Plain HTTP over the cap on the TLS port is answered 400", .serialized,
       .enabled(if: tlsClientPython != nil, "python3 is missing"))
struct PlainHTTPOverTheCapOnTheTLSPortIsAnswered400Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    /// Holds every request until released.
    final class Held: HTTPHandler, @unchecked Sendable {
        let gate = DispatchSemaphore(value: 0)
        func handle(_ request: HTTPRequest) -> HTTPResponse {
            _ = gate.wait(timeout: .now() + 300)
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Data("ok\n".utf8))
        }
    }

    /// A raw socket connected to `port` on the loopback, reading with a generous bound.
    static func connected(to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 { _ = close(fd) }
        try #require(connected == 0)
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Everything the server sends until it closes (or the read bound passes).
    static func readToEnd(_ fd: Int32) -> String {
        var answer = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Failed before: the plain request over the cap read nothing, the connection closed at once.
    @Test func aPlainRequestOverTheCapReads400SayingHTTPS() throws {
        let handler = Held()
        let server = HTTPServer(handler: handler, maxConnections: 1, headerTimeout: 5,
                                tls: EmulatorTLS(certificateFile: Self.fixtures.appendingPathComponent("server.pem"),
                                                 keyFile: Self.fixtures.appendingPathComponent("server-key.pem")))
        let port = try server.start()
        let busy = try RawTLSClient(port: port, script: RawTLSClient.requestThenWait)
        defer {
            handler.gate.signal()
            busy.finish()
            server.stop()
        }
        try #require(busy.waitForLine() == "sent", "the busy TLS client failed")
        try #require(server.waitForConnections(timeout: 300) { $0 == [.busy] })

        for round in 0..<3 {
            let fd = try Self.connected(to: port)
            defer { _ = close(fd) }
            let request = Array("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            try #require(send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count)
            let text = Self.readToEnd(fd)
            #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "round \(round): \(text.debugDescription)")
            #expect(text.contains("Connection: close") && text.contains("https://"), "round \(round): \(text.debugDescription)")
        }
        #expect(server.refusedConnectionCount == 3)
        // The busy connection was left alone: the refusals took no room from it.
        #expect(server.openConnectionCount == 1)
    }
}
#endif

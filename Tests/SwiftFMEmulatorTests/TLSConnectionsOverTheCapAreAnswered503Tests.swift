#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// A TLS connection beyond ``HTTPServer/maxConnections``, with every connection busy, gets the answer a plain one gets:
/// `503 Service Unavailable` with `Retry-After` and `Connection: close`, after its handshake. The handshakes of refused
/// connections run on one thread of their own, never on the accepting thread, each within a bound: a client over the
/// cap that says nothing is closed all the same, and beyond the refusals under way at once a connection is closed
/// without an answer (the flood costs one thread). Before, a refused TLS connection was closed without an answer.
/// Needs `python3` (its `ssl` module is the TLS client).
@Suite("TLS connections over the cap are answered 503", .serialized,
       .enabled(if: tlsClientPython != nil, "python3 is missing"))
struct TLSConnectionsOverTheCapAreAnswered503Tests {
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

    func busyServer(_ handler: Held) throws -> (HTTPServer, UInt16, RawTLSClient) {
        let server = HTTPServer(handler: handler, maxConnections: 1, headerTimeout: 5,
                                tls: EmulatorTLS(certificateFile: Self.fixtures.appendingPathComponent("server.pem"),
                                                 keyFile: Self.fixtures.appendingPathComponent("server-key.pem")))
        let port = try server.start()
        let busy = try RawTLSClient(port: port, script: RawTLSClient.requestThenWait)
        try #require(busy.waitForLine() == "sent", "the busy TLS client failed")
        try #require(server.waitForConnections(timeout: 300) { $0 == [.busy] })
        return (server, port, busy)
    }

    @Test func aTLSClientOverTheCapReads503() throws {
        let handler = Held()
        let (server, port, busy) = try busyServer(handler)
        defer {
            handler.gate.signal()
            busy.finish()
            server.stop()
        }
        let refused = try RawTLSClient(port: port, script: RawTLSClient.statusLine)
        defer { refused.finish() }
        #expect(refused.waitForLine() == "HTTP/1.1 503 Service Unavailable")
        #expect(server.refusedConnectionCount == 1)
    }

    @Test func aSilentClientOverTheCapIsClosedWithinTheBound() throws {
        let handler = Held()
        let (server, port, busy) = try busyServer(handler)
        defer {
            handler.gate.signal()
            busy.finish()
            server.stop()
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { _ = close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        // Says nothing: its handshake never starts, and its refusal ends at its bound (the header timeout, 5 s).
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        #expect(n == 0 || (n < 0 && errno == ECONNRESET), "the refused connection was not closed: \(n), errno \(errno)")
        #expect(server.refusedConnectionCount == 1)
    }
}
#endif

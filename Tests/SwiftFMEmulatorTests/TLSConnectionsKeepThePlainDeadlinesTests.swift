#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// A TLS connection is held by the same deadlines as a plain one: a request has begun when its first byte reaches the
/// server, encrypted or not, so the header timeout (from that byte) closes a client that sends part of a TLS record
/// and goes silent, as it closes a plain client that sends part of a request head; the idle timeout, meant for a
/// keep-alive connection with nothing sent, does not let it stay longer. (Before, a TLS connection counted as idle
/// until a whole record had been decrypted.)
/// Needs `python3` (its `ssl` module, over memory buffers, makes the record the client sends only half of).
@Suite("TLS connections keep the plain deadlines", .serialized,
       .enabled(if: tlsClientPython != nil, "python3 is missing"))
struct TLSConnectionsKeepThePlainDeadlinesTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    static func tls() -> EmulatorTLS {
        EmulatorTLS(certificateFile: fixtures.appendingPathComponent("server.pem"),
                    keyFile: fixtures.appendingPathComponent("server-key.pem"))
    }

    struct OK: HTTPHandler {
        func handle(_ request: HTTPRequest) -> HTTPResponse {
            HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Data("ok\n".utf8))
        }
    }

    @Test func halfARecordThenSilenceIsClosedByTheHeaderTimeout() throws {
        let server = HTTPServer(handler: OK(), idleTimeout: 3600, headerTimeout: 1, tls: Self.tls())
        let port = try server.start()
        defer { server.stop() }
        let client = try RawTLSClient(port: port, script: RawTLSClient.halfARecord)
        defer { client.finish() }
        try #require(client.waitForLine() == "sent", "the TLS client failed")
        // The half record arrived: the request has begun, its head deadline runs, and the connection is closed by it
        // (the idle timeout is an hour).
        #expect(server.waitForConnections(timeout: 120) { $0.isEmpty }, "a half TLS record held its connection")
    }
}
#endif

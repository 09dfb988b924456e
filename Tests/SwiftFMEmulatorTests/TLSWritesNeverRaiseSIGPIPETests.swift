#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// A write on a TLS connection never raises `SIGPIPE`, as plain writes never do (`MSG_NOSIGNAL`): the server's contract
/// is that its socket writes do not signal, ignoring `SIGPIPE` process-wide being only a second line of defence (an
/// application embedding the emulator may install its own `SIGPIPE` handler, or restore the default, which kills).
/// OpenSSL writes with write(2), which signals on a connection whose sending side is shut down; here a stop shuts it
/// down while the server is writing a large answer to a client that reads nothing. A `SIGPIPE` handler counts the
/// signals: none may arrive.
/// Needs `python3` (its `ssl` module is the TLS client that stops reading).
@Suite("TLS writes never raise SIGPIPE", .serialized,
       .enabled(if: tlsClientPython != nil, "python3 is missing"))
struct TLSWritesNeverRaiseSIGPIPETests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    /// A TLS client that sends one request, says `sent`, then reads nothing until its standard input closes.
    static let client = """
    import socket, ssl, sys
    context = ssl.create_default_context(cafile=sys.argv[1])
    s = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2]))), server_hostname="127.0.0.1")
    s.sendall(b"GET /large HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    print("sent", flush=True)
    sys.stdin.read()
    """

    /// 64 MiB: more than the socket buffers of both ends hold, so the server is still writing when it stops.
    struct LargeAnswer: HTTPHandler {
        static let body = Data(count: 64 << 20)
        func handle(_ request: HTTPRequest) -> HTTPResponse {
            HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: Self.body)
        }
    }

    @Test func aStopWhileWritingToAClientThatReadsNothingRaisesNoSIGPIPE() throws {
        let server = HTTPServer(handler: LargeAnswer(), tls: EmulatorTLS(certificateFile: Self.fixtures.appendingPathComponent("server.pem"),
                                                                         keyFile: Self.fixtures.appendingPathComponent("server-key.pem")))
        let port = try server.start()
        defer { server.stop() }
        let child = try ChildProcess(URL(fileURLWithPath: try #require(tlsClientPython)),
                                     ["-c", Self.client, Self.fixtures.appendingPathComponent("ca.pem").path, "\(port)"],
                                     input: true, error: .inherit)
        defer {
            child.standardInput?.closeFile()
            child.waitUntilExit()
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            guard let more = child.standardOutput?.readAvailableRetryingInterrupts(), !more.isEmpty else { break }
            line.append(more)
        }
        try #require(String(decoding: line, as: UTF8.self).hasPrefix("sent"), "the TLS client failed")
        // The request is in: its connection is busy (handling, then writing the answer it cannot finish).
        #expect(server.waitForConnections(timeout: 300) { $0 == [.busy] })

        SIGPIPECounter.install()
        defer { SIGPIPECounter.uninstall() }
        server.stop()   // shuts the connection down under the write, and waits for its thread to end
        #expect(SIGPIPECounter.received.load(ordering: .relaxed) == 0, "a TLS write raised SIGPIPE")
    }
}

/// The `python3` that runs raw TLS clients in the emulator's tests, if there is one.
let tlsClientPython = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Counts the `SIGPIPE`s the process receives while installed. (The clients of other tests running meanwhile do not
/// raise it: libcurl ignores it around its own calls.)
enum SIGPIPECounter {
    static let received = Atomic<Int>(0)

    static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in SIGPIPECounter.received.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        _ = sigaction(SIGPIPE, &action, nil)
    }

    /// Back to ignored, as ``HTTPServer`` sets it.
    static func uninstall() {
        _ = signal(SIGPIPE, SIG_IGN)
    }
}
#endif

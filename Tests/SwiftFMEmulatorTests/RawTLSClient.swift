#if canImport(Glibc)
import Glibc
import Foundation
import Testing
import TestSupport

/// A raw TLS client in `python3` (the `ssl` module over memory buffers, so that it can send exactly the bytes it
/// chooses), told the CA and the port; it prints one line when it has done its part, then waits for its standard
/// input to close.
final class RawTLSClient {
    /// Common part: `connect()` makes the handshake over a raw socket and returns (socket, tls, outgoing buffer).
    static let prelude = """
    import socket, ssl, sys
    def connect():
        context = ssl.create_default_context(cafile=sys.argv[1])
        raw = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(outgoing.read())
                data = raw.recv(65536)
                if not data:
                    print("closed during the handshake", flush=True)
                    sys.exit(1)
                incoming.write(data)
        raw.sendall(outgoing.read())
        return raw, tls, outgoing

    """

    /// Sends the first half of the record carrying a request head, says `sent`, and goes silent.
    static let halfARecord = prelude + """
    raw, tls, outgoing = connect()
    tls.write(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    record = outgoing.read()
    raw.sendall(record[:len(record) // 2])
    print("sent", flush=True)
    sys.stdin.read()
    """

    /// Sends one request with the `ssl` module's socket wrapper and prints the status line of the answer, or
    /// `closed: REASON` when the connection ended first.
    static let statusLine = prelude + """
    try:
        context = ssl.create_default_context(cafile=sys.argv[1])
        s = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2]))), server_hostname="127.0.0.1")
        s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
        answer = b""
        while b"\\r\\n" not in answer:
            more = s.recv(4096)
            if not more:
                break
            answer += more
        print(answer.split(b"\\r\\n")[0].decode() if b"\\r\\n" in answer else "closed: end of stream", flush=True)
    except Exception as error:
        print("closed: %r" % error, flush=True)
    sys.stdin.read()
    """

    /// Sends one request, says `sent`, and reads nothing (the connection stays busy while the handler is).
    static let requestThenWait = prelude + """
    raw, tls, outgoing = connect()
    tls.write(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    raw.sendall(outgoing.read())
    print("sent", flush=True)
    sys.stdin.read()
    """

    let child: ChildProcess

    init(port: UInt16, script: String) throws {
        let ca = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls/ca.pem").path
        child = try ChildProcess(URL(fileURLWithPath: try #require(tlsClientPython)), ["-c", script, ca, "\(port)"],
                                 input: true, error: .inherit)
    }

    /// The client's next line (without its newline), or what it printed before it ended.
    func waitForLine() -> String {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            guard let more = child.standardOutput?.readAvailableRetryingInterrupts(), !more.isEmpty else { break }
            line.append(more)
        }
        return String(decoding: line.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// Closes its standard input and waits for it to end.
    func finish() {
        child.standardInput?.closeFile()
        child.waitUntilExit()
    }
}
#endif

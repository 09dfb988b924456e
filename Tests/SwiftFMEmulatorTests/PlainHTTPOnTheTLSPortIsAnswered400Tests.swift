#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// A plain-HTTP request sent to the port that speaks TLS (a harness that wrote `http://` for an emulator started with
/// `--tls-certificate`) is answered in plain HTTP, `400 Bad Request` with `Connection: close`, its text saying that
/// the port speaks HTTPS, and closed, as nginx answers plain HTTP on its HTTPS port: the client sees why, not a reset.
/// The first byte decides: a TLS connection begins with a handshake record (22), an HTTP request with a method's
/// letter. Before, the failed handshake ended in a reset without a word.
@Suite("Plain HTTP on the TLS port is answered 400")
struct PlainHTTPOnTheTLSPortIsAnswered400Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    struct OK: HTTPHandler {
        func handle(_ request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 200, body: Data("ok\n".utf8)) }
    }

    @Test func aPlainRequestReads400SayingHTTPS() throws {
        let server = HTTPServer(handler: OK(), tls: EmulatorTLS(certificateFile: Self.fixtures.appendingPathComponent("server.pem"),
                                                                keyFile: Self.fixtures.appendingPathComponent("server-key.pem")))
        let port = try server.start()
        defer { server.stop() }
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
        let request = Array("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        try #require(send(fd, request, request.count, 0) == request.count)
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(text.debugDescription)")
        #expect(text.contains("Connection: close") && text.contains("https://"), "\(text.debugDescription)")
    }
}
#endif

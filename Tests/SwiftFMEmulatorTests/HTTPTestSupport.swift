#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SwiftFMEmulator

/// What ``HTTPEchoHandler`` sends back, as JSON.
struct HTTPEcho: Decodable, Equatable {
    var method: String
    var target: String
    var headers: [[String]]
    var body: String // base64

    var bodyData: Data { Data(base64Encoded: body) ?? Data() }

    func header(_ name: String) -> String? {
        headers.first { $0.first?.lowercased() == name.lowercased() }?.last
    }
}

/// Echoes each request as JSON. Special targets:
/// `/delay/SECONDS` answers after a delay, `/closemid` announces 1000 bytes and closes after 500,
/// `/bytes/N` answers N bytes, `/status/N` answers with that status, `/close` asks to close.
struct HTTPEchoHandler: HTTPHandler {
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let path = request.rawPath
        if path == "/closemid" {
            return HTTPResponse(status: 200, body: Data(repeating: 0x41, count: 1000), delivery: .closeMidBody)
        }
        if path.hasPrefix("/bytes/"), let n = Int(path.dropFirst("/bytes/".count)) {
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")],
                                body: Data((0..<n).map { UInt8(truncatingIfNeeded: $0) }))
        }
        if path.hasPrefix("/status/"), let n = Int(path.dropFirst("/status/".count)) {
            return HTTPResponse(status: n, body: Data("status \(n)".utf8))
        }
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Self.echo(request))
        if path.hasPrefix("/delay/"), let seconds = Double(path.dropFirst("/delay/".count)) {
            response.delay = seconds
        }
        if path == "/close" {
            response.headers.append(("Connection", "close"))
        }
        return response
    }

    static func echo(_ request: HTTPRequest) -> Data {
        let object: [String: Any] = [
            "method": request.method,
            "target": request.target,
            "headers": request.headers.map { [$0.name, $0.value] },
            "body": request.body.base64EncodedString(),
        ]
        return (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
    }
}

/// A parsed response read from a raw socket.
struct HTTPRawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: Data

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    func echo() throws -> HTTPEcho {
        try JSONDecoder().decode(HTTPEcho.self, from: body)
    }
}

struct HTTPTestError: Error, CustomStringConvertible {
    var description: String
}

/// A blocking client socket for raw HTTP tests. Reads time out after 20 s so a bug cannot hang a test.
final class HTTPRawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, host: String = "127.0.0.1") throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw HTTPTestError(description: "socket failed") }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var addr = sockaddr_in()
        #if canImport(Darwin)
        addr.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close here: the object is whole, so `deinit` runs when this init throws and closes `fd` (closing it
        // twice could close another test's socket that got the number meanwhile).
        guard rc == 0 else { throw HTTPTestError(description: "connect failed: \(errno)") }
    }

    deinit {
        close(fd)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let n = bytes[offset...].withUnsafeBytes { rawSend(fd, $0.baseAddress, $0.count, flags) }
            guard n > 0 else { throw HTTPTestError(description: "send failed: \(errno)") }
            offset += n
        }
    }

    /// Why the last read got nothing: the peer closed, or the `errno` of the failed read (a timeout is EAGAIN).
    private(set) var lastReadEnd = "the peer closed the connection"

    /// Reads more bytes; returns false at end of stream (or error/timeout). A read interrupted by a signal
    /// is read again.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var n: Int
        repeat {
            n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        } while n < 0 && errno == EINTR
        if n < 0 { lastReadEnd = "read failed, errno \(errno)" }
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads one line ending in CRLF (without it).
    private func readLine() throws -> String {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[0..<i])
                if line.last == 0x0D { line.removeLast() }
                buffer.removeSubrange(0...i)
                return String(decoding: line, as: UTF8.self)
            }
            guard fill() else { throw HTTPTestError(description: "connection closed while reading a line (\(lastReadEnd))") }
        }
    }

    /// Reads one response (status line, headers, Content-Length body). `isHead`: no body follows.
    func readResponse(isHead: Bool = false) throws -> HTTPRawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw HTTPTestError(description: "bad status line: \(statusLine)")
        }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw HTTPTestError(description: "bad header: \(line)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = HTTPRawResponse(status: status, headers: headers, body: Data())
        if isHead || status < 200 || status == 204 || status == 304 { return response }
        let length = Int(response.header("Content-Length") ?? "0") ?? 0
        while buffer.count < length {
            guard fill() else {
                throw HTTPTestError(description: "short body: \(buffer.count) of \(length)")
            }
        }
        response.body = Data(buffer[0..<length])
        buffer.removeSubrange(0..<length)
        return response
    }

    /// Reads until the server closes; returns everything after what was already parsed.
    func readToEnd() -> [UInt8] {
        while fill() {}
        defer { buffer.removeAll() }
        return buffer
    }

    /// Whether the server closed the connection (end of stream, nothing more buffered).
    func isClosedByServer() -> Bool {
        buffer.isEmpty && !fill()
    }

    /// Whether bytes are ready to read right now (without waiting).
    func hasDataNow() -> Bool {
        if !buffer.isEmpty { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }
}

@inline(__always)
private func rawSend(_ fd: Int32, _ base: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    #if canImport(Glibc)
    return Glibc.send(fd, base, count, flags)
    #else
    return Darwin.send(fd, base, count, flags)
    #endif
}

/// Starts a server on a free loopback port for the duration of `body`.
func withHTTPServer<T>(handler: any HTTPHandler = HTTPEchoHandler(), maxHeaderBytes: Int = 64 * 1024,
                       maxBodyBytes: Int = 64 * 1024 * 1024,
                       _ body: (HTTPServer, UInt16) async throws -> T) async throws -> T {
    let server = HTTPServer(handler: handler, maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes)
    let port = try server.start()
    defer { server.stop() }
    return try await body(server, port)
}

/// An ephemeral URLSession that allows many connections per host and never waits forever.
func makeHTTPTestSession(maxConnections: Int = 8) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = maxConnections
    // Generous: a loaded 2-core machine only slows a request down (the hang bound is 300 s).
    configuration.timeoutIntervalForRequest = 300
    configuration.timeoutIntervalForResource = 600
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    return URLSession(configuration: configuration)
}

/// Starts a server on a free loopback port for the duration of `body` (synchronous tests).
func withHTTPServerSync<T>(handler: any HTTPHandler = HTTPEchoHandler(), maxHeaderBytes: Int = 64 * 1024,
                           maxBodyBytes: Int = 64 * 1024 * 1024,
                           _ body: (HTTPServer, UInt16) throws -> T) throws -> T {
    let server = HTTPServer(handler: handler, maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes)
    let port = try server.start()
    defer { server.stop() }
    return try body(server, port)
}

/// Runs `wait` on a thread of its own and resumes the caller with its result: an async test waits for a child
/// process or a reader thread without blocking a thread of the cooperative pool (two on a 2-core machine).
func onOwnThread<R: Sendable>(_ wait: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: wait()) }.start()
    }
}

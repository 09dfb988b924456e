import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A one-shot HTTP server on 127.0.0.1: accepts connections, reads each request head (and its body by
/// Content-Length), and answers with `respond(head)` — or holds the connection open when it returns nil.
final class LoopbackServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var _heads: [String] = []
    private var held: [Int32] = []
    private let respond: @Sendable (String) -> String?

    init(respond: @escaping @Sendable (String) -> String?) {
        self.respond = respond
        (fd, port) = bindLoopback()
        listen(fd, 16)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var heads: [String] { lock.withLock { _heads } }

    private var stopped = false
    /// The listening descriptor was closed (its number may be reused by then).
    private var listenerClosed = false

    func stop() {
        let clients = lock.withLock { () -> [Int32] in
            stopped = true
            return held
        }
        // Under the lock, as the accept thread's close: once closed, the listening descriptor's number may belong
        // to another test's socket in this process, and must not be shut down.
        lock.withLock { if !listenerClosed { shutdown(fd, Int32(SHUT_RDWR)) } }
        for client in clients { close(client) }
        // The listening descriptor is closed by the accept thread once it has left accept(), so its number
        // cannot be reused by another server while this thread might still call accept() on it.
    }

    private func acceptLoop() {
        defer {
            lock.withLock {
                listenerClosed = true
                close(fd)
            }
        }
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0, !lock.withLock({ stopped }) else {
                if client >= 0 { close(client) }
                return
            }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(client, &buffer, buffer.count)
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
            if let end = data.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count - end.upperBound >= length { break }
            }
        }
        let head = String(decoding: data, as: UTF8.self).components(separatedBy: "\r\n\r\n")[0]
        lock.withLock { _heads.append(head) }
        if let answer = respond(head) {
            _ = answer.utf8CString.withUnsafeBufferPointer { send(client, $0.baseAddress, $0.count - 1, noSignal) }
            close(client)
        } else {
            let closeNow = lock.withLock { () -> Bool in
                if stopped { return true }
                held.append(client)
                return false
            }
            if closeNow { close(client) }
        }
    }

    static func http(_ status: String, headers: [String: String] = [:], body: String = "") -> String {
        var text = "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n" + body
    }
}

#if canImport(Glibc)
/// `SOCK_STREAM` as `socket()` takes it (an enum on Glibc, an `Int32` on Darwin).
let streamSocketType = Int32(SOCK_STREAM.rawValue)
/// Never raise SIGPIPE when a client went away.
let noSignal = Int32(MSG_NOSIGNAL)
#else
let streamSocketType = SOCK_STREAM
let noSignal: Int32 = 0
#endif

/// A TCP socket bound to a free loopback port (not listening yet): the test servers' and the closed port's
/// start (`reuseAddress`: for servers; a port kept closed must not be shareable). The caller owns the descriptor.
func bindLoopback(reuseAddress: Bool = true) -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, streamSocketType, 0)
    var yes: Int32 = 1
    if reuseAddress { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
    #if !canImport(Glibc)
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
    #endif
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

@Suite("Engine over loopback HTTP (real URLSession)")
struct EngineLoopbackTests {
    func api(_ server: LoopbackServer, timeout: TimeInterval = 30) -> (DataAPI, DispatchQueue) {
        let queue = DispatchQueue(label: "loopback.callbacks")
        queue.setSpecific(key: Harness.key, value: "callbacks")
        let configuration = FMConfiguration(host: "http://127.0.0.1:\(server.port)", database: "My DB", username: "admin", password: "pw", timeout: timeout)
        return (DataAPI(configuration: configuration, callbackQueue: queue), queue)
    }

    @Test func loginAndCallOverHTTPWithAnExplicitPort() throws {
        let server = LoopbackServer { head in
            if head.hasPrefix("POST ") {
                return LoopbackServer.http("200 OK", headers: ["Content-Type": "application/json", "X-FM-Data-Access-Token": "hdr"], body: Bodies.login("tok"))
            }
            return LoopbackServer.http("200 OK", headers: ["Content-Type": "application/json"], body: Bodies.value("hi"))
        }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(TestEndpoints.records("a/b?c#d")) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "hi")
        #expect(recorder.offQueue == 0)
        let heads = server.heads
        #expect(heads.count == 2)
        #expect(heads.first?.hasPrefix("POST /fmi/data/vLatest/databases/My%20DB/sessions HTTP/1.1") == true)
        #expect(heads.first?.contains("Authorization: Basic YWRtaW46cHc=") == true)
        #expect(heads.last?.hasPrefix("GET /fmi/data/vLatest/databases/My%20DB/layouts/a%2Fb%3Fc%23d/records HTTP/1.1") == true)
        #expect(heads.last?.contains("Authorization: Bearer tok") == true)
        // Dot segments are not collapsed on the way (neither by Foundation nor by libcurl).
        let dots = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(TestEndpoints.records("..")) { dots.record($0) }
        #expect(dots.wait().first?.testValue == "hi")
        #expect(server.heads.last?.hasPrefix("GET /fmi/data/vLatest/databases/My%20DB/layouts/%2E%2E/records HTTP/1.1") == true)
    }

    @Test func redirectsAreNotFollowed() {
        let server = LoopbackServer { head in
            head.hasPrefix("GET /container") ? LoopbackServer.http("302 Found", headers: ["Location": "/elsewhere", "Set-Cookie": "X-FMS-Session-Key=abc; HttpOnly"]) : nil
        }
        defer { server.stop() }
        let (api, _) = api(server)
        let endpoint = Endpoint<String>(.get, .absolute(URL(string: "http://127.0.0.1:\(server.port)/container")!), [], auth: .none) { response in
            "\(response.status) \(response.header("Set-Cookie") ?? "-")"
        }
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(endpoint, options: CallOptions(accepting: { $0 == 200 || $0 == 302 })) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "302 X-FMS-Session-Key=abc; HttpOnly")
        #expect(server.heads.count == 1)
    }

    @Test func htmlBadGatewayIsMinus1006() {
        let server = LoopbackServer { _ in LoopbackServer.http("502 Bad Gateway", headers: ["Content-Type": "text/html"], body: "<html>502</html>") }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<(String?, String)>(queueKey: Harness.key)
        api.login { recorder.record(($0, $1)) }
        #expect(recorder.wait().first?.1 == "-1006")
    }

    @Test func timeoutIsMinus1004() {
        let server = LoopbackServer { _ in nil } // never answers
        defer { server.stop() }
        let (api, _) = api(server, timeout: 1)
        let recorder = Recorder<(String?, String)>(queueKey: Harness.key)
        api.login { recorder.record(($0, $1)) }
        #expect(recorder.wait().first?.1 == "-1004")
    }

    @Test func cancellingARealRequest() {
        let server = LoopbackServer { _ in nil }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        let request = api.perform(TestEndpoints.records(auth: .token("t"))) { recorder.record($0) }
        request.cancel()
        #expect(recorder.wait().first?.testFailureCode == "-1005")
        #expect(recorder.offQueue == 0)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The tests' one HTTP/1.1 server on 127.0.0.1, for what the emulator cannot do: answer exactly these bytes,
/// hold a request for ever, drip or stream an endless body, keep a connection open or drop it.
///
/// Modes, chosen by the initialiser:
/// * one request per connection (``init(respond:)``, ``init(_:)-(String,Int)``): every answer ends its
///   connection, so a body without a length ends with it; `index` counts the requests of the whole server.
/// * keep-alive (``init(_:)-(String,Int,Int)``): an ``Play/answer(_:)`` keeps the connection open for the next
///   request; `index` counts the requests of one connection.
/// * heads only (``init(headsOnly:)``): one request per connection, answered once its head arrived, its body
///   never read (a server that answers an upload before taking it).
/// * on `::1` (``onIPv6Loopback(respond:)``): one request per connection, on the IPv6 loopback (`nil` where the
///   machine has none).
///
/// It records every request (head, body, connection), counts connections and what it managed to write of each
/// answer's body, and notices when a client went away (a write failed or a read saw the end), so tests assert
/// bytes and closes, never times. `HostileServer`, `KeepAliveServer` and `LoopbackServer` are its names where
/// the tests use one mode.
final class TestServer: @unchecked Sendable {
    // @unchecked: the mutable state is behind `lock`.

    /// How one request is answered.
    enum Play: Sendable {
        /// Send these bytes (head and body); in keep-alive mode the connection stays open for the next request.
        case answer(String)
        /// Send these bytes, then close the connection.
        case answerAndClose(String)
        /// Close the connection without answering (a server that had dropped an idle connection).
        case close
        /// Send these bytes, stop sending (half-close), read what the client still sends until it closes, then close.
        case answerAndDrain(String)
        /// Never answer; wait for the client to close (or for ``stop()``).
        case silent
        /// Send `head` at once, then `body` one byte every `interval` seconds, until done or the client left.
        case drip(head: String, body: Data, interval: TimeInterval)
        /// Send `head` and `first`, then `chunk` again and again until the client leaves (or `limit` bytes of
        /// chunks were sent).
        case endless(head: String, first: Data = Data(), chunk: Data, limit: Int)
    }

    /// A request as it arrived.
    struct Request: Sendable {
        var head: String
        /// The connection it came on, 0-based, in accept order.
        var connection: Int
        var body = Data()
        var bodyBytesSent = 0
        var clientLeft = false
    }

    let port: Int
    /// The host part of ``url``: `127.0.0.1`, or `[::1]`.
    let host: String
    private let fd: Int32
    private let keepAlive: Bool
    /// Only request heads are read; a body stays unread.
    private let headsOnly: Bool
    private let sendBuffer: Int32?
    /// Decides an answer from the head, the connection, the index on that connection and the index in the server.
    private let play: @Sendable (_ head: String, _ connection: Int, _ indexOnConnection: Int, _ index: Int) -> Play
    private let lock = NSLock()
    private var _requests: [Request] = []
    private var _connections = 0
    private var open = 0
    private var _mostOpen = 0
    private var closes = 0
    private var ended = 0
    /// What a waiter counts: connections closed, requests ended (answered or left), or request heads received.
    private enum Milestone { case closes, ends, heads }
    /// Waiters for a ``Milestone`` to reach a count.
    private var waiters: [(id: UUID, count: Int, milestone: Milestone, continuation: CheckedContinuation<Void, Never>)] = []
    private var clients: [Int32] = []
    private var stopped = false
    /// The listening descriptor was closed (its number may be reused by then).
    private var listenerClosed = false

    private init(keepAlive: Bool, headsOnly: Bool = false, backlog: Int32, sendBuffer: Int32?,
                 listener: (fd: Int32, port: Int, host: String)? = nil,
                 play: @escaping @Sendable (_ head: String, _ connection: Int, _ indexOnConnection: Int, _ index: Int) -> Play) {
        self.keepAlive = keepAlive
        self.headsOnly = headsOnly
        self.sendBuffer = sendBuffer
        self.play = play
        (fd, port, host) = listener ?? { let (fd, port) = bindLoopback(); return (fd, port, "127.0.0.1") }()
        listen(fd, backlog)
        Thread { [self] in acceptLoop() }.start()
    }

    /// One request per connection: `respond(head)` is the whole answer, or `nil` to hold the request unanswered.
    convenience init(respond: @escaping @Sendable (_ head: String) -> String?) {
        self.init(keepAlive: false, backlog: 16, sendBuffer: nil) { head, _, _, _ in respond(head).map(Play.answer) ?? .silent }
    }

    /// One request per connection: `play(head, index)` decides how, from the request head and the 0-based index
    /// of the request. A small send buffer keeps what the kernel holds for a client that stopped reading small.
    convenience init(_ play: @escaping @Sendable (_ head: String, _ index: Int) -> Play) {
        self.init(keepAlive: false, backlog: 64, sendBuffer: 16 * 1024) { head, _, _, index in play(head, index) }
    }

    /// Keep-alive: `play(head, connection, index)` decides each answer; `index` counts the requests of the connection.
    convenience init(_ play: @escaping @Sendable (_ head: String, _ connection: Int, _ index: Int) -> Play) {
        self.init(keepAlive: true, backlog: 128, sendBuffer: nil) { head, connection, index, _ in play(head, connection, index) }
    }

    /// One request per connection, answered by `play(head)` as soon as its head arrived: its body is never read.
    convenience init(headsOnly play: @escaping @Sendable (_ head: String) -> Play) {
        self.init(keepAlive: false, headsOnly: true, backlog: 16, sendBuffer: nil) { head, _, _, _ in play(head) }
    }

    /// One request per connection on the IPv6 loopback (`http://[::1]:PORT`), as ``init(respond:)``; `nil` where the
    /// machine has no IPv6 loopback.
    static func onIPv6Loopback(respond: @escaping @Sendable (_ head: String) -> String?) -> TestServer? {
        guard let (fd, port) = bindLoopback(ipv6: true) else { return nil }
        return TestServer(keepAlive: false, backlog: 16, sendBuffer: nil, listener: (fd, port, "[::1]")) { head, _, _, _ in
            respond(head).map(Play.answer) ?? .silent
        }
    }

    /// `http://127.0.0.1:PORT` (`http://[::1]:PORT` on the IPv6 loopback).
    var url: String { "http://\(host):\(port)" }
    /// The requests received, in order.
    var requests: [Request] { lock.withLock { _requests } }
    /// The request heads received, in order.
    var heads: [String] { requests.map(\.head) }
    /// How many requests whose head contains `fragment` arrived.
    func count(_ fragment: String) -> Int { heads.filter { $0.contains(fragment) }.count }
    /// The connections accepted.
    var connections: Int { lock.withLock { _connections } }
    /// The most connections open at once.
    var mostOpen: Int { lock.withLock { _mostOpen } }
    /// The body bytes written to the socket for request `index`.
    func bodyBytesSent(_ index: Int) -> Int { lock.withLock { index < _requests.count ? _requests[index].bodyBytesSent : 0 } }
    /// Whether the client closed its connection before the answer to request `index` was complete.
    func clientLeft(_ index: Int) -> Bool { lock.withLock { index < _requests.count && _requests[index].clientLeft } }

    /// Returns once the server closed `count` connections; `false` when ``stop()`` or the hang guard came first.
    func waitForCloses(_ count: Int) async -> Bool { await wait(for: count, .closes) }

    /// Returns once `count` requests have ended (answer sent, or the client left); `false` when ``stop()`` or
    /// the hang guard came first.
    func waitForEnds(_ count: Int) async -> Bool { await wait(for: count, .ends) }

    /// Returns once the heads of `count` requests have arrived; `false` when ``stop()`` or the hang guard came first.
    func waitForHeads(_ count: Int) async -> Bool { await wait(for: count, .heads) }

    private func reached(_ count: Int, _ milestone: Milestone) -> Bool {
        switch milestone {
        case .closes: closes >= count
        case .ends: ended >= count
        case .heads: _requests.count >= count
        }
    }

    private func wait(for count: Int, _ milestone: Milestone) async -> Bool {
        let id = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if reached(count, milestone) || stopped { return true }
                waiters.append((id, count, milestone, continuation))
                return false
            }
            if now { continuation.resume() }
            // A hang guard only (the test then fails on the count), never a synchronisation.
            DispatchQueue.global().asyncAfter(deadline: TestBound.deadline) { [self] in
                let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
                    guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return waiters.remove(at: index).continuation
                }
                waiter?.resume()
            }
        }
        return lock.withLock { reached(count, milestone) }
    }

    /// The waiters whose count is reached, taken out (under the lock).
    private func takeReadyWaiters() -> [CheckedContinuation<Void, Never>] {
        let ready = waiters.filter { reached($0.count, $0.milestone) }
        waiters.removeAll { reached($0.count, $0.milestone) }
        return ready.map(\.continuation)
    }

    func stop() {
        let (open, ready) = lock.withLock { () -> ([Int32], [CheckedContinuation<Void, Never>]) in
            stopped = true
            defer { waiters = [] }
            return (clients, waiters.map(\.continuation))
        }
        for waiter in ready { waiter.resume() }
        // Under the lock, as the closes in `serve` and `acceptLoop`: a descriptor number closed meanwhile may
        // already belong to another test's socket in this process, and must not be shut down.
        lock.withLock {
            if !listenerClosed { shutdown(fd, Int32(SHUT_RDWR)) }
            for client in open where clients.contains(client) { shutdown(client, Int32(SHUT_RDWR)) }
        }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func acceptLoop() {
        defer {
            lock.withLock {
                listenerClosed = true
                close(fd)
            }
        }
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0, !isStopped else {
                if client >= 0 { close(client) }
                return
            }
            if var size = sendBuffer {
                setsockopt(client, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            #if !canImport(Glibc)
            var yes: Int32 = 1
            setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let number = lock.withLock { () -> Int in
                _connections += 1
                open += 1
                _mostOpen = max(_mostOpen, open)
                clients.append(client)
                return _connections - 1
            }
            Thread { [self] in serve(client, number) }.start()
        }
    }

    /// Reads one request (its head, then Content-Length bytes of body) from `pending` and the socket; `nil`
    /// when the client closed first.
    private func readRequest(_ client: Int32, _ pending: inout Data) -> (head: String, body: Data)? {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let end = pending.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                let length = headsOnly ? 0 : head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if pending.count - end.upperBound >= length {
                    let body = Data(pending[end.upperBound..<(end.upperBound + length)])
                    pending.removeSubrange(..<(end.upperBound + length))
                    return (head, body)
                }
            }
            let n = read(client, &buffer, buffer.count)
            guard n > 0 else { return nil }
            pending.append(contentsOf: buffer[0..<n])
        }
    }

    /// Writes all of `bytes`; `false` when the client went away (or the server stopped).
    private func write(_ client: Int32, _ bytes: Data) -> Bool {
        var offset = 0
        while offset < bytes.count {
            if isStopped { return false }
            let n = bytes.withUnsafeBytes { raw in
                send(client, raw.baseAddress!.advanced(by: offset), bytes.count - offset, noSignal)
            }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    private func serve(_ client: Int32, _ connection: Int) {
        var pending = Data()
        var indexOnConnection = 0
        serving: while let (head, body) = readRequest(client, &pending) {
            let (index, arrived) = lock.withLock { () -> (Int, [CheckedContinuation<Void, Never>]) in
                _requests.append(Request(head: head, connection: connection, body: body))
                return (_requests.count - 1, takeReadyWaiters())
            }
            for waiter in arrived { waiter.resume() }
            let action = play(head, connection, indexOnConnection, index)
            indexOnConnection += 1
            var left = false
            var keepOpen = false
            func sent(_ count: Int) { lock.withLock { _requests[index].bodyBytesSent += count } }
            switch action {
            case .answer(let text):
                left = !write(client, Data(text.utf8))
                keepOpen = keepAlive && !left
            case .answerAndClose(let text):
                left = !write(client, Data(text.utf8))
            case .answerAndDrain(let text):
                left = !write(client, Data(text.utf8))
                shutdown(client, Int32(SHUT_WR))
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                while read(client, &buffer, buffer.count) > 0 {}
            case .close:
                break
            case .silent:
                // Wait for the client to close (read sees the end), or for stop().
                var buffer = [UInt8](repeating: 0, count: 256)
                while read(client, &buffer, buffer.count) > 0 {}
                left = !isStopped
            case .drip(let head, let body, let interval):
                if write(client, Data(head.utf8)) {
                    for byte in body {
                        Thread.sleep(forTimeInterval: interval)   // the server's pace, not a synchronisation
                        guard write(client, Data([byte])) else { left = true; break }
                        sent(1)
                    }
                } else {
                    left = true
                }
            case .endless(let head, let first, let chunk, let limit):
                if write(client, Data(head.utf8) + first) {
                    var total = 0
                    while total < limit {
                        guard write(client, chunk) else { left = true; break }
                        total += chunk.count
                        sent(chunk.count)
                    }
                } else {
                    left = true
                }
            }
            let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                _requests[index].clientLeft = left
                ended += 1
                return takeReadyWaiters()
            }
            for waiter in ready { waiter.resume() }
            guard keepOpen else { break serving }
        }
        let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            clients.removeAll { $0 == client }
            close(client) // under the lock: see stop()
            open -= 1
            closes += 1
            return takeReadyWaiters()
        }
        for waiter in ready { waiter.resume() }
    }

    // MARK: answers

    /// A response head with `Connection: close` (the one-request mode's answers).
    static func head(_ status: String = "200 OK", _ headers: [String: String] = [:]) -> String {
        var text = "HTTP/1.1 \(status)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// A JSON answer, with its length, that closes the connection.
    static func json(_ body: String, status: String = "200 OK", headers: [String: String] = [:]) -> String {
        var all = headers
        all["Content-Type"] = "application/json"
        all["Content-Length"] = "\(body.utf8.count)"
        return head(status, all) + body
    }

    /// A whole answer with its length, that closes the connection.
    static func http(_ status: String, headers: [String: String] = [:], body: String = "") -> String {
        var text = "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n" + body
    }

    /// A keep-alive answer with `body`.
    static func ok(_ body: String = "ok", headers: [String: String] = [:]) -> String {
        var text = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return text + "\r\n" + body
    }

    /// The login answer with `token`.
    static func login(_ token: String = "hostile-token") -> Play { .answer(json(Bodies.login(token))) }

    /// `true` for a login request head.
    static func isLogin(_ head: String) -> Bool { head.hasPrefix("POST ") && head.split(separator: "\r\n").first?.contains("/sessions ") == true }
}

/// The server in its one-request-per-connection mode, as the hostile-server tests name it.
typealias HostileServer = TestServer
/// The server in its keep-alive mode, as the transport tests name it.
typealias KeepAliveServer = TestServer
/// The server answering whole responses (or holding them), as the engine loopback tests name it.
typealias LoopbackServer = TestServer

#if canImport(Glibc)
/// `SOCK_STREAM` as `socket()` takes it (an enum on Glibc, an `Int32` on Darwin).
let streamSocketType = Int32(SOCK_STREAM.rawValue)
/// Never raise SIGPIPE when a client went away.
let noSignal = Int32(MSG_NOSIGNAL)
#else
let streamSocketType = SOCK_STREAM
let noSignal: Int32 = 0
#endif

/// A TCP socket bound to a free loopback port (not listening yet): the test server's and the closed port's
/// start (`reuseAddress`: for servers; a port kept closed must not be shareable). The caller owns the descriptor.
func bindLoopback(reuseAddress: Bool = true) -> (fd: Int32, port: Int) {
    bindLoopback(ipv6: false, reuseAddress: reuseAddress) ?? (-1, 0)
}

/// The same on `127.0.0.1` or `::1`; `nil` where the address cannot be bound (a machine without IPv6 loopback).
func bindLoopback(ipv6: Bool, reuseAddress: Bool = true) -> (fd: Int32, port: Int)? {
    let fd = socket(ipv6 ? AF_INET6 : AF_INET, streamSocketType, 0)
    guard fd >= 0 else { return nil }
    var yes: Int32 = 1
    if reuseAddress { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
    #if !canImport(Glibc)
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
    #endif
    var port: UInt16?
    if ipv6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        if bindAndName(fd, &address) { port = address.sin6_port }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        if bindAndName(fd, &address) { port = address.sin_port }
    }
    guard let port else { close(fd); return nil }
    return (fd, Int(UInt16(bigEndian: port)))
}

/// Binds `fd` to `address`, then reads back the address the kernel gave it (its port); `false` when binding failed.
private func bindAndName<Address>(_ fd: Int32, _ address: inout Address) -> Bool {
    var length = socklen_t(MemoryLayout<Address>.size)
    let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0 else { return false }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return true
}

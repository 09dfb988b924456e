import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A deliberately hostile HTTP server on 127.0.0.1, for what the emulator cannot do: stay silent for
/// ever, drip a body, stream an endless body or a compression bomb. Each connection serves one request
/// (`Connection: close`); `play(head, index)` decides how, from the request head and the 0-based index
/// of the request.
///
/// It counts what it managed to write of each answer's body, and notices when the client went away
/// (a write failed or a read saw the end), so tests assert bytes and closes, never times.
final class HostileServer: @unchecked Sendable {
    /// How one request is answered.
    enum Play: Sendable {
        /// Read the request, never answer; wait for the client to close.
        case silent
        /// Send this whole response (head and body), then close.
        case answer(String)
        /// Send `head` at once, then `body` one byte every `interval` seconds, until done or the client left.
        case drip(head: String, body: Data, interval: TimeInterval)
        /// Send `head` and `first`, then `chunk` again and again until the client leaves (or `limit` bytes
        /// of chunks were sent).
        case endless(head: String, first: Data = Data(), chunk: Data, limit: Int)
    }

    private struct Connection {
        var head: String
        var bodyBytesSent = 0
        var clientLeft = false
        var done = false
    }

    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var connections: [Connection] = []
    private var clients: [Int32] = []
    private var stopped = false
    /// The listening descriptor was closed (its number may be reused by then).
    private var listenerClosed = false
    private var endedCount = 0
    private var endWaiters: [(Int, UUID, CheckedContinuation<Void, Never>)] = []
    private let play: @Sendable (String, Int) -> Play

    init(_ play: @escaping @Sendable (_ head: String, _ index: Int) -> Play) {
        self.play = play
        (fd, port) = bindLoopback()
        listen(fd, 64)
        Thread { [self] in acceptLoop() }.start()
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// The request heads received, in order.
    var heads: [String] { lock.withLock { connections.map(\.head) } }

    /// How many requests whose head contains `fragment` arrived.
    func count(_ fragment: String) -> Int { heads.filter { $0.contains(fragment) }.count }

    /// The body bytes written to the socket for request `index`.
    func bodyBytesSent(_ index: Int) -> Int { lock.withLock { index < connections.count ? connections[index].bodyBytesSent : 0 } }

    /// Whether the client closed connection `index` before the answer was complete.
    func clientLeft(_ index: Int) -> Bool { lock.withLock { index < connections.count && connections[index].clientLeft } }

    /// Returns once `count` connections have ended (answer sent, or the client left), without blocking a
    /// thread. `false` when `stop()` came first.
    func waitForEnds(_ count: Int) async -> Bool {
        let id = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if endedCount >= count || stopped { return true }
                endWaiters.append((count, id, continuation))
                return false
            }
            if now { continuation.resume() }
            // A hang guard only (the test then fails on the count), never a synchronisation.
            DispatchQueue.global().asyncAfter(deadline: TestBound.deadline) { [self] in
                let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
                    guard let index = endWaiters.firstIndex(where: { $0.1 == id }) else { return nil }
                    return endWaiters.remove(at: index).2
                }
                waiter?.resume()
            }
        }
        return lock.withLock { endedCount >= count }
    }

    func stop() {
        let (open, waiters) = lock.withLock { () -> ([Int32], [CheckedContinuation<Void, Never>]) in
            stopped = true
            defer { endWaiters = [] }
            return (clients, endWaiters.map(\.2))
        }
        for waiter in waiters { waiter.resume() }
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
            // A small send buffer keeps what the kernel holds for a client that stopped reading small.
            var size: Int32 = 16 * 1024
            setsockopt(client, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            #if !canImport(Glibc)
            var yes: Int32 = 1
            setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
            lock.withLock { clients.append(client) }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func readRequest(_ client: Int32) -> String? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(client, &buffer, buffer.count)
            guard n > 0 else { return nil }
            data.append(contentsOf: buffer[0..<n])
            if let end = data.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count - end.upperBound >= length { return head }
            }
        }
    }

    /// Writes all of `bytes`; `false` when the client went away.
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

    private func serve(_ client: Int32) {
        guard let head = readRequest(client) else {
            lock.withLock {
                clients.removeAll { $0 == client }
                close(client) // under the lock: see stop()
            }
            return
        }
        let index = lock.withLock { () -> Int in
            connections.append(Connection(head: head))
            return connections.count - 1
        }
        var left = false
        func sent(_ count: Int) { lock.withLock { connections[index].bodyBytesSent += count } }
        switch play(head, index) {
        case .silent:
            // Wait for the client to close (read sees the end) — or for stop().
            var buffer = [UInt8](repeating: 0, count: 256)
            while read(client, &buffer, buffer.count) > 0 {}
            left = !isStopped
        case .answer(let text):
            left = !write(client, Data(text.utf8))
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
            connections[index].clientLeft = left
            connections[index].done = true
            clients.removeAll { $0 == client }
            close(client) // under the lock: see stop()
            endedCount += 1
            let ready = endWaiters.filter { $0.0 <= endedCount }.map(\.2)
            endWaiters.removeAll { $0.0 <= endedCount }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    // MARK: answers

    static func head(_ status: String = "200 OK", _ headers: [String: String] = [:]) -> String {
        var text = "HTTP/1.1 \(status)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    static func json(_ body: String, status: String = "200 OK", headers: [String: String] = [:]) -> String {
        var all = headers
        all["Content-Type"] = "application/json"
        all["Content-Length"] = "\(body.utf8.count)"
        return head(status, all) + body
    }

    /// The login answer with `token`.
    static func login(_ token: String = "hostile-token") -> Play { .answer(json(Bodies.login(token))) }

    /// `true` for a login request head.
    static func isLogin(_ head: String) -> Bool { head.hasPrefix("POST ") && head.split(separator: "\r\n").first?.contains("/sessions ") == true }
}

/// Builds deflate data that inflates to many zero bytes: a "compression bomb".
///
/// One *unit* is a fixed-Huffman block (RFC 1951 §3.2.6) holding a literal 0 then `runs` copies of
/// ⟨length 258, distance 1⟩, followed by an empty stored block that pads to a byte boundary — so units can
/// be sent back to back, for ever. Each unit inflates to `1 + 258 × runs` bytes from about `13 × runs / 8`.
enum DeflateBomb {
    /// The 10-byte gzip member header (RFC 1952), deflate, no name, unknown OS.
    static let gzipHeader = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF])

    static func unit(runs: Int) -> Data {
        var bits = BitWriter()
        bits.write(0, count: 1)             // BFINAL 0
        bits.write(1, count: 2)             // BTYPE 01: fixed Huffman
        bits.huffman(0x30, count: 8)        // literal 0 (0x30 + 0, 8 bits)
        for _ in 0..<runs {
            bits.huffman(0xC5, count: 8)    // length code 285 = 258 (11000101), no extra bits
            bits.huffman(0, count: 5)       // distance code 0 = distance 1
        }
        bits.huffman(0, count: 7)           // end of block (256)
        bits.write(0, count: 1)             // BFINAL 0
        bits.write(0, count: 2)             // BTYPE 00: stored, then pad to a byte
        bits.align()
        bits.bytes.append(contentsOf: [0x00, 0x00, 0xFF, 0xFF])   // LEN 0, NLEN 0xFFFF
        return Data(bits.bytes)
    }

    /// How many bytes one unit inflates to.
    static func inflatedSize(runs: Int) -> Int { 1 + 258 * runs }

    private struct BitWriter {
        var bytes: [UInt8] = []
        var current: UInt32 = 0
        var filled = 0

        /// Writes `count` bits of `value`, least significant first (header fields, extra bits).
        mutating func write(_ value: UInt32, count: Int) {
            for i in 0..<count { push((value >> UInt32(i)) & 1) }
        }

        /// Writes a Huffman code, most significant bit first.
        mutating func huffman(_ code: UInt32, count: Int) {
            for i in stride(from: count - 1, through: 0, by: -1) { push((code >> UInt32(i)) & 1) }
        }

        mutating func align() { while filled != 0 { push(0) } }

        private mutating func push(_ bit: UInt32) {
            current |= bit << UInt32(filled)
            filled += 1
            if filled == 8 {
                bytes.append(UInt8(current))
                current = 0
                filled = 0
            }
        }
    }
}

/// An ``FMTransport`` around a real one (URLSession by default) that counts the body bytes handed to SwiftFM, and those
/// handed after SwiftFM asked to stop (the transport must stop reading then).
final class CountingTransport: FMTransport, @unchecked Sendable {
    private let base: any FMTransport

    init(_ wire: Wire = .urlSession) { base = wire.transport(idleTimeout: 60) }
    private let lock = NSLock()
    private var _delivered = 0
    private var _afterRefusal = 0
    private var _refused = 0
    private var _requests = 0

    /// Body bytes handed to SwiftFM (after content decoding).
    var delivered: Int { lock.withLock { _delivered } }
    /// Body bytes handed to SwiftFM after it had answered `false` once.
    var afterRefusal: Int { lock.withLock { _afterRefusal } }
    /// How many times SwiftFM answered `false`.
    var refusals: Int { lock.withLock { _refused } }
    /// Requests sent.
    var requests: Int { lock.withLock { _requests } }

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        lock.withLock { _requests += 1 }
        let refused = Locked(false)
        let counted = FMTransportEvents(
            response: events.response,
            data: { [self] data in
                let already = refused.withLock { $0 }
                lock.withLock {
                    _delivered += data.count
                    if already { _afterRefusal += data.count }
                }
                let proceed = events.data(data)
                if !proceed {
                    refused.withLock { $0 = true }
                    lock.withLock { _refused += 1 }
                }
                return proceed
            },
            complete: events.complete
        )
        return base.send(request, events: counted)
    }
}

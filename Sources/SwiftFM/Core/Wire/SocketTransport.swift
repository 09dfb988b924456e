import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc

// MARK: - A plain-HTTP/1.1 transport over POSIX sockets (Linux)

/// A transport that speaks HTTP/1.1 itself over plain TCP sockets, for `http://` servers on Linux (a local
/// FileMaker Server behind a TLS-terminating proxy, fm-emulator); every other URL (`https://`) goes through
/// an ``FMURLSessionTransport`` it owns.
///
/// Why: on Linux, every request through `URLSession` keeps about 180 bytes that are never freed (corelibs'
/// `_EasyHandle.set(url:)` asks libcurl's URL parser whether the host agrees and never frees what it
/// allocated), so a daemon's memory climbs by hundreds of MB per million calls. This transport keeps
/// nothing per request: fm-bench's `soak` scenario measures its slope.
///
/// Behaviour: persistent connections (keep-alive, reused FIFO; one the server closed while idle is never used,
/// and one that dies before any byte of the answer arrived is redialled once for a `GET` or `HEAD`, never for a
/// write), `Content-Length`, chunked and until-close answers, `Expect`-less uploads from memory or streamed from
/// a file with `Content-Length`. Like ``FMURLSessionTransport`` it asks for compressed answers
/// (`Accept-Encoding: gzip, deflate`, unless the request sets its own) and hands on the decoded bytes
/// (`gzip`, `x-gzip`, `deflate` as zlib or raw, decoded in Swift with bounded memory); a corrupt stream or
/// another coding fails with `URLError(.cannotDecodeContentData)`. No redirect is followed (a 3xx is the
/// answer), no cookies, no cache. At most `maxConnectionsPerHost` connections per host and port; requests
/// beyond them wait in FIFO order (SwiftFM's own limits keep that queue empty). Each silence longer than
/// `idleTimeout` while sending or receiving ends the exchange with `URLError(.timedOut)`; `cancel()` ends it
/// at once with `URLError(.cancelled)`. One thread per open connection; a connection idle for `keepAlive`
/// seconds is closed and its thread ends.
public final class FMSocketTransport: FMTransport, @unchecked Sendable {
    // @unchecked: `pools` and `fallback` are behind their locks; the rest is immutable.
    private let idleTimeout: TimeInterval
    private let keepAlive: TimeInterval
    private let maxConnectionsPerHost: Int
    private let pools = Locked<[String: SocketHostPool]>([:])
    private let fallback = Locked<FMURLSessionTransport?>(nil)

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - idleTimeout: the longest silence allowed while connecting, sending or receiving, in seconds (the
    ///     whole call is bounded by SwiftFM's own deadline, ``FMConfiguration/timeout``).
    ///   - maxConnectionsPerHost: the most connections open at once to one host and port (at least 1).
    ///   - keepAlive: how long an idle connection stays open for the next request, in seconds.
    public init(idleTimeout: TimeInterval = 60, maxConnectionsPerHost: Int = 64, keepAlive: TimeInterval = 30) {
        self.idleTimeout = max(0.001, idleTimeout)
        self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
        self.keepAlive = max(0.001, keepAlive)
    }

    deinit {
        for pool in pools.withLock({ Array($0.values) }) { pool.close() }
    }

    /// Starts the request; see ``FMTransport/send(_:events:)``.
    public func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        guard let url = request.urlRequest.url, url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else {
            let base = fallback.withLock { transport -> FMURLSessionTransport in
                if let transport { return transport }
                // A margin past the idle timeout (the call's deadline by default): see defaultIdleTimeout(for:).
                let made = FMURLSessionTransport(idleTimeout: idleTimeout + 5, maxConnectionsPerHost: maxConnectionsPerHost)
                transport = made
                return made
            }
            return base.send(request, events: events)
        }
        let port = url.port ?? 80
        let key = "\(host.lowercased()):\(port)"
        let pool = pools.withLock { pools -> SocketHostPool in
            if let pool = pools[key] { return pool }
            let made = SocketHostPool(host: host, port: port, limit: maxConnectionsPerHost,
                                      idleTimeout: idleTimeout, keepAlive: keepAlive)
            pools[key] = made
            return made
        }
        let exchange = SocketExchange(request: request, events: events, pool: pool)
        pool.enqueue(exchange)
        return exchange
    }
}

// MARK: - One exchange

/// One request and its answer: the task handle SwiftFM can cancel, and the one place that completes.
private final class SocketExchange: FMTransportTask, @unchecked Sendable {
    // @unchecked: `state` is behind `lock`; the rest is immutable.
    enum Phase { case waiting, running(Int32), ended }
    let request: FMTransportRequest
    let events: FMTransportEvents
    private weak var pool: SocketHostPool?
    private let lock = NSLock()
    private var phase = Phase.waiting
    private var cancelled = false

    init(request: FMTransportRequest, events: FMTransportEvents, pool: SocketHostPool) {
        self.request = request
        self.events = events
        self.pool = pool
    }

    var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return cancelled }

    /// The worker starts using `fd` for this exchange; `false` when it was cancelled meanwhile.
    func attach(_ fd: Int32) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard !cancelled, case .waiting = phase else { return false }
        phase = .running(fd)
        return true
    }

    /// The worker stops using the descriptor (before it may close it: `cancel` never touches a closed number).
    func detach() {
        lock.lock(); defer { lock.unlock() }
        if case .running = phase { phase = .waiting }
    }

    func cancel() {
        lock.lock()
        guard !cancelled else { lock.unlock(); return }
        cancelled = true
        let current = phase
        // Wakes the worker's poll: it sees `cancelled` and ends the exchange (under the lock: the worker
        // detaches before it closes, so this descriptor is still ours).
        if case .running(let fd) = current { shutdown(fd, Int32(SHUT_RDWR)) }
        lock.unlock()
        if case .waiting = current, pool?.remove(self) == true { finish(URLError(.cancelled)) }
    }

    /// Completes the exchange (once).
    func finish(_ error: Error?) {
        lock.lock()
        if case .ended = phase { lock.unlock(); return }
        phase = .ended
        let outcome = cancelled && error != nil ? URLError(.cancelled) : error
        lock.unlock()
        events.complete(outcome)
    }
}

// MARK: - The connections to one host

/// The connections to one host and port: at most `limit`, each with its own thread; requests wait FIFO.
private final class SocketHostPool: @unchecked Sendable {
    // @unchecked: every `var` is behind `condition`'s lock.
    let host: String
    let port: Int
    let limit: Int
    let idleTimeout: TimeInterval
    let keepAlive: TimeInterval
    private let condition = NSCondition()
    private var queue: [SocketExchange] = []
    private var head = 0
    private var workers = 0
    private var idleWorkers = 0
    /// Workers completing an exchange: each takes the next request right after.
    private var finishing = 0
    private var closed = false

    init(host: String, port: Int, limit: Int, idleTimeout: TimeInterval, keepAlive: TimeInterval) {
        self.host = host
        self.port = port
        self.limit = limit
        self.idleTimeout = idleTimeout
        self.keepAlive = keepAlive
    }

    func enqueue(_ exchange: SocketExchange) {
        condition.lock()
        queue.append(exchange)
        let spawn = queue.count - head > idleWorkers + finishing && workers < limit && !closed
        if spawn { workers += 1 } else { condition.signal() }
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in SocketWorker(pool: self).run() }
            thread.name = "SwiftFM.socket"
            thread.start()
        }
    }

    /// Takes `exchange` out of the queue; `false` when a worker already took it.
    func remove(_ exchange: SocketExchange) -> Bool {
        condition.lock(); defer { condition.unlock() }
        guard let index = queue[head...].firstIndex(where: { $0 === exchange }) else { return false }
        queue.remove(at: index)
        return true
    }

    /// A worker is about to complete an exchange (and will then ask for the next one).
    func willFinish() {
        condition.lock()
        finishing += 1
        condition.unlock()
    }

    /// The next exchange for a worker, waiting up to `keepAlive` while idle; `nil` when the worker should end
    /// (idle too long, or the transport is gone). `finished`: the worker called ``willFinish()`` before.
    func next(finished: Bool) -> SocketExchange? {
        condition.lock(); defer { condition.unlock() }
        if finished { finishing -= 1 }
        let deadline = Date(timeIntervalSinceNow: keepAlive)
        while head == queue.count && !closed {
            idleWorkers += 1
            let signalled = condition.wait(until: deadline)
            idleWorkers -= 1
            if !signalled && head == queue.count { break }
        }
        guard head < queue.count, !closed else {
            workers -= 1
            return nil
        }
        let exchange = queue[head]
        head += 1
        if head > 64 && head * 2 > queue.count { // drop the taken prefix now and then
            queue.removeFirst(head)
            head = 0
        }
        return exchange
    }

    func close() {
        condition.lock()
        closed = true
        let waiting = Array(queue[head...])
        queue = []
        head = 0
        condition.broadcast()
        condition.unlock()
        for exchange in waiting { exchange.finish(URLError(.cancelled)) }
    }
}

// MARK: - One connection and its thread

/// Why an exchange failed, and whether a fresh connection may send it again.
private struct SocketFailure: Error {
    var error: URLError
    /// Nothing of the answer arrived on a reused connection: the server had closed it; send again once.
    var redial = false
}

/// One connection's thread: takes exchanges from the pool in turn and runs them on its socket.
private final class SocketWorker {
    let pool: SocketHostPool
    private var fd: Int32 = -1
    /// Bytes read past the end of the last answer's head or chunk (pipelining is never used, so normally none).
    private var buffer = [UInt8]()
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// Where the answer's body stands (`nextPiece()` reads it).
    private var framing = Framing.done

    /// How the body of the answer being read is delimited, and how much of it is left.
    private enum Framing {
        case done
        case length(left: Int64)
        case chunk(left: Int, first: Bool)
        case untilClose
    }

    init(pool: SocketHostPool) { self.pool = pool }

    func run() {
        var finished = false
        while let exchange = pool.next(finished: finished) {
            finished = true
            if exchange.isCancelled {
                pool.willFinish()
                exchange.finish(URLError(.cancelled))
                continue
            }
            var outcome: Error?
            do {
                do {
                    try exchangeOnce(exchange, fresh: false)
                } catch let failure as SocketFailure where failure.redial && !exchange.isCancelled {
                    closeSocket(exchange)
                    try exchangeOnce(exchange, fresh: true)
                }
            } catch let failure as SocketFailure {
                outcome = failure.error
                closeSocket(exchange)
            } catch {
                outcome = error
                closeSocket(exchange)
            }
            exchange.detach()
            pool.willFinish() // before the completion: what it sends next finds this connection
            exchange.finish(outcome)
        }
        closeSocket(nil)
    }

    private func closeSocket(_ exchange: SocketExchange?) {
        exchange?.detach()
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer.removeAll(keepingCapacity: true)
        start = 0
    }

    /// Sends `exchange` and reads its answer on the open connection (or a new one).
    private func exchangeOnce(_ exchange: SocketExchange, fresh: Bool) throws {
        var reused = fd >= 0
        if reused && !stillOpen() {
            closeSocket(nil)
            reused = false
        }
        if fd < 0 { try connect() }
        guard exchange.attach(fd) else { throw SocketFailure(error: URLError(.cancelled)) }
        var sawAnswer = false
        do {
            try sendRequest(exchange.request)
            try readAnswer(exchange, sawAnswer: &sawAnswer)
        } catch var failure as SocketFailure {
            if exchange.isCancelled { throw SocketFailure(error: URLError(.cancelled)) }
            // Only a request that may be sent twice is sent again: a write the server may have applied never is, nor
            // a read that runs a script (the engine's rule; SwiftFM's retry policy decides about them).
            failure.redial = reused && !fresh && !sawAnswer && failure.error.code != .timedOut && exchange.request.mayBeSentAgain
            exchange.detach()
            throw failure
        }
        exchange.detach()
    }

    /// An idle kept-alive connection the server has not closed (nothing to read on it).
    private func stillOpen() -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    // MARK: connect

    private func connect() throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let host = pool.host.hasPrefix("[") && pool.host.hasSuffix("]") ? String(pool.host.dropFirst().dropLast()) : pool.host
        guard getaddrinfo(host, String(pool.port), &hints, &list) == 0, let first = list else {
            throw SocketFailure(error: URLError(.cannotFindHost))
        }
        defer { freeaddrinfo(list) }
        var lastError = URLError(.cannotConnectToHost)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let socket = Glibc.socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard socket >= 0 else { continue }
            _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
            _ = fcntl(socket, F_SETFD, FD_CLOEXEC)
            var yes: Int32 = 1
            setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                fd = socket
                return
            }
            if errno == EINPROGRESS {
                var waiting = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&waiting, 1, milliseconds(pool.idleTimeout))
                var status: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if ready > 0, getsockopt(socket, SOL_SOCKET, SO_ERROR, &status, &length) == 0, status == 0 {
                    fd = socket
                    return
                }
                lastError = URLError(ready == 0 ? .timedOut : .cannotConnectToHost)
            }
            Glibc.close(socket)
        }
        throw SocketFailure(error: lastError)
    }

    // MARK: send

    private func sendRequest(_ request: FMTransportRequest) throws {
        let urlRequest = request.urlRequest
        guard let url = urlRequest.url else { throw SocketFailure(error: URLError(.badURL)) }
        let method = urlRequest.httpMethod ?? "GET"
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        let bodyLength: Int64?
        if let file = request.bodyFile {
            let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
            guard let size = (attributes?[.size] as? NSNumber)?.int64Value else { throw SocketFailure(error: URLError(.fileDoesNotExist)) }
            bodyLength = size
        } else if let body = urlRequest.httpBody, !body.isEmpty {
            bodyLength = Int64(body.count)
        } else {
            bodyLength = method == "GET" || method == "HEAD" ? nil : 0
        }
        // An IPv6 literal keeps its brackets (`Host: [::1]:8080`).
        let hostName = pool.host.contains(":") && !pool.host.hasPrefix("[") ? "[\(pool.host)]" : pool.host
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(hostName)\(pool.port == 80 ? "" : ":\(pool.port)")\r\n"
        var asksEncoding = false
        for (name, value) in urlRequest.allHTTPHeaderFields ?? [:] {
            switch name.lowercased() {
            case "host", "content-length", "connection", "transfer-encoding", "expect": continue
            case "accept-encoding":
                asksEncoding = true
                fallthrough
            default:
                // A header value never holds a line break (RequestBuilder refuses them); strip any left.
                head += "\(name): \(value.filter { $0 != "\r" && $0 != "\n" })\r\n"
            }
        }
        // As URLSession asks (it asks for br and zstd too, which this transport cannot decode).
        if !asksEncoding { head += "Accept-Encoding: gzip, deflate\r\n" }
        if let bodyLength { head += "Content-Length: \(bodyLength)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if request.bodyFile == nil, let body = urlRequest.httpBody, !body.isEmpty {
            bytes.append(contentsOf: body)
        }
        try write(bytes[...])
        if let file = request.bodyFile {
            let input = open(file.path, O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { throw SocketFailure(error: URLError(.cannotOpenFile)) }
            defer { Glibc.close(input) }
            var left = bodyLength ?? 0
            while left > 0 {
                let count = scratch.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, Int(min(Int64($0.count), left))) }
                guard count > 0 else { throw SocketFailure(error: URLError(.cannotOpenFile)) }
                try write(scratch[0..<count])
                left -= Int64(count)
            }
        }
    }

    private func write(_ bytes: ArraySlice<UInt8>) throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress!.advanced(by: offset - bytes.startIndex), bytes.endIndex - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                try wait(for: POLLOUT)
            } else {
                throw SocketFailure(error: URLError(.networkConnectionLost))
            }
        }
    }

    /// Waits until the socket is ready for `event`, at most `idleTimeout`.
    private func wait(for event: Int32) throws {
        var entry = pollfd(fd: fd, events: Int16(event), revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds(pool.idleTimeout))
            if ready > 0 { return }
            if ready == 0 { throw SocketFailure(error: URLError(.timedOut)) }
            if errno != EINTR { throw SocketFailure(error: URLError(.networkConnectionLost)) }
        }
    }

    // MARK: receive

    /// Reads more bytes into `buffer`; `false` at the end of the stream.
    private func fill() throws -> Bool {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        while true {
            let count = scratch.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: scratch[0..<count])
                return true
            }
            if count == 0 { return false }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                try wait(for: POLLIN)
            } else {
                throw SocketFailure(error: URLError(.networkConnectionLost))
            }
        }
    }

    /// The next line (without CRLF) of a head or of chunk framing, at most 64 KiB.
    private func line() throws -> String {
        // Counted from `start`: `fill()` may move the bytes (it empties a fully read buffer first).
        var searched = 0
        while true {
            if let end = buffer[(start + searched)...].firstIndex(of: 10) {
                var last = end
                if last > start && buffer[last - 1] == 13 { last -= 1 }
                let text = String(decoding: buffer[start..<last], as: UTF8.self)
                start = end + 1
                return text
            }
            searched = buffer.count - start
            guard searched < 64 * 1024 else { throw SocketFailure(error: URLError(.cannotParseResponse)) }
            guard try fill() else { throw SocketFailure(error: URLError(.networkConnectionLost)) }
        }
    }

    private func readAnswer(_ exchange: SocketExchange, sawAnswer: inout Bool) throws {
        let method = exchange.request.urlRequest.httpMethod ?? "GET"
        var status = 0
        var headers: [String: String] = [:]
        var version = "HTTP/1.1"
        repeat { // 1xx answers (100 Continue) come before the real one
            if start == buffer.count {
                guard try fill() else { throw SocketFailure(error: URLError(.networkConnectionLost)) }
            }
            sawAnswer = true
            let statusLine = try line()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...999).contains(code) else {
                throw SocketFailure(error: URLError(.cannotParseResponse))
            }
            version = String(parts[0])
            status = code
            headers = [:]
            var count = 0
            while true {
                let field = try line()
                if field.isEmpty { break }
                count += 1
                guard count <= 200, let colon = field.firstIndex(of: ":") else { throw SocketFailure(error: URLError(.cannotParseResponse)) }
                let name = String(field[..<colon]).trimmingCharacters(in: .whitespaces)
                let value = String(field[field.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                // Repeated fields are folded as URLSession folds them (`Set-Cookie` included).
                if let known = headers.keys.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                    headers[known] = headers[known, default: ""] + ", " + value
                } else {
                    headers[name] = value
                }
            }
        } while (100...199).contains(status) && status != 101
        guard let url = exchange.request.urlRequest.url,
              let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: version, headerFields: headers) else {
            throw SocketFailure(error: URLError(.cannotParseResponse))
        }
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        var keep = version == "HTTP/1.1" && header("Connection")?.lowercased().contains("close") != true
        let hasBody = !(method == "HEAD" || status == 204 || status == 304)
        let coding = hasBody ? try contentCoding(header("Content-Encoding")) : nil
        guard exchange.events.response(response) else { throw SocketFailure(error: URLError(.cancelled)) }
        func deliver(_ bytes: UnsafeRawBufferPointer) throws {
            guard !bytes.isEmpty else { return }
            guard exchange.events.data(Data(bytes)) else { throw SocketFailure(error: URLError(.cancelled)) }
        }
        if !hasBody {
            framing = .done
        } else if header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            framing = .chunk(left: 0, first: true)
        } else if let lengthText = header("Content-Length") {
            guard let length = Int64(lengthText), length >= 0 else { throw SocketFailure(error: URLError(.cannotParseResponse)) }
            framing = .length(left: length)
        } else {
            keep = false // the body ends when the server closes
            framing = .untilClose
        }
        if let coding {
            var inflater = Inflater(format: coding, input: { [unowned self] in try nextPiece() },
                                    output: { try deliver(UnsafeRawBufferPointer($0)) })
            do {
                try inflater.run()
            } catch let error as InflateError {
                throw SocketFailure(error: URLError(.cannotDecodeContentData, userInfo: [
                    NSLocalizedDescriptionKey: "Cannot decode the answer's \(coding == .gzip ? "gzip" : "deflate") content: \(error)",
                ]))
            }
        } else {
            while let piece = try nextPiece() { try piece.withUnsafeBytes { try deliver($0) } }
        }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 256 * 1024)
            start = 0
        } else {
            // Bytes after the answer (a body longer than its Content-Length, a 204 or 304 with a body): never read as
            // the next request's answer; the connection is not used again.
            keep = false
        }
        if !keep { closeSocket(exchange) }
    }
}

extension SocketWorker {
    /// The next bytes of the body as sent (chunked framing removed, before content decoding); `nil` at its end.
    /// The slice is only valid until the next call.
    fileprivate func nextPiece() throws -> ArraySlice<UInt8>? {
        while true {
            switch framing {
            case .done:
                return nil
            case .length(let left):
                if left == 0 { framing = .done; return nil }
                if start == buffer.count { guard try fill() else { throw SocketFailure(error: URLError(.networkConnectionLost)) } }
                let take = Int(min(left, Int64(buffer.count - start)))
                framing = .length(left: left - Int64(take))
                defer { start += take }
                return buffer[start..<(start + take)]
            case .chunk(let left, let first):
                if left > 0 {
                    if start == buffer.count { guard try fill() else { throw SocketFailure(error: URLError(.networkConnectionLost)) } }
                    let take = min(left, buffer.count - start)
                    framing = .chunk(left: left - take, first: false)
                    defer { start += take }
                    return buffer[start..<(start + take)]
                }
                // The CRLF after a chunk's data, then the next chunk's size line.
                if !first { guard try line().isEmpty else { throw SocketFailure(error: URLError(.cannotParseResponse)) } }
                let sizeLine = try line()
                let digits = sizeLine.prefix { $0.isHexDigit }
                guard !digits.isEmpty, digits.count <= 15, let size = Int(digits, radix: 16) else {
                    throw SocketFailure(error: URLError(.cannotParseResponse))
                }
                if size == 0 {
                    while try !line().isEmpty {} // trailers
                    framing = .done
                    return nil
                }
                framing = .chunk(left: size, first: true)
            case .untilClose:
                if start < buffer.count {
                    defer { start = buffer.count }
                    return buffer[start...]
                }
                guard try fill() else { framing = .done; return nil }
            }
        }
    }
}

/// The content coding of an answer to decode (`nil`: identity). Codings other than gzip and deflate (never
/// asked for: the transport sends `Accept-Encoding: gzip, deflate`) fail clearly, as libcurl fails them.
private func contentCoding(_ value: String?) throws -> Inflater.Format? {
    guard let value else { return nil }
    let codings = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        .filter { !$0.isEmpty && $0 != "identity" }
    switch codings {
    case []: return nil
    case ["gzip"], ["x-gzip"]: return .gzip
    case ["deflate"]: return .deflate
    default:
        throw SocketFailure(error: URLError(.cannotDecodeContentData, userInfo: [
            NSLocalizedDescriptionKey: "The answer's Content-Encoding \(value) cannot be decoded (gzip and deflate can)",
        ]))
    }
}

/// `seconds` as poll(2)'s milliseconds, at least 1, at most a day.
private func milliseconds(_ seconds: TimeInterval) -> Int32 {
    Int32(max(1, min(86_400_000, (seconds * 1000).rounded(.up))))
}
#endif

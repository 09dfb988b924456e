#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Why an ``HTTPServer`` could not start listening.
public struct HTTPServerError: Error, CustomStringConvertible, LocalizedError, Sendable, Equatable {
    /// A readable explanation, e.g. `cannot bind 127.0.0.1:3000: Address already in use`.
    public let message: String
    /// The POSIX `errno` behind the failure, if there was one (`EADDRINUSE` for a port in use).
    public let code: Int32?

    /// Creates an error.
    public init(message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }

    /// Whether the failure was a port already in use.
    public var isAddressInUse: Bool { code == EADDRINUSE }

    /// The ``message``.
    public var description: String { message }

    /// The ``message``, for `localizedDescription`.
    public var errorDescription: String? { message }
}

/// A small HTTP/1.1 server over POSIX sockets, with no dependencies beyond Foundation and Dispatch.
///
/// One thread accepts connections; each connection is served by its own thread with blocking I/O, so
/// a slow or delayed response never holds up another connection, and requests on one connection are
/// answered in order. The ``HTTPHandler`` is called on the connection threads, possibly concurrently.
/// Every response is written with one write of one buffer (a body over 1 MiB: the head, then the body
/// straight from its `Data`, not copied), and accepted sockets use `TCP_NODELAY`.
///
/// ```swift
/// let server = HTTPServer(handler: MyHandler())
/// let port = try server.start()          // 127.0.0.1, a free port
/// defer { server.stop() }
/// ```
public final class HTTPServer: Sendable {
    /// The handler that answers every request.
    public let handler: any HTTPHandler
    /// The largest accepted request line plus header block, in bytes; larger heads get `431`.
    public let maxHeaderBytes: Int
    /// The largest accepted request body, in bytes; larger bodies get `413`.
    public let maxBodyBytes: Int
    /// The largest accepted `multipart/form-data` body sent with a `Content-Length` (a file upload), in
    /// bytes, when larger than ``maxBodyBytes``; larger bodies get `413`. (Any body sent with a
    /// `Content-Length` above 4 MiB is written to an unlinked temporary file as it arrives and handed to
    /// the handler memory-mapped, so a large upload does not sit in the heap.)
    public let maxUploadBytes: Int
    /// Seconds a keep-alive connection may stay idle between requests (or before its first byte) before
    /// the server closes it; its thread then ends (nginx's `keepalive_timeout`).
    public let idleTimeout: TimeInterval
    /// Seconds from the first byte of a request head to its last (nginx's `client_header_timeout`): a
    /// head still incomplete then closes the connection, however steadily its bytes trickle in (slowloris).
    public let headerTimeout: TimeInterval
    /// Seconds a request body may go without a byte arriving (nginx's `client_body_timeout`); the
    /// connection is closed then.
    public let bodyTimeout: TimeInterval
    /// The most connections served at once (one thread each). When a new connection finds them all open,
    /// the one that has waited longest without a request in progress (an idle keep-alive connection, or
    /// one inside an incomplete request head) is closed to admit it, as nginx reuses idle keep-alive
    /// connections when `worker_connections` run out; only when every connection is busy with a request
    /// (or its body) is the new one answered `503 Service Unavailable` with `Connection: close` and
    /// closed, without a thread.
    public let maxConnections: Int
    /// The certificate and key when the server speaks HTTPS (TLS 1.2 or later) instead of plain HTTP; see
    /// ``EmulatorTLS``. Each connection's handshake runs on its own thread and must finish within
    /// ``headerTimeout``. A connection beyond ``maxConnections`` that cannot be admitted gets the `503` a plain one
    /// gets, after its handshake: refused connections are handshaken and answered on one thread of their own, each
    /// within the header timeout (at most 5 s), at most 64 at once; one refused beyond those is closed without an
    /// answer, so a flood over the cap holds no more threads. Plain HTTP refused there gets, on that thread and within
    /// those bounds, the answer it gets under the cap: `400`, saying the port speaks HTTPS.
    public let tls: EmulatorTLS?

    private let state = HTTPServerLockedState()

    /// Creates a server that is not yet listening.
    ///
    /// - Parameters:
    ///   - handler: answers every request.
    ///   - maxHeaderBytes: limit for the request line and headers (default 64 KiB).
    ///   - maxBodyBytes: limit for a request body (default 64 MiB).
    ///   - maxUploadBytes: limit for a multipart body with a `Content-Length` (default: `maxBodyBytes`).
    ///   - idleTimeout: seconds a keep-alive connection may stay idle before it is closed (default 60).
    ///   - maxConnections: connections served at once (default 256); see ``maxConnections``.
    ///   - headerTimeout: seconds a request head may take to arrive, from its first byte (default 10).
    ///   - bodyTimeout: seconds a request body may go without a byte (default 30).
    ///   - tls: serve HTTPS with this certificate and key (default `nil`: plain HTTP); see ``tls``.
    public init(handler: any HTTPHandler, maxHeaderBytes: Int = 64 * 1024, maxBodyBytes: Int = 64 * 1024 * 1024,
                maxUploadBytes: Int? = nil, idleTimeout: TimeInterval = 60, maxConnections: Int = 256,
                headerTimeout: TimeInterval = 10, bodyTimeout: TimeInterval = 30, tls: EmulatorTLS? = nil) {
        self.tls = tls
        self.maxUploadBytes = max(maxBodyBytes, maxUploadBytes ?? maxBodyBytes)
        self.idleTimeout = idleTimeout > 0 ? idleTimeout : 60
        self.headerTimeout = headerTimeout > 0 ? headerTimeout : 10
        self.bodyTimeout = bodyTimeout > 0 ? bodyTimeout : 30
        self.maxConnections = max(1, maxConnections)
        self.handler = handler
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }

    deinit {
        stop()
    }

    /// The connections open now (each has a thread).
    public var openConnectionCount: Int {
        state.withLock { $0.run?.openConnectionCount ?? 0 }
    }

    /// Connections refused with 503 because ``maxConnections`` were open and busy (since start).
    public var refusedConnectionCount: Int {
        state.withLock { $0.run?.refusedCount ?? 0 }
    }

    /// Idle keep-alive connections (or ones stalled in a request head) closed to admit a new connection
    /// when ``maxConnections`` were open (since start).
    public var evictedConnectionCount: Int {
        state.withLock { $0.run?.evictedCount ?? 0 }
    }

    /// Waits until the phases of the open connections satisfy `predicate` (tests); `false` after `timeout`.
    func waitForConnections(timeout: TimeInterval, _ predicate: ([HTTPConnectionPhase]) -> Bool) -> Bool {
        guard let run = state.withLock({ $0.run }) else { return false }
        return run.waitForPhases(timeout: timeout, predicate)
    }

    /// The bound port while the server is listening, otherwise `nil`.
    public var port: UInt16? {
        state.withLock { $0.run?.port }
    }

    /// Binds `host:port`, starts accepting connections and returns the bound port.
    ///
    /// - Parameters:
    ///   - host: a numeric IPv4/IPv6 address or a host name; `localhost` means `127.0.0.1`.
    ///   - port: the port, or 0 for any free port.
    /// - Returns: the port actually bound.
    /// - Throws: ``HTTPServerError`` when the address cannot be resolved, bound (e.g. the port is in
    ///   use) or listened on, when the server is already running, or (with ``tls``) when OpenSSL cannot be
    ///   loaded, a file cannot be read or used, or the key does not match the certificate (the message names
    ///   the file).
    ///
    /// Socket writes never raise `SIGPIPE` (`MSG_NOSIGNAL` / `SO_NOSIGPIPE`; over TLS, OpenSSL's calls run with
    /// `SIGPIPE` blocked on their thread and one they raise is discarded); as a second line of defence the first
    /// start also sets `SIGPIPE` to ignored for the process, as servers do.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        _ = HTTPServer.ignoreSIGPIPE
        // Before binding: a bad certificate or key fails the start, never each handshake later.
        let context = try tls.map { try TLSContext($0) }
        guard let address = HTTPSocket.resolve(host: host, port: port) else {
            throw HTTPServerError(message: "cannot resolve host \(host)")
        }
        let fd = socket(address.family, HTTPSocket.streamType, 0)
        guard fd >= 0 else {
            let e = errno
            throw HTTPServerError(message: "cannot create socket: \(HTTPSocket.errorText(e))", code: e)
        }
        HTTPSocket.setCloseOnExec(fd)
        // Non-blocking, so a connection that vanishes between poll and accept cannot park the
        // accept thread where stop() cannot wake it.
        HTTPSocket.setNonBlocking(fd, true)
        HTTPSocket.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if address.bind(to: fd) != 0 {
            let e = errno
            HTTPSocket.closeFD(fd)
            throw HTTPServerError(message: "cannot bind \(host):\(port): \(HTTPSocket.errorText(e))", code: e)
        }
        if listen(fd, 1024) != 0 {
            let e = errno
            HTTPSocket.closeFD(fd)
            throw HTTPServerError(message: "cannot listen on \(host):\(port): \(HTTPSocket.errorText(e))", code: e)
        }
        guard let bound = HTTPSocketAddress.boundPort(of: fd) else {
            let e = errno
            HTTPSocket.closeFD(fd)
            throw HTTPServerError(message: "cannot read the bound port: \(HTTPSocket.errorText(e))", code: e)
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let e = errno
            HTTPSocket.closeFD(fd)
            throw HTTPServerError(message: "cannot create a wake-up pipe: \(HTTPSocket.errorText(e))", code: e)
        }
        HTTPSocket.setCloseOnExec(pipeFDs[0])
        HTTPSocket.setCloseOnExec(pipeFDs[1])

        let run = HTTPServerRun(
            listenFD: fd, wakeRead: pipeFDs[0], wakeWrite: pipeFDs[1], port: bound,
            handler: handler,
            limits: HTTPParserLimits(maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes, maxUploadBytes: maxUploadBytes),
            timeouts: HTTPConnectionTimeouts(idle: idleTimeout, header: headerTimeout, body: bodyTimeout),
            maxConnections: maxConnections, tls: context
        )
        let alreadyRunning = state.withLock { s -> Bool in
            if s.run != nil { return true }
            s.run = run
            return false
        }
        if alreadyRunning {
            run.closeDescriptorsUnstarted()
            throw HTTPServerError(message: "the server is already running")
        }
        let thread = Thread { run.acceptLoop() }
        thread.name = "HTTPServer.accept.\(bound)"
        thread.start()
        return bound
    }

    private static let ignoreSIGPIPE: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    /// Stops listening and closes every open connection. Returns once the listening socket is
    /// closed (the port is free again) and the connection threads have finished, or after a short
    /// grace period if a handler is still busy. Idempotent and safe from any thread, including a
    /// handler.
    public func stop() {
        // A concurrent second caller gets the run being stopped too, and waits for it to finish.
        let run = state.withLock { s -> HTTPServerRun? in
            if let r = s.run {
                s.run = nil
                s.lastRun = r
                return r
            }
            return s.lastRun
        }
        run?.stop()
    }
}

/// The server's mutable state behind a lock.
final class HTTPServerLockedState: @unchecked Sendable {
    struct Value {
        /// The listening run, if any.
        var run: HTTPServerRun?
        /// The run most recently stopped (or being stopped).
        var lastRun: HTTPServerRun?
    }

    private let lock = NSLock()
    private var value = Value()

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// One start…stop cycle of a server: the listening socket, its accept thread and its connections.
final class HTTPServerRun: @unchecked Sendable {
    let listenFD: Int32
    let wakeRead: Int32
    let wakeWrite: Int32
    let port: UInt16
    let handler: any HTTPHandler
    let limits: HTTPParserLimits
    let timeouts: HTTPConnectionTimeouts
    let maxConnections: Int
    /// The TLS context when the server speaks HTTPS.
    let tls: TLSContext?
    /// Answers refused TLS connections (their handshakes never run on the accept thread).
    private let tlsRefusals: TLSRefusals?
    /// Connections closed for eviction whose threads may still be ending, beyond the cap: bounds the
    /// threads alive at once to `maxConnections + evictionSlack` under churn.
    let evictionSlack = 64

    /// What a connection is doing, for choosing which one to close when the cap is reached.
    private struct Tracked {
        var fd: Int32
        var phase: HTTPConnectionPhase = .idle
        /// When the phase began (monotonic seconds).
        var since: Double
        /// Closed to admit another; its thread is ending.
        var evicted = false
    }

    // Guarded by `condition`.
    private var refused = 0
    private var evictions = 0
    private let condition = NSCondition()
    private var stopping = false
    private var acceptFinished = false
    private var connections: [Int: Tracked] = [:]
    /// How many of `connections` are evicted (ending).
    private var ending = 0
    private var nextConnectionID = 0

    init(listenFD: Int32, wakeRead: Int32, wakeWrite: Int32, port: UInt16, handler: any HTTPHandler,
         limits: HTTPParserLimits, timeouts: HTTPConnectionTimeouts, maxConnections: Int, tls: TLSContext? = nil) {
        self.tls = tls
        self.tlsRefusals = tls.map {
            TLSRefusals(context: $0, answer: HTTPServerRun.refusal(maxConnections: maxConnections),
                        seconds: min(timeouts.header, 5))
        }
        self.timeouts = timeouts
        self.maxConnections = maxConnections
        self.listenFD = listenFD
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
        self.port = port
        self.handler = handler
        self.limits = limits
    }

    /// Closes the descriptors of a run whose accept thread never started.
    func closeDescriptorsUnstarted() {
        HTTPSocket.closeFD(listenFD)
        HTTPSocket.closeFD(wakeRead)
        HTTPSocket.closeFD(wakeWrite)
    }

    var openConnectionCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return connections.count
    }

    var refusedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return refused
    }

    var evictedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return evictions
    }

    /// Records that connection `id` entered `phase` (called by its thread when the phase changes).
    func connection(_ id: Int, entered phase: HTTPConnectionPhase) {
        let now = monotonicSeconds()
        condition.lock()
        if connections[id] != nil {
            connections[id]?.phase = phase
            connections[id]?.since = now
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until the phases of the open connections (evicted ones left out) satisfy `predicate`, or
    /// `timeout` seconds pass (then `false`). For tests: they wait on the event, not on time.
    func waitForPhases(timeout: TimeInterval, _ predicate: ([HTTPConnectionPhase]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(connections.values.filter { !$0.evicted }.map(\.phase)) {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Under `condition`: makes room for one more connection when the cap is reached by closing the
    /// connection that has waited longest without a request in progress: idle keep-alive connections and
    /// connections inside an incomplete request head, oldest phase first (nginx reuses its idle keep-alive
    /// connections, least recently used first, when `worker_connections` run out; a head that has been
    /// trickling in for seconds is no better). A connection that was just accepted has waited least, so a
    /// normal client is not the one closed. `false` when every connection is busy with a request or its
    /// body, so the new one must be refused.
    private func makeRoom() -> Bool {
        guard connections.count - ending >= maxConnections else { return true }
        guard connections.count < maxConnections + evictionSlack else { return false }
        var victim: (id: Int, since: Double)?
        for (id, c) in connections where !c.evicted && (c.phase == .idle || c.phase == .head) {
            if let best = victim, best.since <= c.since { continue }
            victim = (id, c.since)
        }
        guard let victim, let fd = connections[victim.id]?.fd else { return false }
        connections[victim.id]?.evicted = true
        ending += 1
        evictions += 1
        // The descriptor is closed only by its thread, under this lock: the number is still ours.
        HTTPSocket.shutdownBoth(fd)
        return true
    }

    /// The answer to a connection beyond the cap: 503, `Retry-After`, `Connection: close`.
    static func refusal(maxConnections: Int) -> [UInt8] {
        let body = "Too many connections: the emulator serves at most \(maxConnections) at once.\n"
        let response = HTTPResponse(status: 503, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Retry-After", "1")],
                                    body: Data(body.utf8))
        return HTTPResponseWriter.serialize(response, isHead: false, keepAlive: false)
    }

    /// Answers a connection beyond the cap without a thread of its own: ``refusal(maxConnections:)``, then close. Over
    /// TLS the answer follows a handshake, which never runs on the accept thread: ``TLSRefusals`` runs it, bounded.
    private func refuse(_ fd: Int32) {
        if let tlsRefusals {
            tlsRefusals.take(fd)
            return
        }
        // A fresh socket's send buffer takes this small answer at once; never block the accept thread.
        HTTPSocket.setNonBlocking(fd, true)
        let bytes = HTTPServerRun.refusal(maxConnections: maxConnections)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, HTTPSocket.sendFlags) }
        HTTPSocket.shutdownWrite(fd)
        // Drain what the client already sent, so the close is a FIN rather than a reset that could
        // destroy the answer in flight.
        var sink = [UInt8](repeating: 0, count: 4096)
        _ = sink.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        HTTPSocket.closeFD(fd)
    }

    var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    /// Accepts until stopped, one thread per connection.
    func acceptLoop() {
        defer {
            HTTPSocket.closeFD(listenFD)
            condition.lock()
            acceptFinished = true
            condition.broadcast()
            condition.unlock()
        }
        var fds = [
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let rc = poll(&fds, 2, -1)
            if rc < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 || isStopping { return }
            guard fds[0].revents != 0 else { continue }
            let fd = HTTPSocket.acceptConnection(listenFD)
            if fd < 0 {
                let e = errno
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM {
                    // Out of descriptors: back off briefly instead of spinning.
                    usleep(10_000)
                }
                continue
            }
            HTTPSocket.configureAccepted(fd)
            condition.lock()
            if stopping {
                condition.unlock()
                HTTPSocket.closeFD(fd)
                return
            }
            guard makeRoom() else {
                refused += 1
                condition.unlock()
                refuse(fd)
                continue
            }
            let id = nextConnectionID
            nextConnectionID += 1
            connections[id] = Tracked(fd: fd, since: monotonicSeconds())
            condition.unlock()

            let connection = HTTPConnection(fd: fd, id: id, run: self)
            let thread = Thread {
                connection.serve()
                self.connectionEnded(id: id, fd: fd)
            }
            thread.name = "HTTPServer.connection.\(id)"
            thread.start()
        }
    }

    private func connectionEnded(id: Int, fd: Int32) {
        condition.lock()
        if connections.removeValue(forKey: id)?.evicted == true { ending -= 1 }
        // Close under the lock: `stop()` never shuts down a descriptor number that was reused.
        HTTPSocket.closeFD(fd)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits `seconds`, returning early with `false` if the server stops meanwhile.
    func waitDelay(_ seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !stopping {
            if !condition.wait(until: deadline) { return !stopping }
        }
        return false
    }

    func stop() {
        condition.lock()
        if stopping {
            // Another caller is stopping this run: return once the listening socket is closed.
            while !acceptFinished { condition.wait() }
            condition.unlock()
            return
        }
        stopping = true
        for c in connections.values { HTTPSocket.shutdownBoth(c.fd) }
        condition.broadcast()
        condition.unlock()

        // Wake the accept thread; it closes the listening socket on its way out.
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)

        let onConnectionThread = Thread.current.name?.hasPrefix("HTTPServer.connection.") == true
        condition.lock()
        while !acceptFinished { condition.wait() }
        condition.unlock()
        // After the accept thread: nothing more is refused.
        tlsRefusals?.stop()
        condition.lock()
        // Wait for the connection threads to finish (a handler calling stop() does not wait for its
        // own connection), but not forever if a handler is stuck.
        let deadline = Date(timeIntervalSinceNow: 2)
        while connections.count > (onConnectionThread ? 1 : 0) {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
        // Both ends are closed only now: writing to a pipe whose read end is closed raises SIGPIPE.
        HTTPSocket.closeFD(wakeRead)
        HTTPSocket.closeFD(wakeWrite)
    }
}

/// The deadlines of a connection (see ``HTTPServer/idleTimeout``, ``HTTPServer/headerTimeout``,
/// ``HTTPServer/bodyTimeout``).
struct HTTPConnectionTimeouts: Sendable {
    var idle: TimeInterval
    var header: TimeInterval
    var body: TimeInterval
}

/// What a connection is doing; idle and head connections may be closed to admit a new one.
enum HTTPConnectionPhase: Sendable {
    /// Waiting for the next request (keep-alive), or for the first byte of the first.
    case idle
    /// Part of a request head has arrived.
    case head
    /// Receiving a request body.
    case body
    /// Handling a request or writing its answer.
    case busy
}

/// Seconds on a monotonic clock (not affected by changes of the wall clock).
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

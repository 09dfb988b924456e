#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Serves one accepted connection on its own thread: read, parse, call the handler, write, repeat.
final class HTTPConnection: Sendable {
    private let fd: Int32
    private let id: Int
    private let run: HTTPServerRun

    init(fd: Int32, id: Int, run: HTTPServerRun) {
        self.fd = fd
        self.id = id
        self.run = run
    }

    func serve() {
        var session: TLSSession?
        if let context = run.tls {
            // The handshake runs here, on the connection's thread, never on the accept loop's: a client that says
            // nothing, speaks plain HTTP or rejects the certificate costs this connection only, for at most the
            // header timeout (nginx bounds its handshakes by client_header_timeout too). It stays evictable (idle).
            let deadline = monotonicSeconds() + run.timeouts.header
            if beginsWithPlainHTTP(until: deadline) {
                answerPlainHTTPOnTheTLSPort()
                return
            }
            guard let made = TLSSession(context: context, fd: fd), made.handshake(until: deadline) else { return }
            session = made
        }
        serve(over: HTTPChannel(fd: fd, tls: session))
    }

    private func serve(over channel: HTTPChannel) {
        var parser = HTTPRequestParser(limits: run.limits)
        let scratchSize = 64 * 1024
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: scratchSize, alignment: 16)
        defer { scratch.deallocate() }
        var clock = PhaseClock(connection: id, run: run)

        while true {
            while let event = parser.next() {
                switch event {
                case .sendContinue:
                    // The head is in: the connection waits for the body (told before the client can know).
                    clock.enter(.body)
                    guard channel.writeAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }

                case let .failure(status, message):
                    let response = HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                                body: Data((message + "\n").utf8))
                    let bytes = HTTPResponseWriter.serialize(response, isHead: false, keepAlive: false)
                    if channel.writeAll(bytes) { lingeringClose(channel) }
                    return

                case let .request(request, keepAlive):
                    clock.enter(.busy)
                    let response = run.handler.handle(request)
                    if response.delay > 0 {
                        guard run.waitDelay(response.delay) else { return }
                    }
                    if response.delivery == .reset {
                        resetOnClose()
                        return
                    }
                    let close = !keepAlive || response.delivery == .closeMidBody
                        || HTTPResponseWriter.asksToClose(response) || run.isStopping
                    let isHead = request.method == "HEAD"
                    if case let .drip(rate) = response.delivery {
                        guard drip(response, over: channel, isHead: isHead, keepAlive: !close, bytesPerSecond: rate) else { return }
                        if close {
                            lingeringClose(channel)
                            return
                        }
                        continue
                    }
                    if response.delivery == .closeMidBody {
                        let bytes = HTTPResponseWriter.serialize(response, isHead: isHead, keepAlive: false,
                                                                 bodyPrefix: response.body.count / 2)
                        if channel.writeAll(bytes) { lingeringClose(channel) }
                        return
                    }
                    guard HTTPResponseWriter.write(response, to: channel, isHead: isHead, keepAlive: !close) else { return }
                    if close {
                        lingeringClose(channel)
                        return
                    }
                }
            }
            // Each phase has its deadline: idle (keep-alive), head (from its first byte, however slowly
            // the rest trickles in), body (between two reads). A connection past it is closed.
            let left = clock.timeLeft(in: parser.phase)
            guard left > 0 else { return }
            switch channel.read(into: scratch, timeout: left) {
            case .closed:
                return
            case .encrypted:
                // Part of a TLS record: the client is sending, and a request has begun as with a plain first byte.
                clock.progressed(requestBegun: true)
            case let .bytes(n):
                clock.progressed()
                parser.append(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
            }
        }
    }

    /// Whether the client's first byte, awaited until `deadline`, is a letter (an HTTP method) where a TLS client
    /// sends a handshake record (22). Peeked: the handshake still reads every byte.
    private func beginsWithPlainHTTP(until deadline: Double) -> Bool {
        guard HTTPSocket.wait(fd, for: Int16(POLLIN), until: deadline) else { return false }
        var byte: UInt8 = 0
        guard recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 1 else { return false }
        return Self.isPlainHTTPStart(byte)
    }

    /// Whether a connection's first byte begins an HTTP request (a method's letter) where a TLS client's begins a
    /// handshake record (22).
    static func isPlainHTTPStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// The answer to plain HTTP on the port that speaks TLS: `400`, saying so, `Connection: close`; in plain HTTP.
    static let plainHTTPOnTheTLSPortAnswer: [UInt8] = {
        let text = "This port speaks HTTPS (TLS) only, and the request came in plain HTTP: use https:// for it.\n"
        let response = HTTPResponse(status: 400, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Data(text.utf8))
        return HTTPResponseWriter.serialize(response, isHead: false, keepAlive: false)
    }()

    /// Answers a plain-HTTP request on the port that speaks TLS in plain HTTP, `400` saying so, and closes (nginx
    /// answers plain HTTP on its HTTPS port likewise): the client learns why instead of reading a reset.
    private func answerPlainHTTPOnTheTLSPort() {
        let channel = HTTPChannel(fd: fd, tls: nil)
        if channel.writeAll(Self.plainHTTPOnTheTLSPortAnswer) { lingeringClose(channel) }
    }

    /// Arranges for the close that follows (when ``serve()`` returns) to reset the connection: with
    /// `SO_LINGER` on and a zero timeout, `close` discards unsent data and sends an RST.
    private func resetOnClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Writes the head of `response` at once and its body `bytesPerSecond` at a time, in ticks of a
    /// tenth of a second. Waiting polls the socket, so a client that goes away (or a server stop, which
    /// shuts the socket down) ends the drip at once. Returns `false` when the connection is finished.
    private func drip(_ response: HTTPResponse, over channel: HTTPChannel, isHead: Bool, keepAlive: Bool, bytesPerSecond: Int) -> Bool {
        let bytes = HTTPResponseWriter.serialize(response, isHead: isHead, keepAlive: keepAlive)
        let bodyCount = min(bytes.count, HTTPResponseWriter.bodyCount(response, isHead: isHead))
        let headCount = bytes.count - bodyCount
        guard channel.writeAll(Array(bytes[0..<headCount])) else { return false }
        let rate = max(1, bytesPerSecond)
        let chunk = max(1, rate / 10)
        let interval = Double(chunk) / Double(rate)
        var offset = headCount
        while offset < bytes.count {
            guard waitWhileClientStays(seconds: interval) else { return false }
            let end = min(bytes.count, offset + chunk)
            guard channel.writeAll(Array(bytes[offset..<end])) else { return false }
            offset = end
        }
        return true
    }

    /// Waits `seconds` unless the client closes the connection or the server stops; `false` then.
    private func waitWhileClientStays(seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while true {
            if run.isStopping { return false }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return true }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let rc = poll(&p, 1, Int32(min(1000, max(1, (left * 1000).rounded(.up)))))
            if rc < 0, errno != EINTR { return false }
            if rc > 0 {
                if p.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return false }
                // Readable: either the client closed (a peek reads 0 bytes or fails) or it sent more
                // (a pipelined request, read after the answer); then just wait out the tick.
                var byte: UInt8 = 0
                let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
                if n == 0 { return false }
                if n < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return false }
                if n > 0 { return run.waitDelay(max(0, deadline.timeIntervalSinceNow)) }
            }
        }
    }

    /// Sends FIN, then reads and discards what the client still sends for a moment, so that unread
    /// request bytes do not turn the close into a reset that could destroy the response in flight.
    private func lingeringClose(_ channel: HTTPChannel) {
        channel.prepareClose()
        HTTPSocket.shutdownWrite(fd)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        var total = 0
        let deadline = Date(timeIntervalSinceNow: 2)
        while total < 4 * 1024 * 1024, Date() < deadline {
            let n = sink.withUnsafeMutableBytes { HTTPSocket.readSome(fd, into: $0) }
            if n <= 0 { return }
            total += n
        }
    }
}

/// Serialises responses into one buffer.
enum HTTPResponseWriter {
    /// Whether the handler asked for `Connection: close`.
    static func asksToClose(_ response: HTTPResponse) -> Bool {
        response.headers.contains {
            $0.name.caseInsensitiveCompare("Connection") == .orderedSame && $0.value.lowercased().contains("close")
        }
    }

    /// Writes `response` to `channel`: one buffer, or for a body over 1 MiB the head and then the body from
    /// its own storage (a large container is not copied per request). `false` when the write failed.
    static func write(_ response: HTTPResponse, to channel: HTTPChannel, isHead: Bool, keepAlive: Bool) -> Bool {
        let bodyCount = bodyCount(response, isHead: isHead)
        guard bodyCount > 1024 * 1024 else {
            return channel.writeAll(serialize(response, isHead: isHead, keepAlive: keepAlive))
        }
        guard channel.writeAll(serialize(response, isHead: isHead, keepAlive: keepAlive, bodyPrefix: 0)) else { return false }
        return response.body.withUnsafeBytes { channel.writeAll($0) }
    }

    /// How many body bytes ``serialize(_:isHead:keepAlive:bodyPrefix:)`` writes for `response`.
    static func bodyCount(_ response: HTTPResponse, isHead: Bool) -> Int {
        let status = response.status
        let bodyAllowed = !(status < 200 || status == 204 || status == 304)
        return bodyAllowed && !isHead ? response.body.count : 0
    }

    /// Status line, headers (the handler's, minus framing headers, plus `Content-Length`,
    /// `Connection` and `Date`), blank line and body (or its first `bodyPrefix` bytes), as one buffer.
    static func serialize(_ response: HTTPResponse, isHead: Bool, keepAlive: Bool, bodyPrefix: Int? = nil) -> [UInt8] {
        let status = response.status
        let bodyAllowed = !(status < 200 || status == 204 || status == 304)
        let bodyCount = bodyAllowed && !isHead ? (bodyPrefix ?? response.body.count) : 0

        var head = "HTTP/1.1 \(status) \(response.reasonPhrase)\r\n"
        var hasDate = false
        for (name, value) in response.headers {
            let lower = name.lowercased()
            if lower == "content-length" || lower == "connection" || lower == "transfer-encoding" { continue }
            if lower == "date" { hasDate = true }
            // Never let a header value break the framing.
            let safeValue = value.contains(where: { $0 == "\r" || $0 == "\n" })
                ? value.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
                : value
            head += "\(name): \(safeValue)\r\n"
        }
        if bodyAllowed {
            head += "Content-Length: \(response.body.count)\r\n"
        }
        head += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
        if !hasDate { head += "Date: \(httpDate())\r\n" }
        head += "\r\n"

        var bytes: [UInt8] = []
        bytes.reserveCapacity(head.utf8.count + bodyCount)
        bytes.append(contentsOf: head.utf8)
        if bodyCount > 0 {
            response.body.withUnsafeBytes { raw in
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<bodyCount]))
            }
        }
        return bytes
    }

    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The current time as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let day = dayNames[Int(parts.tm_wday) % 7]
        let month = monthNames[Int(parts.tm_mon) % 12]
        return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

/// A connection's phase and deadlines, told to the server run when the phase changes (so that the
/// accept thread can choose an idle connection to close when the cap is reached).
struct PhaseClock {
    let connection: Int
    let run: HTTPServerRun
    private var phase: HTTPConnectionPhase?
    /// When the phase began (monotonic seconds).
    private var since = monotonicSeconds()
    /// When bytes last arrived (monotonic seconds).
    private var lastProgress = monotonicSeconds()
    /// Bytes of the next request arrived that the parser has not seen yet (part of a TLS record): its head deadline
    /// runs, as from a plain first byte. Cleared when a request is handled.
    private var requestBegun = false

    init(connection: Int, run: HTTPServerRun) {
        self.connection = connection
        self.run = run
    }

    /// Enters `next` (no-op when already there), telling the run.
    mutating func enter(_ next: HTTPConnectionPhase) {
        if next == .busy { requestBegun = false }
        guard next != phase else { return }
        phase = next
        since = monotonicSeconds()
        run.connection(connection, entered: next)
    }

    /// Bytes arrived; `requestBegun` when the parser has not seen them yet (part of a TLS record).
    mutating func progressed(requestBegun begun: Bool = false) {
        lastProgress = monotonicSeconds()
        if begun { requestBegun = true }
    }

    /// Enters the phase matching the parser's and returns the seconds left before its deadline.
    mutating func timeLeft(in parserPhase: HTTPRequestParser.Phase) -> TimeInterval {
        let timeouts = run.timeouts
        switch parserPhase == .idle && requestBegun ? .head : parserPhase {
        case .idle:
            enter(.idle)
            return since + timeouts.idle - monotonicSeconds()
        case .head:
            enter(.head)
            return since + timeouts.header - monotonicSeconds()
        case .body:
            enter(.body)
            return lastProgress + timeouts.body - monotonicSeconds()
        case .failed:
            return 0
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFMTLS
import Foundation

/// Answers the TLS connections a server refuses (``HTTPServer/maxConnections`` open and busy) with the `503` a plain
/// connection gets, on one thread for all of them, never on the accepting thread: each refused connection's
/// handshake, answer and close run non-blocking, polled together, within ``seconds`` of its refusal. At most
/// ``capacity`` are under way at once; one refused beyond them is closed without an answer. So a flood over the cap
/// costs one thread and at most ``capacity`` descriptors, and a client that stalls its handshake costs the rest
/// nothing.
///
/// A refused connection whose first byte is a letter (plain HTTP sent to the TLS port) gets, in plain HTTP, the answer
/// it gets under the cap (``plainAnswer``: `400`, the port speaks HTTPS), within the same bounds: a retry would meet
/// the same mistake, so the scheme, not the load, is what its user needs to read.
final class TLSRefusals: @unchecked Sendable {
    // @unchecked: the queue and flags are guarded by `lock`; the sessions belong to the worker thread.
    /// Refused connections answered at once, at most.
    static let capacity = 64

    private let context: TLSContext
    /// The whole answer: status line, headers and body.
    private let answer: [UInt8]
    /// The whole answer, in plain HTTP, to a connection that began with plain HTTP.
    private let plainAnswer: [UInt8]
    /// The time a refused connection has for its handshake, answer and close.
    let seconds: Double

    private let lock = NSCondition()
    private var queued: [Int32] = []
    /// Connections the worker holds (handshake, answer or close under way), counted from when it takes them from
    /// ``queued``: `queued.count + holding` never exceeds ``capacity``.
    private var holding = 0
    private var stopped = false
    private var running = false
    /// Wakes the worker's poll: a connection queued, or a stop.
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1

    init(context: TLSContext, answer: [UInt8], plainAnswer: [UInt8] = HTTPConnection.plainHTTPOnTheTLSPortAnswer, seconds: Double) {
        self.context = context
        self.answer = answer
        self.plainAnswer = plainAnswer
        self.seconds = seconds
    }

    /// Takes `fd`, a connection refused, to answer it (`true`), or closes it at once when ``capacity`` are under way
    /// or the server is stopping (`false`).
    @discardableResult
    func take(_ fd: Int32) -> Bool {
        lock.lock()
        if !running, !stopped {
            var ends: [Int32] = [-1, -1]
            if pipe(&ends) == 0 {
                for end in ends {
                    HTTPSocket.setCloseOnExec(end)
                    HTTPSocket.setNonBlocking(end, true)
                }
                (wakeRead, wakeWrite) = (ends[0], ends[1])
                running = true
                let thread = Thread { self.work() }
                thread.name = "HTTPServer.tlsRefusals"
                thread.start()
            }
        }
        guard running, !stopped, queued.count + holding < Self.capacity else {
            lock.unlock()
            HTTPSocket.closeFD(fd)
            return false
        }
        queued.append(fd)
        wake()
        lock.unlock()
        return true
    }

    /// Closes every connection held and ends the worker; returns once it has ended.
    func stop() {
        lock.lock()
        stopped = true
        if running { wake() }
        while running { lock.wait() }
        lock.unlock()
    }

    /// Under `lock`.
    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// A refused connection in the worker's hands.
    private struct Refused {
        /// `sniff`: waiting for the first byte, which says TLS (a handshake record) or plain HTTP (a method's letter).
        enum Step { case sniff, handshake, answer, plainAnswer, drain }
        let fd: Int32
        /// Made once the first byte said TLS.
        var session: TLSSession?
        let deadline: Double
        var step = Step.sniff
        /// What the socket waits for (`FMTLS_WANT_READ` or `_WRITE`, OpenSSL's or the plain answer's); reading while
        /// sniffing and draining.
        var wants = FMTLS_WANT_READ
        /// How much of ``TLSRefusals/plainAnswer`` is sent.
        var written = 0
    }

    private func work() {
        var held: [Refused] = []
        while true {
            lock.lock()
            let arrived = queued
            queued.removeAll()
            // Counted as held from now on: `take` sees them while they are advanced, not a queue emptied.
            holding += arrived.count
            let stopping = stopped
            lock.unlock()
            let now = monotonicSeconds()
            for fd in arrived {
                // Every step is a call that does not wait, polled with the others.
                HTTPSocket.setNonBlocking(fd, true)
                held.append(Refused(fd: fd, deadline: now + seconds))
            }
            if stopping { break }
            // Advance each; keep those not finished and not past their deadline.
            held = held.compactMap { entry in
                var entry = entry
                guard monotonicSeconds() < entry.deadline, advance(&entry) else {
                    HTTPSocket.closeFD(entry.fd)
                    return nil
                }
                return entry
            }
            lock.lock()
            holding = held.count
            lock.unlock()
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            fds += held.map {
                pollfd(fd: $0.fd, events: $0.wants == FMTLS_WANT_WRITE ? Int16(POLLOUT) : Int16(POLLIN), revents: 0)
            }
            let next = held.map(\.deadline).min().map { max(0, $0 - monotonicSeconds()) }
            let timeout = next.map { Int32(min($0 * 1000, 3_600_000).rounded(.up)) } ?? -1
            _ = poll(&fds, nfds_t(fds.count), timeout)
            var sink = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &sink, sink.count) > 0 {}
        }
        for entry in held { HTTPSocket.closeFD(entry.fd) }
        held.removeAll()
        lock.lock()
        for fd in queued { HTTPSocket.closeFD(fd) }
        queued.removeAll()
        holding = 0
        HTTPSocket.closeFD(wakeRead)
        HTTPSocket.closeFD(wakeWrite)
        running = false
        lock.broadcast()
        lock.unlock()
    }

    /// Takes `entry` as far as it can go without waiting: `false` when it is finished (answered and closed by the
    /// peer, or failed), `true` when it waits for its socket (``Refused/wants``).
    private func advance(_ entry: inout Refused) -> Bool {
        while true {
            switch entry.step {
            case .sniff:
                // Peeked: the handshake still reads every byte.
                var byte: UInt8 = 0
                let n = recv(entry.fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
                if n == 1 {
                    if HTTPConnection.isPlainHTTPStart(byte) {
                        entry.step = .plainAnswer
                        continue
                    }
                    guard let session = TLSSession(context: context, fd: entry.fd) else { return false }
                    entry.session = session
                    entry.step = .handshake
                    continue
                }
                guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
                entry.wants = FMTLS_WANT_READ
                return true
            case .plainAnswer:
                let sent = plainAnswer.withUnsafeBytes { bytes -> Int in
                    guard let base = bytes.baseAddress else { return -1 }
                    return send(entry.fd, base + entry.written, bytes.count - entry.written, HTTPSocket.sendFlags)
                }
                if sent > 0 {
                    entry.written += sent
                    if entry.written < plainAnswer.count { continue }
                    // Answered: FIN, then read what the client still sends until it closes (as below).
                    HTTPSocket.shutdownWrite(entry.fd)
                    entry.step = .drain
                    continue
                }
                guard sent < 0, !plainAnswer.isEmpty, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
                entry.wants = FMTLS_WANT_WRITE
                return true
            case .handshake:
                guard let session = entry.session else { return false }
                let result = session.handshakeStep()
                if result == 1 {
                    entry.step = .answer
                    continue
                }
                guard result == FMTLS_WANT_READ || result == FMTLS_WANT_WRITE else { return false }
                entry.wants = result
                return true
            case .answer:
                guard let session = entry.session else { return false }
                let result = answer.withUnsafeBytes { session.writeStep($0) }
                if result > 0 {
                    // Answered: close_notify and FIN, then read what the client still sends until it closes, so
                    // that unread bytes do not turn the close into a reset that could destroy the answer.
                    session.closeNotify(keepNonBlocking: true)
                    HTTPSocket.shutdownWrite(entry.fd)
                    entry.step = .drain
                    continue
                }
                guard result == FMTLS_WANT_READ || result == FMTLS_WANT_WRITE else { return false }
                entry.wants = result
                return true
            case .drain:
                // At most 64 KiB a turn: a client that keeps sending does not hold the thread from the others.
                var sink = [UInt8](repeating: 0, count: 4096)
                for _ in 0..<16 {
                    let n = recv(entry.fd, &sink, sink.count, 0)
                    if n > 0 { continue }
                    if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
                    return false
                }
                entry.wants = FMTLS_WANT_READ
                return true
            }
        }
    }
}

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
final class TLSRefusals: @unchecked Sendable {
    // @unchecked: the queue and flags are guarded by `lock`; the sessions belong to the worker thread.
    /// Refused connections answered at once, at most.
    static let capacity = 64

    private let context: TLSContext
    /// The whole answer: status line, headers and body.
    private let answer: [UInt8]
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

    init(context: TLSContext, answer: [UInt8], seconds: Double) {
        self.context = context
        self.answer = answer
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
        enum Step { case handshake, answer, drain }
        let fd: Int32
        let session: TLSSession
        let deadline: Double
        var step = Step.handshake
        /// What OpenSSL last wanted (`FMTLS_WANT_READ` or `_WRITE`); reading while draining.
        var wants = FMTLS_WANT_READ
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
                guard let session = TLSSession(context: context, fd: fd) else {
                    HTTPSocket.closeFD(fd)
                    continue
                }
                held.append(Refused(fd: fd, session: session, deadline: now + seconds))
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
            case .handshake:
                let result = entry.session.handshakeStep()
                if result == 1 {
                    entry.step = .answer
                    continue
                }
                guard result == FMTLS_WANT_READ || result == FMTLS_WANT_WRITE else { return false }
                entry.wants = result
                return true
            case .answer:
                let result = answer.withUnsafeBytes { entry.session.writeStep($0) }
                if result > 0 {
                    // Answered: close_notify and FIN, then read what the client still sends until it closes, so
                    // that unread bytes do not turn the close into a reset that could destroy the answer.
                    entry.session.closeNotify(keepNonBlocking: true)
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

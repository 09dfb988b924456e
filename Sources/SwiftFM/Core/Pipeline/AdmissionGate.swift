import Foundation

/// The concurrency cap (``FMConfiguration/maxConcurrentRequests``): at most `limit` HTTP exchanges in
/// flight, logins included; the others wait in FIFO order.
///
/// A waiter whose call ended meanwhile (cancelled, deadline passed) is skipped when its turn comes, so it
/// is never sent. Without a cap there is no gate (``Sender/gate`` is `nil`): calls go straight to the transport.
final class AdmissionGate: Sendable {
    private struct State {
        var inFlight = 0
        var waiting = WaitQueue()
    }
    private let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `work` once a slot is free (at once when one is). `work` must call the `release` it is given
    /// exactly once, when its exchange ended. Returns the place in the queue (to withdraw it when the call ends
    /// first), or `nil` when `work` ran at once.
    @discardableResult
    func enter(_ work: @escaping @Sendable (_ release: @escaping @Sendable () -> Void) -> Void) -> QueueTicket? {
        let release = makeRelease()
        let place = state.withLock { state -> UInt64? in
            guard state.inFlight >= limit else {
                state.inFlight += 1
                return nil
            }
            let place = state.waiting.nextPlace()
            state.waiting.append(place) { work(release) }
            return place
        }
        guard let place else {
            work(release)
            return nil
        }
        return QueueTicket { [self] in state.withLock { $0.waiting.remove(place) } }
    }

    /// The `release` handed to one admitted work. It keeps no guard of its own: each path of the call's send
    /// stage calls it once (the exchange completes once, see ``Exchange``; a work that does not send returns
    /// at once after calling it).
    private func makeRelease() -> @Sendable () -> Void {
        { [self] in handOn() }
    }

    /// One exchange ended: give its slot to the next waiter, or free it.
    private func handOn() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            guard let next = state.waiting.popFirst() else {
                state.inFlight -= 1
                return nil
            }
            return next
        }
        // The next exchange may end at once and hand its slot on from inside this one: no nesting per waiter.
        if let next { Trampoline.run(next) }
    }
}

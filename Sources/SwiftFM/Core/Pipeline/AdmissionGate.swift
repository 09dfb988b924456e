import Foundation

/// The concurrency cap (``FMConfiguration/maxConcurrentRequests``): at most `limit` HTTP exchanges in
/// flight, logins included; the others wait in FIFO order.
///
/// A waiter whose call ended meanwhile (cancelled, deadline passed) is skipped when its turn comes, so it
/// is never sent. With no limit, ``enter(_:)`` runs the work at once.
final class AdmissionGate: Sendable {
    /// A place in the queue; ``withdraw()`` gives it up.
    final class Ticket: Sendable {
        fileprivate let id: UInt64
        fileprivate let gate: AdmissionGate
        fileprivate init(id: UInt64, gate: AdmissionGate) { self.id = id; self.gate = gate }
        /// Leaves the queue without running (the call ended). Does nothing once admitted.
        func withdraw() { gate.withdraw(id) }
    }

    private struct State {
        var inFlight = 0
        var nextID: UInt64 = 0
        var waiting: [(id: UInt64, run: @Sendable () -> Void)] = []
    }
    private let limit: Int?
    private let state = Locked(State())

    init(limit: Int?) {
        self.limit = limit.map { max(1, $0) }
    }

    /// Runs `work` once a slot is free (at once when one is). `work` must call the `release` it is given
    /// exactly once, when its exchange ended.
    @discardableResult
    func enter(_ work: @escaping @Sendable (_ release: @escaping @Sendable () -> Void) -> Void) -> Ticket {
        let release = makeRelease()
        let (ticket, runNow) = state.withLock { state -> (Ticket, Bool) in
            state.nextID += 1
            let ticket = Ticket(id: state.nextID, gate: self)
            if let limit, state.inFlight >= limit {
                state.waiting.append((ticket.id, { work(release) }))
                return (ticket, false)
            }
            state.inFlight += 1
            return (ticket, true)
        }
        if runNow { work(release) }
        return ticket
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
            guard !state.waiting.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            return state.waiting.removeFirst().run
        }
        // The next exchange may end at once and hand its slot on from inside this one: no nesting per waiter.
        if let next { Trampoline.run(next) }
    }

    private func withdraw(_ id: UInt64) {
        state.withLock { state in state.waiting.removeAll { $0.id == id } }
    }
}

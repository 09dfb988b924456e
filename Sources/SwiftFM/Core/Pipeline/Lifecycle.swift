import Foundation

/// A call a shutdown can end (``Lifecycle/stopAll(with:)``).
protocol StoppableCall: AnyObject, Sendable {
    /// Ends the call with `error` unless it ended already.
    func stop(with error: FMError)
}

/// The calls a ``DataAPI`` has in flight, and whether it still admits new ones (graceful shutdown).
final class Lifecycle: Sendable {
    private struct State {
        var shuttingDown = false
        var calls: [ObjectIdentifier: @Sendable (FMError) -> Void] = [:]
        /// Work the shutdown waits for, within its grace, but does not stop: logins in flight (their session
        /// must be logged out).
        var holds = 0
        /// The grace is over: the shutdown no longer waits for logins.
        var graceOver = false
        /// The shutdown logs sessions out (or is complete): a session opened from now on is not held.
        var draining = false
        var drained: (@Sendable (_ finished: @escaping @Sendable () -> Void) -> Void)?
        var finished = false
        var notify: [@Sendable () -> Void] = []
    }
    private let state = Locked(State())

    /// Registers a call; `false` when shutting down (the call must complete with `-1012`).
    /// `duringGrace`: admitted while the shutdown waits for calls in flight, refused once it is complete
    /// (the new-session hook's calls, which a call in flight waits for).
    func admit(_ call: some StoppableCall, duringGrace: Bool = false) -> Bool {
        state.withLock { state in
            guard !state.shuttingDown || (duringGrace && !state.finished && state.drained != nil) else { return false }
            state.calls[ObjectIdentifier(call)] = { [weak call] error in call?.stop(with: error) }
            return true
        }
    }

    /// A call finished.
    func release(_ call: some StoppableCall) {
        let drained = state.withLock { state -> (@Sendable (_ finished: @escaping @Sendable () -> Void) -> Void)? in
            state.calls.removeValue(forKey: ObjectIdentifier(call))
            return Self.takeDrained(&state)
        }
        drained?(finish)
    }

    /// Registers a login in flight: a shutdown waits for it (bounded by the login's own timeout) before it
    /// logs every session out, so the session that login opens is logged out too. Call the returned
    /// closure when the login ended (its token adopted or dropped); calling it again does nothing.
    /// `nil` (nothing registered) when `refusedWhileShuttingDown` and a shutdown began.
    func hold(refusedWhileShuttingDown: Bool) -> (@Sendable () -> Void)? {
        let held = state.withLock { state -> Bool in
            if refusedWhileShuttingDown && state.shuttingDown { return false }
            state.holds += 1
            return true
        }
        guard held else { return nil }
        let released = Once()
        return { [self] in
            guard released.claim() else { return }
            let drained = state.withLock { state -> (@Sendable (_ finished: @escaping @Sendable () -> Void) -> Void)? in
                state.holds -= 1
                return Self.takeDrained(&state)
            }
            drained?(finish)
        }
    }

    /// The shutdown's `drained` when nothing is in flight any more (taken: it runs once).
    private static func takeDrained(_ state: inout State) -> (@Sendable (_ finished: @escaping @Sendable () -> Void) -> Void)? {
        guard state.shuttingDown, state.calls.isEmpty, state.holds == 0 || state.graceOver,
              let drained = state.drained else { return nil }
        state.drained = nil
        state.draining = true
        return drained
    }

    /// `true` once the shutdown logs sessions out: a login that ends now must close its session itself.
    var isDraining: Bool { state.withLock { $0.draining } }

    /// `true` once ``beginShutdown(notify:drained:)`` ran.
    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Stops admitting calls. The first shutdown's `drained` runs once no call is in flight (at once when
    /// none is) and calls its `finished` when the shutdown is complete; every shutdown's `notify` runs then
    /// (at once for a shutdown asked after completion). Returns whether this was the first shutdown.
    func beginShutdown(notify: @escaping @Sendable () -> Void, began: () -> Void = {},
                       drained: @escaping @Sendable (_ finished: @escaping @Sendable () -> Void) -> Void) -> Bool {
        let (first, runNow, notifyNow) = state.withLock { state -> (Bool, Bool, Bool) in
            if state.finished { return (false, false, true) }
            state.notify.append(notify)
            let first = !state.shuttingDown
            state.shuttingDown = true
            guard first else { return (false, false, false) }
            if state.calls.isEmpty && state.holds == 0 {
                state.draining = true
                return (true, true, false)
            }
            state.drained = drained
            return (true, false, false)
        }
        if notifyNow { notify() }
        if first { began() }   // before the drain, which may finish at once
        if runNow { drained(finish) }
        return first
    }

    /// The shutdown is complete: tell everyone who asked.
    private func finish() {
        let notify = state.withLock { state -> [@Sendable () -> Void] in
            state.finished = true
            defer { state.notify = [] }
            return state.notify
        }
        for action in notify { action() }
    }

    /// The grace is over: ends every call still in flight with `error`, and stops waiting for logins.
    func stopAll(with error: FMError) {
        let stops = state.withLock { state -> [@Sendable (FMError) -> Void] in
            state.graceOver = true
            return Array(state.calls.values)
        }
        for stop in stops { stop(error) }
        let drained = state.withLock { Self.takeDrained(&$0) }
        drained?(finish)
    }
}

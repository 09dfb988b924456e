import Foundation

/// The managed session, as a pure value: it decides, the engine acts (outside the lock that guards it).
///
/// Phases: no token; logging in (one login in flight, callers queued as waiters); active (a token and its
/// local expiry, 15 minutes after the last successful use). `Waiter` is generic so the machine can be
/// tested with plain values.
struct SessionStateMachine<Waiter> {
    /// FileMaker closes a session 15 minutes after its last use.
    static var lifetime: TimeInterval { 15 * 60 }
    /// Sliding the expiry is written to the token store only when it moved at least this much, later or (the wall
    /// clock set back) earlier.
    static var persistThreshold: TimeInterval { 30 }
    /// The monotonic clock, in seconds (``used(token:now:uptime:)``).
    static var uptime: TimeInterval { TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000 }

    enum Phase: Equatable {
        case noToken
        case loggingIn(id: UInt64)
        case active(token: String, expiry: Date)
    }

    /// What a caller that needs a token must do.
    enum Acquire: Equatable {
        /// Use this token now.
        case use(String)
        /// Start login `id` (this caller is its first waiter) and report with ``SessionStateMachine/loginFinished(id:token:now:)``.
        case login(id: UInt64)
        /// A login is in flight; the waiter is called when it ends.
        case wait
    }

    /// A write to the token store. Writes are applied in `version` order; an older one is dropped.
    struct Persist: Equatable {
        var token: FMStoredToken?
        var version: UInt64
    }

    private(set) var phase: Phase = .noToken
    private var pending: [UInt64: [Waiter]] = [:]
    private var nextLoginID: UInt64 = 1
    private var persistVersion: UInt64 = 0
    private var persistedExpiry: Date?
    /// The last write of a slid expiry (``used(token:now:uptime:)``): whether it moved the expiry later, and when, on the
    /// monotonic clock. `nil` once the store was written otherwise (a login, a clear).
    private var lastSlide: (later: Bool, at: TimeInterval)?
    /// The last token the server rejected: never adopted again from the store.
    private var lastRejected: String?

    init(stored: FMStoredToken? = nil, now: Date) {
        if let stored, stored.expiry > now {
            phase = .active(token: stored.token, expiry: stored.expiry)
            persistedExpiry = stored.expiry
        }
    }

    /// The token to use without waiting, with its expiry, when the local clock says it is still valid.
    func validToken(now: Date) -> FMStoredToken? {
        if case .active(let token, let expiry) = phase, expiry > now {
            return FMStoredToken(token: token, expiry: expiry)
        }
        return nil
    }

    /// The token to use without waiting, when the local clock says it is still valid.
    func currentToken(now: Date) -> String? {
        if case .active(let token, let expiry) = phase, expiry > now { return token }
        return nil
    }

    /// Whether the session is open: it has a token the local clock says is still valid.
    func isOpen(now: Date) -> Bool {
        if case .active(_, let expiry) = phase { return expiry > now }
        return false
    }

    /// `true` while a login is in flight.
    var isLoggingIn: Bool {
        if case .loggingIn = phase { return true }
        return false
    }

    /// A caller needs a token. `stored` is what the token store holds (read outside the lock), adopted when
    /// there is no valid token in memory. `force` (an explicit login) ignores valid tokens but still joins a
    /// login in flight.
    mutating func acquire(now: Date, stored: FMStoredToken?, force: Bool, waiter: Waiter) -> Acquire {
        switch phase {
        case .active(let token, let expiry) where !force && expiry > now:
            return .use(token)
        case .loggingIn(let id):
            pending[id, default: []].append(waiter)
            return .wait
        case .noToken, .active:
            if !force, let stored, stored.expiry > now, stored.token != lastRejected {
                phase = .active(token: stored.token, expiry: stored.expiry)
                persistedExpiry = stored.expiry
                lastSlide = nil
                return .use(stored.token)
            }
            let id = nextLoginID
            nextLoginID += 1
            phase = .loggingIn(id: id)
            pending[id] = [waiter]
            return .login(id: id)
        }
    }

    /// Login `id` ended with `token` (or `nil` on failure). Returns its waiters — each is told the outcome,
    /// none retries — and the store write. When a logout happened meanwhile the waiters still get the
    /// outcome but the token is not adopted.
    mutating func loginFinished(id: UInt64, token: String?, now: Date) -> (waiters: [Waiter], persist: Persist?) {
        let waiters = pending.removeValue(forKey: id) ?? []
        guard phase == .loggingIn(id: id) else { return (waiters, nil) }
        guard let token else {
            phase = .noToken
            return (waiters, nil)
        }
        return (waiters, adopt(token: token, expiry: now.addingTimeInterval(Self.lifetime)))
    }

    /// Makes `token` the current one (a login done outside the single flight, e.g. with other credentials).
    mutating func adopt(token: String, expiry: Date) -> Persist {
        // A login in flight still reports to its own waiters; its token will not replace this one.
        phase = .active(token: token, expiry: expiry)
        if lastRejected == token { lastRejected = nil }
        persistedExpiry = expiry
        lastSlide = nil
        return nextPersist(FMStoredToken(token: token, expiry: expiry))
    }

    /// The server accepted `token` at `now`: slide the expiry if it is still the current token. `uptime` is the monotonic
    /// clock's reading (seconds), which paces a wall clock that swings back and forth; read only when the expiry is to be
    /// written (once per ``persistThreshold`` at most), not on every call.
    mutating func used(token: String, now: Date, uptime: @autoclosure () -> TimeInterval = Self.uptime) -> Persist? {
        guard case .active(let current, _) = phase, current == token else { return nil }
        let expiry = now.addingTimeInterval(Self.lifetime)
        phase = .active(token: token, expiry: expiry)
        if let persisted = persistedExpiry {
            // Moved earlier as much (the wall clock went back) is written too: the store must not hold a token as valid
            // for as long as the clock went back.
            let moved = expiry.timeIntervalSince(persisted)
            if abs(moved) < Self.persistThreshold { return nil }
            // A write that turns back the way the last one went waits the threshold on the monotonic clock: a wall clock
            // swinging back and forth is one store write per threshold, not one per call (`save` runs on the call's path).
            let at = uptime()
            if let last = lastSlide, last.later != (moved > 0), at - last.at < Self.persistThreshold { return nil }
            lastSlide = (moved > 0, at)
        }
        persistedExpiry = expiry
        return nextPersist(FMStoredToken(token: token, expiry: expiry))
    }

    /// The server rejected `token` (952). Invalidates only if it is still the current token; returns the
    /// store write (a clear) when it was.
    mutating func rejected(token: String) -> Persist? {
        lastRejected = token
        guard case .active(let current, _) = phase, current == token else { return nil }
        phase = .noToken
        persistedExpiry = nil
        lastSlide = nil
        return nextPersist(nil)
    }

    /// Logout: forget the token (returned, so it can be deleted on the server) and clear the store.
    mutating func reset() -> (token: String?, persist: Persist) {
        var token: String?
        if case .active(let current, _) = phase { token = current }
        // A login in flight keeps its waiters (in `pending`) but will not be adopted.
        phase = .noToken
        persistedExpiry = nil
        lastSlide = nil
        if let token { lastRejected = token }
        return (token, nextPersist(nil))
    }

    private mutating func nextPersist(_ token: FMStoredToken?) -> Persist {
        persistVersion += 1
        return Persist(token: token, version: persistVersion)
    }
}

import Foundation

/// The managed session, as a pure value: it decides, the engine acts (outside the lock that guards it).
///
/// Phases: no token; logging in (one login in flight, callers queued as waiters); active (a token and its
/// expiry, 15 minutes after the last successful use). The expiry is kept on two clocks (``SessionTime``): on the
/// elapsed clock, which judges the token held in memory (it counts a sleep, and no wall-clock step moves it), and on the
/// wall clock, which is what the token store holds and what ``validToken(now:)`` reports. `Waiter` is generic so the
/// machine can be tested with plain values.
struct SessionStateMachine<Waiter> {
    /// FileMaker closes a session 15 minutes after its last use.
    static var lifetime: TimeInterval { 15 * 60 }
    /// Sliding the expiry is written to the token store only when it moved at least this much, later or (the wall
    /// clock set back) earlier.
    static var persistThreshold: TimeInterval { 30 }

    enum Phase: Equatable {
        case noToken
        case loggingIn(id: UInt64)
        /// `expiry`: the wall-clock expiry (the token store's); `deadline`: the same moment on the elapsed clock, which
        /// decides whether the token is still valid.
        case active(token: String, expiry: Date, deadline: TimeInterval)
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
    /// The last write of a slid expiry (``used(token:now:)``): whether it moved the expiry later, and when, on the
    /// elapsed clock. `nil` once the store was written otherwise (a login, a clear).
    private var lastSlide: (later: Bool, at: TimeInterval)?
    /// The last token the server rejected: never adopted again from the store.
    private var lastRejected: String?

    init(stored: FMStoredToken? = nil, now: SessionTime) {
        if let stored, stored.expiry > now.wall {
            phase = .active(token: stored.token, expiry: stored.expiry, deadline: now.deadline(for: stored.expiry, lifetime: Self.lifetime))
            persistedExpiry = stored.expiry
        }
    }

    /// The token to use without waiting, with its expiry on the wall clock, when the elapsed clock says it is still
    /// valid. The expiry is the one the store was told, unless the wall clock has stepped since by more than the persist
    /// threshold: then it is now plus what is left on the elapsed clock (`.distantFuture` stays as it is).
    func validToken(now: SessionTime) -> FMStoredToken? {
        guard case .active(let token, let expiry, let deadline) = phase, deadline > now.elapsed else { return nil }
        // A token that never expires here (`.distantFuture`) shows that expiry, not the wall clock plus an infinite time.
        guard deadline.isFinite else { return FMStoredToken(token: token, expiry: expiry) }
        let left = now.wall.addingTimeInterval(deadline - now.elapsed)
        return FMStoredToken(token: token, expiry: abs(left.timeIntervalSince(expiry)) > Self.persistThreshold ? left : expiry)
    }

    /// `stored` (valid on the wall clock) as a machine that took it now would show it (``validToken(now:)``): its expiry,
    /// but never more than a session lifetime from now (an expiry further ahead is another clock's); `.distantFuture`
    /// stays as it is.
    static func taken(_ stored: FMStoredToken, now: SessionTime) -> FMStoredToken {
        SessionStateMachine(stored: stored, now: now).validToken(now: now) ?? stored
    }

    /// The token to use without waiting, when the elapsed clock says it is still valid.
    func currentToken(now: SessionTime) -> String? {
        if case .active(let token, _, let deadline) = phase, deadline > now.elapsed { return token }
        return nil
    }

    /// The token held, valid or not (log redaction, a token given back).
    var heldToken: String? {
        if case .active(let token, _, _) = phase { return token }
        return nil
    }

    /// The token held and its wall-clock expiry, valid or not.
    var held: FMStoredToken? {
        if case .active(let token, let expiry, _) = phase { return FMStoredToken(token: token, expiry: expiry) }
        return nil
    }

    /// Whether the session is open: it has a token the elapsed clock says is still valid.
    func isOpen(now: SessionTime) -> Bool {
        if case .active(_, _, let deadline) = phase { return deadline > now.elapsed }
        return false
    }

    /// `true` while a login is in flight.
    var isLoggingIn: Bool {
        if case .loggingIn = phase { return true }
        return false
    }

    /// Whether `stored` (the token store's value) may be taken now: valid on the wall clock, not rejected, and not the
    /// token held here, which the elapsed clock has judged expired, unless another process slid it since (a later
    /// expiry): a wall clock set back keeps the store's expiry ahead, and the memory knows better.
    func mayAdopt(_ stored: FMStoredToken, now: SessionTime) -> Bool {
        guard stored.expiry > now.wall, stored.token != lastRejected else { return false }
        if case .active(let token, let expiry, _) = phase, token == stored.token { return stored.expiry > expiry }
        return true
    }

    /// A caller needs a token. `stored` is what the token store holds (read outside the lock), adopted when
    /// there is no valid token in memory. `force` (an explicit login) ignores valid tokens but still joins a
    /// login in flight.
    mutating func acquire(now: SessionTime, stored: FMStoredToken?, force: Bool, waiter: Waiter) -> Acquire {
        switch phase {
        case .active(let token, _, let deadline) where !force && deadline > now.elapsed:
            return .use(token)
        case .loggingIn(let id):
            pending[id, default: []].append(waiter)
            return .wait
        case .noToken, .active:
            if !force, let stored, mayAdopt(stored, now: now) {
                phase = .active(token: stored.token, expiry: stored.expiry, deadline: now.deadline(for: stored.expiry, lifetime: Self.lifetime))
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
    mutating func loginFinished(id: UInt64, token: String?, now: SessionTime) -> (waiters: [Waiter], persist: Persist?) {
        let waiters = pending.removeValue(forKey: id) ?? []
        guard phase == .loggingIn(id: id) else { return (waiters, nil) }
        guard let token else {
            phase = .noToken
            return (waiters, nil)
        }
        return (waiters, adopt(token: token, expiry: now.wall.addingTimeInterval(Self.lifetime), now: now))
    }

    /// Makes `token` the current one (a login done outside the single flight, e.g. with other credentials), expiring
    /// at `expiry` on the wall clock (`.distantFuture`: never).
    mutating func adopt(token: String, expiry: Date, now: SessionTime) -> Persist {
        // A login in flight still reports to its own waiters; its token will not replace this one.
        phase = .active(token: token, expiry: expiry, deadline: now.deadline(for: expiry, lifetime: Self.lifetime))
        if lastRejected == token { lastRejected = nil }
        persistedExpiry = expiry
        lastSlide = nil
        return nextPersist(FMStoredToken(token: token, expiry: expiry))
    }

    /// The server accepted `token` at `now`: slide the expiry (on both clocks) if it is still the current token.
    mutating func used(token: String, now: SessionTime) -> Persist? {
        guard case .active(let current, _, _) = phase, current == token else { return nil }
        let expiry = now.wall.addingTimeInterval(Self.lifetime)
        phase = .active(token: token, expiry: expiry, deadline: now.elapsed + Self.lifetime)
        if let persisted = persistedExpiry {
            // Moved earlier as much (the wall clock went back) is written too: the store must not hold a token as valid
            // for as long as the clock went back.
            let moved = expiry.timeIntervalSince(persisted)
            if abs(moved) < Self.persistThreshold { return nil }
            // A write that turns back the way the last one went waits the threshold on the elapsed clock: a wall clock
            // swinging back and forth is one store write per threshold, not one per call (`save` runs on the call's path).
            if let last = lastSlide, last.later != (moved > 0), now.elapsed - last.at < Self.persistThreshold { return nil }
            lastSlide = (moved > 0, now.elapsed)
        }
        persistedExpiry = expiry
        return nextPersist(FMStoredToken(token: token, expiry: expiry))
    }

    /// The server rejected `token` (952). Invalidates only if it is still the current token; returns the
    /// store write (a clear) when it was.
    mutating func rejected(token: String) -> Persist? {
        lastRejected = token
        guard case .active(let current, _, _) = phase, current == token else { return nil }
        phase = .noToken
        persistedExpiry = nil
        lastSlide = nil
        return nextPersist(nil)
    }

    /// Logout: forget the token (returned, so it can be deleted on the server) and clear the store.
    mutating func reset() -> (token: String?, persist: Persist) {
        let token = heldToken
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

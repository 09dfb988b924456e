import Foundation

/// Called once with the token to use, or with the login failure.
typealias SessionWaiter = @Sendable (Result<String, FMError>) -> Void

/// A session token leased for one attempt of a call, from one slot of the pool.
struct SessionLease: Sendable, Equatable {
    var slot: Int
    var token: String
}

/// The session pool (``FMConfiguration/sessionPoolSize``): one ``SessionStateMachine`` per slot, each with
/// its own single-flight login, sliding expiry and recovery, and a count of the calls using it.
///
/// Choice of slot for a new call: an open slot nobody uses (the lowest first, so an idle daemon keeps one
/// session), else a slot not yet open (a new session — unless the server's session cap, learnt from a 956
/// at login, is reached), else the least-busy open slot. A replay after a lost
/// session goes back to its own slot, so a restart costs one login per slot, not one per call. Slot 0's
/// token is the one the token store holds. Nothing here calls out: the engine acts on what it returns.
final class SessionPool: Sendable {
    struct Slot {
        var machine: SessionStateMachine<SessionWaiter>
        var busy = 0
        var isOpen: Bool { machine.phase != .noToken }
    }

    let size: Int
    /// A pool that only ever uses one given token (the new-session hook's calls): no login, no recovery.
    let pinned: Bool
    private let slots: Locked<[Slot]>
    /// The most sessions the server lets this pool hold, learnt from a 956 at login ("maximum number of
    /// sessions"), until when (other clients' sessions close too): no new session is opened past it.
    private let ceiling = Locked<(limit: Int, until: Date)?>(nil)
    /// Sessions opened on the server that no slot holds any more (a login that finished after a logout, a
    /// token replaced by a forced login or an adopted one), with when they were let go: the shutdown logs
    /// them out too. Those let go more than a session lifetime ago are forgotten (the server closed them).
    private let orphans = Locked<[(token: String, since: Date)]>([])

    /// The largest pool (``FMConfiguration/sessionPoolSize`` is clamped to it): each slot is allocated up front.
    static let maximumSize = 1_000

    init(size: Int, stored: FMStoredToken?, now: Date) {
        self.size = min(max(1, size), Self.maximumSize)
        self.pinned = false
        var all = (0..<self.size).map { _ in Slot(machine: SessionStateMachine(now: now)) }
        all[0].machine = SessionStateMachine(stored: stored, now: now)
        slots = Locked(all)
    }

    /// A pool of one slot holding `token` for good.
    init(pinnedTo token: String) {
        size = 1
        pinned = true
        var machine = SessionStateMachine<SessionWaiter>(now: .distantPast)
        _ = machine.adopt(token: token, expiry: .distantFuture)
        slots = Locked([Slot(machine: machine)])
    }

    /// Picks a slot for a call and, when its token is valid, leases it at once (busy count taken).
    /// Otherwise returns the slot only; the caller then calls ``acquire(slot:now:stored:force:waiter:)``.
    func pick(preferring preferred: Int?, force: Bool, now: Date) -> (slot: Int, lease: SessionLease?) {
        let limit = ceiling.withLock { ceiling -> Int in
            guard let current = ceiling, current.until > now else { ceiling = nil; return .max }
            return current.limit
        }
        return slots.withLock { slots in
            let slot = preferred.map { min(max(0, $0), slots.count - 1) } ?? Self.choose(slots, limit: limit)
            if !force, let valid = slots[slot].machine.validToken(now: now) {
                slots[slot].busy += 1
                return (slot, SessionLease(slot: slot, token: valid.token))
            }
            return (slot, nil)
        }
    }

    private static func choose(_ slots: [Slot], limit: Int) -> Int {
        if let idle = slots.indices.first(where: { slots[$0].isOpen && slots[$0].busy == 0 }) { return idle }
        let open = slots.indices.filter { slots[$0].isOpen }
        if open.count < limit, let closed = slots.indices.first(where: { !slots[$0].isOpen }) { return closed }
        return open.min { slots[$0].busy < slots[$1].busy } ?? 0
    }

    /// The server refused a new session (956): open no more than the sessions open now (at least one)
    /// until `until`.
    func sessionRefused(until: Date) {
        let open = slots.withLock { slots in slots.filter(\.isOpen).count }
        ceiling.withLock { ceiling in
            ceiling = (max(1, min(open, ceiling?.limit ?? .max)), until)
        }
    }

    /// Takes a busy count on `slot` and asks its machine for a token (see ``SessionStateMachine/acquire(now:stored:force:waiter:)``).
    func acquire(slot: Int, now: Date, stored: FMStoredToken?, force: Bool, waiter: @escaping SessionWaiter)
        -> SessionStateMachine<SessionWaiter>.Acquire {
        let (action, replaced) = slots.withLock { slots -> (SessionStateMachine<SessionWaiter>.Acquire, String?) in
            slots[slot].busy += 1
            let current = slots[slot].machine.validToken(now: now)?.token
            let action = slots[slot].machine.acquire(now: now, stored: stored, force: force, waiter: waiter)
            if case .login = action { return (action, current) }   // a forced login replaces a valid token
            return (action, nil)
        }
        if let replaced { letGo(replaced, now: now) }
        return action
    }

    /// `token` is open on the server but no slot holds it any more.
    func letGo(_ token: String, now: Date) {
        orphans.withLock { orphans in
            orphans.removeAll { now.timeIntervalSince($0.since) > SessionStateMachine<SessionWaiter>.lifetime || $0.token == token }
            orphans.append((token, now))
        }
    }

    /// A call stopped using `slot`.
    func release(slot: Int) {
        slots.withLock { slots in slots[slot].busy = max(0, slots[slot].busy - 1) }
    }

    /// Login `id` of `slot` ended.
    func loginFinished(slot: Int, id: UInt64, token: String?, now: Date)
        -> (waiters: [SessionWaiter], persist: SessionStateMachine<SessionWaiter>.Persist?) {
        slots.withLock { $0[slot].machine.loginFinished(id: id, token: token, now: now) }
    }

    /// The server accepted `token` on `slot`: slide its expiry.
    func used(slot: Int, token: String, now: Date) -> SessionStateMachine<SessionWaiter>.Persist? {
        slots.withLock { $0[slot].machine.used(token: token, now: now) }
    }

    /// The server no longer knows `token` (952, 112, an HTML 401): forget it when it is still the slot's.
    func rejected(slot: Int, token: String) -> SessionStateMachine<SessionWaiter>.Persist? {
        guard !pinned else { return nil }
        return slots.withLock { $0[slot].machine.rejected(token: token) }
    }

    /// The slot holding `token`, if any.
    func slot(holding token: String) -> Int? {
        slots.withLock { slots in
            slots.indices.first { slots[$0].machine.validToken(now: .distantPast)?.token == token }
        }
    }

    /// Makes `token` slot 0's current token.
    func adopt(token: String, expiry: Date, now: Date) -> SessionStateMachine<SessionWaiter>.Persist {
        let (persist, replaced) = slots.withLock { slots -> (SessionStateMachine<SessionWaiter>.Persist, String?) in
            let current = slots[0].machine.validToken(now: now)?.token
            return (slots[0].machine.adopt(token: token, expiry: expiry), current == token ? nil : current)
        }
        if let replaced { letGo(replaced, now: now) }
        return persist
    }

    /// Forgets slot 0's token (returned) and clears the store.
    func resetPrimary() -> (token: String?, persist: SessionStateMachine<SessionWaiter>.Persist) {
        slots.withLock { $0[0].machine.reset() }
    }

    /// Forgets every slot's token and every session let go; returns them (to log them out) and slot 0's
    /// store write.
    func resetAll() -> (tokens: [String], persist: SessionStateMachine<SessionWaiter>.Persist?) {
        let lost = orphans.withLock { orphans -> [String] in
            defer { orphans = [] }
            return orphans.map(\.token)
        }
        let (held, persist) = slots.withLock { slots -> ([String], SessionStateMachine<SessionWaiter>.Persist?) in
            var tokens: [String] = []
            var persist: SessionStateMachine<SessionWaiter>.Persist?
            for index in slots.indices {
                let (token, write) = slots[index].machine.reset()
                if let token { tokens.append(token) }
                if index == 0 { persist = write }
            }
            return (tokens, persist)
        }
        return (held + lost.filter { !held.contains($0) }, persist)
    }

    /// The valid token of `slot` by the local clock (`.distantPast`: any held token).
    func validToken(slot: Int, now: Date) -> FMStoredToken? {
        slots.withLock { $0[slot].machine.validToken(now: now) }
    }

    /// Every token held, whatever its local expiry (for log redaction).
    var heldTokens: [String] {
        slots.withLock { $0.compactMap { $0.machine.validToken(now: .distantPast)?.token } }
    }

    /// `true` while `slot` is logging in.
    func isLoggingIn(slot: Int) -> Bool {
        slots.withLock { $0[slot].machine.isLoggingIn }
    }

    /// How many calls use each slot now (tests and diagnostics).
    var busyCounts: [Int] { slots.withLock { $0.map(\.busy) } }
}

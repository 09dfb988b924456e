import Foundation

/// Called once with the token to use, or with the login failure (an explicit login's waiters).
typealias SessionWaiter = @Sendable (Result<String, FMError>) -> Void

/// Where a ``SessionLease`` reports: the session stage.
protocol SessionLeaseOwner: AnyObject, Sendable {
    /// The lease is given back (its latch claimed once already by the pool).
    func giveBack(_ lease: SessionLease)
    /// The server accepted the lease's token.
    func used(_ lease: SessionLease)
    /// The server no longer knows the lease's token (`code`: what it answered).
    func rejected(_ lease: SessionLease, code: String?)
}

/// One pool session leased by one call. It releases itself: ``release()`` gives it back to the pool once
/// (again does nothing; the latch is a ``Once``), ``used()`` and ``rejected(code:)`` tell the stage what the
/// server said of its token. A lease made by the pool without an owner (the pool's own tests) reports nowhere.
final class SessionLease: Sendable {
    /// The pool slot.
    let slot: Int
    /// The token the call sends.
    let token: String
    private let returned = Once()
    private let owner: (any SessionLeaseOwner)?

    init(slot: Int, token: String, owner: (any SessionLeaseOwner)? = nil) {
        self.slot = slot
        self.token = token
        self.owner = owner
    }

    /// Gives the session back: it goes to the next waiting call. Once; again does nothing.
    func release() {
        owner?.giveBack(self)
    }

    /// The server accepted the token: its expiry slides.
    func used() {
        owner?.used(self)
    }

    /// The server no longer knows the token (952, 112, an HTML 401): the pool forgets it when it is still the slot's.
    func rejected(code: String?) {
        owner?.rejected(self, code: code)
    }

    /// Marks the lease returned; `false` when it was returned already (``SessionPool/giveBack(_:now:stored:)``).
    func markReturned() -> Bool {
        returned.claim()
    }
}

/// The session pool (``FMConfiguration/sessionPoolSize``), shaped like FileMaker: the server runs one
/// request per session at a time, so the pool lends each open session to one call at a time.
///
/// A call asks for a lease and waits in FIFO order (under its own deadline) for the first free session.
/// Sessions are opened on demand — one login per waiting call that no free session or login in flight will
/// serve, up to the pool size — and a call never waits for one particular login: whichever session frees
/// first (an open one given back, or a login that ends) goes to the first waiter. A login that fails while
/// other sessions are open or logging in leaves the waiters waiting for those; with none left, the waiters
/// get the failure. Sessions idle longer than the idle timeout are closed (logged out) when the pool is
/// next touched. When the server refuses more sessions (956, its session cap), no new session is opened
/// for a while and waiters share the open sessions (least busy first) rather than wait for one to free.
///
/// Slot 0's token is the one the token store holds. Nothing here calls out: every method returns a
/// ``Plan`` that the session stage carries out, outside the lock.
final class SessionPool: Sendable {
    struct Slot {
        var machine: SessionStateMachine<SessionWaiter>
        /// Calls holding a lease on this slot.
        var busy = 0
        /// When the slot was last leased or given back (its idle time starts here), on the elapsed clock.
        var lastUse: TimeInterval
        /// The login the pool started for waiters (not an explicit one), while it is in flight.
        var poolLogin: UInt64?
        /// When the current token was adopted, in ``State/openings`` order.
        var opened: UInt64 = 0
    }

    /// A call waiting for a lease (its id, for ``SessionPool/withdraw(_:)``, is its number in ``State/waiters``).
    struct Waiter {
        /// A call replayed after a lost session (and its retries) takes only a session opened after the pool
        /// last lost one (`opened > after`, with `after` the pool's ``State/lostMark`` when the call queued):
        /// another slot's token may be just as dead (a server restart) and a replay happens once. The mark is
        /// the loss, not the moment the call queues: the session opened for the calls waiting while the replay
        /// gave its own back is fresh, and with one slot nothing else would ever open. The slot whose loss set
        /// the mark is free to open a newer session, so such a call never waits for one that cannot come.
        var after: UInt64?
        /// The stage the lease reports to.
        var owner: (any SessionLeaseOwner)?
        var deliver: @Sendable (Result<SessionLease, FMError>) -> Void
    }

    /// What the stage must do after a pool change, outside the lock.
    struct Plan {
        /// Leases to hand to waiting calls.
        var grants: [(Waiter, SessionLease)] = []
        /// Waiting calls that get a login's failure.
        var failures: [(Waiter, FMError)] = []
        /// Logins to start: `(slot, id)`, reported with ``SessionPool/loginFinished(slot:id:result:now:stored:)``.
        var logins: [(slot: Int, id: UInt64)] = []
        /// Sessions to log out (closed for idleness), with how long each was idle.
        var logouts: [(slot: Int, token: String, idle: TimeInterval)] = []
        /// A token-store write (slot 0).
        var persist: SessionStateMachine<SessionWaiter>.Persist?
        /// Calls wait while a pause keeps the pool from opening the session they need: call
        /// ``SessionPool/wake(now:stored:)`` after this many seconds, when the pause ends (nothing else may
        /// touch the pool by then).
        var wake: TimeInterval?
        /// Sessions other than the first are open and unused: call ``SessionPool/sweep(now:)`` after this many
        /// seconds, when the first of them passes the idle timeout (a pool grown for a burst shrinks back even when
        /// no call follows).
        var sweep: TimeInterval?

        var isEmpty: Bool {
            grants.isEmpty && failures.isEmpty && logins.isEmpty && logouts.isEmpty && persist == nil && wake == nil && sweep == nil
        }
    }

    /// Everything the pool decides on, behind ``state``'s lock.
    struct State {
        var slots: [Slot]
        /// The calls waiting for a lease, in the package's one FIFO: replays at the front.
        var waiters = WaitQueue<Waiter>()
        /// Tokens adopted so far (logins, the store, explicit adoptions).
        var openings: UInt64 = 0
        /// ``openings`` when the server last lost a session the pool held (its token rejected): every session
        /// opened since (`opened > lostMark`) is newer than that loss.
        var lostMark: UInt64 = 0
        /// The most sessions the pool opens, and until when (on the elapsed clock): learnt from a 956 at login (the
        /// server's session cap), or a failed login while other sessions are open (no login storm).
        /// `sharing`: the cap is the server's (956), so waiters share the open sessions meanwhile.
        var ceiling: (limit: Int, until: TimeInterval, sharing: Bool)?
        /// Sessions opened on the server that no slot holds any more (a login that finished after a logout, a
        /// token replaced by a forced login or an adopted one), with when they were let go (on the elapsed clock), the
        /// most recent last: the shutdown logs them out too. Those let go more than a session lifetime ago are forgotten
        /// (the server closed them), and past ``SessionPool/maxLetGo`` the oldest are (a daemon that logs in before every
        /// call must not grow this for weeks).
        var orphans: [(token: String, since: TimeInterval)] = []
        /// A ``Plan/wake`` is pending: one timer at a time.
        var wakeArmed = false
        /// A ``Plan/sweep`` is pending: one timer at a time.
        var sweepArmed = false
        /// A pinned pool whose session was given up (its new-session hook failed or outlived the bound of the
        /// session's opening): every lease fails at once with this error (``close(with:)``).
        var closed: FMError?
    }

    let size: Int
    /// A pool that only ever uses one given token (the new-session hook's calls): no login, no recovery.
    let pinned: Bool
    /// Sessions idle longer than this are closed (``FMConfiguration/sessionIdleTimeout``).
    let idleTimeout: TimeInterval
    /// The most calls one session serves at once (``FMConfiguration/maxCallsPerSession``, 1 by default).
    let callsPerSession: Int
    /// Changed only by the pool's methods, under its lock (the tests read it through their own observers).
    let state: Locked<State>

    /// The largest pool (``FMConfiguration/sessionPoolSize`` is clamped to it): each slot is allocated up front.
    static let maximumSize = 1_000
    /// How long the pool opens no further session after a login failed while other sessions were open.
    static let failedLoginPause: TimeInterval = 5
    /// The most sessions let go (``State/orphans``) the pool remembers for the shutdown's logouts: older ones are
    /// left to the server, which closes a session 15 minutes after its last use.
    static let maxLetGo = 256

    init(size: Int, idleTimeout: TimeInterval = 300, callsPerSession: Int = 1, stored: FMStoredToken?, now: SessionTime) {
        self.size = min(max(1, size), Self.maximumSize)
        self.pinned = false
        self.callsPerSession = max(1, callsPerSession)
        self.idleTimeout = idleTimeout.isNaN ? 300 : max(0, idleTimeout)
        var all = (0..<self.size).map { _ in Slot(machine: SessionStateMachine(now: now), lastUse: now.elapsed) }
        all[0].machine = SessionStateMachine(stored: stored, now: now)
        state = Locked(State(slots: all))
    }

    /// A pool of one slot holding `token` for good.
    init(pinnedTo token: String) {
        size = 1
        pinned = true
        idleTimeout = .infinity
        callsPerSession = 1
        let never = SessionTime(wall: .distantPast, elapsed: 0)
        var machine = SessionStateMachine<SessionWaiter>(now: never)
        _ = machine.adopt(token: token, expiry: .distantFuture, now: never)
        state = Locked(State(slots: [Slot(machine: machine, lastUse: 0)]))
    }

    // MARK: leases

    /// A call wants a session. With nobody waiting and a session free for it, it takes the session at once:
    /// the plan's one grant is its lease, and no id comes back (nothing to withdraw). Otherwise it joins the
    /// waiters (at the front for a call replayed after a lost session, which was admitted before the calls queued
    /// behind it, and then takes only a session opened since the pool last lost one) and the pool hands out
    /// what it can. `stored` is the token store's value (read outside the lock), adopted by slot 0 when it has
    /// no valid token. Returns the waiter's id (for ``withdraw(_:)``) when the call was queued, and the plan. A closed
    /// pool (``close(with:)``) fails the call at once: the plan's one failure, and no id.
    func lease(now: SessionTime, stored: FMStoredToken?, front: Bool, owner: (any SessionLeaseOwner)? = nil,
               deliver: @escaping @Sendable (Result<SessionLease, FMError>) -> Void) -> (id: UInt64?, plan: Plan) {
        state.withLock { state in
            let waiter = Waiter(after: front ? state.lostMark : nil, owner: owner, deliver: deliver)
            if let closed = state.closed {
                var plan = Plan()
                plan.failures = [(waiter, closed)]
                return (nil, plan)
            }
            if state.waiters.isEmpty {
                Self.endCeiling(&state, now: now)
                if let slot = Self.slot(for: waiter, in: state, now: now, perSession: callsPerSession),
                   let lease = Self.take(slot, for: waiter, in: &state, now: now) {
                    var plan = Plan()
                    plan.grants = [(waiter, lease)]
                    Self.closeIdle(&state, now: now, pinned: pinned, idleTimeout: idleTimeout, into: &plan)
                    return (nil, plan)
                }
            }
            let id = state.waiters.nextPlace()
            if front { state.waiters.prepend(id, waiter) } else { state.waiters.append(id, waiter) }
            return (id, Self.rebalance(&state, now: now, stored: stored, grow: true, pinned: pinned, idleTimeout: idleTimeout, perSession: callsPerSession))
        }
    }

    /// How many sessions hold a valid token, and how many of those are leased (metrics).
    func usage(now: SessionTime) -> (open: Int, busy: Int) {
        state.withLock { state in
            var (open, busy) = (0, 0)
            for slot in state.slots where slot.machine.isOpen(now: now) {
                open += 1
                if slot.busy > 0 { busy += 1 }
            }
            return (open, busy)
        }
    }

    /// Whether the call waiting under `id` waits for one of `slots`, sessions being opened (their new-session hook runs):
    /// it is among the first waiting calls, as many as those of `slots` still opening (whichever session frees goes to
    /// the first waiter, so had they been open, it would have had one), or no session is open at all (every session
    /// it can get is one of `slots` still being opened, none a login still out). A call queued behind those while an
    /// open session is busy, or a login not answered yet is being made, waits for that session as much: `false`, as for
    /// a call no longer waiting. O(waiting calls): asked once, when a deadline passes.
    func waitDependsOnOpening(_ id: UInt64, slots: Set<Int>, now: SessionTime) -> Bool {
        state.withLock { state in
            let opening = slots.filter { state.slots.indices.contains($0) && state.slots[$0].machine.isLoggingIn }.count
            guard opening > 0, state.waiters.contains(id) else { return false }
            let loggingInOtherwise = state.slots.indices.contains { !slots.contains($0) && state.slots[$0].machine.isLoggingIn }
            if !loggingInOtherwise, !state.slots.contains(where: { $0.machine.isOpen(now: now) }) { return true }
            var ahead = 0
            for (number, _) in state.waiters {
                if number == id { break }
                ahead += 1
                if ahead >= opening { return false }
            }
            return ahead < opening
        }
    }

    /// A waiting call ended (cancelled, out of time): it leaves the queue (O(1)).
    func withdraw(_ id: UInt64) {
        state.withLock { state in state.waiters.remove(id) }
    }

    /// Gives a pinned pool's session up (its new-session hook failed, or outlived the bound of the session's opening):
    /// from now on every lease fails at once with `error`, and the calls waiting for the session get it now (the plan's
    /// failures).
    func close(with error: FMError) -> Plan {
        state.withLock { state in
            state.closed = error
            var plan = Plan()
            plan.failures = state.waiters.removeAll().map { ($0, error) }
            return plan
        }
    }

    /// A call gives its lease back: the session goes to the next waiter, or idles.
    func giveBack(_ lease: SessionLease, now: SessionTime, stored: FMStoredToken?) -> Plan {
        guard lease.markReturned() else { return Plan() }
        return state.withLock { state in
            if lease.slot < state.slots.count {
                state.slots[lease.slot].busy = max(0, state.slots[lease.slot].busy - 1)
                state.slots[lease.slot].lastUse = max(now.elapsed, state.slots[lease.slot].lastUse)
            }
            return Self.rebalance(&state, now: now, stored: stored, grow: true, pinned: pinned, idleTimeout: idleTimeout, perSession: callsPerSession)
        }
    }

    /// Login `id` of `slot` ended. Returns the explicit login's waiters (each told the outcome), whether the
    /// token was adopted, and the plan (leases for waiting calls, or the failure for them when no other
    /// session can serve them).
    func loginFinished(slot: Int, id: UInt64, result: Result<String, FMError>, now: SessionTime, stored: FMStoredToken?)
        -> (waiters: [SessionWaiter], adopted: Bool, plan: Plan) {
        state.withLock { state in
            let token = try? result.get()
            let started = state.slots[slot].poolLogin == id
            if started { state.slots[slot].poolLogin = nil }
            var (waiters, persist) = state.slots[slot].machine.loginFinished(id: id, token: token, now: now)
            if started, !waiters.isEmpty { waiters.removeFirst() }   // the pool's own placeholder
            var plan = Plan()
            plan.persist = slot == 0 ? persist : nil
            if persist != nil {
                state.slots[slot].lastUse = now.elapsed
                state.openings += 1
                state.slots[slot].opened = state.openings
            }
            if case .failure(let error) = result {
                let open = state.slots.filter { $0.machine.isOpen(now: now) }.count
                let logging = state.slots.contains { $0.machine.isLoggingIn }
                if error.code == "956" {
                    // The server's session cap: keep to the sessions open now (at least one) for a session lifetime.
                    let limit = max(1, min(open, state.ceiling?.limit ?? .max))
                    state.ceiling = (limit, now.elapsed + SessionStateMachine<SessionWaiter>.lifetime, true)
                } else if open > 0, state.ceiling?.sharing != true {
                    state.ceiling = (open, now.elapsed + Self.failedLoginPause, false)
                }
                if open == 0 && !logging {
                    // Nothing else can serve the waiters: they get the failure (their calls decide on a retry).
                    plan.failures = state.waiters.removeAll().map { ($0, error) }
                } else if !logging {
                    // A replay takes only a session opened after its own was lost: the sessions open now (as
                    // dead, after a restart, as the one it lost) cannot serve it. It gets the failure too.
                    let stranded = Self.stranded(state, now: now)
                    let failed = state.waiters.filter { stranded.contains($0.number) }
                    for (number, _) in failed { state.waiters.remove(number) }
                    plan.failures = failed.map { ($0.item, error) }
                }
            }
            var rest = Self.rebalance(&state, now: now, stored: stored, grow: token != nil, pinned: pinned, idleTimeout: idleTimeout, perSession: callsPerSession)
            if token == nil, !state.waiters.isEmpty, let ceiling = state.ceiling, !ceiling.sharing, ceiling.until > now.elapsed, !state.wakeArmed {
                // The waiters wait for the open sessions; if none frees before the pause ends, the pool opens one then.
                state.wakeArmed = true
                rest.wake = ceiling.until - now.elapsed
            }
            plan.grants = rest.grants
            plan.logins = rest.logins
            plan.logouts = rest.logouts
            plan.persist = rest.persist ?? plan.persist
            plan.wake = rest.wake
            plan.sweep = rest.sweep
            return (waiters, persist != nil, plan)
        }
    }

    /// Hands free sessions to waiters in order, closes sessions idle too long, opens sessions for waiters
    /// nothing will serve. Called under the lock.
    private static func rebalance(_ state: inout State, now: SessionTime, stored: FMStoredToken?, grow: Bool,
                                  pinned: Bool, idleTimeout: TimeInterval, perSession: Int) -> Plan {
        var plan = Plan()
        endCeiling(&state, now: now)
        var stored = stored
        growing: while true {
            grant(&state, now: now, perSession: perSession, into: &plan)
            guard grow, !pinned, !state.waiters.isEmpty else { break }
            let logging = state.slots.filter { $0.poolLogin != nil }.count
            guard state.waiters.count > logging else { break }
            let held = state.slots.filter { $0.machine.isLoggingIn || $0.machine.isOpen(now: now) }.count
            guard let slot = state.slots.indices.first(where: {
                      state.slots[$0].busy == 0 && !state.slots[$0].machine.isLoggingIn && !state.slots[$0].machine.isOpen(now: now)
                  })
            else { break growing }
            // The pause after a failed login (not the server's session cap) holds back new sessions while open ones
            // can serve the waiters; a replay that none can serve still gets its login (its call's retries pace it).
            let stranded = state.ceiling?.sharing == false ? Self.stranded(state, now: now).count : 0
            guard held < (state.ceiling?.limit ?? .max) || logging < stranded else {
                // Paused: look again when the pause ends, whatever else happens (or not) meanwhile.
                if let ceiling = state.ceiling, !ceiling.sharing, !state.wakeArmed {
                    state.wakeArmed = true
                    plan.wake = max(0, ceiling.until - now.elapsed)
                }
                break growing
            }
            let offered = slot == 0 ? stored : nil
            if slot == 0 { stored = nil }
            switch state.slots[slot].machine.acquire(now: now, stored: offered, force: false, waiter: { _ in }) {
            case .use:
                state.slots[slot].lastUse = now.elapsed   // the stored token: open now, handed out by the next grant
                state.openings += 1
                state.slots[slot].opened = state.openings
            case .login(let id):
                state.slots[slot].poolLogin = id
                plan.logins.append((slot, id))
            case .wait:
                break growing
            }
        }
        closeIdle(&state, now: now, pinned: pinned, idleTimeout: idleTimeout, into: &plan)
        armSweep(&state, now: now, pinned: pinned, idleTimeout: idleTimeout, into: &plan)
        return plan
    }

    /// Forgets the pause of ``State/ceiling`` once it is over. The pause is timed on the elapsed clock, which no
    /// wall-clock step moves; one that ends further ahead than its own length means that clock went back (a test's clock
    /// that follows the wall clock): it then lasts its length from now.
    private static func endCeiling(_ state: inout State, now: SessionTime) {
        guard let ceiling = state.ceiling else { return }
        guard ceiling.until > now.elapsed else { return state.ceiling = nil }
        let length = ceiling.sharing ? SessionStateMachine<SessionWaiter>.lifetime : failedLoginPause
        if ceiling.until - now.elapsed > length { state.ceiling?.until = now.elapsed + length }
    }

    /// With nobody waiting, closes the sessions idle longer than the idle timeout (none of a pinned pool), timed on the
    /// elapsed clock. A session last used "in the future" means that clock went back (a test's clock that follows the
    /// wall clock): its idle time counts from now, not from when the clock has caught up.
    /// `keepingFirst`: the first session stays (the idle sweep's close: an idle daemon holds one session).
    private static func closeIdle(_ state: inout State, now: SessionTime, pinned: Bool, idleTimeout: TimeInterval,
                                  keepingFirst: Bool = false, into plan: inout Plan) {
        guard !pinned, state.waiters.isEmpty, idleTimeout.isFinite else { return }
        for index in state.slots.indices where state.slots[index].busy == 0 && !(keepingFirst && index == 0) {
            let idle = now.elapsed - state.slots[index].lastUse
            if idle < 0 { state.slots[index].lastUse = now.elapsed }
            guard idle > idleTimeout, state.slots[index].machine.isOpen(now: now) else { continue }
            let (token, persist) = state.slots[index].machine.reset()
            if let token { plan.logouts.append((index, token, idle)) }
            if index == 0 { plan.persist = persist }
        }
    }

    /// Waiting replays that no open session can serve (each takes only a session opened after its own was lost).
    private static func stranded(_ state: State, now: SessionTime) -> Set<UInt64> {
        var ids = Set<UInt64>()
        for (number, waiter) in state.waiters {
            guard let after = waiter.after else { continue }
            if !state.slots.contains(where: { $0.opened > after && $0.machine.isOpen(now: now) }) { ids.insert(number) }
        }
        return ids
    }

    /// With nobody waiting and no sweep pending, arms one (``Plan/sweep``) for when the first open, unused session
    /// other than the first passes the idle timeout. (With calls waiting, the next session given back arms it.)
    private static func armSweep(_ state: inout State, now: SessionTime, pinned: Bool, idleTimeout: TimeInterval, into plan: inout Plan) {
        guard !pinned, idleTimeout.isFinite, !state.sweepArmed, state.closed == nil, state.waiters.isEmpty else { return }
        var earliest: TimeInterval?
        for index in state.slots.indices.dropFirst() where state.slots[index].busy == 0 && state.slots[index].machine.isOpen(now: now) {
            let due = max(now.elapsed, state.slots[index].lastUse) + idleTimeout
            earliest = min(earliest ?? due, due)
        }
        guard let earliest else { return }
        state.sweepArmed = true
        plan.sweep = earliest - now.elapsed + sweepMargin
    }

    /// How long after a session's idle timeout the sweep looks (it closes sessions idle for longer than the timeout).
    static let sweepMargin: TimeInterval = 0.05

    /// The idle sweep's timer fired (``Plan/sweep``): with nobody waiting, logs out the sessions other than the first
    /// that have been unused for longer than the idle timeout, and arms the next sweep for those still open.
    func sweep(now: SessionTime) -> Plan {
        state.withLock { state in
            state.sweepArmed = false
            var plan = Plan()
            Self.closeIdle(&state, now: now, pinned: pinned, idleTimeout: idleTimeout, keepingFirst: true, into: &plan)
            Self.armSweep(&state, now: now, pinned: pinned, idleTimeout: idleTimeout, into: &plan)
            return plan
        }
    }

    /// The pause of a ``Plan/wake`` ended: hands out and opens sessions again.
    func wake(now: SessionTime, stored: FMStoredToken?) -> Plan {
        state.withLock { state in
            state.wakeArmed = false
            return Self.rebalance(&state, now: now, stored: stored, grow: true, pinned: pinned, idleTimeout: idleTimeout, perSession: callsPerSession)
        }
    }

    /// Gives free open sessions to the waiters in order (see ``slot(for:in:now:perSession:)``); a waiter that
    /// none serves stops the walk, except a replay waiting for a fresh session: the calls behind it may take
    /// the others.
    private static func grant(_ state: inout State, now: SessionTime, perSession: Int, into plan: inout Plan) {
        var taken: [UInt64] = []
        defer { for number in taken { state.waiters.remove(number) } }
        for (number, waiter) in state.waiters {
            guard let slot = slot(for: waiter, in: state, now: now, perSession: perSession),
                  let lease = take(slot, for: waiter, in: &state, now: now) else {
                if waiter.after != nil { continue }
                return
            }
            taken.append(number)   // leaves the queue once the walk ends
            plan.grants.append((waiter, lease))
        }
    }

    /// The session `waiter` takes now, if any: the lowest free open one (so an idle daemon keeps one session;
    /// for a replay, one opened after its own was lost); with several calls per session, the least busy below
    /// that limit; past the server's session cap (and no login in flight), the least busy open one.
    private static func slot(for waiter: Waiter, in state: State, now: SessionTime, perSession: Int) -> Int? {
        let after = waiter.after ?? 0
        var (open, leastBusy) = (0, nil as Int?)
        for index in state.slots.indices {
            let slot = state.slots[index]
            guard slot.machine.isOpen(now: now), after == 0 || slot.opened > after else { continue }
            if slot.busy == 0 { return index }
            open += 1
            if leastBusy.map({ slot.busy < state.slots[$0].busy }) ?? true { leastBusy = index }
        }
        guard let leastBusy else { return nil }
        if state.slots[leastBusy].busy < perSession { return leastBusy }
        if let ceiling = state.ceiling, ceiling.sharing, ceiling.until > now.elapsed, open >= ceiling.limit,
           !state.slots.contains(where: { $0.machine.isLoggingIn }) {
            return leastBusy
        }
        return nil
    }

    /// Leases `slot` to `waiter`: one more call on it.
    private static func take(_ slot: Int, for waiter: Waiter, in state: inout State, now: SessionTime) -> SessionLease? {
        guard let token = state.slots[slot].machine.currentToken(now: now) else { return nil }
        state.slots[slot].busy += 1
        state.slots[slot].lastUse = max(now.elapsed, state.slots[slot].lastUse)
        return SessionLease(slot: slot, token: token, owner: waiter.owner)
    }

    // MARK: explicit logins and tokens

    /// An explicit login on slot 0 (``DataAPI/login(completion:)``): starts one even when a token is valid,
    /// or joins the one in flight. A valid token it replaces is let go (the shutdown logs it out).
    func forceLogin(now: SessionTime, waiter: @escaping SessionWaiter) -> SessionStateMachine<SessionWaiter>.Acquire {
        let (action, replaced) = state.withLock { state -> (SessionStateMachine<SessionWaiter>.Acquire, String?) in
            let current = state.slots[0].machine.currentToken(now: now)
            let action = state.slots[0].machine.acquire(now: now, stored: nil, force: true, waiter: waiter)
            if case .login = action { return (action, current) }
            return (action, nil)
        }
        if let replaced { letGo(replaced, now: now) }
        return action
    }

    /// `token` is open on the server but no slot holds it any more.
    func letGo(_ token: String, now: SessionTime) {
        state.withLock { state in
            state.orphans.removeAll { now.elapsed - $0.since > SessionStateMachine<SessionWaiter>.lifetime || $0.token == token }
            state.orphans.append((token, now.elapsed))
            if state.orphans.count > Self.maxLetGo { state.orphans.removeFirst(state.orphans.count - Self.maxLetGo) }
        }
    }

    /// The server accepted `token` on `slot`: slide its expiry.
    func used(slot: Int, token: String, now: SessionTime) -> SessionStateMachine<SessionWaiter>.Persist? {
        state.withLock { $0.slots[slot].machine.used(token: token, now: now) }
    }

    /// The server no longer knows `token` (952, 112, an HTML 401): forget it when it is still the slot's.
    /// Returns the store write and whether the slot's session was lost by it.
    func rejected(slot: Int, token: String) -> SessionStateMachine<SessionWaiter>.Persist? {
        guard !pinned else { return nil }
        return state.withLock { state in
            let persist = state.slots[slot].machine.rejected(token: token)
            // Lost now: every session open at this moment may be as dead; those opened from now on are not.
            if persist != nil { state.lostMark = state.openings }
            return persist
        }
    }

    /// The slot holding `token`, if any.
    func slot(holding token: String) -> Int? {
        state.withLock { state in
            state.slots.indices.first { state.slots[$0].machine.heldToken == token }
        }
    }

    /// Makes `token` slot 0's current token.
    func adopt(token: String, expiry: Date, now: SessionTime) -> SessionStateMachine<SessionWaiter>.Persist {
        let (persist, replaced) = state.withLock { state -> (SessionStateMachine<SessionWaiter>.Persist, String?) in
            let current = state.slots[0].machine.currentToken(now: now)
            state.slots[0].lastUse = now.elapsed
            state.openings += 1
            state.slots[0].opened = state.openings
            return (state.slots[0].machine.adopt(token: token, expiry: expiry, now: now), current == token ? nil : current)
        }
        if let replaced { letGo(replaced, now: now) }
        return persist
    }

    /// Forgets slot 0's token (returned) and clears the store.
    func resetPrimary() -> (token: String?, persist: SessionStateMachine<SessionWaiter>.Persist) {
        state.withLock { $0.slots[0].machine.reset() }
    }

    /// Forgets every slot's token and every session let go; returns them (to log them out) and slot 0's
    /// store write.
    /// `slots` holds the slot of each token a slot held, in the same order (then the sessions let go).
    func resetAll() -> (tokens: [String], slots: [Int], persist: SessionStateMachine<SessionWaiter>.Persist?) {
        state.withLock { state in
            let lost = state.orphans.map(\.token)
            state.orphans = []
            var held: [String] = []
            var slots: [Int] = []
            var persist: SessionStateMachine<SessionWaiter>.Persist?
            for index in state.slots.indices {
                let (token, write) = state.slots[index].machine.reset()
                if let token { held.append(token); slots.append(index) }
                if index == 0 { persist = write }
            }
            return (held + lost.filter { !held.contains($0) }, slots, persist)
        }
    }

    /// The valid token of `slot` by the elapsed clock, with its expiry on the wall clock.
    func validToken(slot: Int, now: SessionTime) -> FMStoredToken? {
        state.withLock { $0.slots[slot].machine.validToken(now: now) }
    }

    /// The token `slot` holds, valid or not, with the wall-clock expiry the store was told.
    func heldToken(slot: Int) -> FMStoredToken? {
        state.withLock { $0.slots[slot].machine.held }
    }

    /// Whether slot 0 may take `stored` from the token store now (``SessionStateMachine/mayAdopt(_:now:)``).
    func mayAdopt(_ stored: FMStoredToken, now: SessionTime) -> Bool {
        state.withLock { $0.slots[0].machine.mayAdopt(stored, now: now) }
    }

    /// Every token held, whatever its local expiry, and those of sessions whose new-session hook runs (for log
    /// redaction).
    var heldTokens: [String] {
        state.withLock { $0.slots.compactMap { $0.machine.heldToken } } + settingUp.withLock { $0.holds.map(\.token) }
    }

    /// The tokens of sessions whose new-session hook runs: not held by a slot yet, but sent by the hook's calls, so
    /// redacted as held ones are (``heldTokens``). Each hold ends once: when the hook calls `done(nil)` (the slot holds the
    /// token then), or, when the hook failed or outlived the bound of the session's opening, once no call of the hook is
    /// in flight any more (``SessionStage/giveUp(with:whenIdle:)``). A hook that never calls `done` leaves nothing here.
    private let settingUp = Locked<(next: UInt64, holds: [(id: UInt64, token: String)])>((0, []))

    /// How many tokens ``heldTokens`` holds for sessions whose new-session hook runs (tests).
    var setUpCount: Int { settingUp.withLock { $0.holds.count } }

    /// `token`'s session runs its new-session hook: its calls' lines and errors hide it. Returns the hold, for
    /// ``setUpEnded(_:)``.
    func setUpStarted(_ token: String) -> UInt64 {
        settingUp.withLock { state in
            state.next += 1
            state.holds.append((state.next, token))
            return state.next
        }
    }

    /// Hold `id` ended (the slot holds its token now, or no call of the hook carries it any more).
    func setUpEnded(_ id: UInt64) {
        settingUp.withLock { state in state.holds.removeAll { $0.id == id } }
    }

    /// `true` while `slot` is logging in.
    func isLoggingIn(slot: Int) -> Bool {
        state.withLock { $0.slots[slot].machine.isLoggingIn }
    }

    /// `true` when slot 0 has no valid token (the stage then reads the token store before leasing).
    func wantsStored(now: SessionTime) -> Bool {
        !pinned && state.withLock { !$0.slots[0].machine.isOpen(now: now) && !$0.slots[0].machine.isLoggingIn }
    }

}

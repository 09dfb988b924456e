import Foundation

/// A login or a logout, as the session stage asks its ``SessionStage/send`` to carry it out.
enum SessionRequest: Sendable, Hashable {
    /// `POST …/sessions` with these headers (the login's authorization).
    case login(headers: [String: String])
    /// `DELETE …/sessions/{token}`.
    case logout(token: String)
}

/// The session stage of the pipeline: leasing a pool session, the single-flight login of each slot (Basic,
/// Claris ID or OAuth), the new-session hook, what the server says about a token, and the token store's
/// writes in the order the state machine decided them.
///
/// It owns its room: the pool, the token store, the session queue and the hook are its own, and it reaches
/// the network only through ``send``, so it is tested with a fake one and no ``DataAPI``.
final class SessionStage: Sendable, SessionLeaseOwner {
    /// Sends a login or a logout once (no retries: the calls waiting for the session decide), even while
    /// shutting down, and reports on ``queue``: a login's token, or a logout's token once it is sent.
    /// `stage` is the stage that asks (a pinned one for the new-session hook's calls).
    typealias Send = @Sendable (_ stage: SessionStage, _ request: SessionRequest, _ parent: (any FMCallSpan)?,
                                _ completion: @escaping @Sendable (Result<String, FMError>) -> Void) -> Void
    /// A ``DataAPI`` over a pinned stage (the new-session hook's calls).
    typealias PinnedAPI = @Sendable (_ pinned: SessionStage) -> DataAPI

    let pool: SessionPool
    /// Where the first session's token is kept.
    let tokenStore: FMTokenStore
    /// The wall clock (the injected `now`): the token store's expiries.
    let now: @Sendable () -> Date
    /// The wall clock and the elapsed clock a session's idle time is measured on.
    let clock: SessionClock
    let configuration: FMConfiguration
    let logger: Logger
    /// Logins hold it (a shutdown waits for them); a login that ends after the shutdown's logouts is closed.
    let lifecycle: Lifecycle
    /// Where logins and logouts report (never the callback queue, which a caller may block).
    let queue: DispatchQueue
    let send: Send
    private let pinnedAPI: PinnedAPI?
    /// ``DataAPI/onNewSession``.
    let newSessionHook: Locked<FMNewSessionHook?>
    /// Token-store writes in the order the client decided them, out-of-date ones dropped (see
    /// ``SessionStateMachine/Persist``); the store is called with no lock held (``StoreWrites``).
    private let storeWrites = StoreWrites()
    /// ``tokenStore`` as it is written and read: each failure a warning, once per distinct problem, the token redacted.
    private let reportedStore: ReportedTokenStore
    /// The pool's armed timers (its wake-ups after a pause, ``SessionPool/Plan/wake``, and its idle sweeps,
    /// ``SessionPool/Plan/sweep``), kept until they fire and cancelled when the stage goes: a client dropped meanwhile
    /// leaves nothing armed behind.
    private let timers = OwnedTimers()
    /// Arms the bound of one opening of a session (the login and the new-session hook, ``openSession(slot:encoded:parent:completion:)``):
    /// ``Deadline/after(seconds:fire:)``; the tests' seam to end a hook that never calls `done` at a moment of their choosing.
    let armBound = Locked<@Sendable (TimeInterval, @escaping @Sendable () -> Void) -> Deadline>({ Deadline.after(seconds: $0, fire: $1) })
    /// Arms the idle sweep's timer (``SessionPool/Plan/sweep``): ``Deadline/after(seconds:fire:)``; the tests' seam to fire
    /// the sweep at a moment of their choosing.
    let armSweep = Locked<@Sendable (TimeInterval, @escaping @Sendable () -> Void) -> Deadline>({ Deadline.after(seconds: $0, fire: $1) })
    /// Arms the pool's wake-up after a pause (``SessionPool/Plan/wake``): ``Deadline/after(seconds:fire:)``; the tests' seam
    /// to see the timer and fire it at a moment of their choosing.
    let armWake = Locked<@Sendable (TimeInterval, @escaping @Sendable () -> Void) -> Deadline>({ Deadline.after(seconds: $0, fire: $1) })
    /// A pinned stage's calls (the new-session hook's, ``trackingHookCall(_:)``) in flight, and what runs when the last
    /// of them ends once the hook's session was given up (``giveUp(with:whenIdle:)``).
    private let hookCalls = Locked<(running: Int, whenIdle: (@Sendable () -> Void)?)>((0, nil))
    /// The pool slots whose new-session hook runs now (one entry per run): started on a session whose login answered,
    /// neither `done` called nor given up.
    private let hooksRunning = Locked<[Int]>([])

    /// `true` while a new-session hook runs (``newSessionRun(token:slot:)``).
    var isRunningNewSessionHook: Bool { !hooksRunning.value.isEmpty }

    /// Whether the call waiting for a session under `id` (``lease(front:parent:completion:)``) waits for a session whose
    /// new-session hook runs: its deadline's error then says so (``FMError/waitedForNewSessionHook(_:_:after:)``). See
    /// ``SessionPool/waitDependsOnOpening(_:slots:now:)``: with several sessions, a hook that runs on one of them holds
    /// up only the calls that session would go to, unless no session is open and no other login is out.
    func waitIsHeldUpByNewSessionHook(_ id: UInt64) -> Bool {
        let slots = hooksRunning.value
        return !slots.isEmpty && pool.waitDependsOnOpening(id, slots: Set(slots), now: clock.now)
    }

    /// A stage over `pool`. `pinnedAPI` makes the hook's ``DataAPI``; without one the hook is not run.
    init(pool: SessionPool, tokenStore: FMTokenStore, configuration: FMConfiguration, logger: Logger, lifecycle: Lifecycle,
         queue: DispatchQueue = DispatchQueue(label: "SwiftFM.DataAPI.sessions"), clock: SessionClock,
         pinnedAPI: PinnedAPI? = nil, send: @escaping Send) {
        self.pool = pool
        self.tokenStore = tokenStore
        reportedStore = ReportedTokenStore(tokenStore, wording: .session)
        self.configuration = configuration
        self.logger = logger
        self.lifecycle = lifecycle
        self.queue = queue
        self.clock = clock
        self.now = clock.wall
        self.pinnedAPI = pinnedAPI
        self.send = send
        self.newSessionHook = Locked(nil)
    }

    /// A stage that uses `token` for every call and never logs in or renews (the new-session hook's), sharing
    /// `parent`'s queue, lifecycle and `send`.
    init(pinnedTo token: String, parent: SessionStage) {
        pool = SessionPool(pinnedTo: token)
        tokenStore = FMMemoryTokenStore()
        reportedStore = ReportedTokenStore(tokenStore, wording: .session)
        configuration = parent.configuration
        logger = parent.logger
        lifecycle = parent.lifecycle
        queue = parent.queue
        now = parent.now
        clock = parent.clock
        pinnedAPI = parent.pinnedAPI
        send = parent.send
        newSessionHook = Locked(nil)
    }

    /// The client is gone: its pool's armed timers (wake-ups, idle sweeps) are cancelled (they would find no stage; until
    /// due they held their closures).
    deinit {
        timers.cancelAll()
    }

    /// How many of the pool's timers are armed (tests).
    var armedTimers: Int { timers.count }

    // MARK: leases

    /// Asks the pool for a session for one attempt of a call. `completion` gets the lease (it gives itself
    /// back with ``SessionLease/release()``) or the login failure, once, maybe synchronously. `front`: a
    /// replay, which goes before the calls queued behind it. Returns the waiter's id, for ``withdraw(_:)``
    /// when the call ends first, or `nil` when a free session was leased at once (`completion` has run).
    /// `parent`: the span of the call that asks (a login it starts is traced under it).
    @discardableResult
    func lease(front: Bool, parent: (any FMCallSpan)? = nil,
               completion: @escaping @Sendable (Result<SessionLease, FMError>) -> Void) -> UInt64? {
        let now = clock.now
        var (id, plan) = pool.lease(now: now, stored: storedIfWanted(now), front: front, owner: self, deliver: completion)
        // Leased at once: the grant is this call's own, not a hand-over, so it runs here, without the trampoline.
        let own = id == nil ? plan.grants.popLast() : nil
        if id == nil, own == nil, let refusal = plan.failures.first?.1 {
            // A pinned pool closed: the new-session hook's session was given up, and this call of the hook failed (once).
            logger.log(.error, "a call of the new-session hook was refused: \(refusal.code) \(refusal.message)", metadata: ["fm.code": refusal.code])
        }
        run(plan, parent: parent)
        if let (waiter, lease) = own { waiter.deliver(.success(lease)) }
        reportPoolUsage()
        return id
    }

    /// A call that waited for a session ended first: it leaves the queue.
    func withdraw(_ id: UInt64) {
        pool.withdraw(id)
    }

    // MARK: the new-session hook's calls (a pinned stage)

    /// `completion` of a call of this pinned stage (the new-session hook's), counted from now until it has returned: by
    /// then the call's lines are written and its error hidden, so its token stays on the redaction list that long.
    func trackingHookCall<Value>(_ completion: @escaping (consuming Result<Value, FMError>) -> Void)
        -> (consuming Result<Value, FMError>) -> Void {
        hookCalls.withLock { $0.running += 1 }
        return { [self] result in
            completion(result)
            let idle = hookCalls.withLock { calls -> (@Sendable () -> Void)? in
                calls.running -= 1
                return calls.running == 0 ? calls.whenIdle.take() : nil
            }
            idle?()
        }
    }

    /// The new-session hook's session was given up (the hook failed, or did not call `done` within the bound of the
    /// session's opening): this pinned stage refuses every call from now on with `error` (those waiting for the session
    /// get it now), and `whenIdle` runs once none of its calls is in flight (at once when none is). Each of those ends
    /// by its deadline at the latest, so `whenIdle` runs within a call's deadline.
    func giveUp(with error: FMError, whenIdle: @escaping @Sendable () -> Void) {
        let plan = pool.close(with: error)
        if !plan.failures.isEmpty {
            logger.log(.error, "\(plan.failures.count) waiting call(s) of the new-session hook refused: \(error.code) \(error.message)",
                       metadata: ["fm.code": error.code])
        }
        run(plan)
        let idle = hookCalls.withLock { calls -> Bool in
            guard calls.running > 0 else { return true }
            calls.whenIdle = whenIdle
            return false
        }
        if idle { whenIdle() }
    }

    /// `SessionLeaseOwner`: a lease given back (once; again does nothing): the session goes to the next waiting call.
    func giveBack(_ lease: SessionLease) {
        let now = clock.now
        run(pool.giveBack(lease, now: now, stored: storedIfWanted(now)))
        reportPoolUsage()
    }

    /// `SessionLeaseOwner`: the server accepted `lease`'s token: slide its expiry.
    func used(_ lease: SessionLease) {
        let persist = pool.used(slot: lease.slot, token: lease.token, now: clock.now)
        if lease.slot == 0 { apply(persist) }
    }

    /// `SessionLeaseOwner`: the server no longer knows `lease`'s token: forget it when it is still the slot's.
    func rejected(_ lease: SessionLease, code: String?) {
        rejected(slot: lease.slot, token: lease.token, code: code)
    }

    private func rejected(slot: Int, token: String, code: String? = nil) {
        let persist = pool.rejected(slot: slot, token: token)
        if persist != nil {
            logger.log(.warning, "session token rejected; it will be renewed")
            configuration.metrics?.poolEvent(FMPoolEvent(kind: .lost, session: slot, code: code))
            reportPoolUsage()
        }
        if slot == 0 { apply(persist) }
    }

    /// Tells the metrics observer how many pool sessions are open and busy (only when one is set).
    func reportPoolUsage() {
        guard let metrics = configuration.metrics, !pool.pinned else { return }
        let (open, busy) = pool.usage(now: clock.now)
        metrics.poolUsage(open: open, busy: busy)
    }

    /// The store's token when the pool wants it (slot 0 has none), read outside the pool's lock.
    private func storedIfWanted(_ now: SessionTime) -> FMStoredToken? {
        pool.wantsStored(now: now) ? loadStoredToken() : nil
    }

    // MARK: plans

    /// Carries out a pool decision, outside the pool's lock: store write, idle logouts, logins, leases.
    /// `parent`: the span of the call whose lease made the plan (its logins are traced under it).
    func run(_ plan: SessionPool.Plan, parent: (any FMCallSpan)? = nil) {
        guard !plan.isEmpty else { return }
        apply(plan.persist)
        if !plan.logouts.isEmpty {
            // The slots forgot these sessions, so a shutdown's logouts will not include them: it waits for these instead
            // (within its grace), and is complete only once they are logged out too.
            let release = lifecycle.hold(refusedWhileShuttingDown: false)
            let left = Locked(plan.logouts.count)
            for logout in plan.logouts {
                logger.log(.info, "closing session \(logout.slot + 1) of \(pool.size): idle for \(Int(logout.idle)) s")
                configuration.metrics?.poolEvent(FMPoolEvent(kind: .closed, session: logout.slot, reason: "idle"))
                closeOnServer(logout.token) {
                    if left.withLock({ $0 -= 1; return $0 }) == 0 { release?() }
                }
            }
        }
        for login in plan.logins {
            startLogin(slot: login.slot, id: login.id, parent: parent)
        }
        // Recorded until they fire, for the stage's deinit to cancel: a timer that fires before its arming returns (and
        // arms the next) is not recorded over the next one.
        if let wake = plan.wake {
            timers.arm(after: wake, using: armWake.value) { [weak self] in self?.wake() }
        }
        if let sweep = plan.sweep {
            timers.arm(after: sweep, using: armSweep.value) { [weak self] in self?.sweepIdle() }
        }
        guard !plan.grants.isEmpty || !plan.failures.isEmpty else { return }
        // A grant may finish its call at once (a transport that answers in `send`) and give the session back
        // to the next waiter from inside this one: the trampoline keeps that chain off the stack.
        let (grants, failures) = (plan.grants, plan.failures)
        Trampoline.run {
            for (waiter, lease) in grants { waiter.deliver(.success(lease)) }
            for (waiter, error) in failures { waiter.deliver(.failure(error)) }
        }
    }

    /// The pool's pause ended (``SessionPool/Plan/wake``): calls still waiting get sessions opened for them.
    private func wake() {
        let now = clock.now
        run(pool.wake(now: now, stored: storedIfWanted(now)))
    }

    /// The idle sweep's time came (``SessionPool/Plan/sweep``): sessions other than the first, unused for longer than
    /// ``FMConfiguration/sessionIdleTimeout``, are logged out even when no call follows a burst.
    /// Once a shutdown has begun the sweep does nothing: the shutdown logs every session out. Before that, its hold keeps
    /// a shutdown that begins meanwhile from logging out (and completing) until the sweep's logouts are under way and held.
    private func sweepIdle() {
        guard let release = lifecycle.hold(refusedWhileShuttingDown: true) else { return }
        run(pool.sweep(now: clock.now))
        release()
    }

    /// Starts login `id` of `slot` (a pinned pool never logs in: it fails with `-1010`).
    /// `explicit`: an explicit login, whose log line names no pool session.
    private func startLogin(slot: Int, id: UInt64, parent: (any FMCallSpan)? = nil, explicit: Bool = false) {
        guard !pool.pinned else { return finishLogin(slot: slot, id: id, result: .failure(.noToken)) }
        let which = pool.size > 1 && !explicit ? " (session \(slot + 1) of \(pool.size))" : ""
        logger.log(.info, "logging in to \(configuration.database)" + which)
        let started = DispatchTime.now().uptimeNanoseconds
        openSession(slot: slot, parent: parent) { [self] result, byHook in
            finishLogin(slot: slot, id: id, result: result, started: started, explicit: explicit, byHook: byHook)
        }
    }

    /// An explicit login on the first session (``DataAPI/login(completion:)``, ``DataAPI/refreshToken(completion:)``):
    /// one login even when a token is valid, shared with a login of that session in flight.
    func forceLogin(completion: @escaping SessionWaiter) {
        switch pool.forceLogin(now: clock.now, waiter: completion) {
        case .use(let token): completion(.success(token))
        case .wait: break
        case .login(let id): startLogin(slot: 0, id: id, explicit: true)
        }
    }

    /// `explicit`: a caller asked for this login (``forceLogin(completion:)``) and gets its failure as the answer.
    /// `byHook`: the login succeeded and the new-session hook failed (its session is closed).
    private func finishLogin(slot: Int, id: UInt64, result: Result<String, FMError>, started: UInt64? = nil, explicit: Bool = false,
                             byHook: Bool = false) {
        if let metrics = configuration.metrics, let started {
            let duration = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
            switch result {
            case .success: metrics.poolEvent(FMPoolEvent(kind: .opened, session: slot, loginDuration: duration))
            case .failure(let error): metrics.poolEvent(FMPoolEvent(kind: .loginFailed, session: slot, loginDuration: duration, code: error.code))
            }
        }
        let now = clock.now
        let (waiters, adopted, plan) = pool.loginFinished(slot: slot, id: id, result: result, now: now, stored: storedIfWanted(now))
        if case .success(let token) = result, !adopted {
            // Not adopted (a logout came first): the waiters use it, nothing holds it. The shutdown logs it
            // out — or, when it has logged every session out already, it is closed now.
            if lifecycle.isDraining { closeOnServer(token) {} } else { pool.letGo(token, now: now) }
        }
        if case .failure(let error) = result {
            // A transient failure is retried by the calls that wait (each logs its own end if it gives up): a
            // warning; any other ends them, as it ends an explicit login: an error.
            // One event, one line: a hook that failed is said as such (not as a login that failed, which it was not).
            let transient = !explicit && Classifier.isTransientLoginFailure(error)
            logger.log(transient ? .warning : .error, "\(Self.failureLine(error, byHook: byHook)) — reported to "
                       + "\(waiters.count + plan.failures.count) waiting call(s)\(transient ? " (transient: each decides by its policy whether to try again)" : "")",
                       metadata: ["fm.code": error.code])
        }
        run(plan)
        reportPoolUsage()
        for waiter in waiters { waiter(result) }
    }

    /// What a session that could not be opened is logged as: `login failed: CODE MESSAGE`, or `the new-session hook
    /// failed: CODE MESSAGE; the session is closed` when the login succeeded and the hook failed.
    static func failureLine(_ error: FMError, byHook: Bool) -> String {
        byHook ? "the new-session hook failed: \(error.code) \(error.message); the session is closed"
            : "login failed: \(error.code) \(error.message)"
    }

    // MARK: logins

    /// Opens a session: the login (configured credentials, or Basic `encoded`), then the new-session hook,
    /// as one step bounded by ``FMConfiguration/timeout`` — a token provider or a hook that never answers
    /// must not leave a slot logging in for good. Past the bound `completion` gets `-1004` and a session the
    /// login opened is closed; a hook's failure closes the session before `completion` gets it, with `byHook`
    /// `true`. Nothing here logs the failure: the caller says it once (``failureLine(_:byHook:)``). A shutdown
    /// waits for this step (and that closing), so the session it opens is logged out too; a login answer that
    /// only arrives after the bound is closed on arrival.
    func openSession(slot: Int, encoded: String? = nil, parent: (any FMCallSpan)? = nil,
                     completion: @escaping @Sendable (_ result: Result<String, FMError>, _ byHook: Bool) -> Void) {
        struct Progress {
            var ended = false
            var token: String?
            /// Gives the new-session hook up, once it runs.
            var abandonHook: (@Sendable (FMError) -> Void)?
        }
        let progress = Locked(Progress())
        // Held even while shutting down: a call in flight may log in during the shutdown's grace period.
        let inFlight = lifecycle.hold(refusedWhileShuttingDown: false) ?? {}
        /// Marks the step ended; `false` when it had ended already.
        let end: @Sendable () -> Bool = {
            progress.withLock { state -> Bool in
                defer { state.ended = true }
                return !state.ended
            }
        }
        let bound = armBound.value(configuration.timeout) { [self] in
            let (first, token, abandonHook) = progress.withLock { state -> (Bool, String?, (@Sendable (FMError) -> Void)?) in
                defer { state.ended = true }
                return (!state.ended, state.token, state.abandonHook)
            }
            guard first else { return }
            if let abandonHook {
                // The login answered and its hook did not call `done`: the hook is given up (its calls refused, its token let
                // go once none of them carries it) and the waiting calls get a failure that says so. Logged once, by
                // whoever gets it, as "the new-session hook failed", at error.
                logger.log(.debug, "the new-session hook did not call done within the timeout; given up")
                let error = FMError.newSessionHookTimedOut(after: configuration.timeout)
                abandonHook(error)
                completion(.failure(error), true)
            } else {
                // Detail: the login's failure (-1004) is logged once, as "login failed", at error.
                logger.log(.debug, "the login took longer than the timeout; given up")
                completion(.failure(.timeout(try? configuration.resolvedBase().get().url, after: configuration.timeout)), false)
            }
            guard let token else { return inFlight() }
            closeOnServer(token) { inFlight() }
        }
        performLogin(encoded: encoded, parent: parent) { [self] result in
            switch result {
            case .failure:
                guard end() else { return }
                bound.cancel()
                completion(result, false)
                inFlight()
            case .success(let token):
                let hook = newSessionRun(token: token, slot: slot)
                let late = progress.withLock { state -> Bool in
                    state.token = token
                    state.abandonHook = hook?.abandon
                    return state.ended
                }
                // Given up already: nobody will use this session.
                guard !late else { return closeOnServer(token) {} }
                let start = hook?.start ?? { done in done(nil) }
                start { [self] hookError in
                    guard end() else { return }
                    bound.cancel()
                    if let hookError {
                        // Said once, by whoever gets the failure ("the new-session hook failed: …"), not here as well.
                        logger.log(.debug, "the new-session hook failed (\(hookError.code)); closing its session")
                        closeOnServer(token) {
                            completion(.failure(hookError), true)
                            inFlight()
                        }
                    } else {
                        completion(.success(token), false)
                        inFlight()
                    }
                }
            }
        }
    }

    /// The new-session hook's run on a new session, or `nil` without a hook. `start(done)` runs the hook with a
    /// ``DataAPI`` pinned to the session (`done` gets its error, without the token); `abandon(error)` gives it up when the
    /// bound of the session's opening passed first. Whichever comes first ends the run; the other then does nothing.
    ///
    /// While the hook runs, its token is on the redaction list (``SessionPool/heldTokens``): its calls send it before any
    /// slot holds it. The hold ends when the hook calls `done(nil)` (the slot holds the token from then on); when the hook
    /// failed or was given up, the pinned stage refuses the hook's further calls and the hold ends once none of them is in
    /// flight (``giveUp(with:whenIdle:)``). So a hook that never calls `done` keeps its token hidden no longer than the bound
    /// and its calls' own deadlines, however often it hangs.
    private func newSessionRun(token: String, slot: Int)
        -> (start: @Sendable (_ done: @escaping @Sendable (FMError?) -> Void) -> Void, abandon: @Sendable (FMError) -> Void)? {
        guard let hook = newSessionHook.value, let pinnedAPI else { return nil }
        let pinned = SessionStage(pinnedTo: token, parent: self)
        let pool = self.pool
        let once = Once()
        /// The hold on the redaction list while the hook runs, whether the run is over (then no hook starts), and whether
        /// the hook runs (counted in ``hooksRunning`` until `done` is called or it is given up).
        let run = Locked<(hold: UInt64?, over: Bool, running: Bool)>((nil, false, false))
        let hooksRunning = self.hooksRunning
        let letGo: @Sendable () -> Void = {
            if let hold = run.withLock({ state -> UInt64? in state.over = true; return state.hold.take() }) { pool.setUpEnded(hold) }
        }
        /// The hook called `done` or was given up: it no longer runs (once), and no hook starts from now on. Given up on
        /// another thread just before `start` takes the lock, the run is over then, not only once `letGo` runs: a hook
        /// that started after this would be counted in ``hooksRunning`` for good (its `done` is ignored).
        let stopped: @Sendable () -> Void = {
            let wasRunning = run.withLock { state -> Bool in
                defer { (state.running, state.over) = (false, true) }
                return state.running
            }
            if wasRunning { hooksRunning.withLock { if let index = $0.firstIndex(of: slot) { $0.remove(at: index) } } }
        }
        let abandon: @Sendable (FMError) -> Void = { error in
            guard once.claim() else { return }
            stopped()
            pinned.giveUp(with: error, whenIdle: letGo)
        }
        let start: @Sendable (_ done: @escaping @Sendable (FMError?) -> Void) -> Void = { done in
            // The hook's calls send the new token, which no slot holds yet: their lines and errors hide it all the same,
            // and so does the hook's error (a call's failure it hands on, with a server's echo of the token).
            let started = run.withLock { state -> Bool in
                guard !state.over else { return false }   // given up before it started: the step has ended
                state.hold = pool.setUpStarted(token)
                state.running = true
                hooksRunning.withLock { $0.append(slot) }
                return true
            }
            guard started else { return }
            hook(FMNewSession(api: pinnedAPI(pinned), poolIndex: slot)) { error in
                guard once.claim() else { return }
                stopped()
                let hidden = error.map { error in
                    var hidden = error
                    hidden.message = Redaction.scrubCut(error.message, secrets: [token])
                    hidden.underlying = error.underlying.map { Redaction.scrubCut($0, secrets: [token]) }
                    return hidden
                }
                done(hidden)
                if let hidden {
                    // Its session is closed: the hook's later calls are refused rather than sent with a closed session's token.
                    pinned.giveUp(with: FMError(code: FMError.ClientCode.noToken,
                                                message: "The new-session hook failed (\(hidden.code)): its session was closed"),
                                  whenIdle: letGo)
                } else {
                    letGo()
                }
            }
        }
        return (start, abandon)
    }

    /// Logs `token` out on the server, best effort (a session SwiftFM will not use), then calls `then`.
    func closeOnServer(_ token: String, then: @escaping @Sendable () -> Void) {
        send(self, .logout(token: token), nil) { _ in then() }
    }

    /// Logs in once with the configured credentials (or Basic `encoded`) and reports the token or the error,
    /// on any queue. The credentials' ``LoginAuthorization`` gives the headers; a rejected login (HTTP 401)
    /// asks it once more for fresh ones when it renews. Nothing is stored here.
    func performLogin(encoded: String? = nil, parent: (any FMCallSpan)? = nil,
                      completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        login(with: LoginAuthorization.of(configuration.credentials, encoded: encoded, logger: logger), refresh: false, parent: parent,
              completion: completion)
    }

    private func login(with authorization: LoginAuthorization, refresh: Bool, parent: (any FMCallSpan)?,
                       completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        authorization.headers(refresh) { [self] headers in
            switch headers {
            case .failure(let error):
                completion(.failure(error))
            case .success(let headers):
                send(self, .login(headers: headers), parent) { [self] result in
                    if !refresh, authorization.renewsOnRejection, case .failure(let error) = result, error.httpStatus == 401 {
                        logger.log(.warning, "the login's credentials were rejected (\(error.code)); asking for fresh ones")
                        login(with: authorization, refresh: true, parent: parent, completion: completion)
                    } else {
                        completion(result.mapError(self.hintingRefusal))
                    }
                }
            }
        }
    }

    /// A login FileMaker refused, with what to check appended (`FMConfiguration.hintingLoginRefusal`).
    private func hintingRefusal(_ error: FMError) -> FMError {
        configuration.hintingLoginRefusal(error)
    }

    // MARK: tokens

    /// A token the caller passed explicitly (not leased) was rejected: if it is the stored token, clear the
    /// store, so `isActiveToken()` turns false and the explicit-token pattern logs in again.
    func explicitTokenRejected(_ token: String) {
        if pool.slot(holding: token) == 0 {
            rejected(slot: 0, token: token)
        } else if loadStoredToken()?.token == token {
            write(nil, version: nil)
        }
    }

    /// Makes `token` the current token with a fresh 15-minute expiry; returns the expiry (on the wall clock).
    func adoptToken(_ token: String) -> Date {
        let now = clock.now
        let expiry = now.wall.addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime)
        apply(pool.adopt(token: token, expiry: expiry, now: now))
        return expiry
    }

    /// Forgets the current (first) token and clears the store; returns the token that was current.
    func resetSession() -> String? {
        let (token, persist) = pool.resetPrimary()
        apply(persist)
        return token
    }

    /// Forgets every session (a shutdown) and clears the store; returns the tokens to log out.
    func resetAll() -> [String] {
        let (tokens, slots, persist) = pool.resetAll()
        for slot in slots { configuration.metrics?.poolEvent(FMPoolEvent(kind: .closed, session: slot, reason: "shutdown")) }
        apply(persist)
        write(nil, version: nil)
        reportPoolUsage()
        return tokens
    }

    /// Applies a token-store write decided by the state machine, unless a newer one was applied already.
    func apply(_ persist: SessionStateMachine<SessionWaiter>.Persist?) {
        guard let persist else { return }
        write(persist.token, version: persist.version)
    }

    /// Writes `token` to the store in turn (``StoreWrites``): a `version` not newer than one taken already is dropped;
    /// without one (a clear of a token no session holds) it is always taken. Returns once it is written (or a newer
    /// write replaced it), unless this thread is the one writing the store: a store that calls its client back (a
    /// `logout` from inside `save`) has that write made after its own returns, instead of waiting for itself.
    private func write(_ token: FMStoredToken?, version: UInt64?) {
        guard storeWrites.take(token, version: version) else { return }
        // No lock held: the store and the error it throws may call this client back.
        var warnings: [String] = []
        while let next = storeWrites.next() {
            if let warning = store(next) { warnings.append(warning) }
        }
        // Logged once this thread writes no more, so a log handler that waits for a write of another thread cannot
        // hold the writes up (one warning per distinct problem: a few at most).
        for warning in warnings { tell(warning) }
    }

    /// Writes the token store. A store that cannot (``FMTokenStore/trySave(_:)`` threw: a file's directory missing, a
    /// Keychain that refused) returns the warning that says so, once per problem (the session goes on in memory, but a
    /// restart will log in again), for ``tell(_:)`` to log outside any lock (``ReportedTokenStore``).
    private func store(_ token: FMStoredToken?) -> String? {
        reportedStore.save(token)
    }

    /// Reads the token store (``FMTokenStore/tryLoad()``): its token, and the warning to log when it could not be read
    /// (once per problem; the client then logs in), for ``tell(_:)``.
    func readStore() -> (stored: FMStoredToken?, warning: String?) {
        reportedStore.load()
    }

    /// `store`'s token, or why it could not be read (``FMTokenStore/tryLoad()`` threw; no token then).
    static func read(_ store: any FMTokenStore) -> (stored: FMStoredToken?, failure: (any Error)?) {
        ReportedTokenStore.read(store)
    }

    /// The warning for a read of the store that gave `stored` or `failure`, unless it is the problem told last.
    func readWarning(_ stored: FMStoredToken?, failure: (any Error)?) -> String? {
        reportedStore.readWarning(stored, failure: failure)
    }

    /// Logs a token-store warning from ``store(_:)`` or ``readStore()``, if any.
    func tell(_ warning: String?) {
        if let warning { logger.log(.warning, warning) }
    }

    /// What the token store holds, when it can be used: a value that cannot be sent as a `Bearer` token (a
    /// corrupted file, a hand-written `fm-token` with a line break or a space, an empty string) reads as no
    /// token, so the session logs in instead of failing every call. A store that could not be read says so (once per
    /// problem) and reads as no token.
    func loadStoredToken() -> FMStoredToken? {
        let (stored, warning) = readStore()
        tell(warning)
        return Self.usable(stored)
    }

    /// `stored` when its token can be sent as a `Bearer` token (``RequestBuilder/isValidSessionToken(_:)``), else `nil`.
    static func usable(_ stored: FMStoredToken?) -> FMStoredToken? {
        guard let stored, RequestBuilder.isValidSessionToken(stored.token) else { return nil }
        return stored
    }

    /// The current token and its expiry: in memory while the elapsed clock says it is valid, else the store's when the
    /// pool would take it (valid on the wall clock, and not the token the memory judged expired), with the expiry the
    /// pool would then show: the stored one, or at most a session lifetime from now (``SessionStateMachine/taken(_:now:)``).
    func activeStoredToken() -> FMStoredToken? {
        let now = clock.now
        if let valid = pool.validToken(slot: 0, now: now) { return valid }
        if let stored = loadStoredToken(), pool.mayAdopt(stored, now: now) { return SessionStateMachine<SessionWaiter>.taken(stored, now: now) }
        return nil
    }
}

extension FMError {
    /// A call's deadline (`seconds`) passed while it waited for a session whose new-session hook still ran (its wait
    /// depended on that session: ``SessionPool/waitDependsOnOpening(_:slots:now:)``): `-1004`,
    /// said as what it waited for — `The request to HOST:PORT for layout "L" was not sent: after N s waiting for its
    /// session, the new-session hook was still running (it had not called done)` — not as a connection that timed out
    /// (the host answered the login).
    static func waitedForNewSessionHook<Value>(_ endpoint: Endpoint<Value>, _ configuration: FMConfiguration,
                                               after seconds: TimeInterval) -> FMError {
        let url = (try? RequestBuilder.url(for: endpoint, configuration: configuration).get())
            ?? (try? configuration.resolvedBase().get().url)
        let layout = endpoint.layout.map { " for layout \"\(serverText($0, limit: 100))\"" } ?? ""
        let waited = seconds.isFinite ? "after \((seconds * 1000).rounded() / 1000) s " : ""
        return FMError(code: ClientCode.timeout, message: "\(connectionFailurePrefix)\(address(of: url))\(layout) was not sent: "
                       + "\(waited)waiting for its session, the new-session hook was still running (it had not called done)")
    }

    /// The new-session hook did not call `done` within `seconds` (``FMConfiguration/timeout``, the bound of a session's
    /// opening): `-1004`, said as what it was (not as a connection that timed out).
    static func newSessionHookTimedOut(after seconds: TimeInterval) -> FMError {
        FMError(code: ClientCode.timeout,
                message: "The new-session hook did not call done within \(seconds) s (FMConfiguration.timeout): its session was closed")
    }
}

extension FMConfiguration {
    /// A login FileMaker refused, with what to check appended to its message: FileMaker's words for a wrong
    /// password (212) or a database it does not have open (802) name neither the database nor the setting.
    /// The managed session's logins and the legacy surfaces' explicit ones (`refreshToken`) both use it.
    func hintingLoginRefusal(_ error: FMError) -> FMError {
        let database = "database \(FMError.serverText(self.database, limit: 100))"
        let address = FMError.address(of: baseURL)
        switch error.code {
        case "212":
            return error.noting("the login to \(database) on \(address) was refused: check the account name and password, "
                                + "and that the account's privilege set has the fmrest extended privilege")
        case "802":
            return error.noting("no \(database) is open on \(address): check \(settingNames.database) "
                                + "(databases() lists the ones the server hosts) and that the file is open on the server")
        default:
            return error
        }
    }
}

/// The token-store writes of one ``SessionStage``, made one at a time in the order taken, with no lock held while the
/// store (user code: it may block, throw, or call its client back) runs. A write taken while another thread writes
/// waits for it to be made; only the latest write waiting is made (the ones before it are out of date); a write taken
/// by the writing thread itself (from inside the store's `save`) is made by that thread once `save` returns.
final class StoreWrites: @unchecked Sendable {
    // @unchecked: every property is guarded by `condition`.
    private let condition = NSCondition()
    /// The newest state-machine version taken.
    private var version: UInt64 = 0
    /// The latest write taken and not started yet, with its ticket.
    private var waiting: (token: FMStoredToken?, ticket: UInt64)?
    /// The last ticket given; the one being written; the last one written (the ones before it too: made or replaced).
    private var tickets: UInt64 = 0
    private var writing: UInt64 = 0
    private var written: UInt64 = 0
    /// The thread making the writes, if any.
    private var writer: Thread?

    /// Takes a write. `true`: the caller makes the writes now (``next()`` until it returns `nil`). `false`: the write
    /// was out of date, or is made by the thread writing already: this one re-entered from the store (made once the
    /// store returns), or another (this one waited until it was made).
    func take(_ token: FMStoredToken?, version: UInt64?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if let version {
            guard version > self.version else { return false }
            self.version = version
        }
        tickets += 1
        let ticket = tickets
        waiting = (token, ticket)
        guard let writer else {
            self.writer = Thread.current
            return true
        }
        if writer === Thread.current { return false }
        // The writer takes every write waiting before it stops: once it has stopped, this one is made.
        while written < ticket { condition.wait() }
        return false
    }

    /// The write made before is done; the next one to make (the latest waiting), or `nil` when none is left (the
    /// caller stops writing).
    func next() -> FMStoredToken?? {
        condition.lock()
        defer { condition.unlock() }
        written = max(written, writing)
        guard let next = waiting else {
            writer = nil
            condition.broadcast()
            return nil
        }
        condition.broadcast()
        waiting = nil
        writing = next.ticket
        // The writes replaced by this one are out of date: done as it is.
        return .some(next.token)
    }
}

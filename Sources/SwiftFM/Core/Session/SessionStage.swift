import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The session stage of the pipeline: leasing a pool session, the single-flight login of each slot
// (Basic, Claris ID or OAuth), the new-session hook, and what the server says about a token.

extension DataAPI {
    /// Asks the pool for a session for one attempt of a call. `completion` gets the lease (give it back with
    /// ``releaseSession(_:)``) or the login failure, once, maybe synchronously. `front`: a replay, which goes
    /// before the calls queued behind it. Returns the waiter's id, for ``withdrawLease(_:)`` when the call
    /// ends first. `parent`: the span of the call that asks (a login it starts is traced under it).
    @discardableResult
    func leaseSession(front: Bool, parent: (any FMCallSpan)? = nil,
                      completion: @escaping @Sendable (Result<SessionLease, FMError>) -> Void) -> UInt64 {
        let now = self.now()
        let stored = pool.wantsStored(now: now) ? loadStoredToken() : nil
        let (id, plan) = pool.lease(now: now, stored: stored, front: front, deliver: completion)
        run(plan, parent: parent)
        reportPoolUsage()
        return id
    }

    /// Tells the metrics observer how many pool sessions are open and busy (only when one is set).
    func reportPoolUsage() {
        guard let metrics = configuration.metrics, !pool.pinned else { return }
        let (open, busy) = pool.usage(now: now())
        metrics.poolUsage(open: open, busy: busy)
    }

    /// A call that waited for a session ended first: it leaves the queue.
    func withdrawLease(_ id: UInt64) {
        pool.withdraw(id)
    }

    /// Gives a lease back (once; again does nothing): the session goes to the next waiting call.
    func releaseSession(_ lease: SessionLease) {
        let now = self.now()
        let stored = pool.wantsStored(now: now) ? loadStoredToken() : nil
        run(pool.giveBack(lease, now: now, stored: stored))
        reportPoolUsage()
    }

    /// Carries out a pool decision, outside the pool's lock: store write, idle logouts, logins, leases.
    /// `parent`: the span of the call whose lease made the plan (its logins are traced under it).
    func run(_ plan: SessionPool.Plan, parent: (any FMCallSpan)? = nil) {
        guard !plan.isEmpty else { return }
        apply(plan.persist)
        for logout in plan.logouts {
            logger.log(.info, "closing session \(logout.slot + 1) of \(pool.size): idle for \(Int(logout.idle)) s")
            configuration.metrics?.poolEvent(FMPoolEvent(kind: .closed, session: logout.slot, reason: "idle"))
            closeOnServer(logout.token) {}
        }
        for login in plan.logins {
            guard !pool.pinned else {
                finishLogin(slot: login.slot, id: login.id, result: .failure(.noToken))
                continue
            }
            logger.log(.info, "logging in to \(configuration.database)" + (pool.size > 1 ? " (session \(login.slot + 1) of \(pool.size))" : ""))
            let started = DispatchTime.now().uptimeNanoseconds
            openSession(slot: login.slot, parent: parent) { [self] result in
                finishLogin(slot: login.slot, id: login.id, result: result, started: started)
            }
        }
        if let wake = plan.wake {
            _ = Deadline.after(seconds: wake) { [weak self] in self?.wakePool() }
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
    private func wakePool() {
        let now = self.now()
        let stored = pool.wantsStored(now: now) ? loadStoredToken() : nil
        run(pool.wake(now: now, stored: stored))
    }

    /// An explicit login on the first session (``login(completion:)``, ``refreshToken(completion:)``): one
    /// login even when a token is valid, shared with a login of that session in flight.
    func forceLogin(completion: @escaping SessionWaiter) {
        switch pool.forceLogin(now: now(), waiter: completion) {
        case .use(let token):
            completion(.success(token))
        case .wait:
            break
        case .login(let id):
            guard !pool.pinned else { return finishLogin(slot: 0, id: id, result: .failure(.noToken)) }
            logger.log(.info, "logging in to \(configuration.database)")
            let started = DispatchTime.now().uptimeNanoseconds
            openSession(slot: 0) { [self] result in finishLogin(slot: 0, id: id, result: result, started: started) }
        }
    }

    /// Opens a session: the login (configured credentials, or Basic `encoded`), then the new-session hook,
    /// as one step bounded by ``FMConfiguration/timeout`` — a token provider or a hook that never answers
    /// must not leave a slot logging in for good. Past the bound `completion` gets `-1004` and a session the
    /// login opened is closed; a hook's failure closes the session before `completion` gets it. A shutdown
    /// waits for this step (and that closing), so the session it opens is logged out too; a login answer that
    /// only arrives after the bound is closed on arrival.
    func openSession(slot: Int, encoded: String? = nil, parent: (any FMCallSpan)? = nil,
                     completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        struct Progress { var ended = false; var token: String? }
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
        let bound = Deadline.after(seconds: configuration.timeout) { [self] in
            let (first, token) = progress.withLock { state -> (Bool, String?) in
                defer { state.ended = true }
                return (!state.ended, state.token)
            }
            guard first else { return }
            logger.log(.error, "the login (or the new-session hook) took longer than the timeout; given up")
            completion(.failure(.timeout(try? configuration.resolvedBase().get().url, after: configuration.timeout)))
            guard let token else { return inFlight() }
            closeOnServer(token) { inFlight() }
        }
        performLogin(encoded: encoded, parent: parent) { [self] result in
            switch result {
            case .failure:
                guard end() else { return }
                bound.cancel()
                completion(result)
                inFlight()
            case .success(let token):
                let late = progress.withLock { state -> Bool in
                    state.token = token
                    return state.ended
                }
                // Given up already: nobody will use this session.
                guard !late else { return closeOnServer(token) {} }
                runNewSessionHook(token: token, slot: slot) { [self] hookError in
                    guard end() else { return }
                    bound.cancel()
                    if let hookError {
                        logger.log(.error, "the new-session hook failed: \(hookError.code); the session is closed")
                        closeOnServer(token) {
                            completion(.failure(hookError))
                            inFlight()
                        }
                    } else {
                        completion(.success(token))
                        inFlight()
                    }
                }
            }
        }
    }

    private func finishLogin(slot: Int, id: UInt64, result: Result<String, FMError>, started: UInt64? = nil) {
        if let metrics = configuration.metrics, let started {
            let duration = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
            switch result {
            case .success: metrics.poolEvent(FMPoolEvent(kind: .opened, session: slot, loginDuration: duration))
            case .failure(let error): metrics.poolEvent(FMPoolEvent(kind: .loginFailed, session: slot, loginDuration: duration, code: error.code))
            }
        }
        let now = self.now()
        let stored = pool.wantsStored(now: now) ? loadStoredToken() : nil
        let (waiters, adopted, plan) = pool.loginFinished(slot: slot, id: id, result: result, now: now, stored: stored)
        if case .success(let token) = result, !adopted {
            // Not adopted (a logout came first): the waiters use it, nothing holds it. The shutdown logs it
            // out — or, when it has logged every session out already, it is closed now.
            if lifecycle.isDraining { closeOnServer(token) {} } else { pool.letGo(token, now: now) }
        }
        if case .failure(let error) = result {
            logger.log(.error, "login failed: \(error.code) — reported to \(waiters.count + plan.failures.count) waiting call(s)")
        }
        run(plan)
        reportPoolUsage()
        for waiter in waiters { waiter(result) }
    }

    /// Runs ``onNewSession`` for a new session, with a ``DataAPI`` pinned to it; `done` gets its error.
    private func runNewSessionHook(token: String, slot: Int, done: @escaping @Sendable (FMError?) -> Void) {
        guard let hook = newSessionHook.value else { return done(nil) }
        let pinned = DataAPI(pinnedTo: token, parent: self)
        let context = FMNewSession(api: pinned, poolIndex: slot)
        let once = Locked(false)
        hook(context) { error in
            let first = once.withLock { ran -> Bool in
                defer { ran = true }
                return !ran
            }
            if first { done(error) }
        }
    }

    /// Logs `token` out on the server, best effort (a session SwiftFM will not use), then calls `then`.
    func closeOnServer(_ token: String, then: @escaping @Sendable () -> Void) {
        sendSessionRequest(SessionEndpoints.logout(token: token)) { _ in then() }
    }

    /// Logs in once with the configured credentials (or Basic `encoded`) and reports the token or the error,
    /// on any queue. The credentials' ``LoginAuthorization`` gives the headers; a rejected login (HTTP 401)
    /// asks it once more for fresh ones when it renews. Nothing is stored here.
    func performLogin(encoded: String? = nil, parent: (any FMCallSpan)? = nil,
                      completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        login(with: loginAuthorization(encoded: encoded), refresh: false, parent: parent, completion: completion)
    }

    private func login(with authorization: LoginAuthorization, refresh: Bool, parent: (any FMCallSpan)?,
                       completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        authorization.headers(refresh) { [self] headers in
            switch headers {
            case .failure(let error):
                completion(.failure(error))
            case .success(let headers):
                var endpoint = SessionEndpoints.login(dataSources: configuration.dataSources)
                endpoint.auth = .none
                for (name, value) in headers { endpoint.headers[name] = value }
                sendSessionRequest(endpoint, parent: parent) { [self] result in
                    if !refresh, authorization.renewsOnRejection, case .failure(let error) = result, error.httpStatus == 401 {
                        logger.log(.warning, "the login's credentials were rejected (\(error.code)); asking for fresh ones")
                        login(with: authorization, refresh: true, parent: parent, completion: completion)
                    } else {
                        completion(result)
                    }
                }
            }
        }
    }

    /// Sends a login or a logout through the pipeline like any call (deadline, concurrency cap, rate limit,
    /// metrics) but once (the calls that wait for a session decide on retries), even while shutting down,
    /// and reports on the session queue rather than the callback queue (which the caller may be blocking).
    func sendSessionRequest<Value>(_ endpoint: Endpoint<Value>, parent: (any FMCallSpan)? = nil,
                                   completion: @escaping @Sendable (Result<Value, FMError>) -> Void) {
        perform(endpoint, acceptingStatus: { $0 == 200 }, attachingTo: nil, bypassShutdown: true,
                retries: false, deliveringOn: sessionQueue, parent: parent, completion: completion)
    }

    /// The server accepted `lease`'s token: slide its expiry.
    func sessionUsed(_ lease: SessionLease) {
        let persist = pool.used(slot: lease.slot, token: lease.token, now: now())
        if lease.slot == 0 { apply(persist) }
    }

    /// The server no longer knows `lease`'s token: forget it when it is still the slot's.
    func sessionRejected(_ lease: SessionLease, code: String? = nil) {
        sessionRejected(slot: lease.slot, token: lease.token, code: code)
    }

    private func sessionRejected(slot: Int, token: String, code: String? = nil) {
        let persist = pool.rejected(slot: slot, token: token)
        if persist != nil {
            logger.log(.warning, "session token rejected; it will be renewed")
            configuration.metrics?.poolEvent(FMPoolEvent(kind: .lost, session: slot, code: code))
            reportPoolUsage()
        }
        if slot == 0 { apply(persist) }
    }

    /// A token the caller passed explicitly (not leased) was rejected: if it is the stored token, clear the
    /// store, so `isActiveToken()` turns false and the explicit-token pattern logs in again.
    func explicitTokenRejected(_ token: String) {
        if pool.slot(holding: token) == 0 {
            sessionRejected(slot: 0, token: token)
        } else if loadStoredToken()?.token == token {
            tokenStore.save(nil)
        }
    }

    /// Makes `token` the current token with a fresh 15-minute expiry; returns the expiry.
    func adoptToken(_ token: String) -> Date {
        let expiry = now().addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime)
        apply(pool.adopt(token: token, expiry: expiry, now: now()))
        return expiry
    }

    /// Forgets the current (first) token and clears the store; returns the token that was current.
    func resetSession() -> String? {
        let (token, persist) = pool.resetPrimary()
        apply(persist)
        return token
    }

    /// What the token store holds, when it can be used: a value that cannot be sent as a `Bearer` token (a
    /// corrupted file, a hand-written `fm-token` with a line break or a space, an empty string) reads as no
    /// token, so the session logs in instead of failing every call.
    func loadStoredToken() -> FMStoredToken? {
        Self.usable(tokenStore.load())
    }

    /// `stored` when its token can be sent as a `Bearer` token, else `nil`.
    static func usable(_ stored: FMStoredToken?) -> FMStoredToken? {
        guard let stored, RequestBuilder.isValidToken(stored.token) else { return nil }
        return stored
    }

    /// The current token and its expiry when the local clock says it is valid: in memory, else in the store.
    func activeStoredToken() -> FMStoredToken? {
        let now = self.now()
        if let valid = pool.validToken(slot: 0, now: now) { return valid }
        if let stored = loadStoredToken(), stored.expiry > now { return stored }
        return nil
    }
}

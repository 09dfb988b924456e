import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The session stage of the pipeline: leasing a pool session, the single-flight login of each slot
// (Basic, Claris ID or OAuth), the new-session hook, and what the server says about a token.

extension DataAPI {
    /// Leases a session token for one attempt: the slot's current token when the local clock says it is
    /// valid, else one login of that slot shared by every concurrent caller. `preferring` sends a replay back
    /// to its own slot; `force` logs in even when a token is valid (joining a login in flight). The lease's
    /// busy count must be given back with ``releaseSession(_:)`` (a failed lease gives it back itself).
    /// `completion` may run synchronously.
    func leaseSession(preferring: Int?, force: Bool, completion: @escaping @Sendable (Result<SessionLease, FMError>) -> Void) {
        let now = self.now()
        let (slot, ready) = pool.pick(preferring: preferring, force: force, now: now)
        if let ready {
            completion(.success(ready))
            return
        }
        let stored = (force || slot != 0 || pool.pinned) ? nil : loadStoredToken()
        let action = pool.acquire(slot: slot, now: now, stored: stored, force: force) { [pool] result in
            if case .failure = result { pool.release(slot: slot) }
            completion(result.map { SessionLease(slot: slot, token: $0) })
        }
        switch action {
        case .use(let token):
            completion(.success(SessionLease(slot: slot, token: token)))
        case .wait:
            break
        case .login(let id):
            guard !pool.pinned else {
                finishLogin(slot: slot, id: id, result: .failure(.noToken))
                return
            }
            logger.log(.info, "logging in to \(configuration.database)" + (pool.size > 1 ? " (session \(slot + 1) of \(pool.size))" : ""))
            login(slot: slot, id: id)
        }
    }

    /// Login `id` of `slot`, through ``openSession(slot:encoded:completion:)``.
    private func login(slot: Int, id: UInt64) {
        openSession(slot: slot) { [self] result in finishLogin(slot: slot, id: id, result: result) }
    }

    /// Opens a session: the login (configured credentials, or Basic `encoded`), then the new-session hook,
    /// as one step bounded by ``FMConfiguration/timeout`` — a token provider or a hook that never answers
    /// must not leave a slot logging in for good. Past the bound `completion` gets `-1004` and a session the
    /// login opened is closed; a hook's failure closes the session before `completion` gets it. A shutdown
    /// waits for this step (and that closing), so the session it opens is logged out too; a login answer that
    /// only arrives after the bound is closed on arrival.
    func openSession(slot: Int, encoded: String? = nil, completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
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
            completion(.failure(.timeout))
            guard let token else { return inFlight() }
            closeOnServer(token) { inFlight() }
        }
        performLogin(encoded: encoded) { [self] result in
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

    /// Gives back the busy count of a lease.
    func releaseSession(_ lease: SessionLease) {
        pool.release(slot: lease.slot)
    }

    private func finishLogin(slot: Int, id: UInt64, result: Result<String, FMError>) {
        let (waiters, persist) = pool.loginFinished(slot: slot, id: id, token: try? result.get(), now: now())
        if slot == 0 { apply(persist) }
        if case .success(let token) = result, persist == nil {
            // Not adopted (a logout came first): the waiters use it, nothing holds it. The shutdown logs it
            // out — or, when it has logged every session out already, it is closed now.
            if lifecycle.isDraining { closeOnServer(token) {} } else { pool.letGo(token, now: now()) }
        }
        if case .failure(let error) = result, error.code == "956" {
            // The server's session cap: the waiters' retries, and later calls, use the sessions open now.
            pool.sessionRefused(until: now().addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime))
        }
        if case .failure(let error) = result {
            logger.log(.error, "login failed: \(error.code) — reported to \(waiters.count) waiting call(s)")
        }
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
        sendBounded(SessionEndpoints.logout(token: token)) { _ in then() }
    }

    /// Logs in once with the configured credentials (Basic, Claris ID or OAuth) and reports the token or the
    /// error, on any queue. Bounded by ``FMConfiguration/timeout``; counted by the concurrency cap. Nothing is
    /// stored here.
    func performLogin(encoded: String? = nil, completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        if encoded == nil, case .clarisID(let provider)? = configuration.credentials {
            clarisLogin(provider, refresh: false, completion: completion)
            return
        }
        let endpoint: Endpoint<String>
        switch loginEndpoint(encoded: encoded) {
        case .success(let built): endpoint = built
        case .failure(let error): return completion(.failure(error))
        }
        sendBounded(endpoint, completion: completion)
    }

    /// Claris ID: ask the provider, log in with `FMID`; when the server rejects the token (401), ask again
    /// with `refresh: true` and log in once more.
    private func clarisLogin(_ provider: FMClarisIDTokenProvider, refresh: Bool,
                             completion: @escaping @Sendable (Result<String, FMError>) -> Void) {
        // A provider is the caller's code: only its first answer counts (a second would log in again).
        let answered = Locked(false)
        provider.fetch(refresh) { [self] fetched in
            let first = answered.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            guard first else { return }
            switch fetched {
            case .failure(let error):
                completion(.failure(error))
            case .success(let idToken):
                var endpoint = SessionEndpoints.login(dataSources: configuration.dataSources)
                endpoint.auth = .none
                endpoint.headers["Authorization"] = "FMID " + idToken
                sendBounded(endpoint) { [self] result in
                    if !refresh, case .failure(let error) = result, error.httpStatus == 401 {
                        logger.log(.warning, "the Claris ID token was rejected (\(error.code)); asking the provider for a new one")
                        clarisLogin(provider, refresh: true, completion: completion)
                    } else {
                        completion(result)
                    }
                }
            }
        }
    }

    /// The login endpoint for Basic (configured or `encoded`) or OAuth credentials.
    private func loginEndpoint(encoded: String?) -> Result<Endpoint<String>, FMError> {
        var endpoint = SessionEndpoints.login(encoded: encoded, dataSources: configuration.dataSources)
        if encoded == nil, case .oauth(let requestId, let identifier)? = configuration.credentials {
            endpoint.auth = .none
            endpoint.headers["X-FM-Data-OAuth-Request-Id"] = requestId
            endpoint.headers["X-FM-Data-OAuth-Identifier"] = identifier
        }
        return .success(endpoint)
    }

    /// Sends `endpoint` once (no session, no retry) under its own deadline of ``FMConfiguration/timeout``,
    /// and reports on any queue.
    func sendBounded<Value>(_ endpoint: Endpoint<Value>, completion: @escaping @Sendable (Result<Value, FMError>) -> Void) {
        let box = Locked<(@Sendable (Result<Value, FMError>) -> Void)?>(completion)
        let finish: @Sendable (Result<Value, FMError>) -> Void = { result in
            let completion = box.withLock { stored -> (@Sendable (Result<Value, FMError>) -> Void)? in
                defer { stored = nil }
                return stored
            }
            completion?(result)
        }
        if let invalid = endpoint.invalid { return finish(.failure(invalid)) }
        let authorization: String?
        switch endpoint.auth {
        case .basic(let encoded):
            switch basicAuthorization(encoded) {
            case .success(let value): authorization = value
            case .failure(let error): return finish(.failure(error))
            }
        case .token(let token): authorization = "Bearer " + token
        case .none, .session: authorization = nil
        }
        let flight = exchange(endpoint, authorization: authorization, sink: .memory(cap: configuration.maxResponseBytes)) { result in
            switch result {
            case .failure(let failure):
                finish(.failure(failure.error))
            case .success(let answer):
                let response = Endpoint<Value>.Response(answer.response, body: answer.body)
                guard answer.response.statusCode == 200 else {
                    finish(.failure(Envelope.error(status: answer.response.statusCode, body: answer.body)))
                    return
                }
                finish(EngineCall<Value>.decode(endpoint, response))
            }
        }
        let timer = Deadline.after(seconds: configuration.timeout) {
            flight.cancel(with: .timeout)
            finish(.failure(.timeout))
        }
        flight.onEnd { timer.cancel() }
    }

    /// The server accepted `lease`'s token: slide its expiry.
    func sessionUsed(_ lease: SessionLease) {
        let persist = pool.used(slot: lease.slot, token: lease.token, now: now())
        if lease.slot == 0 { apply(persist) }
    }

    /// The server no longer knows `lease`'s token: forget it when it is still the slot's.
    func sessionRejected(_ lease: SessionLease) {
        let persist = pool.rejected(slot: lease.slot, token: lease.token)
        if persist != nil { logger.log(.warning, "session token rejected; it will be renewed") }
        if lease.slot == 0 { apply(persist) }
    }

    /// A token the caller passed explicitly (not leased) was rejected: if it is the stored token, clear the
    /// store, so `isActiveToken()` turns false and the explicit-token pattern logs in again.
    func explicitTokenRejected(_ token: String) {
        if pool.slot(holding: token) == 0 {
            sessionRejected(SessionLease(slot: 0, token: token))
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

import Foundation

/// Called once with the token to use, or with the login failure.
typealias SessionWaiter = @Sendable (Result<String, FMError>) -> Void

extension DataAPI {
    /// Gets a token for a `.session` call: the current one when the local clock says it is valid, else one
    /// login shared by every concurrent caller (single flight). `force` logs in even when a token is valid
    /// (joining a login already in flight). `completion` may run synchronously.
    func withSessionToken(force: Bool, completion: @escaping SessionWaiter) {
        let now = self.now()
        if !force, let valid = session.withLock({ $0.validToken(now: now) }) {
            completion(.success(valid.token))
            return
        }
        let stored = force ? nil : loadStoredToken()
        let action = session.withLock { $0.acquire(now: now, stored: stored, force: force, waiter: completion) }
        switch action {
        case .use(let token):
            completion(.success(token))
        case .wait:
            break
        case .login(let id):
            logger.log(.info, "logging in to \(configuration.database)")
            sendLogin(encoded: nil) { [self] result in
                let (waiters, persist) = session.withLock { $0.loginFinished(id: id, token: try? result.get(), now: self.now()) }
                apply(persist)
                if case .failure(let error) = result {
                    logger.log(.error, "login failed: \(error.code) — reported to \(waiters.count) waiting call(s), not retried")
                }
                for waiter in waiters { waiter(result) }
            }
        }
    }

    /// Sends one login with the configured credentials (or `encoded`) and reports the token or the error,
    /// on the transport's queue. Nothing is stored here.
    @discardableResult
    func sendLogin(encoded: String?, completion: @escaping @Sendable (Result<String, FMError>) -> Void) -> TransportTask? {
        let endpoint = SessionEndpoints.login(encoded: encoded, dataSources: configuration.dataSources)
        if let invalid = endpoint.invalid {
            completion(.failure(invalid))
            return nil
        }
        let authorization: String
        switch basicAuthorization(encoded) {
        case .success(let value): authorization = value
        case .failure(let error):
            completion(.failure(error))
            return nil
        }
        return exchange(endpoint, authorization: authorization) { result in
            switch result {
            case .failure(let error):
                completion(.failure(error))
            case .success(let (response, body)):
                guard response.statusCode == 200 else {
                    completion(.failure(Envelope.error(status: response.statusCode, body: body)))
                    return
                }
                do {
                    completion(.success(try endpoint.decode(Endpoint.Response(response, body: body))))
                } catch let error as FMError {
                    completion(.failure(error))
                } catch {
                    completion(.failure(.malformed(Envelope.describe(error), status: 200)))
                }
            }
        }
    }

    /// The server accepted `token`: slide its expiry when it is the current one.
    func sessionUsed(_ token: String) {
        let now = self.now()
        apply(session.withLock { $0.used(token: token, now: now) })
    }

    /// The server rejected `token` (952): forget it when it is still the current one.
    func sessionRejected(_ token: String) {
        let persist = session.withLock { $0.rejected(token: token) }
        if persist != nil { logger.log(.warning, "session token rejected; it will be renewed") }
        apply(persist)
    }

    /// Makes `token` the current token with a fresh 15-minute expiry; returns the expiry.
    func adoptToken(_ token: String) -> Date {
        let expiry = now().addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime)
        apply(session.withLock { $0.adopt(token: token, expiry: expiry) })
        return expiry
    }

    /// Forgets the current token and clears the store; returns the token that was current.
    func resetSession() -> String? {
        let (token, persist) = session.withLock { $0.reset() }
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
        if let valid = session.withLock({ $0.validToken(now: now) }) { return valid }
        if let stored = loadStoredToken(), stored.expiry > now { return stored }
        return nil
    }
}

import Foundation

// The session surface: explicit login/logout/validate, and the legacy explicit-token model
// (`isActiveToken()` / `refreshToken(...)`). Every data call logs in by itself when it needs to.

extension DataAPI {
    /// Logs in now (joining a login already in flight), stores the token and returns it.
    ///
    /// Completes with `(token, "0")`, or `(nil, code)` — `"212"` for wrong credentials, a client code otherwise.
    @discardableResult
    public func login(completion: sending @escaping (String?, String) -> Void) -> FMRequest {
        loginResult { completion(try? $0.get(), $0.sessionTupleCode) }
    }

    /// Logs out the current session (`DELETE …/sessions/{token}`), clearing the token store first.
    ///
    /// Completes with `(true, "0")`, also when there was no session; `(false, code)` when the server refused
    /// (for example `"952"` for a token it had already closed) — the store is cleared in every case.
    @discardableResult
    public func logout(completion: sending @escaping (Bool, String) -> Void) -> FMRequest {
        logoutResult(token: nil) { completion((try? $0.get()) ?? false, $0.sessionTupleCode) }
    }

    /// Logs out the session of `token`; clears the token store when it is the current token.
    @discardableResult
    public func logout(token: String, completion: sending @escaping (Bool, String) -> Void) -> FMRequest {
        logoutResult(token: token) { completion((try? $0.get()) ?? false, $0.sessionTupleCode) }
    }

    /// Asks the server whether the current token is valid (`GET /validateSession`); never logs in.
    ///
    /// `(true, "0")` when valid; `(false, "952")` when the server rejected it (the token is then forgotten);
    /// `(false, "-1010")` when there is no current token (nothing is sent; one debug line says so).
    @discardableResult
    public func validateSession(completion: sending @escaping (Bool, String) -> Void) -> FMRequest {
        validateSessionResult(token: nil) { completion((try? $0.get()) ?? false, $0.sessionTupleCode) }
    }

    /// Asks the server whether `token` is valid (`GET /validateSession` with `Bearer token`).
    @discardableResult
    public func validateSession(token: String, completion: sending @escaping (Bool, String) -> Void) -> FMRequest {
        validateSessionResult(token: token) { completion((try? $0.get()) ?? false, $0.sessionTupleCode) }
    }

    /// `true` when a token is held whose local expiry (15 minutes after its last use) is in the future: in memory, on
    /// the elapsed clock (a sleep counts, a wall-clock step does not; the injected clock when only `now:` was given), or
    /// in the token store, on the wall clock.
    public func isActiveToken() -> Bool { sessions.activeStoredToken() != nil }

    /// Logs in with the configured credentials and returns the new token and its expiry (now + 15 minutes);
    /// the token becomes the current one and is written to the token store.
    @discardableResult
    public func refreshToken(completion: sending @escaping (String?, Date?, String) -> Void) -> FMRequest {
        refreshTokenResult(encodedCredentials: nil) { completion($0.sessionTupleValue?.token, $0.sessionTupleValue?.expiry, $0.sessionTupleCode) }
    }

    /// Logs in with a ready base64 `user:pass` value (the legacy `fm-auth`) and returns the token and its
    /// expiry (now + 15 minutes); the token becomes the current one and is written to the token store.
    /// ``onNewSession`` runs on the new session first, like after any login.
    @discardableResult
    public func refreshToken(encodedCredentials: String, completion: sending @escaping (String?, Date?, String) -> Void) -> FMRequest {
        refreshTokenResult(encodedCredentials: encodedCredentials) { completion($0.sessionTupleValue?.token, $0.sessionTupleValue?.expiry, $0.sessionTupleCode) }
    }

    /// The current session token, when the local clock says it is valid (as `isActiveToken()` judges it).
    public var currentToken: String? { sessions.activeStoredToken()?.token }

    /// The local expiry of ``currentToken``, on the wall clock: the one the token store was told, or, once the wall clock
    /// has stepped since, now plus what is left on the elapsed clock. A token still in the store (not taken yet) shows
    /// what a call would take: its stored expiry, at most 15 minutes from now (`.distantFuture` stays as it is).
    public var tokenExpiry: Date? { sessions.activeStoredToken()?.expiry }
}

// MARK: - Result-based twins (used by the callback methods above and by the async overlay)

extension DataAPI {
    @discardableResult
    func loginResult(completion: @escaping (Result<String, FMError>) -> Void) -> FMRequest {
        let delivery = OneShot(queue: callbackQueue, completion: completion)
        guard !lifecycle.isShuttingDown else {
            delivery.finish(.failure(.shuttingDown))
            return delivery.handle
        }
        sessions.forceLogin { result in delivery.finish(result) }
        return delivery.handle
    }

    @discardableResult
    func refreshTokenResult(
        encodedCredentials: String?,
        completion: @escaping (Result<(token: String, expiry: Date), FMError>) -> Void
    ) -> FMRequest {
        let delivery = OneShot(queue: callbackQueue, completion: completion)
        guard let encodedCredentials else {
            guard !lifecycle.isShuttingDown else {
                delivery.finish(.failure(.shuttingDown))
                return delivery.handle
            }
            sessions.forceLogin { [self] result in
                delivery.finish(result.map { token in
                    let held = pool.heldToken(slot: 0)
                    let expiry = held?.token == token ? held?.expiry : nil
                    return (token, expiry ?? now().addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime))
                })
            }
            return delivery.handle
        }
        // A shutdown waits for this login and then logs its session out (and clears the store after it).
        guard let inFlight = lifecycle.hold(refusedWhileShuttingDown: true) else {
            delivery.finish(.failure(.shuttingDown))
            return delivery.handle
        }
        // The new-session hook runs on this session too, before it becomes the current one.
        sessions.openSession(slot: 0, encoded: encodedCredentials) { [self] result, byHook in
            // The caller asked for this login: its failure (or its new-session hook's) is one error line.
            if case .failure(let error) = result {
                sessions.logger.log(.error, SessionStage.failureLine(error, byHook: byHook), metadata: ["fm.code": error.code])
            }
            if case .success(let token) = result, lifecycle.isDraining {
                // The shutdown's grace ended first and every session is logged out: so is this one.
                sessions.closeOnServer(token) {}
                delivery.finish(.failure(.shuttingDown))
            } else {
                // A token that arrived is adopted even if the caller cancelled meanwhile: the session exists.
                delivery.finish(result.map { token in (token, sessions.adoptToken(token)) })
            }
            inFlight()
        }
        return delivery.handle
    }

    @discardableResult
    func logoutResult(token explicit: String?, completion: @escaping (Result<Bool, FMError>) -> Void) -> FMRequest {
        // Forget the token before the DELETE goes out, so no concurrent call picks it up again.
        let token: String?
        let stored = sessions.loadStoredToken()?.token
        if let explicit {
            let isCurrent = pool.heldToken(slot: 0)?.token == explicit
            if isCurrent || stored == explicit { _ = sessions.resetSession() }
            token = explicit
        } else {
            token = sessions.resetSession() ?? stored
        }
        guard let token else {
            answeredWithoutARequest(SessionEndpoints.logout(token: "-").kind, "no session token is held; nothing to log out", code: "0")
            return complete(.success(true), completion)
        }
        return perform(SessionEndpoints.logout(token: token), completion: completion)
    }

    @discardableResult
    func validateSessionResult(token explicit: String?, completion: @escaping (Result<Bool, FMError>) -> Void) -> FMRequest {
        guard let token = explicit ?? currentToken else {
            let code = FMError.ClientCode.noToken
            answeredWithoutARequest(SessionEndpoints.validate(token: "-").kind, "no session token is held (\(code))", code: code)
            return complete(.failure(FMError(code: code, message: "There is no session token to validate")), completion)
        }
        return perform(SessionEndpoints.validate(token: token), completion: completion)
    }

    /// The line of a session call SwiftFM answers itself because no token is held (`validateSession`: `-1010`, `logout`:
    /// nothing to log out): `KIND not sent: WHY`, at debug (the answer to the question asked, not a failure, as FileMaker's
    /// 401 "no records match" is to a find), with a call's fields (`fm.request_id`, `fm.endpoint`, `fm.code`). Every other
    /// way a call ends is logged by the pipeline.
    private func answeredWithoutARequest(_ kind: String, _ why: String, code: String) {
        let logger = sessions.logger
        guard logger.isEnabled(.debug) else { return }
        var metadata = context.callerLogContext()   // on the caller's thread or task: the call begins and ends here
        metadata["fm.request_id"] = String(RequestIDs.make())
        metadata["fm.endpoint"] = kind
        metadata["fm.code"] = code
        logger.log(.debug, "\(kind) not sent: \(why)", metadata: metadata)
    }
}

extension Result where Failure == FMError {
    /// `"0"` on success, else the error's code (the second element of the legacy tuples).
    fileprivate var sessionTupleCode: String {
        switch self {
        case .success: "0"
        case .failure(let error): error.code
        }
    }

    /// The value on success, else `nil`.
    fileprivate var sessionTupleValue: Success? { try? get() }
}

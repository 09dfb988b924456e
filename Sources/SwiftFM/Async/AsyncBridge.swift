import Foundation

/// Holds the request of one bridged call so task cancellation can reach it, whichever comes first
/// (the async bridge here, and the SwiftFM 2.x calls).
final class CancelLatch: Sendable {
    private struct State {
        var cancelled = false
        var request: FMRequest?
    }
    private let state = Locked(State())

    func set(_ request: FMRequest) {
        let cancelled = state.withLock { state -> Bool in
            state.request = request
            return state.cancelled
        }
        if cancelled { request.cancel() }
    }

    func cancel() {
        let request = state.withLock { state -> FMRequest? in
            state.cancelled = true
            return state.request
        }
        request?.cancel()
    }
}

extension DataAPI {
    /// The one async bridge: sends `endpoint` through the engine and returns its value or throws ``FMError``.
    ///
    /// Task cancellation cancels the request (its transport task) and the call throws `"-1005"`; a task cancelled
    /// before the call throws `"-1005"` at once and sends nothing. The continuation is resumed exactly once
    /// because the engine completes exactly once.
    ///
    /// The engine resumes the continuation directly (no hop through ``callbackQueue`` first): the
    /// continuation already hands the value to the task's executor.
    func bridge<Value>(_ endpoint: Endpoint<Value>) async throws -> Value {
        let handle = FMRequest()
        return try await bridge(attaching: handle) { completion in
            var options = CallOptions()
            options.inline = true
            options.handle = handle
            return perform(endpoint, options: options, completion: completion)
        }
    }

    /// The bridge for operations that are not a single endpoint: `start` begins the callback operation and
    /// returns its handle. `handle`: the handle `start` will use, known before it starts, so that a cancel while
    /// it starts (the call is on its way to the transport) reaches the call there: nothing is sent.
    func bridge<Value>(attaching handle: FMRequest? = nil,
                       _ start: (@escaping (consuming Result<Value, FMError>) -> Void) -> FMRequest) async throws -> Value {
        // Cancelled already: nothing starts (started, a fast answer could arrive before the cancel reached it).
        if Task.isCancelled { throw FMError.cancelled }
        let latch = CancelLatch()
        if let handle { latch.set(handle) }
        // The result is moved into the continuation whole (no copy stays behind on the engine's thread), so the
        // task holds the only reference: what the caller drops is freed in the caller's task.
        let box: UncheckedBox<Result<Value, FMError>> = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedBox<Result<Value, FMError>>, Error>) in
                let request = start { (result: consuming Result<Value, FMError>) in
                    if let error = result.failure {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: UncheckedBox(result))
                    }
                }
                latch.set(request)
            }
        } onCancel: {
            latch.cancel()
        }
        return try box.value.get()
    }
}

// MARK: - Async sessions

extension DataAPI {
    /// Logs in now (joining a login in flight), stores the token and returns it. Throws ``FMError``.
    @discardableResult
    public func login() async throws -> String {
        try await bridge { loginResult(completion: $0) }
    }

    /// Logs out the current session; the token store is cleared whatever the server answers. Throws
    /// ``FMError`` when the server refused (for example `"952"`).
    public func logout() async throws {
        _ = try await bridge { logoutResult(token: nil, completion: $0) }
    }

    /// `true` when the server accepts the current token, `false` when it rejects it (952, the token is then
    /// forgotten) or there is none (-1010). Other failures throw ``FMError``.
    public func validateSession() async throws -> Bool {
        do {
            return try await bridge { validateSessionResult(token: nil, completion: $0) }
        } catch let error as FMError where error.code == "952" || error.code == FMError.ClientCode.noToken {
            return false
        }
    }

    /// Logs in with the configured credentials; returns the new token and its expiry (now + 15 minutes).
    @discardableResult
    public func refreshToken() async throws -> (token: String, expiry: Date) {
        try await bridge { refreshTokenResult(encodedCredentials: nil, completion: $0) }
    }

    /// Logs in with a ready base64 `user:pass` value; returns the new token and its expiry (now + 15 minutes).
    @discardableResult
    public func refreshToken(encodedCredentials: String) async throws -> (token: String, expiry: Date) {
        try await bridge { refreshTokenResult(encodedCredentials: encodedCredentials, completion: $0) }
    }

    /// Logs out the session of `token` (a token the caller owns); clears the store when it is the current one.
    /// Throws ``FMError`` when the server refused (for example `"952"`).
    public func logout(token: String) async throws {
        _ = try await bridge { logoutResult(token: token, completion: $0) }
    }

    /// `true` when the server accepts `token`, `false` when it rejects it (952). Other failures throw ``FMError``.
    public func validateSession(token: String) async throws -> Bool {
        do {
            return try await bridge { validateSessionResult(token: token, completion: $0) }
        } catch let error as FMError where error.code == "952" {
            return false
        }
    }
}

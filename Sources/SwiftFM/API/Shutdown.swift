import Foundation

/// The new-session hook: gets the new session and must call `done` exactly once, with `nil` when the
/// session is ready, or with the error that the calls waiting for it then complete with.
public typealias FMNewSessionHook = @Sendable (_ session: FMNewSession, _ done: @escaping @Sendable (FMError?) -> Void) -> Void

/// A session that was just opened, handed to ``DataAPI/onNewSession``.
///
/// Calls made through ``api`` use this session (its token), bypass the pool, and are neither renewed nor
/// replayed: the session is not yet given to any other call.
public struct FMNewSession: Sendable, CustomStringConvertible {
    /// A ``DataAPI`` bound to the new session: set globals, run a script, read a record.
    public let api: DataAPI
    /// Which pool session this is, from 0 (``FMConfiguration/sessionPoolSize``).
    public let poolIndex: Int

    /// `"FMNewSession(poolIndex: …)"` (never the token).
    public var description: String { "FMNewSession(poolIndex: \(poolIndex))" }
}

extension DataAPI {
    /// Runs after every login — the first, each renewal, each pool session — and before any call waiting
    /// for that session. Use it to restore what a session holds (global fields, a script's setup): FileMaker
    /// forgets them with the session.
    ///
    /// The hook calls `done(nil)` when the session is ready; `done(error)` fails every call waiting for
    /// that login with `error`, closes the session, and is not retried in a loop (the next call logs in
    /// and runs the hook again). Set it before the first call.
    ///
    /// The login and the hook together are bounded by ``FMConfiguration/timeout``: a hook that has not called `done`
    /// by then is given up. The calls waiting for the session fail with `-1004` saying that the new-session hook did
    /// not call `done`, the session is closed, and the hook's later calls through ``FMNewSession/api`` are refused with
    /// that error (after `done(error)`, with `-1010`) rather than sent with a closed session's token. A waiting call whose
    /// own deadline comes first (a call's deadline is armed before the login it starts, so with the default deadline it
    /// does) fails with `-1004` too, saying that it was not sent because the new-session hook was still running. While
    /// the hook runs, and until its last call in flight ends, the session's token is hidden from every log line and error.
    public var onNewSession: FMNewSessionHook? {
        get { sessions.newSessionHook.value }
        set { sessions.newSessionHook.withLock { $0 = newValue } }
    }

    /// Sets ``onNewSession`` with an `async` body: returning means ready, throwing fails the waiting calls
    /// (an ``FMError`` as it is, any other error as `-1010`… wrapped with its description).
    public func onNewSession(_ body: @escaping @Sendable (FMNewSession) async throws -> Void) {
        onNewSession = { session, done in
            Task {
                do {
                    try await body(session)
                    done(nil)
                } catch let error as FMError {
                    done(error)
                } catch {
                    done(FMError(code: FMError.ClientCode.noToken, message: "The new-session hook failed",
                                 underlying: String(describing: error)))
                }
            }
        }
    }

    /// Shuts down gracefully: new calls complete at once with `-1012` (``FMError/ClientCode/shuttingDown``);
    /// calls in flight may finish for up to `grace` seconds (default ``FMConfiguration/timeout``), after which
    /// they complete with `-1012`; then every pool session is logged out on the server and the token store is
    /// cleared. Logins in flight, and the logouts of sessions closed for idleness, are waited for within the same grace;
    /// a session a login opens after it is logged out as soon as it arrives. `completion` runs once, on ``callbackQueue``. Calling it again waits for the same shutdown;
    /// a `grace` given again shortens what is left of the first one when it ends sooner (`shutdown(grace: 0)` ends the calls
    /// still in flight at once), and never lengthens it.
    ///
    /// - Returns: the handle of the shutdown (cancelling it does not stop the shutdown).
    @discardableResult
    public func shutdown(grace: TimeInterval? = nil, completion: sending @escaping () -> Void) -> FMRequest {
        let delivery = OneShot<Void>(queue: callbackQueue) { _ in completion() }
        let bound = grace ?? configuration.timeout
        // This shutdown's timer, and whether the shutdown is complete (then no timer is armed).
        let timer = Locked<(deadline: Deadline?, over: Bool)>((nil, false))
        let stopTimer = { @Sendable in timer.withLock { $0.deadline?.cancel(); $0.over = true } }
        let first = lifecycle.beginShutdown(notify: { stopTimer(); delivery.finish(.success(())) }, began: { [logger] in
            logger.log(.info, "shutting down: no new calls; waiting up to \(bound) s for calls in flight")
        }) { [self] finished in
            stopTimer()
            logOutEverySession(then: finished)
        }
        // The first shutdown's grace; a later one's only when given (it may cut the first one's short).
        if first || grace != nil {
            let deadline = Deadline.after(seconds: bound) { [lifecycle] in lifecycle.stopAll(with: .shuttingDown) }
            let armed = timer.withLock { state -> Bool in
                guard !state.over, state.deadline == nil else { return false }
                state.deadline = deadline
                return true
            }
            if !armed { deadline.cancel() }
        }
        // Not the delivery's handle: a cancel would complete the delivery (the caller's completion) at once, before
        // the shutdown is complete. Cancelling this one changes nothing.
        return FMRequest()
    }

    /// Shuts down gracefully; see ``shutdown(grace:completion:)``. Returns when every session is logged out.
    public func shutdown(grace: TimeInterval? = nil) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            shutdown(grace: grace) { continuation.resume() }
        }
    }

    /// Logs out every pool session (each bounded by the timeout) and clears the store, then calls `then`.
    private func logOutEverySession(then: @escaping @Sendable () -> Void) {
        let tokens = sessions.resetAll()
        var options = CallOptions()
        options.bypassShutdown = true
        options.accepting = SessionEndpoints.closeAccepting   // a session the server forgot is closed already
        let group = DispatchGroup()
        for token in tokens {
            group.enter()
            perform(SessionEndpoints.close(token: token), options: options) { _ in group.leave() }
        }
        group.notify(queue: .global()) { [logger] in
            logger.log(.info, "shut down: \(tokens.count) session(s) logged out")
            then()
        }
    }
}

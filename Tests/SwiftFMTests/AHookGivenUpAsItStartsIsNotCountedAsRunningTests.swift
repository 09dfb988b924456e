import Foundation
import Testing
@testable import SwiftFM

/// The contract: a new-session hook given up by the bound of its session's opening (``SessionStage/armBound``) is
/// never counted as running afterwards, whatever the moment the bound fires — even at the very moment the login
/// answers and the hook is about to start. Once the bound gave it up, either the hook does not start at all, or it is
/// counted out again: ``SessionStage/isRunningNewSessionHook`` is `false` when both have happened. Were it left
/// counted, every later call of that client whose deadline passes while it waits for a session would say `the
/// new-session hook was still running` (``FMError/waitedForNewSessionHook(_:_:after:)``) for the client's whole life.
///
/// The race is run many times over two threads that start together (the bound fired on one, the login answered on
/// the other); there is no sleep, and each round ends when both threads have returned.
@Suite("A hook given up as it starts is not counted as running")
struct AHookGivenUpAsItStartsIsNotCountedAsRunningTests {
    /// The stage's `send`: keeps the login's completion for the test to answer; answers a logout at once.
    final class HeldLogin: @unchecked Sendable {
        private let lock = NSLock()
        private var login: (@Sendable (Result<String, FMError>) -> Void)?

        var send: SessionStage.Send {
            { [self] _, request, _, completion in
                if case .login = request { lock.withLock { login = completion } } else { completion(.success("")) }
            }
        }

        func answer(_ token: String) { lock.withLock { login }?(.success(token)) }
    }

    /// The bound of the opening, held: the test fires it.
    final class HeldBound: @unchecked Sendable {
        private let lock = NSLock()
        private var fire: (@Sendable () -> Void)?
        func arm(_: TimeInterval, _ fire: @escaping @Sendable () -> Void) -> Deadline {
            lock.withLock { self.fire = fire }
            return Deadline.after(seconds: .infinity) {}
        }
        func fireNow() { lock.withLock { fire }?() }
    }

    /// Runs `first` and `second` on two threads released together; returns once both have returned.
    private static func together(_ first: @escaping @Sendable () -> Void, _ second: @escaping @Sendable () -> Void) {
        let arrived = Locked(0)
        let group = DispatchGroup()
        for work in [first, second] {
            let thread = Thread {
                arrived.withLock { $0 += 1 }
                while arrived.value < 2 { sched_yield() }
                work()
                group.leave()
            }
            group.enter()
            thread.start()
        }
        group.wait()
    }

    /// The interleaving this guards: the bound claims the run while the hook has not started (nothing to count out), and
    /// the hook starts before the give-up has ended the run; its `done` is then ignored, and before the fix it stayed
    /// counted as running for good. The window is a few instructions wide: this did not fail on main in 3,000 rounds
    /// (found by reading); since the fix, the claim itself ends the run, so no interleaving leaves the count up.
    @Test func theCountIsZeroOnceTheBoundAndTheLoginAnswerHaveBothHappened() {
        var configuration = FMConfiguration(host: "fms.invalid", database: "db", credentials: .basic(username: "u", password: "p"))
        configuration.timeout = 3600
        let api = DataAPI(configuration: configuration, transport: SessionStageAbuseTests.SynchronousTransport())
        let hook: FMNewSessionHook = { _, done in done(nil) }
        var stuck = 0
        for round in 0..<1_000 {
            let held = HeldLogin()
            let bound = HeldBound()
            let pool = SessionPool(size: 1, idleTimeout: 300, stored: nil, now: Date())
            let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                     logger: Logger(handler: nil) { [] }, lifecycle: Lifecycle(), now: { Date() },
                                     pinnedAPI: { _ in api }, send: held.send)
            stage.newSessionHook.withLock { $0 = hook }
            stage.armBound.withLock { $0 = bound.arm }
            stage.lease(front: false) { _ in }
            Self.together({ bound.fireNow() }, { held.answer("tok-\(round)") })
            if stage.isRunningNewSessionHook { stuck += 1 }
        }
        #expect(stuck == 0, "in \(stuck) of 1,000 rounds the given-up hook stayed counted as running")
    }
}

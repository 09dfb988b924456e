import Foundation
import Testing
@testable import SwiftFM

/// The contract: the pool's wake-up timer (armed when a login failed while another session was open and calls wait out
/// the pause before the pool opens a session for them) belongs to its client and ends with it. Once the session stage
/// (what a released `DataAPI` releases) is gone, its armed wake-up is cancelled and lets go of its closure, so a process
/// that makes and drops clients keeps nothing of them until the timers fall due; and a wake-up that fired is not kept
/// by the stage (its record holds only the timers still armed).
@Suite("The pool's wake-up timer ends with its client")
struct ThePoolsWakeTimerEndsWithItsClientTests {
    /// Tells `released` when the timer lets go of the closure it would fire (a cancelled timer does, at once).
    final class Sentinel: @unchecked Sendable {
        let released: DispatchSemaphore
        init(_ released: DispatchSemaphore) { self.released = released }
        deinit { released.signal() }
    }

    /// A stage of two sessions whose first login succeeds and whose second is refused (not the server's session cap):
    /// the first call holds the only open session, the second waits out the pause after the refused login, and the
    /// pool asks for a wake-up.
    static func pausedStage(arming arm: @escaping @Sendable (TimeInterval, @escaping @Sendable () -> Void) -> Deadline)
        throws -> (stage: SessionStage, first: PoolTaker, second: PoolTaker) {
        let elapsed = TestElapsedClock()
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = SessionClock(wall: { wall }, elapsed: { elapsed.now })
        var configuration = FMConfiguration(host: "fms.invalid", database: "db", username: "u", password: "p")
        configuration.sessionPoolSize = 2
        let pool = SessionPool(size: 2, idleTimeout: 300, stored: nil, now: clock.now)
        let logins = Locked(0)
        let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                 logger: Logger(handler: nil) { [] }, lifecycle: Lifecycle(), clock: clock,
                                 send: { _, request, _, completion in
                                     guard case .login = request else { return }
                                     let number = logins.withLock { $0 += 1; return $0 }
                                     completion(number == 1 ? .success("tok1") : .failure(FMError(code: "500", message: "refused")))
                                 })
        stage.armWake.withLock { $0 = arm }
        let (first, second) = (PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        _ = try #require(first.lease, "the first call has no session")
        #expect(second.lease == nil && second.error == nil, "the second call does not wait out the pause")
        return (stage, first, second)
    }

    @Test func releasingTheStageCancelsItsArmedWake() throws {
        let released = DispatchSemaphore(value: 0)
        let armed = Locked<[Deadline]>([])
        do {
            let (stage, first, second) = try Self.pausedStage { _, fire in
                // The real timer, an hour away, firing the stage's closure and holding the sentinel beside it.
                let sentinel = Sentinel(released)
                let timer = Deadline.after(seconds: 3600) { withExtendedLifetime(sentinel) { fire() } }
                armed.withLock { $0.append(timer) }
                return timer
            }
            #expect(armed.value.count == 1, "no wake-up was armed")
            // The calls end: the first gives its session back, which the second takes and gives back in turn.
            first.lease?.release()
            second.lease?.release()
            withExtendedLifetime(stage) {}
        }
        // The stage is gone: its wake-up let go of what it would have fired.
        let ended = released.wait(timeout: .now() + 60) == .success
        #expect(ended, "the released stage's wake-up timer is still armed (it holds its closure until due)")
        for timer in armed.value { timer.cancel() }
    }

    /// While the pause lasts (the elapsed clock stands still here), each wake-up that fires finds the calls still paused
    /// and arms the next: the stage keeps the one armed, never the ones that fired.
    @Test func wakesThatFiredAreNotKeptByTheStage() throws {
        let fires = Locked<[@Sendable () -> Void]>([])
        let (stage, first, second) = try Self.pausedStage { _, fire in
            // A timer the test fires by hand: armed an hour away, its firing taken out of the clock's hands.
            let timer = Deadline.after(seconds: 3600) {}
            timer.cancel()
            fires.withLock { $0.append(fire) }
            return timer
        }
        #expect(stage.armedTimers == 1, "the stage does not keep its armed wake-up")
        for _ in 0..<100 {
            let due = fires.withLock { fires -> [@Sendable () -> Void] in
                defer { fires = [] }
                return fires
            }
            #expect(due.count == 1, "not one wake-up armed at a time")
            for fire in due { fire() }
            #expect(stage.armedTimers == 1, "the stage keeps wake-ups that fired")
        }
        first.lease?.release()
        second.lease?.release()
    }
}

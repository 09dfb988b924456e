import Foundation
import Testing
@testable import SwiftFM

/// The contract: the idle sweep's timer (armed when sessions beyond the first are open and unused) belongs to its client
/// and ends with it. Once the session stage (what a released `DataAPI` releases) is gone, its armed timer is cancelled,
/// so a process that creates and drops many clients keeps nothing of them until the timers fall due. On main the timer
/// stayed armed (holding its closure) until due: the test sees its closure still held once the stage was released.
/// Whatever the order: a sweep that fires (and arms the next) before its own arming has returned does not leave the
/// next one untracked, so that one too ends with the stage.
@Suite("The idle sweep's timer ends with its client")
struct TheIdleSweepsTimerEndsWithItsClientTests {
    /// Tells `released` when the timer lets go of the closure it would fire (a cancelled timer does, at once).
    final class Sentinel: @unchecked Sendable {
        let released: DispatchSemaphore
        init(_ released: DispatchSemaphore) { self.released = released }
        deinit { released.signal() }
    }

    @Test func releasingTheStageCancelsItsArmedSweep() throws {
        let released = DispatchSemaphore(value: 0)
        let armed = Locked<[Deadline]>([])
        do {
            let elapsed = TestElapsedClock()
            let wall = Date(timeIntervalSince1970: 1_800_000_000)
            let clock = SessionClock(wall: { wall }, elapsed: { elapsed.now })
            var configuration = FMConfiguration(host: "fms.invalid", database: "db", username: "u", password: "p")
            configuration.sessionPoolSize = 2
            configuration.sessionIdleTimeout = 300
            let pool = SessionPool(size: 2, idleTimeout: 300, stored: nil, now: clock.now)
            let logins = Locked(0)
            let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                     logger: Logger(handler: nil) { [] }, lifecycle: Lifecycle(), clock: clock,
                                     send: { _, request, _, completion in
                                         if case .login = request { completion(.success("tok\(logins.withLock { $0 += 1; return $0 })")) }
                                     })
            stage.armSweep.withLock {
                $0 = { seconds, fire in
                    // The real timer, an hour away, firing the stage's closure and holding the sentinel beside it.
                    let sentinel = Sentinel(released)
                    let timer = Deadline.after(seconds: 3600) { withExtendedLifetime(sentinel) { fire() } }
                    armed.withLock { $0.append(timer) }
                    return timer
                }
            }
            // A burst of two: two sessions, both given back: the second idles, and the sweep is armed for it.
            let (first, second) = (PoolTaker(), PoolTaker())
            stage.lease(front: false) { first.deliver($0) }
            stage.lease(front: false) { second.deliver($0) }
            let leases = try [#require(first.lease), #require(second.lease)]
            for lease in leases { lease.release() }
            #expect(armed.value.count == 1, "no sweep was armed")
        }
        // The stage (and its leases) are gone: the timer let go of what it would have fired.
        let ended = released.wait(timeout: .now() + 60) == .success
        #expect(ended, "the released stage's sweep timer is still armed (it holds its closure until due)")
        for timer in armed.value { timer.cancel() }
    }

    /// The first sweep fires before its arming returns (as a timer due at once may, on a busy machine), and its firing
    /// arms the next sweep: the next one is the stage's to cancel, not lost under the record of the first.
    @Test func aSweepThatFiresBeforeItsArmingReturnsLeavesTheNextOneTracked() throws {
        let released = DispatchSemaphore(value: 0)
        let armed = Locked<[Deadline]>([])
        do {
            let elapsed = TestElapsedClock()
            let wall = Date(timeIntervalSince1970: 1_800_000_000)
            let clock = SessionClock(wall: { wall }, elapsed: { elapsed.now })
            var configuration = FMConfiguration(host: "fms.invalid", database: "db", username: "u", password: "p")
            configuration.sessionPoolSize = 2
            configuration.sessionIdleTimeout = 300
            let pool = SessionPool(size: 2, idleTimeout: 300, stored: nil, now: clock.now)
            let logins = Locked(0)
            let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                     logger: Logger(handler: nil) { [] }, lifecycle: Lifecycle(), clock: clock,
                                     send: { _, request, _, completion in
                                         if case .login = request { completion(.success("tok\(logins.withLock { $0 += 1; return $0 })")) }
                                     })
            stage.armSweep.withLock {
                $0 = { seconds, fire in
                    let first = armed.withLock { $0.isEmpty }
                    if first {
                        // The first sweep fires before this returns: its timer is spent (it holds nothing), and the
                        // sweep it runs finds the second session not idle yet and arms the next one.
                        let timer = Deadline.after(seconds: 3600) {}
                        timer.cancel()
                        armed.withLock { $0.append(timer) }
                        fire()
                        return timer
                    }
                    // The next sweep: the real timer, an hour away, holding the sentinel beside the stage's closure.
                    let sentinel = Sentinel(released)
                    let timer = Deadline.after(seconds: 3600) { withExtendedLifetime(sentinel) { fire() } }
                    armed.withLock { $0.append(timer) }
                    return timer
                }
            }
            let (first, second) = (PoolTaker(), PoolTaker())
            stage.lease(front: false) { first.deliver($0) }
            stage.lease(front: false) { second.deliver($0) }
            let leases = try [#require(first.lease), #require(second.lease)]
            for lease in leases { lease.release() }
            #expect(armed.value.count == 2, "the first sweep did not arm the next one")
        }
        let ended = released.wait(timeout: .now() + 60) == .success
        #expect(ended, "the released stage's next sweep is still armed: the first one's record replaced it")
        for timer in armed.value { timer.cancel() }
    }
}

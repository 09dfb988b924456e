import Foundation
import Testing
@testable import SwiftFM

/// The contract: the rate limit's timer (``FMConfiguration/maxRequestsPerSecond``) is armed for the calls waiting for
/// their turn, and ends with the last of them. Once every waiting call has left the queue (its call ended: cancelled,
/// its deadline passed), the timer is cancelled and lets go of the limiter, so a client with a slow rate that is
/// dropped is freed at once, not when the timer falls due (up to `1 / rate` seconds later, ten years at most). On main the
/// armed timer held the limiter (and what it holds) until due.
@Suite("The rate limit's timer ends with its last waiter")
struct TheRateLimitsTimerEndsWithItsLastWaiterTests {
    /// Tells `released` when the limiter (which holds its clock, which holds this) is freed.
    final class Sentinel: @unchecked Sendable {
        let released: DispatchSemaphore
        init(_ released: DispatchSemaphore) { self.released = released }
        deinit { released.signal() }
    }

    @Test func theLastWaiterLeavingCancelsTheTimer() {
        let released = DispatchSemaphore(value: 0)
        do {
            let sentinel = Sentinel(released)
            // One request every million seconds (eleven days), on the real clock and the real timer.
            let limiter = RateLimiter(rate: 1e-6, clock: { withExtendedLifetime(sentinel) { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 } })
            let ran = Locked(0)
            #expect(limiter.enter { ran.withLock { $0 += 1 } } == nil, "the first request does not leave at once")
            let ticket = limiter.enter { Issue.record("a withdrawn waiter ran") }
            #expect(ticket != nil, "the second request does not wait for its turn")
            // Its call ended: it leaves the queue, and nobody else waits.
            ticket?.withdraw()
            #expect(ran.value == 1)
        }
        // Nothing holds the limiter but its timer, which has nobody left to let through.
        let freed = released.wait(timeout: .now() + 60) == .success
        #expect(freed, "the limiter is held by its timer until due, though nobody waits")
    }

    @Test func aWaiterLeftBehindStillGetsItsTurn() {
        let now = Locked(100.0)
        let timers = Locked<[@Sendable () -> Void]>([])
        let limiter = RateLimiter(rate: 1, clock: { now.value }, schedule: { _, work in
            timers.withLock { $0.append(work) }
            return nil
        })
        let ran = Locked<[Int]>([])
        limiter.enter { ran.withLock { $0.append(1) } }
        let second = limiter.enter { Issue.record("a withdrawn waiter ran") }
        second?.withdraw()   // the timer is cancelled: nobody waits
        let third = limiter.enter { ran.withLock { $0.append(3) } }
        #expect(third != nil, "the third request leaves before its turn")
        now.withLock { $0 += 1 }
        // Both timers fire (a test's manual timers are not cancelled): the first one's is stale and lets nobody through.
        while let timer = timers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { timer() }
        #expect(ran.value == [1, 3], "the waiter after the withdrawn one did not get its turn")
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// The clock thread's sleep (``ClockAlarm``): a wake is never lost, whether it comes before the sleep or during
/// it, on the untimed and the timed wait, and a timed sleep ends by itself. Every wait here is on the event, bounded
/// generously; nothing measures a duration. `Scripts/check-darwin-branches.sh` runs this suite against the Apple
/// platforms' alarm too (a `DispatchSemaphore` and a flag, instead of Linux's condition variable).
@Suite("ClockAlarm: the clock thread's sleep")
struct ClockAlarmTests {
    /// Runs `body` on a thread of its own; the semaphore is signalled when it returns.
    private func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
        return done
    }

    @Test func aWakeBeforeTheSleepIsNotLost() {
        let alarm = ClockAlarm()
        alarm.wake()
        let slept = onThread { alarm.sleep(until: .max) }
        #expect(slept.wait(timeout: TestBound.deadline) == .success)
    }

    @Test func aWakeEndsASleepThatWaitsForALaterMoment() {
        let alarm = ClockAlarm()
        let due = Deadline.fromNow(3600).uptimeNanoseconds
        let slept = onThread { alarm.sleep(until: due) }
        alarm.wake()   // before or during the sleep: either way it ends it
        #expect(slept.wait(timeout: TestBound.deadline) == .success)
    }

    @Test func aTimedSleepEndsByItself() {
        let alarm = ClockAlarm()
        let due = Deadline.fromNow(0.01).uptimeNanoseconds
        let slept = onThread { alarm.sleep(until: due) }
        #expect(slept.wait(timeout: TestBound.deadline) == .success)
    }

    /// The clock's own pattern, many times over: the sleeper reads what is posted, then sleeps; the waker posts,
    /// then wakes. A wake that lands between the sleeper's read and its sleep must still end that sleep, or the
    /// sleeper never sees the post (and this test gives up after the hang bound).
    @Test(arguments: [false, true])
    func noWakeIsLostBetweenAReadAndTheSleep(timed: Bool) {
        let alarm = ClockAlarm()
        let rounds = 500
        let posted = Locked(0)
        let seen = DispatchSemaphore(value: 0)
        let sleeper = onThread {
            var last = 0
            while last < rounds {
                let now = posted.withLock { $0 }
                if now > last {
                    last = now
                    seen.signal()
                    continue
                }
                alarm.sleep(until: timed ? Deadline.fromNow(3600).uptimeNanoseconds : .max)
            }
        }
        var acknowledged = 0
        for round in 1...rounds {
            posted.withLock { $0 = round }
            alarm.wake()
            guard seen.wait(timeout: TestBound.deadline) == .success else { break }
            acknowledged = round
        }
        #expect(acknowledged == rounds)
        #expect(sleeper.wait(timeout: TestBound.deadline) == .success)
    }
}

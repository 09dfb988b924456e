import Foundation
import Testing
@testable import SwiftFM

/// Every timer of the package waits on one clock thread: an earlier timer wakes it, a cancelled one never
/// fires and lets go of what it captured, and each fires once, off the clock's thread.
@Suite("Deadline: one clock for every timer")
struct DeadlineClockTests {

    @Test func anEarlierTimerWakesTheClockThatWaitsForALaterOne() {
        let later = Deadline.after(seconds: 3600) {}
        defer { later.cancel() }
        let fired = DispatchSemaphore(value: 0)
        _ = Deadline.after(seconds: 0.01) { fired.signal() }
        // Were the clock not woken, it would sleep until the hour-long timer and this wait would give up.
        #expect(fired.wait(timeout: TestBound.deadline) == .success)
    }

    @Test func timersArmedInAnyOrderAllFireOnceEach() {
        let count = 200
        let fired = Locked([Int](repeating: 0, count: count))
        let all = DispatchGroup()
        var deadlines: [Deadline] = []
        for index in (0..<count).reversed() {
            all.enter()
            deadlines.append(Deadline.after(seconds: Double(index % 7) / 1000) {
                fired.withLock { $0[index] += 1 }
                all.leave()
            })
        }
        #expect(all.wait(timeout: TestBound.deadline) == .success)
        for deadline in deadlines { deadline.cancel() }   // after firing: nothing happens
        #expect(fired.withLock { $0 } == [Int](repeating: 1, count: count))
    }

    @Test func aCancelledTimerNeverFiresAndLetsGoOfItsCaptures() {
        final class Captured: Sendable {}
        weak var watched: Captured?
        let fires = Locked(0)
        var deadlines: [Deadline] = []
        do {
            let captured = Captured()
            watched = captured
            // Many, so that cancels take timers from the middle of the heap, not only its top.
            for index in 0..<50 {
                deadlines.append(Deadline.after(seconds: 3600 + Double(index)) { _ = captured; fires.withLock { $0 += 1 } })
            }
        }
        #expect(watched != nil)
        for deadline in deadlines.shuffled() { deadline.cancel(); deadline.cancel() }
        #expect(watched == nil)
        #expect(fires.withLock { $0 } == 0)
        // The clock still serves the next timer after its heap was emptied from the middle.
        let fired = DispatchSemaphore(value: 0)
        _ = Deadline.after(seconds: 0) { fired.signal() }
        #expect(fired.wait(timeout: TestBound.deadline) == .success)
    }

    @Test func aTimerFiresOffTheClocksThread() {
        let name = Locked<String?>(nil)
        let fired = DispatchSemaphore(value: 0)
        _ = Deadline.after(seconds: 0) {
            name.withLock { $0 = Thread.current.name ?? "" }
            fired.signal()
        }
        #expect(fired.wait(timeout: TestBound.deadline) == .success)
        #expect(name.withLock { $0 } != DeadlineClock.kernelName)
    }

    @Test func aTimerThatCancelsAnotherFromItsFireDoesNotDeadlock() {
        let fired = DispatchSemaphore(value: 0)
        let victim = Deadline.after(seconds: 3600) {}
        _ = Deadline.after(seconds: 0) {
            victim.cancel()
            _ = Deadline.after(seconds: 0) { fired.signal() }
        }
        #expect(fired.wait(timeout: TestBound.deadline) == .success)
    }
}

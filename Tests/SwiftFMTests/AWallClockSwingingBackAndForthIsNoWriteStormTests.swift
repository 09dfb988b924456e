import Foundation
import Testing
@testable import SwiftFM

/// The contract: the sliding expiry is written to the token store when it moved by the persist threshold (30 s) either
/// way, but a write that turns back the way the last one went (an earlier expiry after a later one, or a later after an
/// earlier) waits until the threshold has passed on the monotonic clock since that write. A wall clock that swings back
/// and forth (two time sources fighting, a VM's clock stepped on every sync) then costs at most one store write per
/// 30 s, not one per call: the store's `save` runs on the calling path, under the stage's write lock, and may be slow (a
/// keychain, a file, a shared cache). One jump back, or forward, is still written at the next use.
@Suite("A wall clock swinging back and forth is no write storm")
struct AWallClockSwingingBackAndForthIsNoWriteStormTests {
    private static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// 200 uses within 20 s of wall clock, the wall clock an hour ahead on every other one: failed before with 199 writes.
    @Test func aSwingingClockWritesAtMostOncePerThreshold() {
        var machine = SessionStateMachine<Int>(stored: FMStoredToken(token: "t", expiry: Self.start.addingTimeInterval(900)),
                                               now: Self.start)
        var writes = 0
        for index in 0..<200 {
            let now = Self.start.addingTimeInterval(TimeInterval(index) / 10 + (index.isMultiple(of: 2) ? 0 : 3600))
            if machine.used(token: "t", now: now) != nil { writes += 1 }
        }
        #expect(writes <= 2, "\(writes) store writes for 200 uses")
    }

    /// The write held back is made once the threshold has passed on the monotonic clock: the store is not left with the
    /// expiry of the other side of the swing for good.
    @Test func theWriteHeldBackIsMadeOnceTheThresholdPassed() {
        var machine = SessionStateMachine<Int>(stored: FMStoredToken(token: "t", expiry: Self.start.addingTimeInterval(900)),
                                               now: Self.start)
        let ahead = Self.start.addingTimeInterval(3600)
        #expect(machine.used(token: "t", now: ahead, uptime: 100)?.token?.expiry == ahead.addingTimeInterval(900))
        #expect(machine.used(token: "t", now: Self.start.addingTimeInterval(1), uptime: 101) == nil)
        #expect(machine.used(token: "t", now: Self.start.addingTimeInterval(29), uptime: 129) == nil)
        let back = machine.used(token: "t", now: Self.start.addingTimeInterval(30), uptime: 130)
        #expect(back?.token == FMStoredToken(token: "t", expiry: Self.start.addingTimeInterval(930)))
    }

    /// A wall clock that only moves on (however fast, with the monotonic clock standing still) is written at every
    /// threshold it moved, as before: only a turn back is paced.
    @Test func aClockMovingOnIsWrittenAtEveryThreshold() {
        var machine = SessionStateMachine<Int>(stored: FMStoredToken(token: "t", expiry: Self.start.addingTimeInterval(900)),
                                               now: Self.start)
        var writes = 0
        for step in 1...10 where machine.used(token: "t", now: Self.start.addingTimeInterval(TimeInterval(step) * 60), uptime: 5) != nil {
            writes += 1
        }
        #expect(writes == 10)
        // Then one jump back a day: held back while the last write (later) is within the threshold, written after it.
        let dayBack = Self.start.addingTimeInterval(-86_400)
        #expect(machine.used(token: "t", now: dayBack, uptime: 6) == nil)
        #expect(machine.used(token: "t", now: dayBack.addingTimeInterval(1), uptime: 35)?.token?.expiry == dayBack.addingTimeInterval(901))
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// The contract, on the session state machine with its two clocks apart: a token taken from the token store is judged by
/// the store's wall-clock expiry at that moment (what is left then, at most a session lifetime) and from then on by the
/// elapsed clock alone. The store is not asked again for the token the memory has judged expired unless another process
/// slid its expiry since (a later expiry than the one known here): a wall clock set back keeps the store's expiry ahead,
/// and the memory knows better. The expiry a caller is shown (``DataAPI/tokenExpiry``) is the store's, unless the wall
/// clock stepped since: then it is now plus what is left on the elapsed clock.
@Suite("A stored token is judged by its wall expiry once, then by the elapsed clock")
struct AStoredTokenIsJudgedByItsWallExpiryOnceThenByTheElapsedClockTests {
    typealias Machine = SessionStateMachine<Int>
    private static let wall = Date(timeIntervalSince1970: 1_800_000_000)

    private static func at(_ wall: TimeInterval, _ elapsed: TimeInterval) -> SessionTime {
        SessionTime(wall: Self.wall.addingTimeInterval(wall), elapsed: elapsed)
    }

    @Test func whatIsLeftAtAdoptionIsWhatItHasOnTheElapsedClock() {
        let stored = FMStoredToken(token: "S", expiry: Self.wall.addingTimeInterval(60))
        var machine = Machine(now: Self.at(0, 0))
        #expect(machine.acquire(now: Self.at(0, 100), stored: stored, force: false, waiter: 1) == .use("S"))
        // The wall clock set back a day: the minute left is still a minute on the elapsed clock.
        #expect(machine.isOpen(now: Self.at(-86_400, 159)))
        #expect(!machine.isOpen(now: Self.at(-86_400, 160)))
        // The wall clock set forward a day: still within the minute.
        #expect(machine.currentToken(now: Self.at(86_400, 150)) == "S")
    }

    @Test func aStoreExpiryFurtherAheadThanALifetimeCountsALifetime() {
        let stored = FMStoredToken(token: "S", expiry: Self.wall.addingTimeInterval(86_400))
        let machine = Machine(stored: stored, now: Self.at(0, 0))
        #expect(machine.isOpen(now: Self.at(0, 899)))
        #expect(!machine.isOpen(now: Self.at(0, 900)))
    }

    @Test func theTokenJudgedExpiredIsNotTakenBackFromTheStoreUnlessSlidElsewhere() {
        var machine = Machine(now: Self.at(0, 0))
        _ = machine.acquire(now: Self.at(0, 0), stored: nil, force: false, waiter: 1)
        let written = machine.loginFinished(id: 1, token: "A", now: Self.at(0, 0)).persist?.token
        #expect(written == FMStoredToken(token: "A", expiry: Self.wall.addingTimeInterval(900)))
        // The wall clock set back a day, 15 minutes on the elapsed clock: the store's copy looks valid a day longer.
        let later = Self.at(-86_400, 900)
        #expect(!machine.isOpen(now: later))
        #expect(!machine.mayAdopt(FMStoredToken(token: "A", expiry: Self.wall.addingTimeInterval(900)), now: later))
        #expect(machine.acquire(now: later, stored: FMStoredToken(token: "A", expiry: Self.wall.addingTimeInterval(900)),
                                force: false, waiter: 2) == .login(id: 2))
        // Another process used it since (its expiry slid later): taken.
        var other = Machine(now: Self.at(0, 0))
        _ = other.acquire(now: Self.at(0, 0), stored: nil, force: false, waiter: 1)
        _ = other.loginFinished(id: 1, token: "A", now: Self.at(0, 0))
        let slid = FMStoredToken(token: "A", expiry: Self.wall.addingTimeInterval(1_200))
        #expect(other.acquire(now: Self.at(900, 900), stored: slid, force: false, waiter: 2) == .use("A"))
        #expect(other.isOpen(now: Self.at(900, 1_199)) && !other.isOpen(now: Self.at(900, 1_200)))
    }

    @Test func theExpiryShownFollowsAWallClockStep() {
        var machine = Machine(now: Self.at(0, 0))
        _ = machine.acquire(now: Self.at(0, 0), stored: nil, force: false, waiter: 1)
        _ = machine.loginFinished(id: 1, token: "A", now: Self.at(0, 0))
        // No step: the store's expiry, exactly.
        #expect(machine.validToken(now: Self.at(60, 60))?.expiry == Self.wall.addingTimeInterval(900))
        // A day forward, a minute passed: now plus the 14 minutes left.
        #expect(machine.validToken(now: Self.at(86_400, 60))?.expiry == Self.wall.addingTimeInterval(86_400 + 840))
        // A day back: the same.
        #expect(machine.validToken(now: Self.at(-86_400, 60))?.expiry == Self.wall.addingTimeInterval(-86_400 + 840))
    }
}

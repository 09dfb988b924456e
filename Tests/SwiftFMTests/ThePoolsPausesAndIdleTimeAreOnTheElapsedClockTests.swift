import Foundation
import Testing
@testable import SwiftFM

/// The contract: the session pool times its rules on the elapsed clock (a sleep counts, a wall-clock step does not):
/// a session idle for less than the idle timeout is not closed because the wall clock jumped a day forward, and the
/// pause after the server's session cap (956) lasts a session lifetime of elapsed time whatever the wall clock does.
@Suite("The pool's pauses and idle time are on the elapsed clock")
struct ThePoolsPausesAndIdleTimeAreOnTheElapsedClockTests {
    private static let wall = Date(timeIntervalSince1970: 1_800_000_000)

    private static func at(_ wall: TimeInterval, _ elapsed: TimeInterval) -> SessionTime {
        SessionTime(wall: Self.wall.addingTimeInterval(wall), elapsed: elapsed)
    }

    private func lease(_ pool: SessionPool, at now: SessionTime) -> (PoolTaker, SessionPool.Plan) {
        let taker = PoolTaker()
        let (_, plan) = pool.lease(now: now, stored: nil, front: false) { taker.deliver($0) }
        plan.deliverToWaiters()
        return (taker, plan)
    }

    @Test func aWallClockSetForwardClosesNoSessionIdleLessThanTheTimeout() throws {
        let stored = FMStoredToken(token: "t0", expiry: .distantFuture)
        let pool = SessionPool(size: 2, idleTimeout: 300, stored: stored, now: Self.at(0, 0))
        let (first, _) = lease(pool, at: Self.at(0, 0))
        let (second, opening) = lease(pool, at: Self.at(0, 0))
        let login = try #require(opening.logins.first)
        pool.loginFinished(slot: 1, id: login.id, result: .success("t1"), now: Self.at(0, 0), stored: nil).plan.deliverToWaiters()
        pool.giveBack(try #require(first.lease), now: Self.at(0, 0), stored: nil).deliverToWaiters()
        pool.giveBack(try #require(second.lease), now: Self.at(0, 0), stored: nil).deliverToWaiters()

        let (kept, plan) = lease(pool, at: Self.at(86_400, 10))
        #expect(kept.lease?.slot == 0)
        #expect(plan.logouts.isEmpty, "an idle session was closed 10 s after its use")
        pool.giveBack(try #require(kept.lease), now: Self.at(86_400, 10), stored: nil).deliverToWaiters()
        // 301 s of elapsed time later (the wall clock set back meanwhile), session 1 is closed.
        let (_, closing) = lease(pool, at: Self.at(-86_400, 301))
        #expect(closing.logouts.map(\.slot) == [1])
    }

    @Test func theSessionCapPauseLastsALifetimeOfElapsedTime() throws {
        let pool = SessionPool(size: 2, stored: FMStoredToken(token: "t0", expiry: .distantFuture), now: Self.at(0, 0))
        let (first, _) = lease(pool, at: Self.at(0, 0))
        let (second, opening) = lease(pool, at: Self.at(0, 0))
        let login = try #require(opening.logins.first)
        let cap = FMError(code: "956", message: "Maximum number of Data API sessions exceeded")
        pool.loginFinished(slot: 1, id: login.id, result: .failure(cap), now: Self.at(0, 0), stored: nil).plan.deliverToWaiters()
        #expect(second.lease?.slot == 0)
        pool.giveBack(try #require(first.lease), now: Self.at(0, 0), stored: nil).deliverToWaiters()
        pool.giveBack(try #require(second.lease), now: Self.at(0, 0), stored: nil).deliverToWaiters()

        // The wall clock a day ahead, a minute of elapsed time: still paused, the two calls share session 0.
        let (a, _) = lease(pool, at: Self.at(86_400, 60))
        let (b, shared) = lease(pool, at: Self.at(86_400, 60))
        #expect(a.lease?.slot == 0 && b.lease?.slot == 0 && shared.logins.isEmpty)
        pool.giveBack(try #require(a.lease), now: Self.at(86_400, 60), stored: nil).deliverToWaiters()
        pool.giveBack(try #require(b.lease), now: Self.at(86_400, 60), stored: nil).deliverToWaiters()
        // A lifetime of elapsed time later, the pause is over: a second call gets a session of its own.
        let (c, _) = lease(pool, at: Self.at(86_400, 901))
        let (d, opened) = lease(pool, at: Self.at(86_400, 901))
        #expect(c.lease?.slot == 0 && d.lease == nil)
        #expect(opened.logins.map(\.slot) == [1])
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// A call whose session the server lost (952) is replayed once, on a session opened after the loss: never on
/// one as old as the lost one (after a server restart every old session is as dead), and never made to wait for
/// a session newer than the one opened for it while it gave its own back.
@Suite("Session stage: the replay after a lost session")
struct SessionReplayTests {
    private static let start = Date(timeIntervalSince1970: 1_700_000_000)
    private static func valid(_ token: String) -> FMStoredToken { FMStoredToken(token: token, expiry: .distantFuture) }

    /// Leases a session from `pool` and hands out the plan's grants and failures (what the stage does).
    private func take(_ pool: SessionPool, replay: Bool = false) -> (PoolTaker, SessionPool.Plan) {
        let taker = PoolTaker()
        let (_, plan) = pool.lease(now: Self.start, stored: nil, front: replay) { taker.deliver($0) }
        deliver(plan)
        return (taker, plan)
    }

    private func deliver(_ plan: SessionPool.Plan) { plan.deliverToWaiters() }

    /// The lost wake-up: the replay's release opens a session for the call waiting behind it, a fast login
    /// ends before the replay queues again, and the replay must still take that session when it frees (it
    /// used to wait for one opened later, which with one slot never came: the call waited out its deadline).
    @Test func aReplayTakesTheSessionOpenedWhileItGaveItsOwnBack() throws {
        let pool = SessionPool(size: 1, stored: Self.valid("stale"), now: Self.start)
        let (first, _) = take(pool)
        let (second, _) = take(pool)
        let lost = try #require(first.lease)
        #expect(lost.token == "stale" && second.lease == nil)
        // The first call's request is answered 952: the session is forgotten and given back, which opens one
        // for the second call; that login ends before the replay joins the queue.
        _ = pool.rejected(slot: lost.slot, token: lost.token)
        let afterRelease = pool.giveBack(lost, now: Self.start, stored: nil)
        let login = try #require(afterRelease.logins.first)
        deliver(pool.loginFinished(slot: login.slot, id: login.id, result: .success("t1"), now: Self.start, stored: nil).plan)
        #expect(second.lease?.token == "t1")
        let (replay, _) = take(pool, replay: true)
        #expect(replay.lease == nil, "one session, leased to the second call")
        deliver(pool.giveBack(try #require(second.lease), now: Self.start, stored: nil))
        #expect(replay.lease?.token == "t1", "the replay takes the session opened after its own was lost")
        #expect(pool.waitingCount == 0)
    }

    /// After a server restart every session open at the loss is as dead: the replay does not take the other
    /// old session (it would be answered 952 again, and a call replays once) but one logged in for it.
    @Test func aReplayNeverTakesASessionAsOldAsTheLoss() throws {
        let pool = SessionPool(size: 2, stored: Self.valid("a"), now: Self.start)
        let (first, _) = take(pool)
        let (second, opening) = take(pool)
        let login = try #require(opening.logins.first)
        deliver(pool.loginFinished(slot: login.slot, id: login.id, result: .success("b"), now: Self.start, stored: nil).plan)
        let old = try #require(second.lease)
        #expect(old.token == "b")
        deliver(pool.giveBack(old, now: Self.start, stored: nil))
        // The server restarts; the first call's request is answered 952.
        let lost = try #require(first.lease)
        _ = pool.rejected(slot: lost.slot, token: lost.token)
        deliver(pool.giveBack(lost, now: Self.start, stored: nil))
        let (replay, plan) = take(pool, replay: true)
        #expect(replay.lease == nil, "session b was open when a was lost")
        let renewal = try #require(plan.logins.first)
        deliver(pool.loginFinished(slot: renewal.slot, id: renewal.id, result: .success("c"), now: Self.start, stored: nil).plan)
        #expect(replay.lease?.token == "c")
    }
}

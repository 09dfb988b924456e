import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: the client's wall clock (`now`) may be set back — NTP stepping it, an operator, a virtual machine
/// resumed from an old snapshot. The session pool's rules on that clock are each a length of time: the pause after the
/// server's session cap (956, a session lifetime), the pause after a failed login (``SessionPool/failedLoginPause``),
/// the idle timeout. A clock set back by a day holds none of them for a day: each counts from the moment the pool sees
/// the clock went back (the next call or session given back) and lasts its own length at most. A session's sliding
/// expiry written to the token store follows the clock back too: the store is told the earlier expiry at the next use,
/// not only once the clock has caught up with the old one.
@Suite("A wall clock set back holds no pool rule longer than its own length")
struct AWallClockSetBackHoldsNoPoolRuleLongerThanItsLengthTests {
    private static let start = Date(timeIntervalSince1970: 1_700_000_000)
    /// The wall clock after it was set back by a day.
    private static let back = start.addingTimeInterval(-86_400)

    /// A call that asks `pool` for a session at `now`; the plan's grants and failures are handed out.
    private func lease(_ pool: SessionPool, at now: Date) -> (PoolTaker, SessionPool.Plan) {
        let taker = PoolTaker()
        let (_, plan) = pool.lease(now: now, stored: nil, front: false) { taker.deliver($0) }
        plan.deliverToWaiters()
        return (taker, plan)
    }

    /// The pool is touched at `now` (a call takes a session and gives it back): it sees the clock.
    private func touch(_ pool: SessionPool, at now: Date, sourceLocation: SourceLocation = #_sourceLocation) {
        let (taker, _) = lease(pool, at: now)
        guard let lease = taker.lease else {
            Issue.record("no session at once", sourceLocation: sourceLocation)
            return
        }
        pool.giveBack(lease, now: now, stored: nil).deliverToWaiters()
    }

    /// The server's session cap (956) keeps the pool to the sessions open for a session lifetime. With the clock set
    /// back by a day, that pause ended a lifetime after the pool saw it (a day later on main: the pool kept sharing one
    /// session, never opening a second, for the whole day).
    @Test func theSessionCapPauseEndsALifetimeAfterThePoolSawTheClockGoBack() throws {
        let pool = SessionPool(size: 2, stored: FMStoredToken(token: "t0", expiry: .distantFuture), now: Self.start)
        let (first, _) = lease(pool, at: Self.start)
        let (second, opening) = lease(pool, at: Self.start)
        let login = try #require(opening.logins.first)
        #expect(login.slot == 1)
        let cap = FMError(code: "956", message: "Maximum number of Data API sessions exceeded")
        pool.loginFinished(slot: 1, id: login.id, result: .failure(cap), now: Self.start, stored: nil).plan.deliverToWaiters()
        // Past the cap, the second call shares the open session.
        #expect(second.lease?.slot == 0)
        pool.giveBack(try #require(first.lease), now: Self.start, stored: nil).deliverToWaiters()
        pool.giveBack(try #require(second.lease), now: Self.start, stored: nil).deliverToWaiters()

        touch(pool, at: Self.back)
        // Still within the pause, counted from the moment the pool saw the clock: two calls share the one session.
        let within = Self.back.addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime - 1)
        let (a, _) = lease(pool, at: within)
        let (b, shared) = lease(pool, at: within)
        #expect(a.lease?.slot == 0 && b.lease?.slot == 0 && shared.logins.isEmpty)
        pool.giveBack(try #require(a.lease), now: within, stored: nil).deliverToWaiters()
        pool.giveBack(try #require(b.lease), now: within, stored: nil).deliverToWaiters()

        // A lifetime after the pool saw the clock go back, the pause is over: a second call gets a session of its own.
        let after = Self.back.addingTimeInterval(SessionStateMachine<SessionWaiter>.lifetime + 1)
        let (c, _) = lease(pool, at: after)
        let (d, opened) = lease(pool, at: after)
        #expect(c.lease?.slot == 0)
        #expect(d.lease == nil, "the pause of the session cap still held a day after the clock went back")
        #expect(opened.logins.map(\.slot) == [1])
    }

    /// A failed login while another session is open pauses new sessions for ``SessionPool/failedLoginPause`` seconds,
    /// and arms a wake-up for when the pause ends. With the clock set back by a day, the wake-up came after the pause's
    /// length (not a day) and opened the waiting call's session (on main the pause, and each wake-up, lasted a day: the
    /// waiting call got no session of its own until its deadline).
    @Test func theFailedLoginPauseEndsItsLengthAfterThePoolSawTheClockGoBack() throws {
        let pool = SessionPool(size: 2, stored: FMStoredToken(token: "t0", expiry: .distantFuture), now: Self.start)
        let (first, _) = lease(pool, at: Self.start)
        #expect(first.lease?.slot == 0)
        let (second, opening) = lease(pool, at: Self.start)
        let login = try #require(opening.logins.first)
        let failed = FMError(code: FMError.ClientCode.transport, message: "connection reset")
        let paused = pool.loginFinished(slot: 1, id: login.id, result: .failure(failed), now: Self.start, stored: nil).plan
        #expect(paused.wake == SessionPool.failedLoginPause && paused.logins.isEmpty && second.lease == nil)

        // The wake-up fires (on the monotonic clock, after the pause) and finds the wall clock a day back.
        let again = pool.wake(now: Self.back, stored: nil)
        #expect(again.logins.isEmpty)
        let wait = try #require(again.wake)
        #expect(wait <= SessionPool.failedLoginPause, "the next wake-up was \(wait) s away")

        let later = pool.wake(now: Self.back.addingTimeInterval(SessionPool.failedLoginPause + 1), stored: nil)
        #expect(later.logins.map(\.slot) == [1], "the pause of a failed login still held a day after the clock went back")
    }

    /// Sessions idle past the idle timeout are closed. With the clock set back by a day, a session left idle was closed
    /// once the idle timeout passed after the pool saw the clock (on main its idle time was negative for the whole day:
    /// never closed, never logged out, its token kept as open).
    @Test func anIdleSessionIsClosedAnIdleTimeoutAfterThePoolSawTheClockGoBack() throws {
        let pool = SessionPool(size: 2, idleTimeout: 300, stored: FMStoredToken(token: "t0", expiry: .distantFuture), now: Self.start)
        let (first, _) = lease(pool, at: Self.start)
        let (second, opening) = lease(pool, at: Self.start)
        let login = try #require(opening.logins.first)
        pool.loginFinished(slot: 1, id: login.id, result: .success("t1"), now: Self.start, stored: nil).plan.deliverToWaiters()
        #expect(second.lease?.slot == 1)
        _ = pool.used(slot: 1, token: "t1", now: Self.start)
        pool.giveBack(try #require(first.lease), now: Self.start, stored: nil).deliverToWaiters()
        pool.giveBack(try #require(second.lease), now: Self.start, stored: nil).deliverToWaiters()

        touch(pool, at: Self.back)
        let within = Self.back.addingTimeInterval(299)
        let (a, kept) = lease(pool, at: within)
        #expect(kept.logouts.isEmpty)
        pool.giveBack(try #require(a.lease), now: within, stored: nil).deliverToWaiters()

        // Session 1, idle all along, is closed once the idle timeout passed since the pool saw the clock go back.
        let after = Self.back.addingTimeInterval(301)
        let (b, closing) = lease(pool, at: after)
        #expect(b.lease?.slot == 0)
        #expect(closing.logouts.map(\.slot) == [1], "an idle session was kept open a day after the clock went back")
        #expect(closing.logouts.map(\.token) == ["t1"])
    }

    /// Through a client: a call answered after the clock was set back by a day slides the session's expiry to 15
    /// minutes after that answer, and the token store is told (on main the store kept the expiry a day ahead, as the
    /// write was skipped while the new expiry was not later than the one written: another process sharing the store, or
    /// this one restarted, believed the token a day longer than the server keeps it).
    @Test func theStoreIsToldTheEarlierExpiryAtTheNextUse() throws {
        let server = SessionTests.Server()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = TestBound.seconds
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(), clock: TestClock(Self.start)) { server.handle($0) }
        let first = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(first.wait().first?.testValue == "ok")
        #expect(h.store.load() == FMStoredToken(token: "tok-1", expiry: Self.start.addingTimeInterval(900)))

        h.clock.advance(-86_400)
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { second.record($0) }
        #expect(second.wait().first?.testValue == "ok")
        #expect(h.api.tokenExpiry == Self.back.addingTimeInterval(900))
        #expect(h.store.load() == FMStoredToken(token: "tok-1", expiry: Self.back.addingTimeInterval(900)),
                "the store still holds \(String(describing: h.store.load()?.expiry))")
        // Still one login: the clock going back logs nobody in.
        #expect(h.stub.count("POST", "/sessions") == 1)
    }

    /// The store is written when the expiry moved by the persist threshold either way: the clock set back a day is
    /// written at the next use, a step back of a second (a clock being corrected) is not a write per call.
    @Test func aSmallStepBackIsNoWriteADayBackIs() throws {
        var machine = SessionStateMachine<Int>(stored: FMStoredToken(token: "t", expiry: Self.start.addingTimeInterval(900)), now: Self.start)
        #expect(machine.used(token: "t", now: Self.start.addingTimeInterval(-1)) == nil)
        let written = machine.used(token: "t", now: Self.back)
        let write = try #require(written)
        #expect(write.token == FMStoredToken(token: "t", expiry: Self.back.addingTimeInterval(900)))
        #expect(machine.used(token: "t", now: Self.back.addingTimeInterval(1)) == nil)
    }
}

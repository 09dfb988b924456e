import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The session pool lends each open session to one call at a time: the others wait in order, a call never waits
/// for one login while another session frees, a failed login with nothing else open fails the waiters once, and
/// sessions idle past the idle timeout are closed (by the injected clock) and logged out through the pipeline.
@Suite("Session pool: leases, logins, idle sessions")
struct SessionPoolLeaseTests {
    private static let start = Date(timeIntervalSince1970: 1_700_000_000)
    private static func valid(_ token: String) -> FMStoredToken { FMStoredToken(token: token, expiry: .distantFuture) }

    /// Leases a session from `pool` and hands out the plan's grants and failures (what the stage does).
    private func take(_ pool: SessionPool, now: Date = start, stored: FMStoredToken? = nil) -> (PoolTaker, SessionPool.Plan) {
        let taker = PoolTaker()
        let (_, plan) = pool.lease(now: now, stored: stored, front: false) { taker.deliver($0) }
        deliver(plan)
        return (taker, plan)
    }

    private func deliver(_ plan: SessionPool.Plan) { plan.deliverToWaiters() }

    // MARK: the lease

    @Test func oneCallPerSessionAndTheOthersWaitInOrder() {
        let pool = SessionPool(size: 1, stored: Self.valid("t0"), now: Self.start)
        let (first, _) = take(pool)
        let (second, _) = take(pool)
        let (third, _) = take(pool)
        #expect(first.lease?.slot == 0 && first.lease?.token == "t0")
        #expect(second.lease == nil && third.lease == nil)
        #expect(pool.busyCounts == [1] && pool.waitingCount == 2)
        deliver(pool.giveBack(first.lease!, now: Self.start, stored: nil))
        #expect(second.lease?.slot == 0 && third.lease == nil)
        // Giving a lease back twice does nothing.
        #expect(pool.giveBack(first.lease!, now: Self.start, stored: nil).isEmpty)
        deliver(pool.giveBack(second.lease!, now: Self.start, stored: nil))
        #expect(third.lease?.slot == 0)
        deliver(pool.giveBack(third.lease!, now: Self.start, stored: nil))
        #expect(pool.busyCounts == [0] && pool.waitingCount == 0)
    }

    /// With nobody waiting, a call takes a free session at once: no place in the queue (no id), the plan's one
    /// grant is its lease, on the lowest free slot. With a replay waiting for a fresh session, a new call goes
    /// through the queue, and the replay does not hold it back from the older session that is free.
    @Test func aFreeSessionIsLeasedAtOnceWhenNobodyWaits() throws {
        let pool = SessionPool(size: 2, stored: Self.valid("t0"), now: Self.start)
        let first = PoolTaker()
        let (firstID, firstPlan) = pool.lease(now: Self.start, stored: nil, front: false) { first.deliver($0) }
        #expect(firstID == nil && firstPlan.grants.count == 1 && firstPlan.logins.isEmpty)
        deliver(firstPlan)
        #expect(first.lease?.slot == 0 && first.lease?.token == "t0")
        // Session 0 is busy, slot 1 has none: the next call queues and a login is opened for it.
        let (second, secondPlan) = take(pool)
        let login = try #require(secondPlan.logins.first)
        #expect(login.slot == 1 && second.lease == nil && pool.waitingCount == 1)
        deliver(pool.loginFinished(slot: 1, id: login.id, result: .success("t1"), now: Self.start, stored: nil).plan)
        let lost = try #require(second.lease)
        #expect(lost.token == "t1")
        // The server loses session 1: its call gives it back and is replayed, waiting for a session opened since.
        _ = pool.rejected(slot: 1, token: "t1")
        deliver(pool.giveBack(lost, now: Self.start, stored: nil))
        let replay = PoolTaker()
        let (replayID, replayPlan) = pool.lease(now: Self.start, stored: nil, front: true) { replay.deliver($0) }
        deliver(replayPlan)
        #expect(replayID != nil && replay.lease == nil && replayPlan.logins.map(\.slot) == [1])
        // Session 0 frees; the replay may not take it, the call coming next does.
        deliver(pool.giveBack(try #require(first.lease), now: Self.start, stored: nil))
        let next = PoolTaker()
        let (nextID, nextPlan) = pool.lease(now: Self.start, stored: nil, front: false) { next.deliver($0) }
        deliver(nextPlan)
        #expect(nextID != nil, "someone waits: the call goes through the queue")
        #expect(next.lease?.slot == 0 && replay.lease == nil && pool.waitingCount == 1)
    }

    /// The waiters are the one FIFO's places: a call that withdrew (its call ended while waiting) never gets the
    /// session, whichever place it had, and the session goes to the next one still waiting; a replay (`front`)
    /// goes before every call queued when it came, and after a replay that came later.
    @Test func withdrawnWaitersAreSkippedAndReplaysGoFirst() throws {
        let pool = SessionPool(size: 1, stored: Self.valid("t0"), now: Self.start)
        let (holder, _) = take(pool)
        var waiting: [(id: UInt64, taker: PoolTaker, name: String)] = []
        func queue(_ name: String, front: Bool = false) {
            let taker = PoolTaker()
            let (id, plan) = pool.lease(now: Self.start, stored: nil, front: front) { taker.deliver($0) }
            deliver(plan)
            #expect(id != nil, "the one session is held: the call waits, with a place to withdraw")
            waiting.append((id ?? .max, taker, name))
        }
        for index in 0..<200 { queue("call \(index)") }
        queue("replay A", front: true)
        queue("replay B", front: true)
        #expect(pool.waitingCount == 202)
        // Every other call leaves, and replay B: from the middle, the head and the back of the queue.
        let leaving = Set(waiting.indices.filter { $0 % 2 == 1 && $0 < 200 } + [0, 201])
        for index in leaving { pool.withdraw(waiting[index].id) }
        pool.withdraw(waiting[3].id)   // again: changes nothing
        #expect(pool.waitingCount == 202 - leaving.count)
        var order: [String] = []
        var lease = try #require(holder.lease)
        while pool.waitingCount > 0 {
            deliver(pool.giveBack(lease, now: Self.start, stored: nil))
            let served = waiting.filter { $0.taker.lease != nil && !order.contains($0.name) }
            try #require(served.count == 1, "one session: one call served per release")
            order.append(served[0].name)
            lease = try #require(served[0].taker.lease)
        }
        let expected = ["replay A"] + waiting.indices.filter { $0 < 200 && !leaving.contains($0) }.map { waiting[$0].name }
        #expect(order == expected)
        #expect(waiting.indices.filter { leaving.contains($0) }.allSatisfy { waiting[$0].taker.lease == nil })
    }

    @Test func aCallNeverWaitsForALoginWhileAnotherSessionFrees() {
        let pool = SessionPool(size: 2, stored: Self.valid("t0"), now: Self.start)
        let (first, _) = take(pool)
        let (second, plan) = take(pool)
        #expect(first.lease?.slot == 0)
        #expect(plan.logins.map(\.slot) == [1], "a second session is opened for the waiting call")
        #expect(second.lease == nil && pool.isLoggingIn(slot: 1))
        // Session 1 frees while session 2 still logs in: the waiting call takes session 1.
        deliver(pool.giveBack(first.lease!, now: Self.start, stored: nil))
        #expect(second.lease?.slot == 0)
        // The login hangs and is given up (its bound): nobody was waiting on it, nobody fails.
        let login = plan.logins[0]
        let (waiters, adopted, after) = pool.loginFinished(slot: 1, id: login.id, result: .failure(.timeout(nil, after: 1)), now: Self.start, stored: nil)
        #expect(waiters.isEmpty && !adopted && after.failures.isEmpty)
        // A third call waits for session 1 (a failed login pauses growth while a session is open).
        let (third, later) = take(pool)
        #expect(third.lease == nil && later.logins.isEmpty)
        deliver(pool.giveBack(second.lease!, now: Self.start, stored: nil))
        #expect(third.lease?.slot == 0 && third.error == nil)
    }

    @Test func aFailedLoginWithNoOtherSessionFailsTheWaitersOnce() {
        let pool = SessionPool(size: 2, stored: nil, now: Self.start)
        let (first, plan) = take(pool)
        let (second, plan2) = take(pool)
        #expect(plan.logins.map(\.slot) == [0] && plan2.logins.map(\.slot) == [1])
        // The first login fails while the second is still in flight: both calls keep waiting.
        let one = pool.loginFinished(slot: 0, id: plan.logins[0].id, result: .failure(FMError(code: "212", message: "no")),
                                     now: Self.start, stored: nil)
        deliver(one.plan)
        #expect(first.error == nil && second.error == nil)
        // The second fails too: nothing can serve them, each is told once.
        let two = pool.loginFinished(slot: 1, id: plan2.logins[0].id, result: .failure(FMError(code: "212", message: "no")),
                                     now: Self.start, stored: nil)
        deliver(two.plan)
        #expect(first.error?.code == "212" && second.error?.code == "212")
        #expect(pool.waitingCount == 0 && pool.busyCounts == [0, 0])
    }

    @Test func theLoginThatEndsFirstServesTheFirstWaiter() {
        let pool = SessionPool(size: 3, stored: nil, now: Self.start)
        let (first, a) = take(pool)
        let (second, b) = take(pool)
        #expect(a.logins.map(\.slot) == [0] && b.logins.map(\.slot) == [1])
        // Session 2's login ends first: the first caller gets it, not the second.
        deliver(pool.loginFinished(slot: 1, id: b.logins[0].id, result: .success("t1"), now: Self.start, stored: nil).plan)
        #expect(first.lease?.slot == 1 && first.lease?.token == "t1" && second.lease == nil)
        deliver(pool.loginFinished(slot: 0, id: a.logins[0].id, result: .success("t0"), now: Self.start, stored: nil).plan)
        #expect(second.lease?.slot == 0)
    }

    @Test func idleSessionsAreClosedWithTheInjectedClock() {
        let pool = SessionPool(size: 2, idleTimeout: 300, stored: Self.valid("t0"), now: Self.start)
        let (first, _) = take(pool)
        let (second, plan) = take(pool)
        deliver(pool.loginFinished(slot: 1, id: plan.logins[0].id, result: .success("t1"), now: Self.start, stored: nil).plan)
        #expect(second.lease?.slot == 1)
        #expect(pool.giveBack(first.lease!, now: Self.start, stored: nil).logouts.isEmpty)
        #expect(pool.giveBack(second.lease!, now: Self.start, stored: nil).logouts.isEmpty)
        // 299 s later nothing is closed; 301 s later the call takes session 1 and session 2 is logged out.
        let (early, earlyPlan) = take(pool, now: Self.start.addingTimeInterval(299))
        #expect(earlyPlan.logouts.isEmpty)
        #expect(pool.giveBack(early.lease!, now: Self.start.addingTimeInterval(299), stored: nil).logouts.isEmpty)
        let late = Self.start.addingTimeInterval(299 + 301)
        let (call, latePlan) = take(pool, now: late)
        #expect(call.lease?.slot == 0)
        #expect(latePlan.logouts.map(\.slot) == [1] && latePlan.logouts.map(\.token) == ["t1"])
        #expect(pool.validToken(slot: 1, now: late) == nil)
    }

    /// A replay takes at once the fresh session while the first one, older than the loss, has idled past the
    /// timeout: the same plan closes the first session and clears the token store (slot 0's), and the replay's
    /// lease is the fresh one.
    @Test func aReplayLeasedAtOnceClosesTheIdleFirstSessionAndClearsTheStore() throws {
        let pool = SessionPool(size: 2, idleTimeout: 300, stored: Self.valid("t0"), now: Self.start)
        // Session 2 opens (t1) while session 1 is busy, and is lost.
        let (first, _) = take(pool)
        let (second, plan) = take(pool)
        deliver(pool.loginFinished(slot: 1, id: try #require(plan.logins.first).id, result: .success("t1"), now: Self.start, stored: nil).plan)
        #expect(second.lease?.token == "t1")
        #expect(pool.rejected(slot: 1, token: "t1") != nil)
        deliver(pool.giveBack(try #require(second.lease), now: Self.start, stored: nil))
        // It reopens (t2), newer than the loss, for a call that finds session 1 busy.
        let (third, reopen) = take(pool)
        deliver(pool.loginFinished(slot: 1, id: try #require(reopen.logins.first).id, result: .success("t2"), now: Self.start, stored: nil).plan)
        #expect(third.lease?.token == "t2")
        deliver(pool.giveBack(try #require(first.lease), now: Self.start, stored: nil))
        deliver(pool.giveBack(try #require(third.lease), now: Self.start, stored: nil))
        // 301 s later the replay takes t2 at once; t0 is logged out and the store is cleared.
        let late = Self.start.addingTimeInterval(301)
        let replay = PoolTaker()
        let (id, latePlan) = pool.lease(now: late, stored: nil, front: true) { replay.deliver($0) }
        deliver(latePlan)
        #expect(id == nil && replay.lease?.slot == 1 && replay.lease?.token == "t2")
        #expect(latePlan.logouts.map(\.slot) == [0] && latePlan.logouts.map(\.token) == ["t0"])
        #expect(latePlan.persist != nil, "session 1's token is the store's: closing it clears the store")
        #expect(pool.validToken(slot: 0, now: late) == nil && pool.busyCounts == [0, 1])
    }

    @Test func theStageLogsAnIdleSessionOutThroughThePipeline() {
        let logins = Locked(0)
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 2
        let observer = MetricsRecorder()
        configuration.metrics = observer
        let hold = DispatchSemaphore(value: 0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                let n = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login("tok-\(n)"))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            if (request.url?.path ?? "").contains("hold") { hold.signal(); return .hold }
            return .json(200, Bodies.value("ok"))
        }
        // Two sessions: one call holds the first while a second call opens the second.
        h.openSecondSessionBesideAHeldCall(hold: hold)
        #expect(h.stub.count("POST", "/sessions") == 2)
        // Ten minutes later a call takes the first session and the second is logged out.
        h.clock.advance(600)
        let third = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { third.record($0) }
        #expect(third.wait().first?.testValue == "ok")
        let closed = observer.waitForEvents { $0.contains { $0.kind == .closed } }
        #expect(closed.contains(FMPoolEvent(kind: .closed, session: 1, reason: "idle")))
        let logout = DispatchGroup()
        logout.enter()
        h.api.sessionQueue.async { logout.leave() }
        _ = logout.wait(timeout: TestBound.deadline)
        #expect(observer.waitForCalls { $0.contains { $0.endpoint == "DELETE sessions/{}" } }.isEmpty == false)
        let deleted: [String] = h.stub.requests.filter { $0.httpMethod == "DELETE" }.compactMap { $0.url?.lastPathComponent }
        #expect(deleted.contains("tok-2"))
    }
}

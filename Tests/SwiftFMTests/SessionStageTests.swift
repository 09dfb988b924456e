import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Issue 16: the session stage as a pool of leases, the rate limit, the metrics hook, reads riding out a restart.
@Suite("Session stage: leases, rate limit, metrics, restart ride-out")
struct SessionStageTests {
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
        _ = logout.wait(timeout: .now() + 120)
        #expect(observer.waitForCalls { $0.contains { $0.endpoint == "DELETE sessions/{}" } }.isEmpty == false)
        let deleted: [String] = h.stub.requests.filter { $0.httpMethod == "DELETE" }.compactMap { $0.url?.lastPathComponent }
        #expect(deleted.contains("tok-2"))
    }

    // MARK: rate limit

    @Test func theWaitQueueKeepsOrderAcrossWithdrawalsAndCompaction() {
        var queue = WaitQueue()
        let ran = Locked<[Int]>([])
        var numbers: [UInt64] = []
        for index in 0..<300 {
            let number = queue.nextPlace()
            numbers.append(number)
            queue.append(number) { ran.withLock { $0.append(index) } }
        }
        queue.remove(numbers[5])
        queue.remove(numbers[5])          // twice: nothing more happens
        queue.remove(UInt64.max)          // never issued: nothing happens
        for _ in 0..<150 { queue.popFirst()?() }   // past the point where the taken head is compacted away
        queue.remove(numbers[0])          // already taken: nothing happens
        queue.remove(numbers[200])
        while let run = queue.popFirst() { run() }
        #expect(queue.isEmpty)
        #expect(ran.value == (0..<300).filter { $0 != 5 && $0 != 200 })
        let later = queue.nextPlace()
        #expect(later == 301, "numbers keep rising after the queue emptied")
    }

    /// A waiter let through is no longer held by the queue: what its work captured (the call, its request body,
    /// the caller's completion) goes with it, even while others still wait behind it.
    @Test func theWaitQueueLetsGoOfTheWorkItTookOut() {
        final class Payload: Sendable {}
        let gate = AdmissionGate(limit: 1)
        let releases = Locked<[@Sendable () -> Void]>([])
        gate.enter { release in releases.withLock { $0.append(release) } }        // holds the one slot
        weak var captured: Payload?
        do {
            let payload = Payload()
            captured = payload
            gate.enter { release in _ = payload; releases.withLock { $0.append(release) } }
        }
        gate.enter { release in releases.withLock { $0.append(release) } }        // still waits behind it
        #expect(captured != nil, "queued: the gate holds its work")
        let first = releases.withLock { $0.removeFirst() }
        first()                                                                     // the second work runs
        #expect(releases.value.count == 1, "the second work ran and holds the slot")
        #expect(captured == nil, "the work that ran is not kept by the queue while the third waits")
        var queue = WaitQueue()
        do {
            let payload = Payload()
            captured = payload
            queue.append(queue.nextPlace()) { _ = payload }
        }
        queue.append(queue.nextPlace()) {}
        queue.popFirst()?()
        #expect(captured == nil, "popFirst lets go of the work it returned")
        #expect(!queue.isEmpty)
    }

    /// The last waiter withdraws while the one before it runs, and nobody comes after: the queue is empty, and
    /// holds nothing. A gate that kept the taken work kept itself (the work holds its `release`, which holds
    /// the gate) and, in a client, the call and its DataAPI: a cycle nothing breaks once nobody waits.
    @Test func aGateWhoseLastWaiterWithdrewIsFreedWithItsWork() {
        final class Payload: Sendable {}
        weak var weakGate: AdmissionGate?
        weak var captured: Payload?
        do {
            let gate = AdmissionGate(limit: 1)
            weakGate = gate
            let releases = Locked<[@Sendable () -> Void]>([])
            gate.enter { release in releases.withLock { $0.append(release) } }
            do {
                let payload = Payload()
                captured = payload
                gate.enter { release in _ = payload; releases.withLock { $0.append(release) } }
            }
            let last = gate.enter { _ in Issue.record("a withdrawn waiter ran") }
            releases.withLock { $0.removeFirst() }()     // the second runs
            last.withdraw()                                // the third leaves: nobody waits
            releases.withLock { $0.removeFirst() }()     // the second ends: its slot is freed
            #expect(releases.value.isEmpty)
        }
        #expect(captured == nil, "the work that ran is not kept")
        #expect(weakGate == nil, "the gate is freed once nothing holds it")
    }

    /// The rate limit's queue too: a waiter let through by the timer, then the last one withdraws. Once the
    /// timer ran out and the caller let go, nothing holds the limiter (nor the work that ran, which in a client
    /// holds its call, the client and so the limiter).
    @Test func aRateLimiterWhoseLastWaiterWithdrewIsFreedWithItsWork() {
        final class Payload: Sendable {}
        weak var weakLimiter: RateLimiter?
        weak var captured: Payload?
        let now = Locked(100.0)
        let timers = Locked<[@Sendable () -> Void]>([])
        let ran = Locked(0)
        do {
            let limiter = RateLimiter(rate: 1, clock: { now.value }, schedule: { _, work in timers.withLock { $0.append(work) } })
            weakLimiter = limiter
            limiter.enter { ran.withLock { $0 += 1 } }                  // leaves at once
            do {
                let payload = Payload()
                captured = payload
                // waits for the timer; holds the limiter, as a call's work does (call → client → limiter)
                limiter.enter { [limiter] in _ = payload; _ = limiter; ran.withLock { $0 += 1 } }
            }
            let last = limiter.enter { Issue.record("a withdrawn waiter ran") }
            now.withLock { $0 += 1 }
            timers.withLock { $0.removeFirst() }()                      // the second leaves; the timer re-arms
            last.withdraw()                                              // nobody waits
            now.withLock { $0 += 1 }
            while let timer = timers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { timer() }
            #expect(ran.value == 2)
        }
        #expect(captured == nil, "the work that ran is not kept")
        #expect(weakLimiter == nil, "the limiter is freed once nothing holds it")
    }

    @Test func theRateLimitSpacesRequestsInOrderWithTheInjectedClock() {
        final class FakeTime: @unchecked Sendable {
            let lock = NSLock()
            var now = 100.0
            var timers: [(at: Double, work: @Sendable () -> Void)] = []
            func schedule(_ delay: Double, _ work: @escaping @Sendable () -> Void) { lock.withLock { timers.append((now + delay, work)) } }
            /// Moves to the next timer and runs it; `false` when none is armed.
            func step() -> Bool {
                let next: (at: Double, work: @Sendable () -> Void)? = lock.withLock {
                    guard let index = timers.indices.min(by: { timers[$0].at < timers[$1].at }) else { return nil }
                    let timer = timers.remove(at: index)
                    now = max(now, timer.at)
                    return timer
                }
                next?.work()
                return next != nil
            }
        }
        let time = FakeTime()
        let limiter = RateLimiter(rate: 4, clock: { time.lock.withLock { time.now } }, schedule: { time.schedule($0, $1) })
        let sent = Locked<[(Int, Double)]>([])
        var tickets: [QueueTicket] = []
        for index in 0..<6 {
            tickets.append(limiter.enter { sent.withLock { $0.append((index, time.now)) } })
        }
        #expect(sent.value.map(\.0) == [0], "the first request leaves at once")
        tickets[3].withdraw()   // its call ended while waiting: never sent, its turn goes to the next
        while time.step() {}
        #expect(sent.value.map(\.0) == [0, 1, 2, 4, 5])
        #expect(sent.value.map(\.1) == [100, 100.25, 100.5, 100.75, 101])
        // After a quiet second, one request leaves at once again.
        time.lock.withLock { time.now = 110 }
        limiter.enter { sent.withLock { $0.append((6, time.now)) } }
        #expect(sent.value.last?.0 == 6 && sent.value.last?.1 == 110)
    }

    @Test func rateLimitedCallsAllCompleteLoginIncluded() {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.maxRequestsPerSecond = 1_000
        let h = Harness(configuration: configuration) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        #expect(h.api.rateLimiter?.interval == 0.001)
        let results = Recorder<Result<String, FMError>>(expecting: 20)
        for _ in 0..<20 { h.api.perform(TestEndpoints.records()) { results.record($0) } }
        #expect(results.wait().allSatisfy { $0.testValue == "ok" })
        #expect(h.stub.count("POST", "/sessions") == 1)
    }

    // MARK: metrics

    @Test func metricsOfASuccessARetryAReplayAndAFailure() {
        let observer = MetricsRecorder()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.metrics = observer
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)
        let script = Locked<[StubAnswer]>([])
        let logins = Locked(0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                let n = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login("tok-\(n)"))
            }
            return script.withLock { $0.isEmpty ? .json(200, Bodies.value("ok")) : $0.removeFirst() }
        }
        func call() -> Result<String, FMError>? {
            let recorder = Recorder<Result<String, FMError>>()
            h.api.perform(TestEndpoints.records()) { recorder.record($0) }
            return recorder.wait().first
        }
        // Success (with the login it needed).
        #expect(call()?.testValue == "ok")
        let login = observer.waitForCalls { $0.count == 2 }
        #expect(login[0].endpoint == "POST sessions" && login[0].code == "0" && login[0].attempts == 1)
        #expect(login[0].bytesSent == 2 && login[0].bytesReceived == Bodies.login("tok-1").utf8.count)
        let success = login[1]
        #expect(success.endpoint == "GET layouts/{}/records" && success.code == "0" && success.attempts == 1)
        #expect(success.bytesSent == 0 && success.bytesReceived == Bodies.value("ok").utf8.count)
        #expect(success.queueWait >= 0 && success.queueWait <= success.duration)
        let opened = observer.waitForEvents { !$0.isEmpty }
        #expect(opened.count == 1 && opened[0].kind == .opened && opened[0].session == 0 && opened[0].code == nil)
        #expect((opened[0].loginDuration ?? -1) >= 0)
        // A retry: a 503, then the answer.
        script.withLock { $0 = [.json(503, "{}")] }
        #expect(call()?.testValue == "ok")
        let retried = observer.waitForCalls { $0.count == 3 }[2]
        #expect(retried.code == "0" && retried.attempts == 2 && retried.endpoint == "GET layouts/{}/records")
        #expect(retried.bytesReceived == 2 + Bodies.value("ok").utf8.count)
        // A 952: the session is lost, renewed and the call replayed.
        script.withLock { $0 = [.json(401, Bodies.expired)] }
        #expect(call()?.testValue == "ok")
        let calls = observer.waitForCalls { $0.count == 5 }
        #expect(calls[3].endpoint == "POST sessions" && calls[3].code == "0")
        #expect(calls[4].code == "0" && calls[4].attempts == 2 && calls[4].bytesReceived == Bodies.expired.utf8.count + Bodies.value("ok").utf8.count)
        let events = observer.waitForEvents { $0.count == 3 }
        #expect(events[1] == FMPoolEvent(kind: .lost, session: 0, code: "952"))
        #expect(events[2].kind == .opened && events[2].session == 0)
        // A failure: FileMaker's 401 (no records) is final.
        script.withLock { $0 = [.json(500, Bodies.noRecords)] }
        #expect(call()?.testError?.code == "401")
        let failed = observer.waitForCalls { $0.count == 6 }[5]
        #expect(failed.code == "401" && failed.attempts == 1 && failed.bytesReceived == Bodies.noRecords.utf8.count)
        // A login that fails.
        _ = h.api.resetSession()
        logins.withLock { $0 = 100 }
        let refused = DataAPI(configuration: configuration, transport: StubTransport { _ in .json(401, Bodies.badLogin) })
        let recorder = Recorder<Result<String, FMError>>()
        refused.perform(TestEndpoints.records()) { recorder.record($0) }
        #expect(recorder.wait().first?.testError?.code == "212")
        let loginFailed = observer.waitForEvents { $0.contains { $0.kind == .loginFailed } }.first { $0.kind == .loginFailed }
        #expect(loginFailed?.code == "212" && loginFailed?.session == 0 && (loginFailed?.loginDuration ?? -1) >= 0)
    }

    @Test func aShutdownReportsEverySessionClosed() {
        let observer = MetricsRecorder()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.metrics = observer
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.ok)
        }
        let recorder = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        recorder.wait()
        let done = Recorder<Void>()
        h.api.shutdown { done.record(()) }
        done.wait()
        let events = observer.waitForEvents { $0.count == 2 }
        #expect(events[1] == FMPoolEvent(kind: .closed, session: 0, reason: "shutdown"))
    }

    // MARK: reads ride out a restart

    @Test(arguments: [URLError.Code.cannotConnectToHost, .networkConnectionLost])
    func aReadRidesOutARestartAndAWriteDoesNot(_ failure: URLError.Code) async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0, retriesReadsUntilDeadline: true)
        let down = Locked(0)
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            let refused = down.withLock { left -> Bool in
                guard left > 0 else { return false }
                left -= 1
                return true
            }
            if refused { return .failure(failure) }
            return request.httpMethod == "GET" ? .json(200, Bodies.value("ok")) : .json(200, Bodies.ok)
        }
        // The host answers once (issue 32: only a host that answered this client is ridden out).
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        // Callback surface: eight refused requests, more than maxAttempts, fewer than the deadline allows.
        down.withLock { $0 = 8 }
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(read.wait().first?.testValue == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 9)
        // Async surface.
        down.withLock { $0 = 5 }
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 15)
        // A write that met a refused connection is not retried.
        down.withLock { $0 = 5 }
        let create = Endpoint<String>(.post, .database, ["layouts", "Contacts", "records"], body: .json(Data("{}".utf8))) { _ in "" }
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(create) { write.record($0) }
        #expect(write.wait().first?.testError?.code == FMError.ClientCode.transport)
        #expect(h.stub.count("POST", "/records") == 1)
    }

    @Test func theDefaultPolicyRidesOutARestartAndIsDocumentedByItsValues() {
        let policy = FMRetryPolicy.standard
        #expect(FMConfiguration(host: "h", database: "d", username: "u", password: "p").retry == .standard)
        #expect(policy.retriesReadsUntilDeadline && !policy.retriesWrites)
        #expect(policy.maxAttempts == 3 && policy.initialDelay == 0.25 && policy.maxDelay == 2)
        #expect(FMRetryPolicy.untilDeadline == .standard)
        #expect(FMRetryPolicy.none.maxAttempts == 1 && !FMRetryPolicy.none.retriesReadsUntilDeadline)
        // The earlier default, for whoever wants it back.
        let old = FMRetryPolicy(maxAttempts: 3)
        #expect(!old.retriesReadsUntilDeadline && old.initialDelay == 0.25 && old.maxDelay == 8)
    }

    // MARK: the default policy rides out a restart

    /// A server that is away (every request answered `failure`) until the test's event: the `upAfter`-th
    /// back-off drawn. It records the range of every back-off (the engine's random source, so no call waits).
    final class Restart: @unchecked Sendable {
        private let lock = NSLock()
        private var up = false
        private var ranges: [ClosedRange<Double>] = []
        let upAfter: Int
        init(upAfter: Int) { self.upAfter = upAfter }

        var isUp: Bool { lock.withLock { up } }
        var drawn: [ClosedRange<Double>] { lock.withLock { ranges } }
        func goDown() { lock.withLock { up = false; ranges = [] } }
        func comeUp() { lock.withLock { up = true } }

        /// The engine's jitter: records the range, comes back up at the `upAfter`-th draw, waits 0 s.
        func draw(_ range: ClosedRange<Double>) -> Double {
            lock.withLock {
                ranges.append(range)
                if ranges.count == upAfter { up = true }
            }
            return range.lowerBound
        }
    }

    static let away: [StubAnswer] = [
        .failure(.cannotConnectToHost), .failure(.networkConnectionLost),
        .body(502, Data("<html>Bad Gateway</html>".utf8), contentType: "text/html"),
        .body(503, Data("<html>Service Unavailable</html>".utf8), contentType: "text/html"),
        .json(504, "{}"),
    ]

    /// Under the default policy (no retry setting at all), a read that meets a refused or reset connection or
    /// a 502/503/504 keeps retrying past `maxAttempts` (3) until the server is back, through the callback
    /// and the async surfaces; the back-off ceilings double from 0.25 s and stop at the 2 s cap, each wait
    /// drawn from `0 … ceiling`; a write is sent once.
    @Test(arguments: away)
    func theDefaultPolicyRidesOutARestartAndAWriteDoesNot(_ failure: StubAnswer) async throws {
        let restart = Restart(upAfter: 6)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            guard restart.isUp else { return failure }
            return request.httpMethod == "GET" ? .json(200, Bodies.value("ok")) : .json(200, Bodies.ok)
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        #expect(h.api.configuration.retry == .standard)
        // The host answers once (issue 32: only a host that answered this client is ridden out).
        restart.comeUp()
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        restart.goDown()
        // Callback surface: six refused attempts, then the seventh answers.
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(read.wait().first?.testValue == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 7)
        #expect(restart.drawn == [0...0.25, 0...0.5, 0...1, 0...2, 0...2, 0...2])
        // Async surface.
        restart.goDown()
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 14)
        #expect(restart.drawn.count == 6)
        // A find (a POST that cannot change data) rides it out too.
        restart.goDown()
        let find = Endpoint<String>(.post, .database, ["layouts", "Contacts", "_find"], body: .json(Data(#"{"query":[{"a":"1"}]}"#.utf8))) { _ in "found" }
        #expect(try await h.api.bridge(find) == "found")
        #expect(h.stub.count("POST", "/_find") == 7)
        // A write is not retried: one request, the failure reported, no back-off drawn.
        restart.goDown()
        let create = Endpoint<String>(.post, .database, ["layouts", "Contacts", "records"], body: .json(Data("{}".utf8))) { _ in "" }
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(create) { write.record($0) }
        #expect(write.wait().first?.testError != nil)
        #expect(h.stub.count("POST", "/records") == 1)
        #expect(restart.drawn.isEmpty)
    }

    /// A restart forgets the sessions: a read whose token the server no longer knows after it came back
    /// logs in again and replays; one whose login meets the restart rides that out too.
    @Test func aRestartThatForgetsTheSessionAndRefusesTheLoginIsRiddenOut() async throws {
        let restart = Restart(upAfter: 5)
        let logins = Locked(0)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("old"))) { request in
            guard restart.isUp else { return .failure(.cannotConnectToHost) }
            if isLogin(request) {
                let n = logins.withLock { $0 += 1; return $0 }
                return .json(200, Bodies.login("new\(n)"))
            }
            if request.header("Authorization") == "Bearer old" { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        // The host answers once (issue 32: only a host that answered this client is ridden out).
        restart.comeUp()
        #expect(try await h.api.bridge(Self.productInfo) == "ok")
        restart.goDown()
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(read.wait().first?.testValue == "ok")
        #expect(logins.value == 1)
        // A read that must log in first while the server is away.
        _ = h.api.resetSession()
        restart.goDown()
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { second.record($0) }
        #expect(second.wait().first?.testValue == "ok")
        #expect(h.stub.count("POST", "/sessions") >= 5 + 2)
        #expect(logins.value == 2)
    }

    /// A call without a session (`GET /productInfo`): answered "ok" by the stubs above when the host is up.
    static let productInfo = Endpoint<String>(.get, .host, ["productInfo"], auth: .none) { response in
        (try Envelope.response(from: response.body, status: response.status))["value"] as? String ?? ""
    }

    /// What `maxAttempts` still bounds under the default policy, and what is never retried.
    @Test(arguments: [
        (StubAnswer.json(500, #"{"messages":[{"code":"812","message":"Exceeded host's capacity"}],"response":{}}"#), "812", 3),
        (StubAnswer.json(500, #"{"messages":[{"code":"956","message":"Maximum number of sessions exceeded"}],"response":{}}"#), "956", 3),
        (StubAnswer.failure(.cannotFindHost), FMError.ClientCode.transport, 3),
        (StubAnswer.failure(.serverCertificateUntrusted), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.serverCertificateHasUnknownRoot), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.secureConnectionFailed), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.timedOut), FMError.ClientCode.timeout, 1),
    ])
    func theDefaultPolicyKeepsOtherFailuresToMaxAttempts(_ answer: StubAnswer, code: String, attempts: Int) {
        let restart = Restart(upAfter: .max)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if (request.url?.path ?? "").hasSuffix("/productInfo") { return .json(200, Bodies.value("ok")) }
            return isLogin(request) ? .json(200, Bodies.login("tok")) : answer
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        // The host answered once (issue 32): a failed name lookup then keeps to maxAttempts.
        let primed = Recorder<Result<String, FMError>>()
        h.api.perform(Self.productInfo) { primed.record($0) }
        #expect(primed.wait().first?.testValue == "ok")
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(read.wait().first?.testError?.code == code)
        #expect(h.stub.count("GET", "/records") == attempts)
        #expect(restart.drawn.count == attempts - 1)
    }

    /// libcurl's OpenSSL failures (code -1 naming SSL or a certificate) are TLS failures too: never retried.
    @Test func libcurlTLSFailuresAreNeverRetried() {
        let untrusted = NSError(domain: NSURLErrorDomain, code: -1,
                                userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: unable to get local issuer certificate"])
        let error = FMError.fromTransport(untrusted, url: URL(string: "https://fms.example.com"))
        #expect(error.isTLSFailure && !Classifier.serverAway(error))
        #expect(Classifier.verdict(for: error, beforeAnswer: true, usedSession: true, headers: [:]) == .final)
        let refused = FMError.fromTransport(URLError(.cannotConnectToHost), url: URL(string: "https://fms.example.com"))
        #expect(!refused.isTLSFailure && Classifier.serverAway(refused) && refused.urlErrorCode == -1004)
        let lookup = FMError.fromTransport(URLError(.cannotFindHost), url: URL(string: "https://fms.example.com"))
        #expect(!Classifier.serverAway(lookup))
        #expect(Classifier.verdict(for: lookup, beforeAnswer: true, usedSession: true, headers: [:]) == .transient(retryAfter: nil))
    }
}

/// Records metrics; waits (bounded, on the event) for what a test expects.
final class MetricsRecorder: FMMetricsObserver, @unchecked Sendable {
    private let condition = NSCondition()
    private var calls: [FMCallMetrics] = []
    private var events: [FMPoolEvent] = []

    func callFinished(_ call: FMCallMetrics) {
        condition.lock(); calls.append(call); condition.broadcast(); condition.unlock()
    }

    func poolEvent(_ event: FMPoolEvent) {
        condition.lock(); events.append(event); condition.broadcast(); condition.unlock()
    }

    func waitForCalls(sourceLocation: SourceLocation = #_sourceLocation, _ done: ([FMCallMetrics]) -> Bool) -> [FMCallMetrics] {
        wait(sourceLocation: sourceLocation, fallback: { self.calls }) { done(self.calls) ? self.calls : nil }
    }

    func waitForEvents(sourceLocation: SourceLocation = #_sourceLocation, _ done: ([FMPoolEvent]) -> Bool) -> [FMPoolEvent] {
        wait(sourceLocation: sourceLocation, fallback: { self.events }) { done(self.events) ? self.events : nil }
    }

    private func wait<T>(sourceLocation: SourceLocation, fallback: () -> T, _ check: () -> T?) -> T {
        condition.lock()
        defer { condition.unlock() }
        let limit = Date().addingTimeInterval(120)
        while true {
            if let value = check() { return value }
            if !condition.wait(until: limit) {
                Issue.record("timed out waiting for metrics", sourceLocation: sourceLocation)
                return check() ?? fallback()
            }
        }
    }
}

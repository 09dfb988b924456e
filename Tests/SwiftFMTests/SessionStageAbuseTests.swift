import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The session stage under abuse: a server that forgets every session and refuses a login, a transport that
/// answers synchronously with thousands of calls queued, thousands of callers cancelling and timing out,
/// metrics observers that call back into the API, hostile token files, nonsense limits.
@Suite("Session stage under abuse")
struct SessionStageAbuseTests {
    private static func configuration(pool: Int = 1) -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = pool
        return configuration
    }

    // MARK: a replay whose login fails while a stale session is still open

    /// A server restart forgets both sessions of a pool of 2. The call's session answers 952, so the call waits
    /// for a session opened after it was lost; that login meets the server still restarting (503). The other
    /// session is open by the local clock but older than the loss, so it cannot serve the replay: the call must
    /// not wait for it until its deadline, it gets the login's failure and retries under the policy.
    @Test func aReplayWhoseLoginFailsRetriesInsteadOfWaitingForAStaleSession() {
        var configuration = Self.configuration(pool: 2)
        configuration.timeout = 240   // the bound of a hang; the call needs milliseconds
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)
        let restarted = Locked(false)
        let logins = Locked(0)
        let refuseNextLogin = Locked(false)
        let hold = DispatchSemaphore(value: 0)
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "t0", expiry: .distantFuture))) { request in
            if isLogin(request) {
                let refuse = refuseNextLogin.withLock { refuse -> Bool in defer { refuse = false }; return refuse }
                if refuse { return .json(503, "<html>restarting</html>") }
                let n = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login("tok-\(n)"))
            }
            let token = request.header("Authorization")?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
            if restarted.value && (token == "t0" || token == "tok-1") { return .json(401, Bodies.expired) }
            if (request.url?.path ?? "").contains("hold") { hold.signal(); return .hold }
            return .json(200, Bodies.value("ok"))
        }
        // Two open sessions: one call holds t0 while a second opens tok-1.
        h.openSecondSessionBesideAHeldCall(hold: hold)
        #expect(h.api.pool.validToken(slot: 1, now: h.clock.now)?.token == "tok-1")
        // The restart: both tokens are dead, and the first login after it is refused.
        restarted.withLock { $0 = true }
        refuseNextLogin.withLock { $0 = true }
        let call = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { call.record($0) }
        let result = call.wait().first
        #expect(result?.testValue == "ok", "got \(String(describing: result))")
        #expect(h.api.pool.waitingCount == 0 && h.api.pool.busyCounts == [0, 0])
    }

    // MARK: the pause after a failed login ends with a call waiting

    /// Pool of 2: a long call holds the open session; the login opened for a second call fails (503), so the
    /// pool pauses new logins and the call waits for the busy session. When the pause ends the pool must open
    /// a session for it, though nothing else touches the pool (the long call goes on).
    @Test func aCallWaitingBehindABusySessionGetsASessionWhenTheLoginPauseEnds() {
        var configuration = Self.configuration(pool: 2)
        configuration.timeout = 240
        let clock = TestClock()
        let refuse = Locked(true)
        let hold = DispatchSemaphore(value: 0)
        let failed = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let refused = refuse.withLock { refuse -> Bool in defer { refuse = false }; return refuse }
                return refused ? .json(503, "{}") : .json(200, Bodies.login("tok-1"))
            }
            if (request.url?.path ?? "").contains("hold") { hold.signal(); return .hold }
            return .json(200, Bodies.value("ok"))
        }
        let api = DataAPI(configuration: configuration, transport: stub,
                          tokenStore: FMMemoryTokenStore(FMStoredToken(token: "t0", expiry: .distantFuture)),
                          logger: { event in if event.message.hasPrefix("login failed") { failed.signal() } }, now: { clock.now })
        let long = Recorder<Result<String, FMError>>()
        let holding = api.perform(TestEndpoints.records("hold")) { long.record($0) }
        #expect(hold.wait(timeout: TestBound.deadline) == .success)
        let waiting = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { waiting.record($0) }
        #expect(failed.wait(timeout: TestBound.deadline) == .success)
        #expect(api.pool.waitingCount == 1)
        clock.advance(SessionPool.failedLoginPause + 1)
        let result = waiting.wait().first
        #expect(result?.testValue == "ok", "got \(String(describing: result))")
        #expect(stub.count("POST", "/sessions") == 2)
        holding.cancel()
        long.wait()
    }

    // MARK: a synchronous transport and thousands of queued calls

    /// A transport that answers inside `send` (an in-memory one), except the first request, which it holds
    /// until released.
    final class SynchronousTransport: HoldingFirstTransport, @unchecked Sendable {
        struct Task: FMTransportTask { func cancel() {} }
        private let lock = NSLock()
        private var held: FMTransportEvents?
        private var holdNext = true
        let arrived = DispatchSemaphore(value: 0)

        func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
            let login = isLogin(request.urlRequest)
            let hold = !login && lock.withLock { () -> Bool in
                defer { holdNext = false }
                if holdNext { held = events }
                return holdNext
            }
            if hold { arrived.signal(); return Task() }
            Self.answer(events, url: request.urlRequest.url, body: login ? Bodies.login("tok") : Bodies.value("ok"))
            return Task()
        }

        func release() {
            let events = lock.withLock { () -> FMTransportEvents? in defer { held = nil }; return held }
            if let events { Self.answer(events, url: nil, body: Bodies.value("ok")) }
        }

        private static func answer(_ events: FMTransportEvents, url: URL?, body: String) {
            let response = HTTPURLResponse(url: url ?? URL(string: "http://fms.example.com/")!, statusCode: 200, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Type": "application/json"])!
            guard events.response(response), events.data(Data(body.utf8)) else { return events.complete(URLError(.cancelled)) }
            events.complete(nil)
        }
    }

    /// Thousands of calls wait for the one session while its call is held; when it ends, each next call is
    /// served, answered (synchronously) and gives the session back. That chain must not grow the stack one
    /// level per waiting call (a crash), in the pool's hand-over nor in the concurrency cap's.
    @Test(arguments: [(nil, 1), (1, 100_000)] as [(Int?, Int)])
    func thousandsOfQueuedCallsOverASynchronousTransportDoNotRecurse(_ cap: Int?, _ perSession: Int) {
        var configuration = Self.configuration()
        configuration.maxConcurrentRequests = cap
        configuration.maxCallsPerSession = perSession
        configuration.timeout = 600
        let transport = SynchronousTransport()
        let api = DataAPI(configuration: configuration, transport: transport)
        let count = 3_000
        let values = chainOfCalls(api, through: transport, count: count) {
            #expect(api.pool.waitingCount == (perSession == 1 ? count - 1 : 0))
        }
        #expect(values.count == count && values.allSatisfy { $0.testValue == "ok" })
    }

    // MARK: hostile token files

    /// A token file that is a FIFO (no writer), a directory, or garbage: reading it must not block the
    /// calls (every call that finds no session in memory reads the store) and must read as "no token".
    @Test func aTokenFileThatIsAFIFOADirectoryOrGarbageReadsAsNoTokenAtOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFMTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo.json")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let folder = directory.appendingPathComponent("folder.json")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let garbage = directory.appendingPathComponent("garbage.json")
        try Data([0xFF, 0x00, 0x7B, 0x22]).write(to: garbage)
        for url in [fifo, folder, garbage] {
            let store = FMFileTokenStore(url: url)
            let loaded = Recorder<Bool>()
            Thread { loaded.record(store.load() == nil) }.start()
            #expect(loaded.wait() == [true], "\(url.lastPathComponent)")
        }
        // A call over the FIFO store logs in and completes.
        let h = Harness(store: FMFileTokenStore(url: fifo)) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        let call = Recorder<Result<String, FMError>>()
        Thread { h.api.perform(TestEndpoints.records()) { call.record($0) } }.start()
        #expect(call.wait().first?.testValue == "ok")
    }

    /// A token file left world-readable (an older version, a hand-made file) is replaced by a private one on
    /// the next write.
    @Test func aWorldReadableTokenFileIsReplacedByAPrivateOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFMTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("token.json")
        try Data("{}".utf8).write(to: url)
        #expect(chmod(url.path, 0o644) == 0)
        let store = FMFileTokenStore(url: url)
        #expect(store.load() == nil)
        store.save(FMStoredToken(token: "abc", expiry: Date(timeIntervalSince1970: 2_000_000_000)))
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(store.load()?.token == "abc")
    }

    // MARK: nonsense limits

    @Test func nonsenseLimitsMeanTheirDocumentedDefaults() {
        for rate in [0, -1, .nan, .infinity, -.infinity] as [Double] {
            #expect(RateLimiter.make(rate: rate) == nil, "\(rate)")
        }
        #expect(RateLimiter.make(rate: 1e-300)?.interval.isFinite == true)
        #expect(SessionPool(size: 0, stored: nil, now: Date()).size == 1)
        #expect(SessionPool(size: -5, stored: nil, now: Date()).size == 1)
        #expect(SessionPool(size: .max, stored: nil, now: Date()).size == SessionPool.maximumSize)
        #expect(SessionPool(size: 1, callsPerSession: 0, stored: nil, now: Date()).callsPerSession == 1)
        #expect(SessionPool(size: 1, callsPerSession: .min, stored: nil, now: Date()).callsPerSession == 1)
        #expect(SessionPool(size: 1, idleTimeout: .nan, stored: nil, now: Date()).idleTimeout == 300)
        #expect(SessionPool(size: 1, idleTimeout: -1, stored: nil, now: Date()).idleTimeout == 0)
    }

    /// A rate so small that the next request's turn is centuries away: the calls behind the first still end
    /// at their deadline with -1004, and the queue is left empty.
    @Test func aTinyRateEndsTheWaitingCallsAtTheirDeadline() {
        var configuration = Self.configuration()
        configuration.maxRequestsPerSecond = 1e-300
        configuration.timeout = 0.5
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "t0", expiry: .distantFuture))) { _ in
            .json(200, Bodies.value("ok"))
        }
        let results = Recorder<Result<String, FMError>>(expecting: 3)
        for _ in 0..<3 { h.api.perform(TestEndpoints.records()) { results.record($0) } }
        // The first request leaves at once (it may still meet the deadline on a busy machine); the others never leave.
        let codes = results.wait().map { $0.testValue ?? $0.testFailureCode ?? "?" }
        #expect(codes.allSatisfy { $0 == "ok" || $0 == "-1004" } && codes.filter { $0 == "-1004" }.count >= 2, "\(codes)")
        #expect(h.stub.requests.count == 1)
    }

    // MARK: metrics observers that block or call back into the API

    final class ReentrantObserver: FMMetricsObserver, @unchecked Sendable {
        let api = Locked<DataAPI?>(nil)
        let reentered = Recorder<Result<String, FMError>>()
        let events = Locked<[FMPoolEvent]>([])
        private let once = Locked(false)
        /// The first call's record blocks until this is signalled: a blocking observer must hold no session.
        let unblock = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)

        func callFinished(_ call: FMCallMetrics) {
            guard call.endpoint == "GET layouts/{}/records", let api = api.value else { return }
            let first = once.withLock { done -> Bool in defer { done = true }; return !done }
            guard first else { return }
            blocked.signal()
            _ = unblock.wait(timeout: TestBound.deadline)
            // From inside the callback: a call, the token, a pool diagnostic.
            _ = api.isActiveToken()
            _ = api.currentToken
            api.perform(TestEndpoints.records()) { [reentered] in reentered.record($0) }
        }

        func poolEvent(_ event: FMPoolEvent) {
            events.withLock { $0.append(event) }
            _ = api.value?.isActiveToken()
        }
    }

    @Test func anObserverThatBlocksAndCallsBackIntoTheAPIStallsNothing() {
        var configuration = Self.configuration()
        let observer = ReentrantObserver()
        configuration.metrics = observer
        let h = Harness(configuration: configuration) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        observer.api.withLock { $0 = h.api }
        let first = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(observer.blocked.wait(timeout: TestBound.deadline) == .success)
        // The observer still holds the first call's thread: a second call gets the pool's only session.
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { second.record($0) }
        #expect(second.wait().first?.testValue == "ok")
        observer.unblock.signal()
        #expect(first.wait().first?.testValue == "ok")
        #expect(observer.reentered.wait().first?.testValue == "ok")
        #expect(observer.events.value.map(\.kind) == [.opened])
        // A shutdown asked from inside an observer completes too.
        let done = Recorder<Void>()
        final class ShutdownObserver: FMMetricsObserver, @unchecked Sendable {
            let api = Locked<DataAPI?>(nil)
            let done: Recorder<Void>
            init(done: Recorder<Void>) { self.done = done }
            func callFinished(_ call: FMCallMetrics) {
                guard call.endpoint == "GET layouts/{}/records" else { return }
                api.value?.shutdown { [done] in done.record(()) }
            }
            func poolEvent(_ event: FMPoolEvent) {}
        }
        var other = Self.configuration()
        let closer = ShutdownObserver(done: done)
        other.metrics = closer
        let h2 = Harness(configuration: other) { request in
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        closer.api.withLock { $0 = h2.api }
        let call = Recorder<Result<String, FMError>>()
        h2.api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(call.wait().first?.testValue == "ok")
        done.wait()
        #expect(h2.stub.count("DELETE", Bodies.token) == 1)
    }

    // MARK: thousands of callers racing deadlines, cancels, lost sessions and busy servers

    /// Every call of a storm completes exactly once, whatever races its deadline, its cancel, a grant, a
    /// 952 or a 503; afterwards every session of the pool still serves a call (none leaked).
    @Test func aStormOfCallsEachCompletesOnceAndLeaksNoSession() {
        var configuration = Self.configuration(pool: 3)
        configuration.maxConcurrentRequests = 4
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)
        configuration.timeout = 240
        let calm = Locked(false)
        let arrivedHolding = DispatchSemaphore(value: 0)
        let logins = Locked(0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                if calm.value { let n = logins.withLock { c -> Int in c += 1; return c }; return .json(200, Bodies.login("calm-\(n)")) }
                // A login that hangs is bounded by the timeout only (no caller can cancel it): not here.
                switch Int.random(in: 0..<10) {
                case 0, 1: return .json(503, "{}")
                default:
                    let n = logins.withLock { c -> Int in c += 1; return c }
                    return .json(200, Bodies.login("tok-\(n)"))
                }
            }
            if calm.value {
                if (request.url?.path ?? "").contains("hold") { arrivedHolding.signal(); return .hold }
                return .json(200, Bodies.value("ok"))
            }
            switch Int.random(in: 0..<10) {
            case 0: return .json(401, Bodies.expired)
            case 1: return .json(503, "{}")
            case 2: return .hold
            case 3: return .failure(.networkConnectionLost)
            default: return .json(200, Bodies.value("ok"))
            }
        }
        let count = 3_000
        let counts = Locked([Int](repeating: 0, count: count))
        let all = Recorder<Int>(expecting: count)
        var handles: [FMRequest] = []
        for index in 0..<count {
            // Deadlines from 0 to 20 ms race the grants, the logins and the answers.
            let ends = DispatchTime.now() + .microseconds(Int.random(in: 0..<20_000))
            var options = CallOptions()
            options.endsAt = Int.random(in: 0..<4) == 0 ? nil : ends
            let handle = h.api.perform(TestEndpoints.records(), options: options) { _ in
                counts.withLock { $0[index] += 1 }
                all.record(index)
            }
            handles.append(handle)
            if Int.random(in: 0..<5) == 0 { handles[Int.random(in: 0...index)].cancel() }
        }
        // Whatever is left (held answers, held logins) is cancelled.
        for handle in handles { handle.cancel() }
        all.wait()
        h.drain()
        #expect(counts.value.allSatisfy { $0 == 1 }, "completions: \(Set(counts.value))")
        // Every session still serves: three calls held at the server at once need all three (after the pause a
        // failed login may have started).
        calm.withLock { $0 = true }
        h.clock.advance(SessionPool.failedLoginPause + 1)
        let final = Recorder<Result<String, FMError>>(expecting: 3)
        var held: [FMRequest] = []
        for _ in 0..<3 { held.append(h.api.perform(TestEndpoints.records("hold")) { final.record($0) }) }
        // A login of the storm may still be in flight: if it fails after the clock moved, it pauses the pool's
        // growth for `failedLoginPause` on this clock, which nothing else moves. So while a call has not arrived,
        // the clock is moved on again (the pool's wake-up then looks again); a session that leaked stays leaked.
        for _ in 0..<3 {
            var arrived = false
            for _ in 0..<30 where !arrived {   // 30 × 10 s: the hang bound (TestBound.seconds)
                arrived = arrivedHolding.wait(timeout: .now() + 10) == .success
                if !arrived { h.clock.advance(SessionPool.failedLoginPause + 1) }
            }
            #expect(arrived, "a session leaked: busy \(h.api.pool.busyCounts), waiting \(h.api.pool.waitingCount), \(h.api.pool.occupancy(now: h.clock.now))")
        }
        for handle in held { handle.cancel() }
        #expect(final.wait().count == 3)
    }
}

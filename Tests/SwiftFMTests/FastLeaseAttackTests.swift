import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The hot path's shortcuts under attack: a call that finds a session free with nobody waiting takes it at once
/// (no place in the pool's queue, no trampoline), and the concurrency cap and the rate limit let a request
/// through at once without a queue ticket. A call cancelled from inside the transport's `send` on those paths
/// — a first attempt, or a replay after a lost session that takes a fresh session at once — completes once with
/// `-1005`, gives its session back once (the pool's busy counts return to 0), frees its slot of the cap and
/// leaves the rate limit going: the next call is answered.
@Suite("Fast lease and at-once admission under cancellation")
struct FastLeaseAttackTests {
    enum Path: String, CaseIterable, Sendable {
        /// The first attempt leases at once.
        case first
        /// A replay after a 952 leases at once the session its neighbour opened.
        case replay
    }

    @Test(arguments: Path.allCases, [false, true])
    func aCallCancelledInsideSendOnTheFastPathGivesEverythingBackOnce(path: Path, admission: Bool) throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 2
        configuration.maxCallsPerSession = 2   // the replay's neighbour shares the victim's session
        configuration.timeout = 240             // a hang's bound; the calls need milliseconds
        configuration.retry = .none
        if admission {
            configuration.maxConcurrentRequests = 2   // the held victim and its neighbour
            configuration.maxRequestsPerSecond = 1_000
        }
        // The victim's handle exists before its call starts: on the fast path the whole first attempt, the
        // send included, runs inside `perform`.
        let victim = FMRequest()
        let victimSent = DispatchSemaphore(value: 0)
        let logins = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let n = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login("tok-\(n)"))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            let token = request.header("Authorization")?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
            let layout = request.url?.pathComponents.dropLast().last ?? ""
            switch (layout, token) {
            case ("victim", "t0") where path == .replay:
                victimSent.signal()
                return .hold   // answered 952 by the test, once the neighbour renewed the session
            case ("victim", _):
                // The attempt that took its session at once: the caller cancels it while it is being sent.
                victim.cancel()
                return .hold
            case ("neighbour", "t0"):
                return .json(401, Bodies.expired)
            default:
                return .json(200, Bodies.value("ok"))
            }
        }
        let api = DataAPI(configuration: configuration, transport: stub,
                          tokenStore: FMMemoryTokenStore(FMStoredToken(token: "t0", expiry: .distantFuture)))
        let call = Recorder<Result<String, FMError>>()
        var options = CallOptions()
        options.handle = victim
        api.perform(TestEndpoints.records("victim"), options: options) { call.record($0) }
        if path == .replay {
            // The victim holds t0 at the server; its neighbour, on the same session, is told 952, opens a
            // second session (tok-1) and is answered. Then the server tells the victim 952 too: its replay finds the
            // fresh session free, with nobody waiting, and takes it at once.
            #expect(victimSent.wait(timeout: TestBound.deadline) == .success)
            let neighbour = Recorder<Result<String, FMError>>()
            api.perform(TestEndpoints.records("neighbour")) { neighbour.record($0) }
            #expect(neighbour.wait().first?.testValue == "ok")
            #expect(api.pool.waitingCount == 0)
            let index = try #require(stub.requests.firstIndex { ($0.url?.path ?? "").contains("/victim/") })
            let response = HTTPURLResponse(url: URL(string: "http://fms.example.com/")!, statusCode: 401, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Type": "application/json"])!
            stub.tasks[index].complete(.success((response, Data(Bodies.expired.utf8))))
        }
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.cancelled)
        // The victim's last request was sent on a fresh session when it replayed.
        let last = try #require(stub.requests.lastIndex { ($0.url?.path ?? "").contains("/victim/") })
        #expect(stub.requests[last].header("Authorization") == (path == .replay ? "Bearer tok-1" : "Bearer t0"))
        #expect(stub.tasks[last].waitUntilCancelled(deadline: TestBound.deadline), "the cancelled call's transfer is stopped")
        // The session, the cap's slot and the rate limit are free again: the next call is answered.
        let next = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records("next")) { next.record($0) }
        #expect(next.wait().first?.testValue == "ok")
        let shutDown = Recorder<Void>()
        api.shutdown(grace: 5) { shutDown.record(()) }
        shutDown.wait()
        api.callbackQueue.sync {}
        #expect(call.values.count == 1)
        #expect(api.pool.busyCounts == [0, 0] && api.pool.waitingCount == 0)
    }

    // MARK: chains over a synchronous transport

    /// Answers inside `send` (an in-memory transport), but holds the first read until released. The first
    /// session's token serves one read, then the server has lost it (952): every call handed that session
    /// replays, on a session opened for it (a login, answered inside `send` too), or one free at once.
    final class LosingTransport: HoldingFirstTransport, @unchecked Sendable {
        struct Task: FMTransportTask { func cancel() {} }
        private let lock = NSLock()
        private var held: FMTransportEvents?
        private var holdNext = true
        private var logins = 0
        private var firstTokenUsed = false
        private var _lost = 0
        /// The reads answered 952.
        var lost: Int { lock.withLock { _lost } }
        let arrived = DispatchSemaphore(value: 0)

        func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
            let urlRequest = request.urlRequest
            if isLogin(urlRequest) {
                let n = lock.withLock { () -> Int in logins += 1; return logins }
                Self.answer(events, status: 200, body: Bodies.login("tok-\(n)"))
                return Task()
            }
            if urlRequest.httpMethod == "DELETE" {
                Self.answer(events, status: 200, body: Bodies.ok)
                return Task()
            }
            let token = urlRequest.value(forHTTPHeaderField: "Authorization") ?? ""
            let (hold, lost) = lock.withLock { () -> (Bool, Bool) in
                if holdNext {
                    holdNext = false
                    held = events
                    return (true, false)
                }
                guard token == "Bearer tok-1" else { return (false, false) }
                defer { firstTokenUsed = true }
                if firstTokenUsed { _lost += 1 }
                return (false, firstTokenUsed)
            }
            if hold { arrived.signal(); return Task() }
            if lost { Self.answer(events, status: 401, body: Bodies.expired) } else { Self.answer(events, status: 200, body: Bodies.value("ok")) }
            return Task()
        }

        func release() {
            let events = lock.withLock { () -> FMTransportEvents? in defer { held = nil }; return held }
            if let events { Self.answer(events, status: 200, body: Bodies.value("ok")) }
        }

        private static func answer(_ events: FMTransportEvents, status: Int, body: String) {
            let response = HTTPURLResponse(url: URL(string: "http://fms.example.com/")!, statusCode: status, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Type": "application/json"])!
            guard events.response(response), events.data(Data(body.utf8)) else { return events.complete(URLError(.cancelled)) }
            events.complete(nil)
        }
    }

    /// Thousands of calls wait behind a held call (for the session, or with many calls per session for the
    /// cap's slot); when it ends, each next call is served inside the previous one's answer, is told 952,
    /// replays on a session opened (or leased at once) for it, and is answered, all on the releasing thread,
    /// whose stack is the 512 KiB of a secondary thread. The chain must not grow the stack per call (a crash),
    /// every call is answered, and the pool ends with no session busy and nobody waiting.
    @Test(arguments: [(nil, 1, 1), (1, 100_000, 1), (2, 2, 2)] as [(Int?, Int, Int)])
    func thousandsOfCallsReplayingOverASynchronousTransportDoNotRecurse(_ cap: Int?, _ perSession: Int, _ pool: Int) {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = pool
        configuration.maxConcurrentRequests = cap
        configuration.maxCallsPerSession = perSession
        configuration.timeout = 600
        configuration.retry = .none
        let transport = LosingTransport()
        let api = DataAPI(configuration: configuration, transport: transport)
        let count = 2_000
        let values = chainOfCalls(api, through: transport, count: count)
        let failed = values.filter { $0.testValue != "ok" }.prefix(3).map { String(describing: $0) }
        #expect(values.count == count && failed.isEmpty, "\(failed)")
        // The calls were replayed: one (the next on the lost session), or, sharing it, nearly all.
        #expect(perSession > 2 ? transport.lost > count / 2 : transport.lost >= 1, "\(transport.lost) replays")
        api.callbackQueue.sync {}
        #expect(api.pool.busyCounts == Array(repeating: 0, count: pool) && api.pool.waitingCount == 0)
    }
}

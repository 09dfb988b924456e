import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Nothing stays held: busy counts return to zero after any mix of failures, finished calls are released, a hook's
// call under a cap of one does not deadlock, a hook answered 952 fails its waiters once, one dead pool session
// renews alone.

/// An object whose release a test can wait for.
private final class Sentinel: @unchecked Sendable {
    private let released: DispatchGroup
    init(_ released: DispatchGroup) { released.enter(); self.released = released }
    deinit { released.leave() }
}

@Suite("Busy counts and releases")
struct SessionReleaseTests {

    /// Many calls over a pool of 3 with a mix of lost sessions, cancels and deadlines: every completion
    /// arrives once and no slot stays busy.
    @Test func busyCountsReturnToZeroAfterAMixOfFailures() {
        let counter = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let n = counter.withLock { c -> Int in c += 1; return c }
                return .json(200, Bodies.login(String(format: "%052d", n)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            let path = request.url?.path ?? ""
            if path.contains("hold") { return .hold }
            if path.contains("lost") { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 3
        configuration.retry = .none
        configuration.timeout = 0.5
        let api = DataAPI(configuration: configuration, transport: stub)
        let total = 300
        let results = Recorder<String>(expecting: total)
        var handles: [FMRequest] = []
        for index in 0..<total {
            let layout = ["hold", "lost", "ok", "ok"][index % 4]
            let handle = api.perform(TestEndpoints.records(layout)) { results.record($0.testFailureCode ?? "0") }
            handles.append(handle)
        }
        for (index, handle) in handles.enumerated() where index % 8 == 0 { handle.cancel() }
        let codes = results.wait()
        #expect(codes.count == total)
        api.callbackQueue.sync {}
        #expect(results.values.count == total)
        #expect(api.pool.busyCounts == [0, 0, 0])
    }

    /// Finished calls are released: nothing keeps the endpoint (and so the call) alive.
    @Test func finishedCallsAreReleased() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if (request.url?.path ?? "").contains("hold") { return .hold }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = 0.3
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: stub)
        let total = 2_000
        let results = Recorder<String>(expecting: total)
        let released = DispatchGroup()
        for index in 0..<total {
            let sentinel = Sentinel(released)
            let hold = index % 10 == 0
            var endpoint = TestEndpoints.records(hold ? "hold" : "ok")
            let decode = endpoint.decode
            endpoint.decode = { response in withExtendedLifetime(sentinel) {}; return try decode(response) }
            let handle = api.perform(endpoint) { results.record($0.testFailureCode ?? "0") }
            if index % 7 == 0 { handle.cancel() }
        }
        results.wait()
        // Every call's endpoint (held by the call, its exchange and its timers) is released once it ended.
        #expect(released.wait(timeout: TestBound.deadline) == .success)
    }

    /// A hook that makes a call under a concurrency cap of 1: no deadlock (the login gave its slot back).
    @Test func aHookCallUnderACapOfOneDoesNotDeadlock() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.maxConcurrentRequests = 1
        configuration.sessionPoolSize = 2
        let api = DataAPI(configuration: configuration, transport: stub)
        api.onNewSession = { session, done in
            session.api.perform(TestEndpoints.records("Setup")) { result in done(result.testError) }
        }
        let results = Recorder<String>(expecting: 20)
        for _ in 0..<20 { api.perform(TestEndpoints.records()) { results.record($0.testValue ?? "failed") } }
        #expect(results.wait() == Array(repeating: "ok", count: 20))
        #expect(api.pool.busyCounts == [0, 0])
    }

    /// A hook whose call gets 952 fails its login once: the waiters get 952, no loop of logins.
    @Test func aHookCallAnswered952FailsTheWaitersOnce() throws {
        // The login is held until all five calls wait for it (else a call made after the failure logs in again).
        let loginSent = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) {
                loginSent.signal()
                return .hold
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            if (request.url?.path ?? "").contains("Setup") { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: stub)
        api.onNewSession = { session, done in
            session.api.perform(TestEndpoints.records("Setup")) { result in done(result.testError) }
        }
        let results = Recorder<String>(expecting: 5)
        for _ in 0..<5 { api.perform(TestEndpoints.records()) { results.record($0.testFailureCode ?? "0") } }
        #expect(loginSent.wait(timeout: TestBound.deadline) == .success)
        let login = try #require(stub.tasks.first)
        let url = try #require(URL(string: "https://fms.example.com/fmi/data/vLatest/databases/Contacts/sessions"))
        let response = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"]))
        login.complete(.success((response, Data(Bodies.login().utf8))))
        #expect(results.wait() == Array(repeating: "952", count: 5))
        #expect(stub.count("POST", "/sessions") == 1)
        #expect(stub.requests(matching: "Setup").count == 1)
        #expect(api.pool.busyCounts == [0])
    }

    /// One pool session dies (952) while the others are fine: only that one logs in again, and the token
    /// store only ever holds the first session's token.
    @Test func oneDeadPoolSessionRenewsAloneAndTheStoreHoldsOnlyTheFirst() {
        let tokens = Locked<[String]>([])
        let dead = Locked<String?>(nil)
        let stub = StubTransport { request in
            if isLogin(request) {
                let token = tokens.withLock { list -> String in
                    list.append(String(format: "%052d", list.count + 1))
                    return list.last!
                }
                return .json(200, Bodies.login(token))
            }
            let bearer = request.header("Authorization") ?? ""
            if let token = dead.withLock({ $0 }), bearer.hasSuffix(token) { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        let store = RecordingStore()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 3
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: stub, tokenStore: store)
        // Three calls at once open up to three sessions (each is busy until its answer arrives).
        let opened = Recorder<String>(expecting: 3)
        for _ in 0..<3 { api.perform(TestEndpoints.records()) { opened.record($0.testValue ?? "failed") } }
        opened.wait()
        #expect(tokens.withLock { $0.count } >= 1)
        let all = tokens.withLock { $0 }
        // Kill the last session opened, then run many calls.
        dead.withLock { $0 = all.last }
        let results = Recorder<String>(expecting: 60)
        for _ in 0..<60 { api.perform(TestEndpoints.records()) { results.record($0.testValue ?? "failed") } }
        #expect(results.wait().allSatisfy { $0 == "ok" })
        #expect(tokens.withLock { $0.count } <= 3 + 1)   // at most the pool, plus one renewal of the dead one
        let first = all[0]
        #expect(store.saved.compactMap { $0?.token }.allSatisfy { $0 == first || !all.dropFirst().contains($0) })
    }
}

/// Records every save.
final class RecordingStore: FMTokenStore, @unchecked Sendable {
    private let lock = NSLock()
    private var current: FMStoredToken?
    private var log: [FMStoredToken?] = []
    func load() -> FMStoredToken? { lock.withLock { current } }
    func save(_ token: FMStoredToken?) { lock.withLock { current = token; log.append(token) } }
    var saved: [FMStoredToken?] { lock.withLock { log } }
}

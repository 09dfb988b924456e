import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The managed session: one login then the token reused, expiry sliding on every answer, a 952 answered by one login
// and one replay (a second 952 is reported, not looped), HTML on 401 taken as expiry, one login for 200 concurrent
// callers, a failed login delivered to every waiter, a logout that clears the store.

@Suite("Managed session")
struct SessionTests {
    typealias Outcome = Result<String, FMError>

    /// A server stub that issues tokens "tok-1", "tok-2", … and answers data calls through `data`.
    final class Server: @unchecked Sendable {
        private let lock = NSLock()
        private var logins = 0
        var loginAnswer: (@Sendable (Int) -> StubAnswer)?
        var data: @Sendable (URLRequest) -> StubAnswer = { _ in .json(200, Bodies.value("ok")) }

        func handle(_ request: URLRequest) -> StubAnswer? {
            if isLogin(request) {
                let n = lock.withLock { logins += 1; return logins }
                return loginAnswer?(n) ?? .json(200, Bodies.login("tok-\(n)"))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return data(request)
        }
    }

    /// A deadline far beyond the work (no test here is about deadlines): on a loaded machine, concurrent calls
    /// queued FIFO for the one session never reach it.
    func harness(_ server: Server, store: FMTokenStore = FMMemoryTokenStore(), clock: TestClock = TestClock()) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 600
        return Harness(configuration: configuration, store: store, clock: clock) { server.handle($0) }
    }

    func call(_ h: Harness, sourceLocation: SourceLocation = #_sourceLocation) -> Outcome? {
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let first = recorder.wait(sourceLocation: sourceLocation).first
        h.drain()
        #expect(recorder.values.count == 1, sourceLocation: sourceLocation)
        #expect(recorder.offQueue == 0, sourceLocation: sourceLocation)
        return first
    }

    func bearers(_ h: Harness) -> [String?] {
        h.stub.requests.filter { !isLogin($0) }.map { $0.header("Authorization") }
    }

    @Test func logsInOnceThenReusesTheToken() throws {
        let server = Server()
        let h = harness(server)
        #expect(call(h)?.testValue == "ok")
        #expect(call(h)?.testValue == "ok")
        #expect(h.stub.count("POST", "/sessions") == 1)
        let login = try #require(h.stub.requests.first)
        #expect(login.header("Authorization") == "Basic \(basicValue("admin", "s3cret-pass"))")
        #expect(login.header("Content-Type") == "application/json")
        #expect(String(decoding: login.httpBody ?? Data(), as: UTF8.self) == "{}")
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-1"])
        #expect(h.store.load() == FMStoredToken(token: "tok-1", expiry: h.clock.now + 900))
    }

    @Test func expirySlidesOnEverySuccessAndExpiredTokenLogsInBeforeUse() {
        let server = Server()
        let h = harness(server)
        _ = call(h)
        h.clock.advance(600)
        _ = call(h) // slides to now + 15 min
        h.clock.advance(600) // 20 min after login, 10 after last use
        _ = call(h)
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(h.api.tokenExpiry == h.clock.now + 900)
        h.clock.advance(900) // 15 min idle: expired locally
        #expect(!h.api.isActiveToken())
        _ = call(h)
        #expect(h.stub.count("POST", "/sessions") == 2)
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-1", "Bearer tok-2"])
    }

    @Test func fileMakerErrorsAlsoSlide() {
        let server = Server()
        server.data = { _ in .json(500, Bodies.noRecords) }
        let h = harness(server)
        #expect(call(h)?.testFailureCode == "401")
        h.clock.advance(600)
        #expect(call(h)?.testFailureCode == "401")
        #expect(h.api.tokenExpiry == h.clock.now + 900)
    }

    @Test func expiredOnTheServerLogsInOnceAndReplaysOnce() {
        let server = Server()
        server.data = { request in
            request.header("Authorization") == "Bearer tok-1" ? .json(401, Bodies.expired) : .json(200, Bodies.value("replayed"))
        }
        let h = harness(server, store: FMMemoryTokenStore(FMStoredToken(token: "tok-1", expiry: .distantFuture)))
        server.loginAnswer = { n in .json(200, Bodies.login("tok-\(n + 1)")) }
        #expect(call(h)?.testValue == "replayed")
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-2"])
        #expect(h.api.currentToken == "tok-2")
        #expect(h.store.load()?.token == "tok-2")
    }

    @Test func aSecond952IsReportedNotLooped() {
        let server = Server()
        server.data = { _ in .json(401, Bodies.expired) }
        let h = harness(server)
        let outcome = call(h)
        #expect(outcome?.testFailureCode == "952")
        if case .failure(let error) = outcome { #expect(error.httpStatus == 401) }
        #expect(h.stub.count("POST", "/sessions") == 2) // the first login, then one re-login
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-2"])
        #expect(h.api.currentToken == nil)
    }

    @Test func htmlOn401IsTreatedAsExpiry() {
        let server = Server()
        server.data = { request in
            request.header("Authorization") == "Bearer tok-1"
                ? .body(401, Data("<html>Unauthorized</html>".utf8), contentType: "text/html")
                : .json(200, Bodies.value("ok"))
        }
        let h = harness(server)
        #expect(call(h)?.testValue == "ok")
        #expect(h.stub.count("POST", "/sessions") == 2)
    }

    @Test func singleFlightWith200ConcurrentCallersAndAnExpiredToken() {
        let server = Server()
        let clock = TestClock()
        let h = harness(server, store: FMMemoryTokenStore(FMStoredToken(token: "old", expiry: clock.now - 1)), clock: clock)
        let count = 200
        let recorder = Recorder<Outcome>(expecting: count, queueKey: Harness.key)
        DispatchQueue.concurrentPerform(iterations: count) { _ in
            h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        }
        let outcomes = recorder.wait()
        h.drain()
        #expect(outcomes.count == count)
        #expect(outcomes.allSatisfy { $0.testValue == "ok" })
        #expect(recorder.offQueue == 0)
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(Set(bearers(h)) == ["Bearer tok-1"])
        #expect(bearers(h).count == count)
    }

    @Test func concurrent952sCauseOneReLogin() {
        let server = Server()
        server.data = { request in
            request.header("Authorization") == "Bearer tok-1" ? .json(401, Bodies.expired) : .json(200, Bodies.value("ok"))
        }
        let h = harness(server, store: FMMemoryTokenStore(FMStoredToken(token: "tok-1", expiry: .distantFuture)))
        server.loginAnswer = { n in .json(200, Bodies.login("tok-\(n + 1)")) }
        let count = 50
        let recorder = Recorder<Outcome>(expecting: count, queueKey: Harness.key)
        DispatchQueue.concurrentPerform(iterations: count) { _ in
            h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        }
        let outcomes = recorder.wait()
        h.drain()
        #expect(outcomes.count == count)
        #expect(outcomes.allSatisfy { $0.testValue == "ok" })
        // A 952 for tok-1 arriving after the re-login does not invalidate tok-2: one login in all.
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(bearers(h).filter { $0 == "Bearer tok-2" }.count == count)
    }

    @Test func failedLoginIsDeliveredToEveryWaiterAndNotRetried() {
        let server = Server()
        let gate = DispatchSemaphore(value: 0)
        let loginStarted = Recorder<Void>()
        server.loginAnswer = { _ in
            loginStarted.record(())
            gate.wait()
            return .json(401, Bodies.badLogin)
        }
        let h = harness(server)
        let count = 20
        let recorder = Recorder<Outcome>(expecting: count, queueKey: Harness.key)
        DispatchQueue.global().async { h.api.perform(TestEndpoints.records()) { recorder.record($0) } }
        loginStarted.wait()
        for _ in 1..<count {
            h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        }
        gate.signal()
        let outcomes = recorder.wait()
        h.drain()
        #expect(outcomes.count == count)
        #expect(outcomes.allSatisfy { $0.testFailureCode == "212" })
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(h.stub.requests.count == 1) // no data call went out
        #expect(!h.api.isActiveToken())
    }

    @Test func loginWithoutATokenIsMinus1010AndTokenFromHeaderWorks() {
        let server = Server()
        server.loginAnswer = { n in
            n == 1 ? .json(200, Bodies.ok) : .json(200, Bodies.ok, headers: ["X-FM-Data-Access-Token": "from-header"])
        }
        let h = harness(server)
        #expect(call(h)?.testFailureCode == "-1010")
        #expect(call(h)?.testValue == "ok")
        #expect(bearers(h) == ["Bearer from-header"])
    }

    @Test func logoutClearsTheStoreAndSendsDeleteWithoutAuthorization() throws {
        let server = Server()
        let store = FMMemoryTokenStore()
        let h = harness(server, store: store)
        _ = call(h)
        #expect(store.load() != nil)
        let done = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.logout { done.record(($0, $1)) }
        let result = try #require(done.wait().first)
        #expect(result.0 == true && result.1 == "0")
        #expect(store.load() == nil)
        #expect(h.api.currentToken == nil)
        let delete = try #require(h.stub.requests.last)
        #expect(delete.httpMethod == "DELETE")
        #expect(delete.url?.path.hasSuffix("/databases/Contacts/sessions/tok-1") == true)
        #expect(delete.header("Authorization") == nil)
        // Nothing to log out: success without a request.
        let again = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.logout { again.record(($0, $1)) }
        #expect(again.wait().first.map { $0.0 && $0.1 == "0" } == true)
        #expect(h.stub.count("DELETE", "") == 1)
    }

    @Test func logoutRefusedStillClearsTheStore() {
        let store = FMMemoryTokenStore(FMStoredToken(token: "gone", expiry: .distantFuture))
        let h = Harness(store: store) { _ in .json(401, Bodies.expired) }
        let done = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.logout { done.record(($0, $1)) }
        #expect(done.wait().first.map { !$0.0 && $0.1 == "952" } == true)
        #expect(store.load() == nil)
        #expect(!h.api.isActiveToken())
    }

    @Test func explicitTokenModel() throws {
        let server = Server()
        let clock = TestClock()
        let h = harness(server, clock: clock)
        #expect(!h.api.isActiveToken())
        let refreshed = Recorder<(String?, Date?, String)>(queueKey: Harness.key)
        h.api.refreshToken { refreshed.record(($0, $1, $2)) }
        let first = try #require(refreshed.wait().first)
        #expect(first.0 == "tok-1" && first.1 == clock.now + 900 && first.2 == "0")
        #expect(h.api.isActiveToken())
        #expect(h.api.currentToken == "tok-1")
        clock.advance(900)
        #expect(!h.api.isActiveToken())

        let withCredentials = Recorder<(String?, Date?, String)>(queueKey: Harness.key)
        h.api.refreshToken(encodedCredentials: "b3RoZXI6cHc=") { withCredentials.record(($0, $1, $2)) }
        let second = try #require(withCredentials.wait().first)
        #expect(second.0 == "tok-2" && second.2 == "0")
        #expect(h.stub.requests.last?.header("Authorization") == "Basic b3RoZXI6cHc=")
        #expect(h.store.load() == FMStoredToken(token: "tok-2", expiry: clock.now + 900))
        // Data calls now use the refreshed token.
        _ = call(h)
        #expect(bearers(h) == ["Bearer tok-2"])
    }

    @Test func refreshFailureReportsTheCode() {
        let server = Server()
        server.loginAnswer = { _ in .json(401, Bodies.badLogin) }
        let h = harness(server)
        let refreshed = Recorder<(String?, Date?, String)>(queueKey: Harness.key)
        h.api.refreshToken { refreshed.record(($0, $1, $2)) }
        let first = refreshed.wait().first
        #expect(first?.0 == nil && first?.1 == nil && first?.2 == "212")
        let login = Recorder<(String?, String)>(queueKey: Harness.key)
        h.api.login { login.record(($0, $1)) }
        #expect(login.wait().first.map { $0.0 == nil && $0.1 == "212" } == true)
    }

    @Test func validateSession() {
        let server = Server()
        server.data = { request in
            request.header("Authorization") == "Bearer tok-1" ? .json(200, Bodies.ok) : .json(401, Bodies.expired)
        }
        let h = harness(server)
        let none = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.validateSession { none.record(($0, $1)) }
        #expect(none.wait().first.map { !$0.0 && $0.1 == "-1010" } == true)
        #expect(h.stub.requests.isEmpty)

        let login = Recorder<(String?, String)>(queueKey: Harness.key)
        h.api.login { login.record(($0, $1)) }
        #expect(login.wait().first?.0 == "tok-1")
        let valid = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.validateSession { valid.record(($0, $1)) }
        #expect(valid.wait().first.map { $0.0 && $0.1 == "0" } == true)
        #expect(h.stub.requests.last?.url?.path == "/fmi/data/vLatest/validateSession")
        #expect(h.stub.requests.last?.header("Authorization") == "Bearer tok-1")

        let other = Recorder<(Bool, String)>(queueKey: Harness.key)
        h.api.validateSession(token: "stale") { other.record(($0, $1)) }
        #expect(other.wait().first.map { !$0.0 && $0.1 == "952" } == true)
        #expect(h.api.currentToken == "tok-1") // a stale token's 952 does not invalidate the current one
        #expect(h.stub.count("POST", "/sessions") == 1) // validate never logs in
    }

    @Test func tokenFromTheStoreIsUsedWithoutLogin() {
        let server = Server()
        let store = FMMemoryTokenStore(FMStoredToken(token: "saved", expiry: Date(timeIntervalSince1970: 1_700_000_600)))
        let h = harness(server, store: store)
        _ = call(h)
        #expect(h.stub.count("POST", "/sessions") == 0)
        #expect(bearers(h) == ["Bearer saved"])
        // A token written to the store by someone else (another instance) is picked up when none is held.
        h.clock.advance(10_000)
        store.save(FMStoredToken(token: "shared", expiry: h.clock.now + 100))
        _ = call(h)
        #expect(bearers(h).last == "Bearer shared")
        #expect(h.stub.count("POST", "/sessions") == 0)
    }
}

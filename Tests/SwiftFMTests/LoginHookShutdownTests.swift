import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The session side of the engine under adversity: logins, the new-session hook, the pool's busy counts,
// shutdown racing logins and hooks. Stub transports only; every wait is on an event.

/// Signals a semaphore each time a log line contains `fragment` (the engine's own progress, as an event).
private final class LogSignal: @unchecked Sendable {
    let fragment: String
    let semaphore = DispatchSemaphore(value: 0)
    init(_ fragment: String) { self.fragment = fragment }
    var handler: FMLogHandler {
        { [self] event in if event.message.contains(fragment) { semaphore.signal() } }
    }
    /// Waits for one matching line; `false` when none came within a generous bound.
    func wait() -> Bool { semaphore.wait(timeout: TestBound.deadline) == .success }
}

/// A DataAPI over `stub` with `configure` applied to a small configuration.
private func makeAPI(
    _ stub: StubTransport, logger: FMLogHandler? = nil, store: FMTokenStore = FMMemoryTokenStore(),
    configure: (inout FMConfiguration) -> Void = { _ in }
) -> DataAPI {
    var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
    configuration.retry = .none
    configuration.timeout = 600 // calls wait for the test's steps (hooks, held logins): never a race with a clock
    configure(&configuration)
    return DataAPI(configuration: configuration, transport: stub, tokenStore: store, logger: logger)
}

private func response(_ request: URLRequest, _ status: Int = 200) -> HTTPURLResponse {
    HTTPURLResponse(url: request.url ?? URL(string: "http://invalid")!, statusCode: status, httpVersion: "HTTP/1.1",
                    headerFields: ["Content-Type": "application/json"])!
}

/// Hands the test what the first hook run got.
private final class HookBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (session: FMNewSession, done: @Sendable (FMError?) -> Void)?
    let arrived = DispatchSemaphore(value: 0)
    func put(_ session: FMNewSession, _ done: @escaping @Sendable (FMError?) -> Void) {
        lock.withLock { stored = (session, done) }
        arrived.signal()
    }
    var value: (session: FMNewSession, done: @Sendable (FMError?) -> Void)? { lock.withLock { stored } }
}

@Suite("Sessions, logins, the hook, shutdown")
struct LoginHookShutdownTests {

    // MARK: a login that never ends must not wedge its slot

    @Test func aHookThatNeverCallsDoneDoesNotWedgeTheSession() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        // Said as what it was: the hook did not call `done` (not "login failed": the login succeeded).
        let failed = LogSignal("the new-session hook failed: -1004 The new-session hook did not call done")
        let api = makeAPI(stub, logger: failed.handler, configure: { $0.timeout = 2 })
        let runs = Locked(0)
        api.onNewSession = { _, done in
            let run = runs.withLock { count -> Int in count += 1; return count }
            if run > 1 { done(nil) }   // the first run never calls `done`
        }
        let first = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(first.wait().first?.testFailureCode == FMError.ClientCode.timeout)
        // The stuck login is given up (bounded like any login), so the slot logs in again.
        #expect(failed.wait())
        Self.expectNotWedged(api)
    }

    @Test func aClarisProviderThatNeverAnswersDoesNotWedgeTheSession() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let asked = Locked(0)
        let provider = FMClarisIDTokenProvider { _, completion in
            let run = asked.withLock { count -> Int in count += 1; return count }
            if run > 1 { completion(.success("id-token")) }   // the first request is never answered
        }
        let failed = LogSignal("login failed")
        let api = makeAPI(stub, logger: failed.handler, configure: { $0.timeout = 2; $0.credentials = .clarisID(provider) })
        let first = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(first.wait().first?.testFailureCode == FMError.ClientCode.timeout)
        #expect(failed.wait())
        Self.expectNotWedged(api)
    }

    /// After a login was given up, the session serves calls again. The deadline that bounded the stuck login
    /// also bounds these calls, so on a busy machine one may run out of time too: the session is wedged only
    /// if none of them ever gets through.
    static func expectNotWedged(_ api: DataAPI, sourceLocation: SourceLocation = #_sourceLocation) {
        var outcomes: [String] = []
        for _ in 0..<20 where outcomes.last != "ok" {
            let next = Recorder<Result<String, FMError>>()
            api.perform(TestEndpoints.records()) { next.record($0) }
            let result = next.wait().first
            outcomes.append(result?.testValue ?? result?.testFailureCode ?? "none")
        }
        #expect(outcomes.last == "ok", "later calls: \(outcomes)", sourceLocation: sourceLocation)
        #expect(outcomes.allSatisfy { $0 == "ok" || $0 == FMError.ClientCode.timeout }, "\(outcomes)", sourceLocation: sourceLocation)
        #expect(api.pool.busyCounts == [0], sourceLocation: sourceLocation)
    }

    // MARK: a provider that answers twice

    @Test func aClarisProviderThatAnswersTwiceLogsInOnce() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let provider = FMClarisIDTokenProvider { _, completion in
            completion(.success("id-token"))
            completion(.success("id-token"))
        }
        let api = makeAPI(stub, configure: { $0.credentials = .clarisID(provider) })
        let hookRuns = Locked(0)
        api.onNewSession = { _, done in
            hookRuns.withLock { $0 += 1 }
            done(nil)
        }
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(call.wait().first?.testValue == "ok")
        #expect(stub.count("POST", "/sessions") == 1)
        #expect(hookRuns.withLock { $0 } == 1)
    }

    // MARK: shutdown racing a login

    @Test func shutdownWaitsForALoginInFlightAndLogsItsSessionOut() throws {
        let loginSent = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) { loginSent.signal(); return .hold }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let store = FMMemoryTokenStore()
        let api = makeAPI(stub, store: store)
        let call = Recorder<Result<String, FMError>>()
        let handle = api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(loginSent.wait(timeout: TestBound.deadline) == .success)
        handle.cancel()   // the call goes; its login (shared by the slot) goes on
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.cancelled)
        let shutDown = Recorder<Void>()
        api.shutdown { shutDown.record(()) }
        // The login's answer arrives while shutting down: the server now holds a session.
        let login = try #require(stub.requests.firstIndex(where: isLogin))
        stub.tasks[login].complete(.success((response(stub.requests[login]), Data(Bodies.login().utf8))))
        shutDown.wait()
        #expect(stub.requests(matching: "/sessions/" + Bodies.token).filter { $0.httpMethod == "DELETE" }.count == 1)
        #expect(store.load() == nil)
    }

    @Test func shutdownWaitsForARefreshTokenLoginAndLeavesTheStoreEmpty() throws {
        let loginSent = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) { loginSent.signal(); return .hold }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return nil
        }
        let store = FMMemoryTokenStore()
        let api = makeAPI(stub, store: store)
        let refreshed = Recorder<String>()
        api.refreshToken(encodedCredentials: basicValue("admin", "pw")) { _, _, code in refreshed.record(code) }
        #expect(loginSent.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>()
        api.shutdown { shutDown.record(()) }
        let login = try #require(stub.requests.firstIndex(where: isLogin))
        stub.tasks[login].complete(.success((response(stub.requests[login]), Data(Bodies.login().utf8))))
        shutDown.wait()
        refreshed.wait()
        #expect(stub.requests(matching: "/sessions/" + Bodies.token).filter { $0.httpMethod == "DELETE" }.count == 1)
        #expect(store.load() == nil)
    }

    // MARK: shutdown racing the new-session hook

    @Test func aHookRunningWhenTheShutdownStartsCanStillMakeItsCalls() throws {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let api = makeAPI(stub)
        let hook = HookBox()
        api.onNewSession = { session, done in hook.put(session, done) }
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(hook.arrived.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>()
        api.shutdown { shutDown.record(()) }
        // The call in flight is waiting for this hook: its setup calls are part of that call.
        let (session, done) = try #require(hook.value)
        let setup = Recorder<Result<String, FMError>>()
        session.api.perform(TestEndpoints.records("Setup")) { setup.record($0) }
        let setupResult = setup.wait().first
        #expect(setupResult?.testValue == "ok")
        done(setupResult?.testError)
        #expect(call.wait().first?.testValue == "ok")
        shutDown.wait()
        #expect(stub.count("DELETE", Bodies.token) == 1)
    }

    // MARK: a login that fails for a transient reason

    /// A server still starting after a restart answers the login 503: the call was never sent, so the login
    /// is retried under the policy (a write too: nothing of it reached the server).
    @Test(arguments: [false, true])
    func aTransientLoginFailureIsRetried(write: Bool) {
        let logins = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let run = logins.withLock { count -> Int in count += 1; return count }
                return run == 1 ? .body(503, Data("<html>starting</html>".utf8), contentType: "text/html") : .json(200, Bodies.login())
            }
            return .json(200, Bodies.value("ok"))
        }
        let api = makeAPI(stub, configure: { $0.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0) })
        var endpoint = TestEndpoints.records()
        if write { endpoint.method = .patch }
        let call = Recorder<Result<String, FMError>>()
        api.perform(endpoint) { call.record($0) }
        #expect(call.wait().first?.testValue == "ok")
        #expect(stub.count("POST", "/sessions") == 2)
        #expect(stub.count(write ? "PATCH" : "GET", "/records") == 1)
        #expect(api.pool.busyCounts == [0])
    }

    /// The server's session cap (956) refuses a pool's extra session: the call uses an open one instead of
    /// failing, and the pool stops opening sessions the server refuses.
    @Test func aPoolSessionRefusedWith956FallsBackToAnOpenSession() throws {
        let logins = Locked(0)
        let holding = DispatchSemaphore(value: 0)
        let maxSessions = #"{"messages":[{"code":"956","message":"Maximum number of Data API sessions exceeded"}],"response":{}}"#
        let stub = StubTransport { request in
            if isLogin(request) {
                let run = logins.withLock { count -> Int in count += 1; return count }
                return run == 1 ? .json(200, Bodies.login()) : .json(500, maxSessions)
            }
            if (request.url?.path ?? "").contains("hold") { holding.signal(); return .hold }
            return .json(200, Bodies.value("ok"))
        }
        let api = makeAPI(stub, configure: {
            $0.sessionPoolSize = 2
            $0.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)
        })
        let sent = Recorder<Result<String, FMError>>()
        // A call that keeps session 1 busy (its answer is held until cancelled).
        let busy = api.perform(TestEndpoints.records("hold")) { sent.record($0) }
        // Once it is on the wire, the next call sees session 1 busy.
        #expect(holding.wait(timeout: TestBound.deadline) == .success)
        for _ in 0..<3 {
            let call = Recorder<Result<String, FMError>>()
            api.perform(TestEndpoints.records()) { call.record($0) }
            #expect(call.wait().first?.testValue == "ok")
        }
        #expect(stub.count("POST", "/sessions") == 2)   // one refused extra session, not one per call
        busy.cancel()
        sent.wait()
        #expect(api.pool.busyCounts == [0, 0])
    }

    // MARK: every login runs the hook

    /// `refreshToken(encodedCredentials:)` opens the session the calls then use: the hook runs on it too.
    @Test func refreshTokenWithEncodedCredentialsRunsTheHook() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let api = makeAPI(stub)
        let hookRuns = Locked(0)
        api.onNewSession = { session, done in
            hookRuns.withLock { $0 += 1 }
            session.api.perform(TestEndpoints.records("Setup")) { done($0.testError) }
        }
        let refreshed = Recorder<String>()
        api.refreshToken(encodedCredentials: basicValue("admin", "pw")) { _, _, code in refreshed.record(code) }
        #expect(refreshed.wait() == ["0"])
        #expect(hookRuns.withLock { $0 } == 1)
        #expect(stub.requests(matching: "Setup").first?.header("Authorization") == "Bearer " + Bodies.token)
        // The next call uses that session as it is: no second login, no second hook run.
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(call.wait().first?.testValue == "ok")
        #expect(stub.count("POST", "/sessions") == 1)
        #expect(hookRuns.withLock { $0 } == 1)
    }

    /// The grace bounds the shutdown even when a login hangs longer (its own bound is the timeout): the
    /// shutdown completes, and the session that login opens late is still logged out.
    @Test func theGraceBoundsAShutdownWaitingForALogin() throws {
        let loginSent = DispatchSemaphore(value: 0)
        let loggedOut = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) { loginSent.signal(); return .hold }
            if request.httpMethod == "DELETE" { loggedOut.signal(); return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let store = FMMemoryTokenStore()
        let api = makeAPI(stub, store: store, configure: { $0.timeout = 600 })
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(loginSent.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>()
        api.shutdown(grace: 0.2) { shutDown.record(()) }
        shutDown.wait()
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.shuttingDown)
        // The login answers after all: that session is closed at once, and not stored.
        let login = try #require(stub.requests.firstIndex(where: isLogin))
        stub.tasks[login].complete(.success((response(stub.requests[login]), Data(Bodies.login().utf8))))
        #expect(loggedOut.wait(timeout: TestBound.deadline) == .success)
        #expect(stub.requests(matching: "/sessions/" + Bodies.token).filter { $0.httpMethod == "DELETE" }.count == 1)
        #expect(store.load() == nil)
        #expect(!api.isActiveToken())
    }

    /// A transport that answers logins and logouts and holds every other request, signalling `sent` as each one
    /// arrives.
    static func holdingCalls(signalling sent: DispatchSemaphore) -> StubTransport {
        StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            sent.signal()
            return .hold
        }
    }

    /// A second shutdown with a shorter grace cuts the first one's short (what a service does when its task is
    /// cancelled while it drains): the call in flight ends with -1012 at once, both shutdowns complete, and the
    /// session is logged out. Failed on main (the second shutdown waited for the first one's 600 s grace).
    @Test func aLaterShutdownWithAShorterGraceEndsTheCallsInFlight() throws {
        let sent = DispatchSemaphore(value: 0)
        let stub = Self.holdingCalls(signalling: sent)
        let api = makeAPI(stub)
        let ended = DispatchSemaphore(value: 0)
        let code = Locked<String?>(nil)
        api.perform(TestEndpoints.records()) { (result: Result<String, FMError>) in
            code.withLock { $0 = result.testFailureCode }
            ended.signal()
        }
        #expect(sent.wait(timeout: TestBound.deadline) == .success)
        let first = Recorder<Void>()
        api.shutdown(grace: 600) { first.record(()) }
        let second = Recorder<Void>()
        api.shutdown(grace: 0) { second.record(()) }
        // Generous, and far below the first grace: on main nothing ended the call before 600 s.
        let cut = ended.wait(timeout: TestBound.deadline) == .success
        #expect(cut)
        guard cut else { return }   // (main) the call is still held: nothing below would complete
        #expect(code.withLock { $0 } == FMError.ClientCode.shuttingDown)
        #expect(second.wait().count == 1)
        #expect(first.wait().count == 1)
        #expect(stub.requests(matching: "/sessions/" + Bodies.token).filter { $0.httpMethod == "DELETE" }.count == 1)
    }

    /// A later shutdown never lengthens the grace, and one without a grace leaves it as it is: the first
    /// shutdown's short grace still ends the call in flight.
    @Test func aLaterShutdownNeverLengthensTheGrace() throws {
        let sent = DispatchSemaphore(value: 0)
        let stub = Self.holdingCalls(signalling: sent)
        let api = makeAPI(stub)
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(sent.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>(expecting: 3)
        api.shutdown(grace: 0.05) { shutDown.record(()) }
        api.shutdown(grace: 600) { shutDown.record(()) }
        api.shutdown { shutDown.record(()) }
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.shuttingDown)
        #expect(shutDown.wait().count == 3)
    }

    // MARK: sessions nobody holds any more are still logged out at shutdown

    /// `logout()` while a call logs in: the call still uses the session that login opens, but the pool does
    /// not adopt it — the shutdown must log it out all the same. So for the session a forced `login()` or
    /// `refreshToken(encodedCredentials:)` replaces.
    @Test func sessionsReplacedOrNotAdoptedAreLoggedOutAtShutdown() throws {
        let loginSent = DispatchSemaphore(value: 0)
        let logins = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let run = logins.withLock { count -> Int in count += 1; return count }
                if run == 1 { loginSent.signal(); return .hold }
                return .json(200, Bodies.login(String(format: "%052d", run)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let api = makeAPI(stub)
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(loginSent.wait(timeout: TestBound.deadline) == .success)
        let loggedOut = Recorder<String>()
        api.logout { _, code in loggedOut.record(code) }
        #expect(loggedOut.wait() == ["0"])
        let login = try #require(stub.requests.firstIndex(where: isLogin))
        stub.tasks[login].complete(.success((response(stub.requests[login]), Data(Bodies.login().utf8))))
        #expect(call.wait().first?.testValue == "ok")
        // Session 2 by a call, then replaced by a forced login (3) and by refreshToken (4).
        let second = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { second.record($0) }
        second.wait()
        let forced = Recorder<String>()
        api.login { _, code in forced.record(code) }
        forced.wait()
        let refreshed = Recorder<String>()
        api.refreshToken(encodedCredentials: basicValue("admin", "pw")) { _, _, code in refreshed.record(code) }
        refreshed.wait()
        let shutDown = Recorder<Void>()
        api.shutdown { shutDown.record(()) }
        shutDown.wait()
        let deleted = Set(stub.requests.filter { $0.httpMethod == "DELETE" }.compactMap { $0.url?.lastPathComponent })
        let opened = Set([Bodies.token] + (2...4).map { String(format: "%052d", $0) })
        #expect(deleted == opened)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: while a new-session hook (`DataAPI.onNewSession`) runs, its session's token is on the redaction list (the
// pool's `heldTokens`), so a server that echoes it gets it into no error and no log line. A hook that never calls
// `done` is given up at the bound of the session's opening (`FMConfiguration.timeout`): the calls waiting for the
// session end then with `-1004` saying that the new-session hook did not call `done` (one error line, `the new-session
// hook failed: …`), the session is closed, the hook's later calls are refused at once with that error, and the token
// leaves the list as soon as no call of the hook carries it any more (each of those ends by its own deadline): a
// hook that hangs again and again leaves nothing behind. Before, the token stayed on the list for ever (a daemon
// against a server whose hook kept hanging grew it without bound), and the waiting calls got a bare timeout naming
// the host, as if the connection had timed out. The bounds are fired by hand (`SessionStage.armBound`); calls are
// given an hour.

/// The bounds of a client's session openings, held: none fires by itself; ``fireLast()`` fires the one armed last.
final class HeldBounds: @unchecked Sendable {
    private let lock = NSLock()
    private var fires: [@Sendable () -> Void] = []

    init(_ api: DataAPI) {
        api.context.sessions.armBound.withLock {
            $0 = { [self] _, fire in
                lock.withLock { fires.append(fire) }
                return Deadline.after(seconds: .infinity) {}
            }
        }
    }

    var count: Int { lock.withLock { fires.count } }

    func fireLast() { lock.withLock { fires.last }?() }

    /// Fires the bound armed `index`-th, from 0.
    func fire(at index: Int) { lock.withLock { fires.indices.contains(index) ? fires[index] : nil }?() }
}

@Suite("A new-session hook that never calls done lets its token go")
struct AHungNewSessionHookLetsItsTokenGoTests {
    private static let token = "hungtok-0123456789abcdef0123456789abcdef0123456789"

    private static func configuration() -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        return configuration
    }

    /// Failed before: the redaction list held one token per hung hook (50 after 50 hooks), and each waiting call's
    /// error was `The request to fms.example.com:443 timed out after 3600 s`.
    @Test func manyHungHooksLeaveNoTokenBehind() async throws {
        let h = Harness(configuration: Self.configuration()) { request in
            if isLogin(request) { return .json(200, Bodies.login(Self.token)) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let bounds = HeldBounds(h.api)
        let arrived = DispatchSemaphore(value: 0)
        h.api.onNewSession = { _, _ in arrived.signal() }   // never calls `done`
        for round in 1...50 {
            let done = Recorder<Result<String, FMError>>()
            h.api.perform(TestEndpoints.records()) { done.record($0) }
            #expect(await onOwnThread { arrived.wait(timeout: TestBound.deadline) } == .success, "round \(round): the hook ran")
            #expect(bounds.count == round)
            bounds.fireLast()
            let result = try #require(await done.value().first)
            guard case .failure(let error) = result else {
                Issue.record("round \(round): the call succeeded without its session")
                return
            }
            #expect(error.code == FMError.ClientCode.timeout, "\(error)")
            #expect(error.message.contains("new-session hook did not call done"), "\(error)")
        }
        #expect(h.api.pool.setUpCount == 0, "tokens still held for hooks given up")
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.count == 50 && errors.allSatisfy { $0.message.hasPrefix("the new-session hook failed: -1004 ") },
                "\(errors.prefix(3).map(\.description))")
        #expect(h.stub.count("DELETE", "/sessions/" + Self.token) == 50, "each hung hook's session is closed")
    }

    /// A call of the hook still in flight when the hook is given up carries the token: it stays hidden until that
    /// call ends, and a call the hook makes afterwards is refused. Failed before: the later call was sent with the
    /// closed session's token, and the token never left the list.
    @Test func theHookCallsInFlightKeepItHiddenUntilTheyEnd() async throws {
        let h = Harness(configuration: Self.configuration()) { request in
            if isLogin(request) { return .json(200, Bodies.login(Self.token)) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            if request.url?.path.hasSuffix("/script/Setup") == true { return .hold }
            return .json(200, Bodies.value("ok"))
        }
        let bounds = HeldBounds(h.api)
        let hookCall = Recorder<FMError?>()
        let sent = DispatchSemaphore(value: 0)
        let session = Locked<FMNewSession?>(nil)
        h.api.onNewSession = { new, _ in
            session.withLock { $0 = new }
            new.api.runScript(layout: "Contacts", script: "Setup") { _, _ in hookCall.record(FMError.current) }
            sent.signal()   // never calls `done`
        }
        let waiting = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { waiting.record($0) }
        #expect(await onOwnThread { sent.wait(timeout: TestBound.deadline) } == .success)
        bounds.fireLast()
        let result = try #require(await waiting.value().first)
        #expect(result.testFailureCode == FMError.ClientCode.timeout, "\(result)")
        #expect(h.api.pool.setUpCount == 1, "the hook's call in flight still carries the token")

        // A call the hook makes now is refused at once, with the hook's error: nothing is sent.
        let sentBefore = h.stub.requests.count
        let late = Recorder<FMError?>()
        session.value?.api.runScript(layout: "Contacts", script: "Later") { _, _ in late.record(FMError.current) }
        let refused = try #require(await late.value().first)
        #expect(refused?.code == FMError.ClientCode.timeout && refused?.message.contains("new-session hook") == true,
                "\(String(describing: refused))")
        #expect(h.stub.requests.count == sentBefore, "\(h.stub.requests.map { $0.url?.path ?? "" })")

        // The call in flight gets an answer that echoes the token: hidden, and then the token leaves the list.
        let index = try #require(h.stub.requests.firstIndex { $0.url?.path.hasSuffix("/script/Setup") == true })
        let held = h.stub.tasks[index]
        let echo = String(decoding: ServerWordsTests.dataAPI(code: #""10""#, message: "no script for token \(Self.token)"), as: UTF8.self)
        held.complete(.success((HTTPURLResponse(url: URL(string: "https://fms.example.com/")!, statusCode: 500, httpVersion: "HTTP/1.1",
                                                headerFields: ["Content-Type": "application/json"])!, Data(echo.utf8))))
        let answered = try #require(await hookCall.value().first)
        #expect(answered?.code == "10", "\(String(describing: answered))")
        #expect(answered.map { !$0.description.contains(Self.token) } == true, "\(String(describing: answered))")
        h.drain()   // the completion has returned: the call has ended
        #expect(h.api.pool.setUpCount == 0, "the token is let go once no call of the hook carries it")
        let leaking = h.logs.values.filter { ($0.message + $0.metadata.values.joined(separator: " ")).contains(Self.token) }
        #expect(leaking.isEmpty, "\(leaking.map(\.description))")
    }
}

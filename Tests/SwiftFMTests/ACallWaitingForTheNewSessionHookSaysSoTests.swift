import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a call whose own deadline passes while it waits for a session whose new-session hook
// (`DataAPI.onNewSession`) is still running — the login answered, the hook has not called `done` — ends with `-1004`
// (`FMError.ClientCode.timeout`) saying what it waited for: the request to HOST:PORT, for its layout, was not sent, the
// new-session hook still running. Before, it got the message of a connection that timed out (`The request to
// fms.example.com:443 timed out after N s`), although the host had answered every request. With the default
// settings that is the common case: a call's deadline (`FMConfiguration.timeout`) is armed before the login it
// starts, so it passes just before the bound of the session's opening (the same timeout) gives the hook up. A call
// whose deadline passes while the login itself is unanswered still names the host as a request that timed out.
// The deadlines and the bound are fired by hand (`HeldDeadlines`, `HeldBounds`); calls are given an hour.
@Suite("A call whose deadline passes while the new-session hook runs says so")
struct ACallWaitingForTheNewSessionHookSaysSoTests {
    private static func configuration() -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        return configuration
    }

    private static func failure(_ result: Result<String, FMError>?) -> FMError? {
        guard case .failure(let error)? = result else { return nil }
        return error
    }

    /// Failed before: `-1004` `The request to fms.example.com:443 timed out after 3600.0 s`, for each waiting call.
    @Test func theWaitingCallsSayTheHookWasStillRunning() async throws {
        let closed = DispatchSemaphore(value: 0)
        let h = Harness(configuration: Self.configuration()) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { closed.signal(); return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let bounds = HeldBounds(h.api)
        let deadlines = HeldDeadlines(h.api)
        let arrived = DispatchSemaphore(value: 0)
        h.api.onNewSession = { _, _ in arrived.signal() }   // never calls `done`
        let first = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(await onOwnThread { arrived.wait(timeout: TestBound.deadline) } == .success, "the hook ran")
        // A second call joins the wait while the hook runs (its deadline is the last armed).
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("Invoices")) { second.record($0) }
        deadlines.fire()
        deadlines.fire(at: 0)   // the first call's own, armed before its login's
        let errors = [(Self.failure(await first.value().first), "Contacts"), (Self.failure(await second.value().first), "Invoices")]
        for (error, layout) in errors {
            let error = try #require(error, "the call succeeded without its session")
            #expect(error.code == FMError.ClientCode.timeout, "\(error)")
            #expect(error.message.contains("new-session hook") && error.message.contains("still running"), "\(error.message)")
            #expect(error.message.contains("fms.example.com:443") && error.message.contains("\"\(layout)\""), "\(error.message)")
            #expect(error.message.contains("not sent"), "\(error.message)")
            #expect(error.message != FMError.timeout(h.api.configuration.baseURL, after: 3600).message, "\(error.message)")
        }
        let lines = h.logs.values.filter { $0.level == .error }
        #expect(lines.count == 2 && lines.allSatisfy { $0.message.contains("new-session hook") }, "\(lines.map(\.description))")
        // The hook is still given up at its bound: no call waits for it any more, and its session is closed.
        bounds.fireLast()
        #expect(await onOwnThread { closed.wait(timeout: TestBound.deadline) } == .success, "the hung hook's session is closed")
        #expect(h.stub.count("DELETE", "/sessions/" + Bodies.token) == 1)
        #expect(h.stub.count("GET", "/records") == 0, "nothing was sent for the calls")
    }

    /// Held: a call whose deadline passes while its login is unanswered names the host as a request that timed out.
    @Test func aCallWaitingForAnUnansweredLoginNamesTheHost() async throws {
        let loginSent = DispatchSemaphore(value: 0)
        let h = Harness(configuration: Self.configuration()) { request in
            if isLogin(request) { loginSent.signal(); return .hold }
            return .json(200, Bodies.value("ok"))
        }
        let deadlines = HeldDeadlines(h.api)
        h.api.onNewSession = { _, done in done(nil) }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        #expect(await onOwnThread { loginSent.wait(timeout: TestBound.deadline) } == .success, "the login was sent")
        deadlines.fire(at: 0)
        let error = try #require(Self.failure(await done.value().first))
        #expect(error.code == FMError.ClientCode.timeout, "\(error)")
        #expect(error.message.hasPrefix("The request to fms.example.com:443 timed out"), "\(error.message)")
        #expect(!error.message.contains("new-session hook"), "\(error.message)")
        deadlines.fire(at: 1)   // the login's own: nothing is left in flight
    }

    /// Held: once the hook has called `done`, a call waiting for the session (busy with a call whose answer is held) whose
    /// deadline passes names the host as a request that timed out: the hook is no longer counted as running.
    @Test func aCallWaitingBehindABusySessionAfterTheHookEndedNamesTheHost() async throws {
        let recordsSent = DispatchSemaphore(value: 0)
        let h = Harness(configuration: Self.configuration()) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "GET" { recordsSent.signal(); return .hold }
            return .json(200, Bodies.ok)
        }
        let deadlines = HeldDeadlines(h.api)
        h.api.onNewSession = { _, done in done(nil) }
        let busy = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { busy.record($0) }
        #expect(await onOwnThread { recordsSent.wait(timeout: TestBound.deadline) } == .success, "the first call was sent")
        let waiting = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("Invoices")) { waiting.record($0) }
        deadlines.fire()   // the waiting call's own, the last armed
        let error = try #require(Self.failure(await waiting.value().first))
        #expect(error.code == FMError.ClientCode.timeout, "\(error)")
        #expect(error.message.hasPrefix("The request to fms.example.com:443"), "\(error.message)")
        #expect(!error.message.contains("new-session hook"), "\(error.message)")
        deadlines.fire(at: 0)   // the first call's: nothing is left in flight
        _ = await busy.value()
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: with a pool of several sessions, a call whose deadline passes while it waits for a session says "the
// new-session hook was still running" (`FMError.waitedForNewSessionHook`) only when its wait depended on a session whose
// hook runs: it is among the first waiting calls, as many as there are hooks running (the sessions those hooks hold would
// have gone to it first), or no session is open at all and every session being opened runs its hook (none is a login
// still out). A call queued behind those, with an open session busy or a login unanswered, waited for that session as
// much as for the hook: it gets the ordinary `-1004` of a request that timed out, naming the host, not a hook that
// delayed someone else.
// The deadlines and the bound are fired by hand (`HeldDeadlines`, `HeldBounds`); calls are given an hour.
@Suite("The new-session hook is blamed only for a wait it held up")
struct TheHookIsBlamedOnlyForAWaitItHeldUpTests {
    private static func failure(_ result: Result<String, FMError>?) -> FMError? {
        guard case .failure(let error)? = result else { return nil }
        return error
    }

    /// Pool of two: session 1 busy with a call whose answer is held; session 2 opened for the next call, its hook hung;
    /// a third call queued behind that one. The second call's wait is the hook's; the third call's is not only the hook's.
    /// Failed before: the third call's error also said `the new-session hook was still running (it had not called done)`.
    @Test func aCallQueuedBehindTheHooksWaiterWithASessionBusyTimesOutAsARequest() async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        configuration.sessionPoolSize = 2
        let recordsSent = DispatchSemaphore(value: 0)
        let logins = Locked(0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                let n = logins.withLock { $0 += 1; return $0 }
                return .json(200, Bodies.login("tok\(n)"))
            }
            if request.httpMethod == "GET" { recordsSent.signal(); return .hold }
            return .json(200, Bodies.ok)
        }
        let bounds = HeldBounds(h.api)
        let deadlines = HeldDeadlines(h.api)
        let runs = Locked(0)
        let hung = DispatchSemaphore(value: 0)
        h.api.onNewSession = { _, done in
            // The first session's hook is done at once; the second's never calls `done`.
            if runs.withLock({ $0 += 1; return $0 }) == 1 { done(nil) } else { hung.signal() }
        }
        let busy = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { busy.record($0) }
        #expect(await onOwnThread { recordsSent.wait(timeout: TestBound.deadline) } == .success, "the first call was sent")

        let secondDeadline = deadlines.count
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("Invoices")) { second.record($0) }
        #expect(await onOwnThread { hung.wait(timeout: TestBound.deadline) } == .success, "the second session's hook ran")
        let thirdDeadline = deadlines.count
        let third = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("Orders")) { third.record($0) }
        #expect(deadlines.count == thirdDeadline + 1)

        deadlines.fire(at: thirdDeadline)
        let thirdError = try #require(Self.failure(await third.value().first), "the third call succeeded without a session")
        #expect(thirdError.code == FMError.ClientCode.timeout, "\(thirdError)")
        #expect(thirdError.message.hasPrefix("The request to fms.example.com:443"), "\(thirdError.message)")
        #expect(!thirdError.message.contains("new-session hook"), "\(thirdError.message)")

        deadlines.fire(at: secondDeadline)
        let secondError = try #require(Self.failure(await second.value().first), "the second call succeeded without a session")
        #expect(secondError.code == FMError.ClientCode.timeout, "\(secondError)")
        #expect(secondError.message.contains("new-session hook") && secondError.message.contains("still running"), "\(secondError.message)")
        #expect(secondError.message.contains("\"Invoices\""), "\(secondError.message)")

        bounds.fireLast()        // the hung hook is given up
        deadlines.fire(at: 0)    // the first call's: nothing is left in flight
        _ = await busy.value()
    }

    /// Held: with two sessions both opening, each with its hook hung, every waiting call (two more than the hooks) waited
    /// only for hooks: no session was open. Each says so.
    @Test func withNoSessionOpenEveryWaitingCallBlamesTheHooks() async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        configuration.sessionPoolSize = 2
        let logins = Locked(0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                let n = logins.withLock { $0 += 1; return $0 }
                return .json(200, Bodies.login("tok\(n)"))
            }
            return .json(200, Bodies.ok)
        }
        let bounds = HeldBounds(h.api)
        let deadlines = HeldDeadlines(h.api)
        let hung = DispatchSemaphore(value: 0)
        h.api.onNewSession = { _, _ in hung.signal() }   // never calls `done`
        var recorders: [Recorder<Result<String, FMError>>] = []
        var own: [Int] = []
        for index in 0..<4 {
            own.append(deadlines.count)
            let recorder = Recorder<Result<String, FMError>>()
            h.api.perform(TestEndpoints.records("L\(index)")) { recorder.record($0) }
            recorders.append(recorder)
            if index < 2 {
                #expect(await onOwnThread { hung.wait(timeout: TestBound.deadline) } == .success, "hook \(index + 1) ran")
            }
        }
        for index in [3, 2, 1, 0] {
            deadlines.fire(at: own[index])
            let error = try #require(Self.failure(await recorders[index].value().first), "call \(index) succeeded")
            #expect(error.code == FMError.ClientCode.timeout, "\(error)")
            #expect(error.message.contains("new-session hook") && error.message.contains("\"L\(index)\""), "call \(index): \(error.message)")
        }
        bounds.fireLast()
        bounds.fire(at: 0)
    }

    /// Pool of two, no session open: session 1's hook hung, session 2's login sent and never answered. The first waiting
    /// call waited for the hook's session; the second for that login (had the hook called `done`, session 1 would have
    /// gone to the first call): it times out as a request to the host, not as a wait for the hook. Failed before (the
    /// rule "no session open: every call waits for a hook" counted a session whose login was still out as one a hook
    /// held): the second call's error said `the new-session hook was still running`.
    @Test func aCallWaitingForALoginNotAHookTimesOutAsARequest() async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        configuration.sessionPoolSize = 2
        let logins = Locked(0)
        let secondLoginSent = DispatchSemaphore(value: 0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                let n = logins.withLock { $0 += 1; return $0 }
                if n == 1 { return .json(200, Bodies.login("tok\(n)")) }
                secondLoginSent.signal()
                return .hold
            }
            return .json(200, Bodies.ok)
        }
        let bounds = HeldBounds(h.api)
        let deadlines = HeldDeadlines(h.api)
        let hung = DispatchSemaphore(value: 0)
        h.api.onNewSession = { _, _ in hung.signal() }   // never calls `done`

        let firstDeadline = deadlines.count
        let first = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("First")) { first.record($0) }
        #expect(await onOwnThread { hung.wait(timeout: TestBound.deadline) } == .success, "the first session's hook ran")
        let secondDeadline = deadlines.count
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records("Second")) { second.record($0) }
        #expect(await onOwnThread { secondLoginSent.wait(timeout: TestBound.deadline) } == .success, "the second session's login was sent")

        deadlines.fire(at: secondDeadline)
        let secondError = try #require(Self.failure(await second.value().first), "the second call succeeded without a session")
        #expect(secondError.code == FMError.ClientCode.timeout, "\(secondError)")
        #expect(!secondError.message.contains("new-session hook"), "\(secondError.message)")
        #expect(secondError.message.hasPrefix("The request to fms.example.com:443"), "\(secondError.message)")

        deadlines.fire(at: firstDeadline)
        let firstError = try #require(Self.failure(await first.value().first), "the first call succeeded without a session")
        #expect(firstError.code == FMError.ClientCode.timeout, "\(firstError)")
        #expect(firstError.message.contains("new-session hook") && firstError.message.contains("\"First\""), "\(firstError.message)")

        bounds.fireLast()
        for index in 0..<deadlines.count { deadlines.fire(at: index) }   // the held login's too
    }
}

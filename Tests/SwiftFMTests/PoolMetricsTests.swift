import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The metrics observer sees what each call cost (a success, a retry, a replay, a failure) and every pool session
/// closed by a shutdown.
@Suite("Metrics: calls and pool sessions")
struct PoolMetricsTests {
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
        _ = h.api.sessions.resetSession()
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
}

import Foundation
import Testing
@testable import SwiftFM

/// One failure, one error line (the level table of TracingAndLogLevels): a call ended by its deadline says so
/// once, at `error`, and the exchange it stopped is detail (`debug`), as a cancelled one is; a call ended by a
/// shutdown (`-1012`, the owner's own doing) logs nothing above `info`; a login that fails for good (a
/// certificate not trusted) or times out is the session stage's one "login failed" error, its exchange's own
/// lines no more than warnings. The error line is written whatever ``FMConfiguration/logLevel`` is, `error`
/// included (a daemon that logs errors only still sees the call that failed).
@Suite("Log levels: one failure is one error line")
struct OneFailureOneErrorLineTests {
    private typealias Rule = FirstContactRuleTests

    private static func above(_ level: FMLogEvent.Level, _ h: Harness) -> [String] {
        h.logs.values.filter { $0.level >= level }.map { "[\($0.level)] \($0.message)" }
    }

    private static func configuration(timeout: TimeInterval) -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = timeout
        return configuration
    }

    @Test func aCallEndedByItsDeadlineLogsOnlyItsTimeout() async throws {
        let h = Harness(configuration: Self.configuration(timeout: 0.2), store: Rule.loggedIn) { _ in .hold }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        // The stopped exchange reports (and logs) before its transport task is cancelled.
        #expect(h.stub.tasks.first?.waitUntilCancelled(deadline: TestBound.deadline) == true)
        let lines = Self.above(.warning, h)
        #expect(lines.count == 1 && lines.first?.hasPrefix("[error] GET layouts/{}/records timed out: ") == true, "\(lines)")
    }

    @Test func aCallEndedByAShutdownLogsNothingAboveInfo() async throws {
        let arrived = DispatchSemaphore(value: 0)
        // A deadline far past any wait here: the shutdown, not the deadline, ends the call on a loaded machine too.
        let h = Harness(configuration: Self.configuration(timeout: 3600), store: Rule.loggedIn) { request in
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            arrived.signal()
            return .hold
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        #expect(await onOwnThread { arrived.wait(timeout: TestBound.deadline) } == .success)
        await h.api.shutdown(grace: 0)
        #expect(await done.value().first?.testFailureCode == FMError.ClientCode.shuttingDown)
        let held = h.stub.tasks.first
        #expect(await onOwnThread { held?.waitUntilCancelled(deadline: TestBound.deadline) } == true)
        #expect(Self.above(.warning, h).isEmpty, "\(Self.above(.warning, h))")
    }

    @Test func aLoginThatFailsForGoodIsOneError() async throws {
        let h = Harness { _ in .failure(.serverCertificateUntrusted) }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let errors = Self.above(.error, h)
        #expect(errors.count == 1 && errors.first?.hasPrefix("[error] login failed: -1003") == true, "\(errors)")
    }

    @Test func aLoginThatTimesOutIsOneError() async throws {
        let h = Harness(configuration: Self.configuration(timeout: 0.3)) { _ in .hold }
        let done = Recorder<String>()
        h.api.login { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.timeout)
        let held = h.stub.tasks.first
        #expect(await onOwnThread { held?.waitUntilCancelled(deadline: TestBound.deadline) } == true)
        let errors = Self.above(.error, h)
        #expect(errors.count == 1 && errors.first?.hasPrefix("[error] login failed: -1004") == true, "\(errors)")
    }

    @Test func aClientLoggingErrorsOnlyGetsTheFailureThatEndsACall() async {
        let server = Rule.Server()
        server.goDown()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.logLevel = .error
        let h = Rule.harness(server, configuration: configuration)
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let errors = Self.above(.error, h)
        #expect(errors.count == 1 && errors.first?.hasPrefix("[error] ← GET ") == true && errors.first?.contains("failed -1003") == true,
                "\(errors)")
    }
}

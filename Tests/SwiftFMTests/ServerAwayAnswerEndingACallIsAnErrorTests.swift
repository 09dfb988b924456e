import Foundation
import Testing
@testable import SwiftFM

/// A call that ends because the server stayed away behind its proxy (a 502, 503 or 504 answer it does not try
/// again: its attempts spent, a write, a `Retry-After` past its deadline) logs that end at `error`, once, as the
/// same call ending on a refused connection does (the level table of TracingAndLogLevels: "the attempt that ends
/// a call"). The answers it rode out stay warnings; a call that recovers logs no error. The line hides the
/// call's own token, which a proxy's page may echo, as the error the caller gets does.
@Suite("Log levels: a call that gives up on a server away behind a proxy logs an error")
struct ServerAwayAnswerEndingACallIsAnErrorTests {
    private typealias Rule = FirstContactRuleTests

    private static func errors(_ h: Harness) -> [String] {
        h.logs.values.filter { $0.level == .error }.map(\.message)
    }

    private static func configuration(_ retry: FMRetryPolicy, timeout: TimeInterval = 30) -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = retry
        configuration.timeout = timeout
        return configuration
    }

    @Test(arguments: [502, 503, 504])
    func aReadThatSpendsItsAttemptsLogsOneError(_ status: Int) async {
        let h = Harness(configuration: Self.configuration(FMRetryPolicy(maxAttempts: 2, initialDelay: 0, maxDelay: 0)),
                        store: Rule.loggedIn) { _ in .body(status, Data("<html>bad gateway</html>".utf8), contentType: "text/html") }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        #expect(h.stub.requests.count == 2)
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.hasPrefix("GET layouts/{}/records failed: HTTP \(status)") == true, "\(errors)")
    }

    @Test func aWriteAnswered503LogsOneError() async {
        let h = Harness(store: Rule.loggedIn) { _ in .json(503, "{}") }
        await #expect(throws: FMError.self) { try await h.api.bridge(Rule.create) }
        #expect(Self.errors(h).count == 1, "\(Self.errors(h))")
    }

    @Test func aRetryAfterPastTheDeadlineLogsOneError() async {
        let h = Harness(configuration: Self.configuration(.standard, timeout: 5), store: Rule.loggedIn) { _ in
            .json(503, "{}", headers: ["Retry-After": "60"])
        }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        #expect(Self.errors(h).count == 1, "\(Self.errors(h))")
    }

    /// Guard: answered 503 once, then served: no error.
    @Test func aReadThatRecoversLogsNoError() async throws {
        let served = Locked(0)
        let h = Harness(configuration: Self.configuration(FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)),
                        store: Rule.loggedIn) { _ in
            served.withLock { $0 += 1; return $0 } == 1 ? .json(503, "{}") : .json(200, Bodies.value("ok"))
        }
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(Self.errors(h).isEmpty, "\(Self.errors(h))")
    }

    @Test func theLineHidesTheCallsOwnToken() async {
        let token = "explicit-token-9f8e7d6c5b4a"
        let h = Harness(configuration: Self.configuration(FMRetryPolicy(maxAttempts: 1)), store: Rule.loggedIn) { _ in
            .json(503, #"{"messages":[{"code":"-1","message":"upstream refused Authorization: Bearer \#(token)"}],"response":{}}"#)
        }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records(auth: .token(token))) }
        let errors = Self.errors(h)
        #expect(errors.count == 1, "\(errors)")
        #expect(!h.logs.values.contains { $0.message.contains(token) }, "\(h.logs.values.map(\.message))")
    }
}

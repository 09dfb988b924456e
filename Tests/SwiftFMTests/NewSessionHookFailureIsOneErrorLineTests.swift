import Foundation
import Testing
@testable import SwiftFM

/// One event, one error line: a new-session hook (``DataAPI/onNewSession``) that fails ends the calls waiting
/// for its session, and the log says so once — `the new-session hook failed: CODE MESSAGE; the session is
/// closed`, at `error` when it ends the call — not that line and then a second "login failed" for the same
/// event (the login succeeded; the hook did not).
@Suite("Log levels: a new-session hook that fails is one error line")
struct NewSessionHookFailureIsOneErrorLineTests {
    private static let hookError = FMError(code: "-1002", message: "the setup script's parameter is missing")

    private static func harness() -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600   // a login is bounded by the timeout too: far past any wait here
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        h.api.onNewSession = { _, done in done(Self.hookError) }
        return h
    }

    private static func expectOneHookLine(_ h: Harness, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = h.logs.values.filter { $0.level == .error }.map(\.message)
        #expect(errors.count == 1, "\(errors)", sourceLocation: sourceLocation)
        #expect(errors.first?.hasPrefix("the new-session hook failed: -1002 the setup script's parameter is missing; the session is closed") == true,
                "\(errors)", sourceLocation: sourceLocation)
        #expect(!h.logs.values.contains { $0.message.hasPrefix("login failed") }, "\(h.logs.values.map(\.description))",
                sourceLocation: sourceLocation)
    }

    @Test func aCallWhoseSessionsHookFailsLogsOneError() async {
        let h = Self.harness()
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        #expect(await done.value().first?.testFailureCode == "-1002")
        Self.expectOneHookLine(h)
    }

    @Test func anExplicitLoginWhoseHookFailsLogsOneError() async {
        let h = Self.harness()
        let done = Recorder<String>()
        h.api.login { _, code in done.record(code) }
        #expect(await done.value().first == "-1002")
        Self.expectOneHookLine(h)
    }

    @Test func aRefreshWithCredentialsWhoseHookFailsLogsOneError() async {
        let h = Self.harness()
        let done = Recorder<String>()
        h.api.refreshToken(encodedCredentials: basicValue("admin", "s3cret-pass")) { _, _, code in done.record(code) }
        #expect(await done.value().first == "-1002")
        Self.expectOneHookLine(h)
    }

    /// The refresh's own login refused (no hook involved) is its one error line: it logged none.
    @Test func aRefreshWithCredentialsRefusedLogsOneError() async {
        let h = Harness { request in
            isLogin(request) ? .json(401, Bodies.badLogin) : .json(200, Bodies.ok)
        }
        let done = Recorder<String>()
        h.api.refreshToken(encodedCredentials: basicValue("admin", "wrong")) { _, _, code in done.record(code) }
        #expect(await done.value().first == "212")
        let errors = h.logs.values.filter { $0.level == .error }.map(\.message)
        #expect(errors.count == 1 && errors.first?.hasPrefix("login failed: 212") == true, "\(errors)")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A failed attempt is logged at the level of what became of the call (the level table of
/// TracingAndLogLevels): `warning` when the call retried it and went on, `error` only for the failure that
/// ends the call. A daemon that alerts on `error` is not woken by a server restart its calls rode out.
@Suite("Log levels: a failure the call recovers from is a warning")
struct RecoveredFailureLogLevelTests {
    private typealias Rule = FirstContactRuleTests

    private static func lines(_ h: Harness) -> [(level: FMLogEvent.Level, message: String)] {
        h.logs.values.map { ($0.level, $0.message) }
    }

    /// Refused three times while the server restarts, then answered: every failed attempt is a warning, and no
    /// line of the call is an error.
    @Test func aRestartRiddenOutLogsNoError() async throws {
        let server = Rule.Server()
        let h = Rule.harness(server)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown(upAfter: 3)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        let failed = Self.lines(h).filter { $0.message.hasPrefix("← GET") && $0.message.contains(" failed ") }
        #expect(failed.count == 3, "\(Self.lines(h))")
        #expect(failed.allSatisfy { $0.level == .warning }, "\(failed)")
        #expect(!Self.lines(h).contains { $0.level == .error }, "\(Self.lines(h))")
    }

    /// A host that answered before and no longer resolves: retried to maxAttempts (3), then given up. The two
    /// attempts retried are warnings; the last, which ends the call, is the one error.
    @Test func theFailureThatEndsACallIsTheOneError() async throws {
        let server = Rule.Server()
        let h = Rule.harness(server, failure: .cannotFindHost)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown()
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let failed = Self.lines(h).filter { $0.message.hasPrefix("← GET") && $0.message.contains(" failed ") }
        #expect(failed.map(\.level) == [.warning, .warning, .error], "\(Self.lines(h))")
        #expect(Self.lines(h).filter { $0.level == .error }.count == 1, "\(Self.lines(h))")
        #expect(Self.lines(h).last?.level == .error && Self.lines(h).last?.message.contains("no such host") == true, "\(Self.lines(h))")
    }

    /// A first contact that is refused is not retried: its one line is the error.
    @Test func aFirstContactRefusedIsAnError() async throws {
        let server = Rule.Server()
        server.goDown()
        let h = Rule.harness(server)
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let failed = Self.lines(h).filter { $0.message.hasPrefix("← GET") && $0.message.contains(" failed ") }
        #expect(failed.map(\.level) == [.error], "\(Self.lines(h))")
    }

    /// A write is never retried after a connection failure: its failure ends the call, an error.
    @Test func aWriteThatFailsIsAnError() async throws {
        let server = Rule.Server()
        let h = Rule.harness(server)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown()
        await #expect(throws: FMError.self) { try await h.api.bridge(Rule.create) }
        let failed = Self.lines(h).filter { $0.message.hasPrefix("← POST") && $0.message.contains(" failed ") }
        #expect(failed.map(\.level) == [.error], "\(Self.lines(h))")
    }

    /// The session expired while the server restarted: the call's login is refused twice, the call (whose host
    /// answered before) tries again and succeeds. The login's lines are warnings; nothing is an error.
    @Test func aLoginRefusedDuringARestartThatTheCallRidesOutLogsNoError() async throws {
        let server = Rule.Server()
        let h = Rule.harness(server, store: FMMemoryTokenStore())
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        h.clock.advance(3600)   // the session is gone: the next call logs in
        server.goDown(upAfter: 2)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        let lines = Self.lines(h)
        #expect(lines.filter { $0.message.hasPrefix("login failed: -1003") }.count == 2, "\(lines)")
        #expect(!lines.contains { $0.level == .error }, "\(lines)")
    }

    /// An explicit login (`login(completion:)`) refused is its caller's answer: an error.
    @Test func anExplicitLoginRefusedIsAnError() async throws {
        let server = Rule.Server()
        server.goDown()
        let h = Rule.harness(server, store: FMMemoryTokenStore())
        let done = Recorder<String>()
        h.api.login { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.transport)
        let errors = Self.lines(h).filter { $0.level == .error }
        #expect(errors.contains { $0.message.hasPrefix("login failed: -1003") }, "\(Self.lines(h))")
    }

    /// A call that ends by its deadline (the server holds the request) logs that as its error, with the host
    /// and the bound: it was not logged at all, only its request line.
    @Test func aCallThatTimesOutLogsTheError() async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = 0.2
        let h = Harness(configuration: configuration, store: Rule.loggedIn) { _ in .hold }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let errors = Self.lines(h).filter { $0.level == .error }
        #expect(errors.count == 1 && errors.first?.message.hasPrefix("GET layouts/{}/records timed out: ") == true
                && errors.first?.message.contains("fms.example.com:443 timed out after 0.2 s") == true, "\(Self.lines(h))")
    }
}

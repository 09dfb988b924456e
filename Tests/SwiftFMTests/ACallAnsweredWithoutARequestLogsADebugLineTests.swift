import Foundation
import Testing
@testable import SwiftFM

// Contract: a session call that SwiftFM answers itself, because no session token is held, says so in one `debug`
// line naming the call, with the structured fields of a call's lines (`fm.request_id`, `fm.endpoint`, `fm.code`):
// `validateSession` answers `(false, "-1010")` and `logout` answers `(true, "0")` without a request. Neither is an
// error (the level table of TracingAndLogLevels: "no token" is the answer to the question asked, as FileMaker's
// 401 "no records match" is to a find), so neither logs an error or a warning line, and nothing is sent. Before,
// both ended without any line: the one way a call ended that the log did not show.
@Suite("A call answered without a request logs one debug line")
struct ACallAnsweredWithoutARequestLogsADebugLineTests {
    private func harness() -> Harness {
        Harness { _ in nil }   // any request is unexpected
    }

    /// Failed before: no line at all.
    @Test func validateSessionWithoutAToken() async throws {
        let h = harness()
        let done = Recorder<(Bool, String)>()
        h.api.validateSession { valid, code in done.record((valid, code)) }
        let (valid, code) = try #require(await done.value().first)
        #expect(!valid && code == FMError.ClientCode.noToken)
        let lines = h.logs.values
        #expect(lines.count == 1, "\(lines.map(\.description))")
        let line = try #require(lines.first)
        #expect(line.level == .debug)
        #expect(line.message == "GET validateSession not sent: no session token is held (-1010)", "\(line)")
        #expect(line.metadata["fm.endpoint"] == "GET validateSession")
        #expect(line.metadata["fm.code"] == FMError.ClientCode.noToken)
        #expect(line.metadata["fm.request_id"].flatMap(UInt64.init).map { $0 > 0 } == true, "\(line.metadata)")
        #expect(h.stub.requests.isEmpty)
    }

    /// Failed before: no line at all.
    @Test func logoutWithoutAToken() async throws {
        let h = harness()
        let done = Recorder<(Bool, String)>()
        h.api.logout { ok, code in done.record((ok, code)) }
        let (ok, code) = try #require(await done.value().first)
        #expect(ok && code == "0")
        let lines = h.logs.values
        #expect(lines.count == 1, "\(lines.map(\.description))")
        let line = try #require(lines.first)
        #expect(line.level == .debug)
        #expect(line.message == "DELETE sessions/{} not sent: no session token is held; nothing to log out", "\(line)")
        #expect(line.metadata["fm.endpoint"] == "DELETE sessions/{}")
        #expect(line.metadata["fm.code"] == "0")
        #expect(h.stub.requests.isEmpty)
    }

    /// Held: with a token, the call is sent and its lines are the exchange's, as before.
    @Test func validateSessionWithATokenIsSent() async throws {
        let h = Harness(store: FirstContactRuleTests.loggedIn) { request in
            request.url?.path.hasSuffix("/validateSession") == true ? .json(200, Bodies.ok) : nil
        }
        let done = Recorder<(Bool, String)>()
        h.api.validateSession { valid, code in done.record((valid, code)) }
        let (valid, code) = try #require(await done.value().first)
        #expect(valid && code == "0")
        #expect(!h.logs.values.contains { $0.message.contains("not sent") }, "\(h.logs.values.map(\.description))")
        #expect(h.stub.requests.count == 1)
    }
}

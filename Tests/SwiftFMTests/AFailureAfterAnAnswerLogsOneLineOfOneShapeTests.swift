import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a call that fails after its last exchange was answered — a page walk a page it cannot use ends, an
// OData walk whose next link leads where it went, a container download its redirects end — logs its one error line
// through one helper (`Logger.logCallFailed`), in one shape: `KIND failed: ERROR` at error, with `fm.endpoint` (the
// kind) and `fm.code`, plus `fm.layout` and `fm.request_id` when the caller names them, scrubbed of secrets like every
// line; nothing at all without a logger. The three lines keep the wording they had, and each names the request whose
// answer ended its call (`fm.request_id`: the page's, the hop's; see WalkErrorLinesCarryTheRequestIDTests); a caller's
// logging context given to the helper goes under SwiftFM's keys.

@Suite("Log lines: a call that fails after its answer logs one line of one shape")
struct AFailureAfterAnAnswerLogsOneLineOfOneShapeTests {
    static func logger(_ events: Recorder<FMLogEvent>, secrets: [String] = []) -> Logger {
        Logger(handler: { events.record($0) }, secrets: { secrets })
    }

    @Test func theHelperWritesTheLine() throws {
        let events = Recorder<FMLogEvent>(expecting: 0)
        let error = FMError.malformed("the page at offset 5 holds nothing new", status: 200)
        Self.logger(events).logCallFailed("GET layouts/{}/records", error, layout: "Contacts", requestID: 42)
        let line = try #require(events.values.first)
        #expect(events.values.count == 1)
        #expect(line.level == .error)
        #expect(line.message == "GET layouts/{}/records failed: \(error)")
        #expect(line.metadata == ["fm.endpoint": "GET layouts/{}/records", "fm.code": FMError.ClientCode.malformedResponse,
                                  "fm.layout": "Contacts", "fm.request_id": "42"])
    }

    @Test func theCallersContextGoesUnderSwiftFMsKeys() throws {
        let events = Recorder<FMLogEvent>(expecting: 0)
        Self.logger(events).logCallFailed("GET {container}", .containerURLExpired, requestID: 7,
                                          context: ["trace_id": "t", "fm.code": "spoofed", "fm.request_id": "spoofed"])
        let line = try #require(events.values.first)
        #expect(line.metadata == ["fm.endpoint": "GET {container}", "fm.code": FMError.ClientCode.containerURLExpired,
                                  "fm.request_id": "7", "trace_id": "t"])
    }

    @Test func withoutALayoutOrARequestItNamesNeither() throws {
        let events = Recorder<FMLogEvent>(expecting: 0)
        Self.logger(events).logCallFailed("GET odata/{set}", .containerURLExpired)
        let line = try #require(events.values.first)
        #expect(line.metadata == ["fm.endpoint": "GET odata/{set}", "fm.code": FMError.ClientCode.containerURLExpired])
    }

    @Test func itScrubsSecretsAndIsSilentWithoutAHandler() throws {
        let events = Recorder<FMLogEvent>(expecting: 0)
        let error = FMError(code: "-1007", message: "the server echoed s3cret-pass")
        Self.logger(events, secrets: ["s3cret-pass"]).logCallFailed("GET {container}", error)
        let line = try #require(events.values.first)
        #expect(!line.message.contains("s3cret-pass"), "\(line.message)")
        Logger(handler: nil, secrets: { [] }).logCallFailed("GET {container}", error)   // nothing to reach, nothing to fail
    }

    // MARK: the three lines

    @Test func aPageWalkEndedByAPageLogsTheLine() async throws {
        let body = ServerValuesAttackTests.page(ids: [1, 2], found: 10)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, body) }
        let done = Recorder<String>()
        h.api.forEachPage(layout: "L", pageSize: 2, page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let errors = h.logs.values.filter { $0.level == .error }
        let line = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(line.message.hasPrefix("GET layouts/{}/records failed: FMError -1007: "), "\(line.message)")
        #expect(Set(line.metadata.keys) == ["fm.endpoint", "fm.code", "fm.layout", "fm.request_id"], "\(line.metadata)")
        #expect(line.metadata["fm.endpoint"] == "GET layouts/{}/records" && line.metadata["fm.code"] == FMError.ClientCode.malformedResponse
                && line.metadata["fm.layout"] == "L")
    }

    @Test func anODataWalkThatLoopsLogsTheLine() async throws {
        let setup = ODataPageCycleTests.cyclingServer(again: ODataBodies.base + "/contacts?$skiptoken=2")
        let done = Recorder<String>()
        setup.odata.forEachPage(from: "contacts", page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let errors = setup.harness.logs.values.filter { $0.level == .error }
        let line = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(line.message.hasPrefix("GET odata/{set} failed: FMError -1007: "), "\(line.message)")
        #expect(Set(line.metadata.keys) == ["fm.endpoint", "fm.code", "fm.request_id"], "\(line.metadata)")
        #expect(line.metadata["fm.endpoint"] == "GET odata/{set}" && line.metadata["fm.code"] == FMError.ClientCode.malformedResponse)
    }

    @Test func aContainerDownloadItsRedirectsEndLogsTheLine() async throws {
        let h = Harness { request in .json(302, "", headers: ["Location": request.url?.absoluteString ?? ""]) }
        let done = Recorder<String>()
        h.api.downloadContainer(url: StaleContainerURLSaysItExpiredTests.start) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.containerURLExpired)
        let errors = h.logs.values.filter { $0.level == .error }
        let line = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(line.message.hasPrefix("GET {container} failed: FMError -1014: "), "\(line.message)")
        #expect(Set(line.metadata.keys) == ["fm.endpoint", "fm.code", "fm.request_id"], "\(line.metadata)")
        #expect(line.metadata["fm.endpoint"] == "GET {container}" && line.metadata["fm.code"] == FMError.ClientCode.containerURLExpired)
    }
}

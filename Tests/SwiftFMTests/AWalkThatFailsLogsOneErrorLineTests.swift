import Foundation
import Testing
@testable import SwiftFM

/// One failed call, one error line — for a page walk too. A walk refused before its first page is sent (`-1002`: a page
/// size below 1, an empty layout name, a find without a query) and a walk ended by a page it cannot use (`-1007`: the
/// same page a third time, a page past its own found count) fail their caller; each logs exactly one `error` line,
/// with `fm.code`, naming the call. Before, neither logged anything: the refusal was completed without going through
/// the pipeline (no line, no metrics), and the page that ended the walk had itself succeeded (its lines are `debug`).
@Suite("Log levels: a walk that fails logs one error line")
struct AWalkThatFailsLogsOneErrorLineTests {
    enum Refusal: String, CaseIterable, CustomTestStringConvertible {
        case pageSizeZero, emptyLayout, findWithoutQuery
        var testDescription: String { rawValue }

        var layout: String { self == .emptyLayout ? "" : "Contacts" }
        var pageSize: Int { self == .pageSizeZero ? 0 : 10 }
        var find: FMFindRequest? { self == .findWithoutQuery ? FMFindRequest(queries: []) : nil }
    }

    private static func harness(_ handler: StubTransport.Handler? = nil) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        return Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn, handler ?? { _ in .json(200, Bodies.ok) })
    }

    private static func errors(_ h: Harness) -> [FMLogEvent] {
        h.logs.values.filter { $0.level == .error }
    }

    /// Failed before: no line at all.
    @Test(arguments: Refusal.allCases)
    func aRefusedWalkLogsOneError(_ refusal: Refusal) async {
        let h = Self.harness()
        let done = Recorder<String>()
        h.api.forEachPage(layout: refusal.layout, find: refusal.find, pageSize: refusal.pageSize, page: { _ in true }) { _, code in
            done.record(code)
        }
        #expect(await done.value().first == FMError.ClientCode.invalidArgument)
        let errors = Self.errors(h)
        #expect(errors.count == 1, "\(errors.map(\.message))")
        #expect(errors.first?.message.contains(" not sent: FMError -1002: ") == true, "\(errors.map(\.message))")
        #expect(errors.first?.metadata["fm.code"] == FMError.ClientCode.invalidArgument)
        #expect(h.stub.requests.isEmpty, "nothing is sent")
    }

    /// Failed before: no line at all (the async sequence threw -1002).
    @Test func aRefusedAsyncWalkLogsOneError() async {
        let h = Self.harness()
        await #expect(throws: FMError.self) {
            for try await _ in h.api.pages(layout: "Contacts", pageSize: 0) {}
        }
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.metadata["fm.code"] == FMError.ClientCode.invalidArgument, "\(errors.map(\.message))")
    }

    /// A server that ignores `_offset`: the same full page every time.
    private static func page(records count: Int, found: Int) -> String {
        let records = (1...count).map { #"{"fieldData":{"name":"n\#($0)"},"portalData":{},"recordId":"\#($0)","modId":"1"}"# }
        return #"{"response":{"dataInfo":{"database":"Contacts","layout":"Contacts","table":"Contacts","totalRecordCount":\#(found),"foundCount":\#(found),"returnedCount":\#(count)},"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#
    }

    private static func sameFullPage() -> Harness {
        let body = page(records: 2, found: 10)
        return harness { _ in .json(200, body) }
    }

    /// Failed before: the walk ended with -1007 and no line said so (each page's own lines are debug).
    @Test func aWalkEndedByTheSamePageLogsOneError() async {
        let h = Self.sameFullPage()
        let done = Recorder<String>()
        h.api.forEachPage(layout: "Contacts", pageSize: 2, page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let errors = Self.errors(h)
        #expect(errors.count == 1, "\(errors.map(\.message))")
        #expect(errors.first?.metadata["fm.code"] == FMError.ClientCode.malformedResponse)
        #expect(errors.first?.message.contains("ignores _offset") == true, "\(errors.map(\.message))")
        #expect(errors.first?.metadata["fm.endpoint"] == "GET layouts/{}/records", "\(errors.map(\.metadata))")
    }

    /// Failed before: the async walk threw -1007 and no line said so.
    @Test func anAsyncWalkEndedByTheSamePageLogsOneError() async {
        let h = Self.sameFullPage()
        await #expect(throws: FMError.self) {
            for try await _ in h.api.pages(layout: "Contacts", pageSize: 2) {}
        }
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.metadata["fm.code"] == FMError.ClientCode.malformedResponse, "\(errors.map(\.message))")
    }

    /// Held: a walk that reaches the end of its set logs no error.
    @Test func aWalkToTheEndLogsNoError() async {
        let h = Self.harness { _ in .json(200, Self.page(records: 1, found: 1)) }
        let done = Recorder<String>()
        h.api.forEachPage(layout: "Contacts", pageSize: 10, page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == "0")
        #expect(Self.errors(h).isEmpty, "\(Self.errors(h).map(\.message))")
    }
}

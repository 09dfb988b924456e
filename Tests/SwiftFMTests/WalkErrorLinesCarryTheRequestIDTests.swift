import Foundation
import Testing
@testable import SwiftFM

/// Every failure line names its request: the one error line of a walk that a page it cannot use ends (a Data API walk:
/// `-1007`, the same page a third time) or whose next link leads where it already went (an OData walk: `-1007`) carries
/// the `fm.request_id` of the page call that ended it, the page whose answer was last logged (`← …`), as every other
/// call's failure line carries its call's. Both forms of each walk (the callback and the async sequence).
/// Before, those lines had no `fm.request_id` at all: a trace's `filemaker.request_id` matched no failure line.
@Suite("Log metadata: a walk's error line carries the request id of the page that ended it")
struct WalkErrorLinesCarryTheRequestIDTests {
    /// The error line, and the `fm.request_id` of the answer line logged last before it (the page that ended the walk),
    /// and of every answer line.
    static func lines(_ events: [FMLogEvent]) -> (error: FMLogEvent?, lastAnswer: String?, answers: [String]) {
        guard let index = events.firstIndex(where: { $0.level == .error }) else { return (nil, nil, []) }
        let answers = events[..<index].filter { $0.message.hasPrefix("← ") }.compactMap { $0.metadata["fm.request_id"] }
        return (events[index], answers.last, answers)
    }

    static func expectTheEndingPage(_ events: [FMLogEvent], pages: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let (error, lastAnswer, answers) = lines(events)
        #expect(events.filter { $0.level == .error }.count == 1, "\(events.map(\.message))", sourceLocation: sourceLocation)
        #expect(error?.metadata["fm.code"] == FMError.ClientCode.malformedResponse, sourceLocation: sourceLocation)
        #expect(answers.count == pages, "\(events.map(\.message))", sourceLocation: sourceLocation)
        #expect(Set(answers).count == answers.count, "each page is a call of its own: \(answers)", sourceLocation: sourceLocation)
        #expect(lastAnswer != nil && error?.metadata["fm.request_id"] == lastAnswer,
                "\(String(describing: error?.metadata)) vs the last page's \(String(describing: lastAnswer))", sourceLocation: sourceLocation)
    }

    // MARK: Data API

    /// A server that ignores `_offset`: the same full page every time, so the third page ends the walk.
    static func sameFullPage() -> Harness {
        let records = (1...2).map { #"{"fieldData":{"name":"n\#($0)"},"portalData":{},"recordId":"\#($0)","modId":"1"}"# }
        let body = #"{"response":{"dataInfo":{"database":"Contacts","layout":"Contacts","table":"Contacts","totalRecordCount":10,"foundCount":10,"returnedCount":2},"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        return Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theCallbackWalk() async {
        let h = Self.sameFullPage()
        let done = Recorder<String>()
        h.api.forEachPage(layout: "Contacts", pageSize: 2, page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        Self.expectTheEndingPage(h.logs.values, pages: 3)
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theAsyncWalk() async {
        let h = Self.sameFullPage()
        await #expect(throws: FMError.self) {
            for try await _ in h.api.pages(layout: "Contacts", pageSize: 2) {}
        }
        Self.expectTheEndingPage(h.logs.values, pages: 3)
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theTypedAsyncWalk() async {
        struct Contact: Decodable { var name: String }
        let h = Self.sameFullPage()
        await #expect(throws: FMError.self) {
            for try await _ in h.api.pages(as: Contact.self, layout: "Contacts", pageSize: 2) {}
        }
        Self.expectTheEndingPage(h.logs.values, pages: 3)
    }

    // MARK: OData

    /// First page → A → B → A again: the third page's link ends the walk.
    static func cycling() -> ODataHarness {
        ODataPageCycleTests.cyclingServer(again: ODataBodies.base + "/contacts?$skiptoken=2")
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theODataCallbackWalk() async {
        let setup = Self.cycling()
        let done = Recorder<String>()
        setup.odata.forEachPage(from: "contacts", page: { _ in true }) { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        Self.expectTheEndingPage(setup.harness.logs.values, pages: 3)
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theODataAsyncWalk() async {
        let setup = Self.cycling()
        await #expect(throws: FMError.self) {
            for try await _ in setup.odata.pages(from: "contacts") {}
        }
        Self.expectTheEndingPage(setup.harness.logs.values, pages: 3)
    }

    /// Failed before: the line had no `fm.request_id`.
    @Test func theODataTypedAsyncWalk() async {
        struct Row: Decodable { var name: String }
        let setup = Self.cycling()
        await #expect(throws: FMError.self) {
            for try await _ in setup.odata.pages(as: Row.self, from: "contacts") {}
        }
        Self.expectTheEndingPage(setup.harness.logs.values, pages: 3)
    }
}

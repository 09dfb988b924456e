import Foundation
import Testing
@testable import SwiftFM

/// A call's lines carry its caller's logging context: ``FMConfiguration/logMetadataProvider`` is read once as a call
/// begins, where the caller is (its thread, or its task for an `async` method: task-local values are there), and what it
/// returns is added to the metadata of every line of that call (`→`, `←`, retries, its failure line), SwiftFM's own
/// `fm.*` keys winning. What one operation sends on the caller's behalf from SwiftFM's own queues (the next pages of a
/// callback walk, a container download's redirect hops, an OData walk's next pages) carries the context read as the
/// operation began, and so does the line that ends it; a login serves the pool, not one caller, and carries none.
/// Concurrent calls keep theirs apart. Before, SwiftFM's lines were logged on its own queues, where a provider that
/// reads task-locals (a trace id) finds nothing: there was no way to get a caller's context onto them.
@Suite("Log metadata: a call's lines carry its caller's logging context")
struct ACallsLinesCarryTheCallersLogContextTests {
    enum Trace {
        @TaskLocal static var id: String?
    }

    static let provider = FMLogMetadataProvider { Trace.id.map { ["trace_id": $0] } ?? [:] }

    static func configuration() -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.logMetadataProvider = provider
        return configuration
    }

    /// A found set of `count` records out of `found`, the same whatever was asked (a server that ignores `_offset`
    /// when `count < found`).
    static func page(records count: Int, found: Int) -> String {
        let records = (1...count).map { #"{"fieldData":{"name":"n\#($0)"},"portalData":{},"recordId":"\#($0)","modId":"1"}"# }
        return #"{"response":{"dataInfo":{"database":"Contacts","layout":"Contacts","table":"Contacts","totalRecordCount":\#(found),"foundCount":\#(found),"returnedCount":\#(count)},"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#
    }

    /// The lines of calls (those with an `fm.request_id`), by request id.
    static func calls(_ events: [FMLogEvent]) -> [String: [FMLogEvent]] {
        Dictionary(grouping: events.filter { $0.metadata["fm.request_id"] != nil }) { $0.metadata["fm.request_id"] ?? "" }
    }

    static func expectEveryCallLine(_ events: [FMLogEvent], carries trace: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = events.filter { $0.metadata["fm.request_id"] != nil }
        #expect(!lines.isEmpty, sourceLocation: sourceLocation)
        for line in lines {
            #expect(line.metadata["trace_id"] == trace, "\(line.message) \(line.metadata)", sourceLocation: sourceLocation)
        }
    }

    /// Failed before: no such setting (the lines carried only `fm.*` keys).
    @Test func concurrentAsyncCallsCarryTheirOwnTasksContext() async throws {
        let body = Self.page(records: 1, found: 1)
        let h = Harness(configuration: Self.configuration(), store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for trace in ["t-1", "t-2", "t-3"] {
                group.addTask {
                    try await Trace.$id.withValue(trace) { _ = try await h.api.getRecords(layout: "Contacts", limit: 1) }
                }
            }
            try await group.waitForAll()
        }
        let calls = Self.calls(h.logs.values)
        #expect(calls.count == 3, "\(calls.keys)")
        var traces: [String] = []
        for (id, lines) in calls {
            let seen = Set(lines.map { $0.metadata["trace_id"] ?? "none" })
            #expect(seen.count == 1, "call \(id) has lines of several contexts: \(seen)")
            traces += seen
            #expect(lines.contains { $0.message.hasPrefix("→ ") } && lines.contains { $0.message.hasPrefix("← ") })
        }
        #expect(traces.sorted() == ["t-1", "t-2", "t-3"])
    }

    /// Failed before: no such setting. A callback method reads the context on the caller's thread.
    @Test func aCallbackCallCarriesItsCallersContext() async {
        let body = Self.page(records: 1, found: 1)
        let h = Harness(configuration: Self.configuration(), store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        let done = Recorder<String>()
        Trace.$id.withValue("callback") {
            h.api.getRecords(layout: "Contacts", limit: 1) { _, code in done.record(code) }
        }
        #expect(await done.value().first == "0")
        Self.expectEveryCallLine(h.logs.values, carries: "callback")
    }

    /// Failed before: no such setting. The failure line of a call refused before sending carries it too.
    @Test func aRefusedCallsLineCarriesItsCallersContext() async {
        let h = Harness(configuration: Self.configuration(), store: FirstContactRuleTests.loggedIn) { _ in .json(200, Bodies.ok) }
        await #expect(throws: FMError.self) {
            try await Trace.$id.withValue("refused") { _ = try await h.api.getRecords(layout: "", limit: 1) }
        }
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.count == 1 && errors.first?.metadata["trace_id"] == "refused", "\(errors.map(\.metadata))")
    }

    /// Failed before: no such setting. The next pages are sent from the callback queue, the walk's error line logged
    /// there: each carries the context of the caller that began the walk.
    @Test func aCallbackWalkCarriesItsCallersContextOnEveryPageAndItsErrorLine() async {
        let body = Self.page(records: 2, found: 10)   // the same page every time: the third ends the walk
        let h = Harness(configuration: Self.configuration(), store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        let done = Recorder<String>()
        Trace.$id.withValue("walk") {
            h.api.forEachPage(layout: "Contacts", pageSize: 2, page: { _ in true }) { _, code in done.record(code) }
        }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let events = h.logs.values
        #expect(Self.calls(events).count == 3)
        #expect(events.filter { $0.level == .error }.count == 1)
        Self.expectEveryCallLine(events, carries: "walk")
    }

    /// Failed before: no such setting. The async walk's pages and its error line carry the looping task's context.
    @Test func anAsyncWalkCarriesItsTasksContext() async {
        let body = Self.page(records: 2, found: 10)
        let h = Harness(configuration: Self.configuration(), store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        await #expect(throws: FMError.self) {
            try await Trace.$id.withValue("async-walk") {
                for try await _ in h.api.pages(layout: "Contacts", pageSize: 2) {}
            }
        }
        #expect(h.logs.values.filter { $0.level == .error }.count == 1)
        Self.expectEveryCallLine(h.logs.values, carries: "async-walk")
    }

    /// Failed before: no such setting. Every hop after the first is sent from SwiftFM's queue; each hop's lines, and
    /// the line of the download its redirects end, carry the caller's context.
    @Test func aContainerDownloadsHopsCarryItsCallersContext() async {
        let h = Harness(configuration: Self.configuration()) { request in
            guard let url = request.url else { return nil }
            let n = Int(url.lastPathComponent.dropFirst("hop".count)) ?? 0
            return .json(302, "", headers: ["Location": "https://fms.example.com/Streaming_SSL/MainDB/hop\(n + 1)"])
        }
        let done = Recorder<String>()
        Trace.$id.withValue("download") {
            h.api.downloadContainer(url: URL(string: "https://fms.example.com/Streaming_SSL/MainDB/hop0")!) { _, code in done.record(code) }
        }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let events = h.logs.values
        #expect(Self.calls(events).count == Endpoints.maxContainerRedirects + 1)
        #expect(events.filter { $0.level == .error }.count == 1)
        Self.expectEveryCallLine(events, carries: "download")
    }

    /// Failed before: no such setting. An OData callback walk: its next pages and its loop's error line.
    @Test func anODataCallbackWalkCarriesItsCallersContext() async {
        // First page → A → B → A again (as ODataPageCycleTests' cycling server): the third page's link ends the walk.
        let (a, b) = (ODataBodies.base + "/contacts?$skiptoken=2", ODataBodies.base + "/contacts?$skiptoken=4")
        let h = Harness(configuration: Self.configuration()) { request in
            let url = request.url?.absoluteString ?? ""
            if url.hasSuffix("$skiptoken=2") { return .json(200, ODataBodies.page(["b"], next: b)) }
            if url.hasSuffix("$skiptoken=4") { return .json(200, ODataBodies.page(["c"], next: a)) }
            return .json(200, ODataBodies.page(["a"], next: a))
        }
        let odata = FMOData(sharing: h.api)
        let done = Recorder<String>()
        Trace.$id.withValue("odata") {
            odata.forEachPage(from: "contacts", page: { _ in true }) { _, code in done.record(code) }
        }
        #expect(await done.value().first == FMError.ClientCode.malformedResponse)
        let events = h.logs.values
        #expect(Self.calls(events).count == 3)
        #expect(events.filter { $0.level == .error }.count == 1)
        Self.expectEveryCallLine(events, carries: "odata")
    }

    /// SwiftFM's own keys are not the provider's to change.
    @Test func swiftFMsOwnKeysWin() async throws {
        var configuration = Self.configuration()
        configuration.logMetadataProvider = FMLogMetadataProvider { ["fm.request_id": "spoofed", "fm.code": "spoofed", "tenant": "acme"] }
        let body = Self.page(records: 1, found: 1)
        let h = Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        _ = try await h.api.getRecords(layout: "Contacts", limit: 1)
        let answer = try #require(h.logs.values.first { $0.message.hasPrefix("← ") })
        #expect(answer.metadata["tenant"] == "acme")
        #expect(answer.metadata["fm.request_id"] != "spoofed" && answer.metadata["fm.code"] == "0", "\(answer.metadata)")
    }

    /// A login serves the pool, not the caller whose call started it: its lines carry no caller's context, while the
    /// call's own lines do.
    @Test func aLoginCarriesNoCallersContext() async throws {
        let body = Self.page(records: 1, found: 1)
        let h = Harness(configuration: Self.configuration()) { request in
            request.url?.path.hasSuffix("/sessions") == true ? .json(200, Bodies.login()) : .json(200, body)
        }
        _ = try await Trace.$id.withValue("first") { try await h.api.getRecords(layout: "Contacts", limit: 1) }
        let calls = Self.calls(h.logs.values)
        let login = try #require(calls.values.first { $0.contains { $0.metadata["fm.endpoint"] == "POST sessions" } })
        #expect(login.allSatisfy { $0.metadata["trace_id"] == nil }, "\(login.map(\.metadata))")
        let read = try #require(calls.values.first { $0.contains { $0.metadata["fm.layout"] == "Contacts" } })
        #expect(read.allSatisfy { $0.metadata["trace_id"] == "first" }, "\(read.map(\.metadata))")
    }

    /// The provider is read only where a line can come of it: without a logging hook it is never called.
    @Test func withoutALoggerTheProviderIsNotRead() async throws {
        let reads = Locked(0)
        var configuration = Self.configuration()
        configuration.logMetadataProvider = FMLogMetadataProvider { reads.withLock { $0 += 1 }; return [:] }
        let body = Self.page(records: 1, found: 1)
        let stub = StubTransport { _ in .json(200, body) }
        let api = DataAPI(configuration: configuration, transport: stub, tokenStore: FirstContactRuleTests.loggedIn)
        _ = try await api.getRecords(layout: "Contacts", limit: 1)
        #expect(reads.withLock { $0 } == 0)
    }
}

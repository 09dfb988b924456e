import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// An OData call that reads or writes a table names it, as a Data API call names its layout: in its span's start
/// (``FMCallStart/table``) and in its log lines (`fm.table`), for every call on a table, next-link pages
/// included, the name decoded as written. Calls on no table (metadata, scripts, webhooks) and Data API calls
/// name none.
@Suite("OData: a call names its table in its span and log lines")
struct ODataCallTableTests {
    private static let schema = Data(#"""
    {
      "database": "Shop",
      "accounts": [ { "username": "admin", "password": "admin" } ],
      "tables": { "Order Lines": { "fields": { "code": { "type": "text", "notEmpty": true, "unique": true }, "qty": "number" } } },
      "layouts": { "Order Lines": { "table": "Order Lines", "fields": ["code", "qty"] } },
      "scripts": { "Echo": { "returns": "parameter" } },
      "records": { "Order Lines": [ { "code": "A", "qty": 1 }, { "code": "B", "qty": 2 }, { "code": "C", "qty": 3 } ] }
    }
    """#.utf8)

    @Test func everyCallOnATableNamesIt() async throws {
        let emulator = try Emulator(schemaJSON: Self.schema)
        let url = try emulator.start()
        defer { emulator.stop() }
        emulator.odataPageSize = 2
        let recorder = InstrumentationTests.Recorder()
        let lines = Events()
        var configuration = FMConfiguration(host: url.absoluteString, database: "Shop", username: "admin", password: "admin")
        configuration.timeout = 30
        configuration.instrumentation = recorder
        let api = DataAPI(configuration: configuration, logger: { lines.append($0) })
        let odata = FMOData(sharing: api)
        var pages = 0
        for try await _ in odata.pages(from: "Order Lines") { pages += 1 }
        #expect(pages == 2)
        _ = try await odata.record(from: "Order Lines", key: "A")
        #expect(try await odata.count(of: "Order Lines") == 3)
        _ = try await odata.createRecord(in: "Order Lines", fields: ["code": "D", "qty": 4])
        #expect(try await odata.updateRecord(in: "Order Lines", key: "D", fields: ["qty": 5]) == 1)
        #expect(try await odata.deleteRecord(in: "Order Lines", key: "D") == 1)
        _ = try await odata.metadata()
        _ = try await odata.runScript("Echo", parameter: "x")
        _ = try await api.getRecords(layout: "Order Lines", limit: 1)

        let starts = recorder.spans.map(\.start)
        let onTables = starts.filter { $0.endpoint.contains("odata/{set}") }
        #expect(onTables.count == 7, "\(starts.map(\.endpoint))")   // two pages, a record, a count, create, update, delete
        #expect(onTables.allSatisfy { $0.table == "Order Lines" }, "\(onTables.map { "\($0.endpoint) \($0.table ?? "nil")" })")
        let others = starts.filter { !$0.endpoint.contains("odata/{set}") }
        #expect(!others.isEmpty && others.allSatisfy { $0.table == nil }, "\(others.map { "\($0.endpoint) \($0.table ?? "nil")" })")
        #expect(starts.first { $0.endpoint == "GET layouts/{}/records" }?.layout == "Order Lines")

        let requestLines = lines.events.filter { $0.message.hasPrefix("→ ") }
        let odataLines = requestLines.filter { ($0.metadata["fm.endpoint"] ?? "").contains("odata/{set}") }
        #expect(odataLines.count == 7 && odataLines.allSatisfy { $0.metadata["fm.table"] == "Order Lines" },
                "\(odataLines.map(\.metadata))")
        #expect(requestLines.filter { !($0.metadata["fm.endpoint"] ?? "").contains("odata/{set}") }.allSatisfy { $0.metadata["fm.table"] == nil })
    }
}

/// The log events a client wrote.
private final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [FMLogEvent] = []
    func append(_ event: FMLogEvent) { lock.withLock { _events.append(event) } }
    var events: [FMLogEvent] { lock.withLock { _events } }
}

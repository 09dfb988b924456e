import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// FMOData end to end against the emulator's OData service: metadata, filters with quotes, paging to the end, keys,
// writes, scripts, quoted and ROWID keys, typed rows, $expand and $batch; the Data API and OData agree field for field.

/// A solution for the OData end-to-end tests: `Customers` keyed by `code` (not empty + unique, so the
/// emulator's `$metadata` declares it the key), with an apostrophe in one name.
private let odataSchema = Data(#"""
{
  "database": "Shop",
  "accounts": [ { "username": "admin", "password": "admin" } ],
  "tables": {
    "Customers": {
      "fields": {
        "code":   { "type": "text", "notEmpty": true, "unique": true },
        "name":   "text",
        "city":   "text",
        "score":  "number",
        "joined": "date"
      }
    },
    "Orders": {
      "fields": { "id": { "type": "number", "autoEnter": "serial" }, "customer_code": "text", "total": "number" }
    }
  },
  "relationships": [ { "left": "Customers", "right": "Orders", "match": { "code": "customer_code" } } ],
  "layouts": {
    "Customers": { "table": "Customers", "fields": ["code", "name", "city", "score", "joined"] },
    "Orders": { "table": "Orders", "fields": ["id", "customer_code", "total"] }
  },
  "scripts": { "Echo": { "returns": "parameter" }, "Fail": { "error": "3" } },
  "records": {
    "Customers": [
      { "code": "ALFKI", "name": "Alfreds", "city": "Berlin", "score": 5, "joined": "01/15/2020" },
      { "code": "OBR", "name": "O'Brien & Sons", "city": "Dublin", "score": 3.5 },
      { "code": "OBR2", "name": "O'Brien Jr", "city": "Cork", "score": 2 },
      { "code": "ZOE", "name": "Zoë Café", "city": "Paris", "score": 4 },
      { "code": "NUL", "name": "", "city": "Berlin", "score": 1 },
      { "code": "D'X", "name": "Quoted key", "city": "Oslo", "score": 0.25 }
    ],
    "Orders": [
      { "customer_code": "D'X", "total": 3 },
      { "customer_code": "ALFKI", "total": 4.5 }
    ]
  }
}
"""#.utf8)

/// Starts an emulator with ``odataSchema``, a Data API client and an OData client sharing its pipeline.
private func withOData<T>(_ body: (FMOData, DataAPI, Emulator) async throws -> T) async throws -> T {
    let emulator = try Emulator(schemaJSON: odataSchema)
    let url = try emulator.start()
    defer { emulator.stop() }
    var configuration = FMConfiguration(host: url.absoluteString, database: "Shop", username: "admin", password: "admin")
    configuration.timeout = 30
    let api = DataAPI(configuration: configuration)
    return try await body(FMOData(sharing: api), api, emulator)
}

/// Awaits an OData callback form's `(value?, code)` completion (once).
private func odataCallback<V>(_ start: (@escaping @Sendable (V?, String) -> Void) -> Void) async -> (V?, String) {
    let counter = CallCounter()
    let box: UncheckedResult<V> = await withCheckedContinuation { continuation in
        start { value, code in
            if counter.hit() == 1 { continuation.resume(returning: UncheckedResult(value: value, code: code)) }
        }
    }
    return (box.value, box.code)
}

@Suite struct ODataEndToEndTests {
    @Test func metadataIsReadFromTheEmulatorsJSONCSDL() async throws {
        try await withOData { odata, _, emulator in
            let metadata = try await odata.metadata()
            let set = try #require(metadata.entitySet(named: "Customers"))
            let type = try #require(metadata.entityType(ofSet: set.name))
            #expect(type.key == ["code"])
            #expect(type.property(named: "code")?.edmType == "Edm.String")
            #expect(type.property(named: "score")?.edmType == "Edm.Decimal")
            #expect(Set(["code", "name", "city", "score"]).isSubset(of: Set(type.properties.map(\.name))))
            #expect(type.tableID?.hasPrefix("FMTID:") == true)
            #expect(type.property(named: "code")?.fieldID?.hasPrefix("FMFID:") == true)
            #expect(metadata.serverVersion?.contains(emulator.odataServerVersion) == true)
            // The client asked for JSON CSDL.
            let request = try #require(emulator.requestLog.last { $0.decodedPath.hasSuffix("$metadata") })
            #expect(request.method == "GET")
            #expect(request.header("Accept")?.contains("application/json") == true)

            // The callback form reads the same document.
            let (again, code) = await odataCallback { done in odata.metadata { done($0, $1) } }
            #expect(code == "0")
            #expect(again == metadata)
        }
    }

    @Test func filterWithAQuoteSelectOrderTopCount() async throws {
        try await withOData { odata, _, emulator in
            let query = FMODataQuery(filter: .startsWith("name", "O'Brien") || .eq("name", "Zoë Café"),
                                     select: ["code", "name"], orderBy: [.descending("code")], top: 2, count: true)
            let page = try await odata.records(from: "Customers", query: query)
            #expect(page.count == 3)
            #expect(page.rows.map { $0["code"] as? String } == ["ZOE", "OBR2"])
            #expect(page.rows.allSatisfy { $0["city"] == nil && $0["score"] == nil })

            let exact = try await odata.records(from: "Customers", query: FMODataQuery(filter: .eq("name", "O'Brien & Sons")))
            #expect(exact.rows.map { $0["code"] as? String } == ["OBR"])
            // The quote went out doubled, as OData's string literal wants.
            let sent = try #require(emulator.requestLog.last { $0.decodedPath.hasSuffix("/Customers") })
            #expect(sent.target.removingPercentEncoding?.contains("'O''Brien & Sons'") == true)
        }
    }

    @Test func pagingToTheEnd() async throws {
        try await withOData { odata, _, emulator in
            emulator.odataPageSize = 2
            let query = FMODataQuery(orderBy: [.ascending("code")])
            var codes: [String] = []
            var pages = 0
            for try await page in odata.pages(from: "Customers", query: query) {
                pages += 1
                codes += page.rows.compactMap { $0["code"] as? String }
            }
            #expect(codes == ["ALFKI", "D'X", "NUL", "OBR", "OBR2", "ZOE"])
            #expect(pages == 3)

            let collected = CallBox()
            let (total, code) = await odataCallback { done in
                odata.forEachPage(from: "Customers", query: query, page: { page in
                    collected.append(page.rows.compactMap { $0["code"] as? String }); return true
                }, completion: { done($0, $1) })
            }
            #expect(code == "0")
            #expect(total == 6)
            #expect(collected.pages == [["ALFKI", "D'X"], ["NUL", "OBR"], ["OBR2", "ZOE"]])
        }
    }

    @Test func recordByKeyAndCount() async throws {
        try await withOData { odata, _, _ in
            let row = try await odata.record(from: "Customers", key: "OBR")
            #expect(row["name"] as? String == "O'Brien & Sons")
            #expect(row["city"] as? String == "Dublin")
            await #expect(throws: FMError.self) { try await odata.record(from: "Customers", key: "NOPE") }

            #expect(try await odata.count(of: "Customers") == 6)
            #expect(try await odata.count(of: "Customers", filter: .eq("city", "Berlin")) == 2)
            #expect(try await odata.count(of: "Customers", filter: .contains("name", "O'Brien")) == 2)
            let (count, code) = await odataCallback { done in odata.count(of: "Customers", filter: .gt("score", 3)) { done($0, $1) } }
            #expect(try await odata.count(of: "Customers", filter: .eq("score", .double(0.25))) == 1)
            #expect(code == "0")
            #expect(count == 3)
        }
    }

    @Test func createUpdateDelete() async throws {
        try await withOData { odata, api, _ in
            let created = try await odata.createRecord(in: "Customers", fields: ["code": "NEW", "name": "D'Arcy", "score": 7])
            #expect(created["code"] as? String == "NEW")
            #expect(created["name"] as? String == "D'Arcy")

            let changed = try await odata.updateRecord(in: "Customers", key: "NEW", fields: ["city": "Lyon"])
            #expect(changed == 1)
            let row = try await odata.record(from: "Customers", key: "NEW")
            #expect(row["city"] as? String == "Lyon")
            #expect(row["name"] as? String == "D'Arcy")

            // The Data API sees the OData write.
            let found = try await api.find(layout: "Customers", payload: ["query": [["code": "==NEW"]]])
            #expect(found.records.count == 1)

            let (deleted, code) = await odataCallback { done in odata.deleteRecord(in: "Customers", key: "NEW") { done($0, $1) } }
            #expect(code == "0")
            #expect(deleted == 1)
            #expect(try await odata.count(of: "Customers") == 6)
        }
    }

    @Test func runScript() async throws {
        try await withOData { odata, _, _ in
            let echo = try await odata.runScript("Echo", parameter: "it's here")
            #expect(echo.code == "0")
            #expect(echo.resultParameter == "it's here")

            let (failed, code) = await odataCallback { done in odata.runScript("Fail") { done($0, $1) } }
            #expect(code == "0")
            #expect(failed?.code == "3")
        }
    }

    @Test func dataAPIAndODataAgreeFieldForField() async throws {
        try await withOData { odata, api, _ in
            let viaDataAPI = try await api.getRecords(layout: "Customers", sort: [FMSort("code")])
            let viaOData = try await odata.records(from: "Customers", query: FMODataQuery(orderBy: [.ascending("code")]))
            #expect(viaDataAPI.records.count == 6)
            #expect(viaOData.rows.count == viaDataAPI.records.count)
            for (record, row) in zip(viaDataAPI.records, viaOData.rows) {
                let fields = try #require(record["fieldData"] as? [String: Any])
                for name in ["code", "name", "city", "score"] {
                    let left = fields[name].map { "\($0)" } ?? "<missing>"
                    // An empty field: the Data API's "" is OData's null.
                    let right = row[name].map { $0 is NSNull ? "" : "\($0)" } ?? "<missing>"
                    #expect(left == right, "\(name) of \(fields["code"] ?? "?"): Data API \(left), OData \(right)")
                }
                // Dates: the Data API's MM/dd/yyyy is OData's yyyy-MM-dd; an empty date is "" and null.
                let dataAPIDate = fields["joined"] as? String
                let odataDate = row["joined"]
                if let dataAPIDate, !dataAPIDate.isEmpty {
                    let p = dataAPIDate.split(separator: "/")
                    #expect(odataDate as? String == "\(p[2])-\(p[0])-\(p[1])")
                } else {
                    #expect(dataAPIDate == "")
                    #expect(odataDate is NSNull)
                }
            }
        }
    }
}

extension ODataEndToEndTests {
    struct Customer: Decodable { var code: String; var name: String; var score: Double }

    @Test func quotedKeysRowIDsTypedRowsExpandAndBatch() async throws {
        try await withOData { odata, _, _ in
            let quoted = try await odata.record(from: "Customers", key: "D'X")
            #expect(quoted["name"] as? String == "Quoted key")
            #expect(try await odata.updateRecord(in: "Customers", key: "D'X", fields: ["city": "Bergen"]) == 1)

            // Orders has no key: its records are addressed by ROWID.
            let order = try await odata.record(from: "Orders", key: .rowID(1))
            #expect(order["customer_code"] as? String == "D'X")

            let typed = try await odata.records(as: Customer.self, from: "Customers",
                                                query: FMODataQuery(filter: .eq("code", "D'X")))
            #expect(typed.rows.map(\.code) == ["D'X"])
            #expect(typed.rows.first?.score == 0.25)

            let expanded = try await odata.records(from: "Customers",
                                                   query: FMODataQuery(filter: .eq("code", "D'X"), expand: [FMODataExpand("Orders")]))
            let orders = try #require(expanded.rows.first?["Orders"] as? [[String: Any]])
            #expect(orders.map { $0["total"] as? Int } == [3])
            #expect(expanded.rows.first?["city"] as? String == "Bergen")

            var batch = FMODataBatch()
            batch.read(from: "Customers", key: "D'X")
            batch.changeset([.create(in: "Customers", fields: ["code": "B'1", "name": "Batch"]),
                             .update(in: "Customers", key: "ALFKI", fields: ["city": "Bonn"])])
            let results = try await odata.batch(batch)
            #expect(results.map(\.status) == [200, 201, 204])
            #expect(results.first?.body?["name"] as? String == "Quoted key")
            #expect(try await odata.record(from: "Customers", key: "B'1")["name"] as? String == "Batch")
            #expect(try await odata.record(from: "Customers", key: "ALFKI")["city"] as? String == "Bonn")
        }
    }
}

/// Pages a `forEachPage` walk delivered (the page closure runs on the callback queue).
private final class CallBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [[String]] = []
    func append(_ page: [String]) { lock.lock(); defer { lock.unlock() }; stored.append(page) }
    var pages: [[String]] { lock.lock(); defer { lock.unlock() }; return stored }
}

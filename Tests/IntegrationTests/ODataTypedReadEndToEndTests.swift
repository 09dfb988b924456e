import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Typed OData reads against the emulator: pages followed to the end, rows equal to the raw rows.
@Suite struct ODataTypedReadEndToEndTests {
    struct Customer: Decodable, Equatable { var code: String; var name: String; var city: String; var score: Double }

    /// `pages(as:)` follows `@odata.nextLink` on the server: the link's path already names the database.
    @Test func typedPagesFollowTheNextLinkToTheEnd() async throws {
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        emulator.odataPageSize = 2
        let url = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: odataConfiguration(url))
        let query = FMODataQuery(orderBy: [.ascending("code")], count: true)
        var codes: [String] = []
        var counts: [Int?] = []
        for try await page in odata.pages(as: Customer.self, from: "Customers", query: query) {
            codes += page.rows.map(\.code)
            counts.append(page.count)
        }
        #expect(codes == ["ALFKI", "OBR", "ZOE"])
        #expect(counts.first == 3)
        let reads = emulator.requestLog.filter { $0.decodedPath.contains("/fmi/odata/") }
        #expect(reads.count == 2 && reads.allSatisfy { $0.status == 200 }, "\(reads.map { "\($0.status) \($0.target)" })")
        // Collection reads ask for no per-row annotations (the rows drop them anyway).
        #expect(reads.allSatisfy { $0.header("Accept") == "application/json;odata.metadata=none" })
    }

    /// One typed page: the same values as the raw rows, the count and next link read too.
    @Test func typedRowsEqualTheRawRows() async throws {
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        emulator.odataPageSize = 2
        let url = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: odataConfiguration(url))
        let query = FMODataQuery(orderBy: [.descending("code")], count: true)
        let raw = try await odata.records(from: "Customers", query: query)
        let (typed, code) = await odataOnce(odata) { done in odata.records(as: Customer.self, from: "Customers", query: query) { done($0, $1) } }
        #expect(code == "0")
        let rows = try #require(typed?.rows)
        #expect(rows == raw.rows.map { Customer(code: $0["code"] as? String ?? "", name: $0["name"] as? String ?? "",
                                                    city: $0["city"] as? String ?? "", score: ($0["score"] as? NSNumber)?.doubleValue ?? -1) })
        #expect(rows.map(\.code) == ["ZOE", "OBR"])
        #expect(typed?.count == 3 && raw.count == 3)
        #expect(typed?.nextLink != nil && typed?.nextLink == raw.nextLink)

        // A row that does not fit the type names the row and the field.
        struct Strict: Decodable { var code: String; var missing: Int }
        do {
            _ = try await odata.records(as: Strict.self, from: "Customers", query: query)
            Issue.record("decoded a row without its field")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.malformedResponse)
            #expect(error.message.contains("row 0") && error.message.contains("field missing is missing"), "\(error.message)")
        }
    }
}

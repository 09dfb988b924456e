import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

/// Repeating fields one, two and three relationship hops away through the SwiftFM client, against
/// Tests/Fixtures/chain-schema.json (Orders → Order_customer → Customer_region → Region_country).
@Suite struct RelatedRepetitionIntegrationTests {
    static let chainURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/chain-schema.json")

    struct Order: Decodable {
        var label: String
        var phones: [String]
        var codes: [String]
        var tags: [String]
        enum CodingKeys: String, CodingKey {
            case label, phones = "Order_customer::phones", codes = "Customer_region::codes", tags = "Region_country::tags"
        }
    }

    struct RegionRow: Decodable {
        var codes: [String]
        var tags: [String]
        enum CodingKeys: String, CodingKey { case codes = "Customer_region::codes", tags = "Region_country::tags" }
    }

    @Test func repetitionsAtEveryHopCountReadWrittenAndFound() async throws {
        let emulator = try Emulator(schemaFile: Self.chainURL)
        try await Emulator.withRunning(emulator) { emulator in
            let url = try #require(emulator.baseURL)
            let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Chain", username: "admin", password: "admin"))
            // Typed: a layout's related repeating fields and a portal row's, two and three hops away, as arrays.
            let typed = try await api.getRecord(as: Order.self, layout: "Orders", recordId: 1)
            let order = try #require(typed.records.first)
            #expect(order.fieldData.phones == ["p1", "p2"])
            #expect(order.fieldData.codes == ["N1", "N2", "N3"])
            #expect(order.fieldData.tags == ["cold", "fjords"])
            let row = try #require(order.portalData["region"]?.first).decode(RegionRow.self)
            #expect(row.codes == ["N1", "N2", "N3"])
            #expect(row.tags == ["cold", "fjords"])
            #expect(order.portalData["customer"]?.first?["Region_country::tags(2)"] == FMFieldValue.string("fjords"))

            // Writes name a repetition, on the layout and in a portal row, two and three hops away.
            _ = try await api.editRecord(layout: "Orders", recordId: 1, fieldData: ["Region_country::tags(2)": "lakes"],
                                         portalData: ["customer": [["recordId": "1", "Customer_region::codes(3)": "N9"]]])
            let again = try await api.getRecord(as: Order.self, layout: "Orders", recordId: 1).records.first
            #expect(again?.fieldData.tags == ["cold", "lakes"])
            #expect(again?.fieldData.codes == ["N1", "N2", "N9"])

            // A find on any repetition, three hops away.
            let found = try await api.find(layout: "Orders", request: FMFindRequest(queries: [FMQuery(["Region_country::tags": "lakes"])]))
            #expect(found.count == 2)
            // A script step sets a repetition three hops away and returns it.
            let script = try await api.runScript(layout: "Orders", script: "Retag", parameter: "misty")
            #expect(script == FMScriptResult(result: "misty/N7/p2", error: "0"))
            #expect(emulator.records(inTable: "Countries").first?["tags(2)"] as? String == "misty")
        }
    }

    @Test func leftSideRelationshipOptionsThroughTheClient() async throws {
        let emulator = try Emulator(schemaFile: Self.chainURL)
        try await Emulator.withRunning(emulator) { emulator in
            let url = try #require(emulator.baseURL)
            let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Chain", username: "admin", password: "admin"))
            let labels = { (set: FMFoundSet) -> [String] in
                (((set.records.first?["portalData"] as? [String: Any])?["orders"] as? [[String: Any]]) ?? []).compactMap { $0["Orders::label"] as? String }
            }
            #expect(labels(try await api.getRecord(layout: "Customers", recordId: 1)) == ["third", "first"])
            let add = try await api.editRecord(layout: "Customers", recordId: 1, fieldData: [:],
                                               portalData: ["orders": [["Orders::label": "zeroth"]]])
            #expect(add.newPortalRecordInfo.first?.tableName == "Orders")
            #expect(labels(try await api.getRecord(layout: "Customers", recordId: 1)) == ["zeroth", "third", "first"])
            do {
                _ = try await api.editRecord(layout: "Regions", recordId: 1, fieldData: [:], portalData: ["customers": [["Order_customer::id": "99"]]])
                Issue.record("a new row through a relationship without leftAllowCreation must fail")
            } catch let e as FMError {
                #expect(e.code == "101")
            }
            _ = try await api.deleteRecord(layout: "Customers", recordId: 1)
            #expect(emulator.records(inTable: "Orders").map { $0["label"] as? String } == ["second"])
        }
    }
}

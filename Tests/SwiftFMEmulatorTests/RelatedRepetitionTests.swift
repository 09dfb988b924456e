import Foundation
import Testing
@testable import SwiftFMEmulator

/// Repeating fields through relationships behave the same at any hop count: every repetition in
/// `fieldData` and in portal rows, finds on any repetition, and writes to a named repetition.
/// Tests/Fixtures/chain-schema.json: Orders → Order_customer (1 hop) → Customer_region (2 hops) → Region_country (3 hops).
let chainSchemaURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/chain-schema.json")

@Suite struct RelatedRepetitionTests {
    func harness(_ via: Via) throws -> Harness {
        let h = try Harness(emulator: Emulator(schemaFile: chainSchemaURL), db: "Chain", via: via)
        try h.login()
        return h
    }

    @Test(arguments: Via.allCases) func everyRepetitionAtEveryHopCount(via: Via) throws {
        let h = try harness(via)
        let record = try #require(h.send("GET", "\(h.base)/layouts/Orders/records/1", contentType: nil).data.first)
        let fd = record["fieldData"]
        #expect(fd?.objectPairs?.map(\.0) == ["id", "label", "Order_customer::phones", "Order_customer::phones(2)",
                                             "Customer_region::codes", "Customer_region::codes(2)", "Customer_region::codes(3)",
                                             "Region_country::tags", "Region_country::tags(2)"])
        #expect(fd?["Order_customer::phones(2)"]?.stringValue == "p2")
        #expect(fd?["Customer_region::codes(3)"]?.stringValue == "N3")
        #expect(fd?["Region_country::tags(2)"]?.stringValue == "fjords")

        // A portal one hop away showing fields one and two hops further.
        let customer = record["portalData"]?["customer"]?.arrayValue?.first
        #expect(customer?.objectPairs?.map(\.0) == ["recordId", "Order_customer::phones(1)", "Order_customer::phones(2)",
                                                    "Customer_region::codes(1)", "Customer_region::codes(2)", "Customer_region::codes(3)",
                                                    "Region_country::tags(1)", "Region_country::tags(2)", "modId"])
        #expect(customer?["Customer_region::codes(2)"]?.stringValue == "N2")
        #expect(customer?["Customer_region::codes(3)"]?.stringValue == "N3")
        #expect(customer?["Region_country::tags(2)"]?.stringValue == "fjords")
        // A portal two hops away, with a field one hop further; a portal three hops away.
        let region = record["portalData"]?["region"]?.arrayValue?.first
        #expect(region?.objectPairs?.map(\.0) == ["recordId", "Customer_region::codes(1)", "Customer_region::codes(2)",
                                                  "Customer_region::codes(3)", "Region_country::tags(1)", "Region_country::tags(2)", "modId"])
        #expect(region?["Customer_region::codes(3)"]?.stringValue == "N3")
        #expect(region?["Region_country::tags(2)"]?.stringValue == "fjords")
        let country = record["portalData"]?["country"]?.arrayValue?.first
        #expect(country?["Region_country::tags(1)"]?.stringValue == "cold")
        #expect(country?["Region_country::tags(2)"]?.stringValue == "fjords")

        // Layout metadata: one entry per field, with its repetition count, at every hop count.
        let meta = h.send("GET", "\(h.base)/layouts/Orders", contentType: nil).response
        let fields = meta["fieldMetaData"]?.arrayValue ?? []
        #expect(fields.first { $0["name"]?.stringValue == "Region_country::tags" }?["maxRepeat"] == .number(2))
        #expect(fields.first { $0["name"]?.stringValue == "Customer_region::codes" }?["maxRepeat"] == .number(3))
        let regionMeta = meta["portalMetaData"]?["region"]?.arrayValue ?? []
        #expect(regionMeta.first { $0["name"]?.stringValue == "Region_country::tags" }?["maxRepeat"] == .number(2))
    }

    @Test(arguments: Via.allCases) func findsOnAnyRepetitionAtAnyHopCount(via: Via) throws {
        let h = try harness(via)
        func find(_ query: String) -> [String] {
            let a = h.send("POST", "\(h.base)/layouts/Orders/_find", body: #"{"query":[\#(query)]}"#)
            return a.data.compactMap { $0["recordId"]?.stringValue }
        }
        // A query on a repeating field matches any of its repetitions, as in FileMaker's find mode (criteria
        // typed into any repetition search them all), one hop away or more.
        #expect(find(#"{"Order_customer::phones":"p2"}"#) == ["1", "3"])
        #expect(find(#"{"Customer_region::codes":"N3"}"#) == ["1", "3"])
        #expect(find(#"{"Customer_region::codes(3)":"N3"}"#) == ["1", "3"])
        #expect(find(#"{"Customer_region::codes(2)":"N3"}"#) == ["1", "3"])
        #expect(find(#"{"Customer_region::codes":"S1"}"#) == ["2"])
        #expect(find(#"{"Region_country::tags":"fjords"}"#) == ["1", "3"])
        #expect(find(#"{"Region_country::tags(2)":"fjords"}"#) == ["1", "3"])
        #expect(find(#"{"Region_country::tags":"warm"}"#) == ["2"])
    }

    @Test(arguments: Via.allCases) func writesNameTheRepetitionAtAnyHopCount(via: Via) throws {
        let h = try harness(via)
        // Layout fields two and three hops away, a named repetition each.
        let edit = h.send("PATCH", "\(h.base)/layouts/Orders/records/1",
                          body: #"{"fieldData":{"Customer_region::codes(3)":"N9","Region_country::tags(2)":"lakes"}}"#)
        #expect(edit.code == "0")
        #expect(h.emulator.records(inTable: "Regions").first?["codes(3)"] as? String == "N9")
        #expect(h.emulator.records(inTable: "Regions").first?["codes"] as? String == "N1")
        #expect(h.emulator.records(inTable: "Countries").first?["tags(2)"] as? String == "lakes")
        #expect(h.emulator.records(inTable: "Countries").first?["tags"] as? String == "cold")
        // Portal rows: a field one hop further from a portal one hop away, and from a portal two hops away.
        let portal = h.send("PATCH", "\(h.base)/layouts/Orders/records/1", body: #"""
        {"fieldData":{},"portalData":{"customer":[{"recordId":"1","Customer_region::codes(2)":"N8"}],
                                      "region":[{"recordId":"1","Region_country::tags(1)":"icy","Customer_region::codes(1)":"N0"}]}}
        """#)
        #expect(portal.code == "0")
        let north = h.emulator.records(inTable: "Regions").first
        #expect(north?["codes"] as? String == "N0")
        #expect(north?["codes(2)"] as? String == "N8")
        #expect(north?["codes(3)"] as? String == "N9")
        #expect(h.emulator.records(inTable: "Countries").first?["tags"] as? String == "icy")
        #expect(h.emulator.records(inTable: "Countries").first?["tags(2)"] as? String == "lakes")
        // The record read back shows what was written, every repetition.
        let fd = h.send("GET", "\(h.base)/layouts/Orders/records/1", contentType: nil).data.first?["fieldData"]
        #expect(fd?["Customer_region::codes"]?.stringValue == "N0")
        #expect(fd?["Customer_region::codes(2)"]?.stringValue == "N8")
        #expect(fd?["Region_country::tags(2)"]?.stringValue == "lakes")
        // A repetition past the field's count is 111; repetition 0 is 102 — at any hop count, nothing written.
        #expect(h.send("PATCH", "\(h.base)/layouts/Orders/records/1", body: #"{"fieldData":{"Region_country::tags(3)":"x"}}"#).code == "111")
        #expect(h.send("PATCH", "\(h.base)/layouts/Orders/records/1", body: #"{"fieldData":{"Customer_region::codes(0)":"x"}}"#).code == "102")
        #expect(h.send("PATCH", "\(h.base)/layouts/Orders/records/1", body: #"""
        {"fieldData":{},"portalData":{"customer":[{"recordId":"1","Region_country::tags(3)":"x"}]}}
        """#).code == "111")
        #expect(h.emulator.records(inTable: "Countries").first?["tags"] as? String == "icy")
    }

    @Test(arguments: Via.allCases) func portalRowsWriteRepetitionsAsTheyReadThem(via: Via) throws {
        // A portal row reads `TO::field(1)`, `TO::field(2)`: the same keys write, in a new row and in an edited one.
        let h = try leagueHarness(via: via)
        let add = h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"""
        {"fieldData":{},"portalData":{"roster":[{"Players::name":"Eve","Players::nicknames(1)":"E1","Players::nicknames(3)":"E3"},
                                               {"recordId":"2","Players::nicknames(1)":"A1","Players::nicknames(2)":"A2"}]}}
        """#)
        #expect(add.code == "0")
        let players = h.emulator.records(inTable: "Players")
        #expect(players.last?["nicknames"] as? String == "E1")
        #expect(players.last?["nicknames(3)"] as? String == "E3")
        #expect(players[1]["nicknames"] as? String == "A1")
        #expect(players[1]["nicknames(2)"] as? String == "A2")
        let roster = h.send("GET", "\(h.base)/layouts/Teams/records/1", contentType: nil).data.first?["portalData"]?["roster"]
        let eve = roster?.arrayValue?.first { $0["Players::name"]?.stringValue == "Eve" }
        #expect(eve?["Players::nicknames(1)"]?.stringValue == "E1")
        #expect(eve?["Players::nicknames(3)"]?.stringValue == "E3")
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"""
        {"fieldData":{},"portalData":{"roster":[{"recordId":"2","Players::nicknames(4)":"x"}]}}
        """#).code == "111")
    }

    @Test(arguments: Via.allCases) func scriptStepsReadAndWriteRepetitionsAtAnyHopCount(via: Via) throws {
        let h = try harness(via)
        let find = h.send("GET", "\(h.base)/layouts/Orders/script/Find%20Fjords", contentType: nil)
        #expect(find.response["scriptResult"]?.stringValue == "2 first")
        let retag = h.send("GET", "\(h.base)/layouts/Orders/script/Retag?script.param=misty", contentType: nil)
        #expect(retag.response["scriptResult"]?.stringValue == "misty/N7/p2")
        #expect(retag.response["scriptError"]?.stringValue == "0")
        #expect(h.emulator.records(inTable: "Countries").first?["tags(2)"] as? String == "misty")
        #expect(h.emulator.records(inTable: "Countries").first?["tags"] as? String == "cold")
        #expect(h.emulator.records(inTable: "Regions").first?["codes(3)"] as? String == "N7")
    }
}

/// The left side's relationship options (walking a relationship right → left): `leftSort`, `leftAllowCreation`
/// and `leftCascadeDelete` (Tests/Fixtures/chain-schema.json: a Customers layout on `Order_customer` with an
/// `orders` portal back to `Orders`).
@Suite struct LeftSideRelationshipTests {
    @Test(arguments: Via.allCases) func leftSortCreationAndCascade(via: Via) throws {
        let h = try Harness(emulator: Emulator(schemaFile: chainSchemaURL), db: "Chain", via: via)
        try h.login()
        let read = h.send("GET", "\(h.base)/layouts/Customers/records/1", contentType: nil)
        // A layout on an occurrence: dataInfo names the occurrence, not the base table.
        #expect(read.response["dataInfo"]?["table"]?.stringValue == "Order_customer")
        let customer = try #require(read.data.first)
        #expect(customer["fieldData"]?["Customer_region::codes(3)"]?.stringValue == "N3")
        // leftSort: label descending (creation order would be first, third).
        #expect(names(customer["portalData"]?["orders"], "Orders::label") == ["third", "first"])
        #expect(customer["portalDataInfo"]?.arrayValue?.first?["table"]?.stringValue == "Orders")
        // leftAllowCreation: a new portal row creates an order whose match field comes from the customer.
        let add = h.send("PATCH", "\(h.base)/layouts/Customers/records/1",
                         body: #"{"fieldData":{},"portalData":{"orders":[{"Orders::label":"zeroth"}]}}"#)
        #expect(add.code == "0")
        #expect(add.response["newPortalRecordInfo"]?.arrayValue?.first?["tableName"]?.stringValue == "Orders")
        #expect(h.emulator.records(inTable: "Orders").last?["customer_id"] as? Int == 10)
        let again = h.send("GET", "\(h.base)/layouts/Customers/records/1", contentType: nil).data.first
        #expect(names(again?["portalData"]?["orders"], "Orders::label") == ["zeroth", "third", "first"])
        // Without leftAllowCreation (Order_customer → Customer_region walked backwards) a new row is 101.
        let refused = h.send("PATCH", "\(h.base)/layouts/Regions/records/1",
                             body: #"{"fieldData":{},"portalData":{"customers":[{"Order_customer::id":"99"}]}}"#)
        #expect(refused.code == "101")
        #expect(h.emulator.recordCount(inTable: "Customers") == 2)
        // leftCascadeDelete: deleting a customer deletes its orders (and nothing on the other relationships).
        #expect(h.send("DELETE", "\(h.base)/layouts/Customers/records/1", contentType: nil).code == "0")
        #expect(h.emulator.records(inTable: "Orders").map { $0["label"] as? String } == ["second"])
        #expect(h.emulator.recordCount(inTable: "Regions") == 2)
        // Deleting an order does not delete its customer (no cascade on that side).
        #expect(h.send("DELETE", "\(h.base)/layouts/Orders/records/2", contentType: nil).code == "0")
        #expect(h.emulator.recordCount(inTable: "Customers") == 1)
    }
}

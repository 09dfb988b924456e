import Foundation
import Testing
@testable import SwiftFMEmulator

/// A sort key that repeats an earlier one on the same field cannot change the order, and each key costs a value
/// per record and a step of every comparison: repeats are dropped. Before, a 400 KB `_find` sorting 2,000
/// records by one field 20,000 times took 53 s and 4.7 GB (40 million values decorated); 4 MB of such a body
/// would have asked for 47 GB.
@Suite struct SortKeyBoundTests {
    @Test func repeatedDataAPISortKeysAreDropped() throws {
        let emulator = Emulator()
        let s = emulator.core.state.withLock { $0 }
        let layout = try #require(s.layout("Artists"))
        let table = try #require(s.table("Artists"))
        var spec: [JSON] = []
        for index in 0..<20_000 {
            spec.append(.object([("fieldName", .string(index % 2 == 0 ? "name" : "Artists::name")),
                                 ("sortOrder", .string(index % 3 == 0 ? "descend" : "ascend"))]))
        }
        spec.append(.object([("fieldName", .string("city")), ("sortOrder", .string("Cities"))]))
        spec.append(.object([("fieldName", .string("city")), ("sortOrder", .string("cities"))]))
        spec.append(.object([("fieldName", .string("city"))]))
        let keys = try s.sortKeys(layout, spec, table: table)
        // name descending (the first), city by the value list, city plainly.
        try #require(keys.count == 3)
        #expect(keys.map(\.0.name) == ["name", "city", "city"])
        #expect(keys.map(\.1) == [false, true, true])
        #expect(keys.map { $0.2 != nil } == [false, true, false])
        // Each entry is still checked: a bad one after thousands of repeats is still refused.
        #expect(throws: (any Error).self) { try s.sortKeys(layout, spec + [.object([("fieldName", .string("nope"))])], table: table) }
    }

    @Test func repeatedSortKeysDoNotChangeTheOrder() throws {
        let h = try Harness(emulator: Emulator(), db: "Music")
        try h.login()
        func names(_ sort: String) -> [String] {
            let a = h.send("GET", "\(h.base)/layouts/Artists/records?_sort=\(percentEncoded(sort))", contentType: nil)
            #expect(a.status == 200)
            return a.data.compactMap { $0["fieldData"]?["name"]?.stringValue }
        }
        let once = names(#"[{"fieldName":"city","sortOrder":"descend"},{"fieldName":"name"}]"#)
        let repeats = Array(repeating: #"{"fieldName":"city","sortOrder":"descend"},{"fieldName":"city"}"#, count: 500).joined(separator: ",")
        #expect(once.count == 5)
        #expect(names("[\(repeats),{\"fieldName\":\"name\"},{\"fieldName\":\"name\",\"sortOrder\":\"descend\"}]") == once)
    }

    @Test func repeatedODataOrderByKeysAreDropped() throws {
        let c = try ODataClient()
        let s = c.emulator.core.state.withLock { $0 }
        let set = try #require(s.odataSet("Customers"))
        let orderby = Array(repeating: "city desc,city,ROWID,rowid desc", count: 5_000).joined(separator: ",") + ",name"
        let keys = try s.odataSortKeys(set, orderby: orderby)
        // On main: 20,001 keys.
        try #require(keys.count == 3)
        #expect(keys.map { $0.field?.name } == ["city", nil, "name"])
        #expect(keys.map(\.ascending) == [false, true, true])
        // The order is the one the first keys give.
        let once = c.send("GET", "/Shop/Customers?$orderby=city%20desc,name&$select=code").rows.compactMap { $0["code"]?.stringValue }
        let many = c.send("GET", "/Shop/Customers?$orderby=" + percentEncoded(Array(repeating: "city desc,city", count: 200).joined(separator: ",") + ",name")
                          + "&$select=code").rows.compactMap { $0["code"]?.stringValue }
        #expect(once.count == 4)
        #expect(many == once)
    }
}

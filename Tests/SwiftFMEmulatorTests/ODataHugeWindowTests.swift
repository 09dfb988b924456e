import Foundation
import Testing
@testable import SwiftFMEmulator

/// `$skip` plus `$top` past `Int.max` is a window to the end, not a trap. Before, the emulator added them
/// (`skip + top`) and a read with `$skip=1&$top=9223372036854775807` stopped the process: in a collection, in an
/// `$expand` and after an aggregating `$apply`.
@Suite struct ODataHugeWindowTests {
    static let most = String(Int.max)

    @Test func aCollectionWindowPastIntMaxReadsToTheEnd() throws {
        let c = try ODataClient()
        let all = c.send("GET", "/Shop/Customers?$skip=1")
        #expect(all.status == 200)
        #expect(all.rows.count > 1)
        let huge = c.send("GET", "/Shop/Customers?$skip=1&$top=" + Self.most)
        #expect(huge.status == 200, "\(huge.text)")
        #expect(huge.rows == all.rows)
        let far = c.send("GET", "/Shop/Customers?$skip=" + Self.most + "&$top=" + Self.most)
        #expect(far.status == 200 && far.rows.isEmpty, "\(far.text)")
    }

    @Test func anExpansionWindowPastIntMaxReadsToTheEnd() throws {
        let c = try ODataClient()
        let plain = c.send("GET", "/Shop/Customers?$expand=Orders($skip=1)")
        let huge = c.send("GET", "/Shop/Customers?$expand=Orders($skip=1;$top=" + Self.most + ")")
        #expect(plain.status == 200 && huge.status == 200, "\(huge.text)")
        #expect(huge.rows == plain.rows)
        #expect(huge.rows.contains { ($0["Orders"]?.arrayValue?.count ?? 0) > 0 })
    }

    @Test func anAggregateWindowPastIntMaxReadsToTheEnd() throws {
        let c = try ODataClient()
        let apply = "$apply=groupby((city),aggregate(score%20with%20sum%20as%20total))"
        let plain = c.send("GET", "/Shop/Customers?" + apply + "&$skip=1")
        let huge = c.send("GET", "/Shop/Customers?" + apply + "&$skip=1&$top=" + Self.most)
        #expect(plain.status == 200 && huge.status == 200, "\(huge.text)")
        #expect(!plain.rows.isEmpty)
        #expect(huge.rows == plain.rows)
    }
}

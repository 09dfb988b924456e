// Contract: `$select` may name a field of an expanded navigation property as `Nav/field`
// (Claris, CG:query-option-select: `$expand=Products&$select=Name,Products/Name`; ODATA.md §3.4): the
// field is selected in the expansion's rows, the other names in the parent's. Without that expansion,
// `Nav/field` is not a field of the set (8309).
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataSelectNavigationPathRuleTests {
    func keys(_ row: JSON?) -> [String] {
        (row?.objectPairs ?? []).map(\.0).filter { !$0.hasPrefix("@") }
    }

    @Test func onACollection() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers?$expand=Orders&$select=code,Orders/total&$filter=" + percentEncoded("code eq 'ALFKI'"))
        #expect(a.status == 200, "\(a.text)")
        let row = a.rows.first
        #expect(keys(row) == ["code", "Orders"])
        let orders = row?["Orders"]?.arrayValue ?? []
        #expect(orders.count == 2)
        #expect(orders.map { keys($0) } == [["total"], ["total"]])
        #expect(orders.compactMap { $0["total"]?.numberText } == ["10", "25.5"])
    }

    @Test func onOneRecord() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers('OBR')?$expand=Orders&$select=name,Orders/total")
        #expect(a.status == 200, "\(a.text)")
        #expect(keys(a.json) == ["name", "Orders"])
        #expect(a.json?["Orders"]?.arrayValue?.map { keys($0) } == [["total"]])
    }

    @Test func withoutTheExpansionItIsNoField() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers?$select=code,Orders/total")
        #expect(a.status == 400)
        #expect(a.odataCode == "8309")
    }
}

// Contract: in `$filter`, a field name may be disambiguated by prepending the name of the table the URL
// ends with (Claris, CG:navigate-related-tables: "`$filter=Purchase/ID eq 7`"; ODATA.md §3.1
// "Navigation"): `Orders/total` on `…/Customers('ALFKI')/Orders` is the field `total`; another table's
// name in front of a field is not a field of the set (8309). A malformed qualification (nothing after the slash,
// nothing before it, the table twice) is refused (400), never read as the bare field.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataFilterTableQualifiedNameRuleTests {
    func totals(_ a: Answer) -> [String] { a.rows.compactMap { $0["total"]?.numberText } }

    @Test func onANavigation() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers('ALFKI')/Orders?$filter=" + percentEncoded("Orders/total gt 20"))
        #expect(a.status == 200, "\(a.text)")
        #expect(totals(a) == ["25.5"])
    }

    @Test func onACollection() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded("Orders/customer_code eq 'OBR'"))
        #expect(a.status == 200, "\(a.text)")
        #expect(totals(a) == ["7"])
    }

    @Test func anotherTablesNameIsNotAFieldOfTheSet() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded("Customers/city eq 'Berlin'"))
        #expect(a.status == 400)
        #expect(a.odataCode == "8309")
    }

    @Test func aMalformedQualificationIsRefused() throws {
        let c = try ODataClient()
        for filter in ["Orders/ eq 'OBR'", "/customer_code eq 'OBR'", "Orders/Orders/customer_code eq 'OBR'", "Orders//customer_code eq 'OBR'"] {
            let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded(filter))
            #expect(a.status == 400, "\(filter): \(a.text)")
            #expect(a.rows.isEmpty, "\(filter): \(a.text)")
        }
    }
}

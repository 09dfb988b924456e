// Contract: in `$filter` a field named `id` must be written in double quotes (`"id" eq 942`); unquoted it
// fails as FileMaker Server fails it, `400 -1002 Error: syntax error in URL at: 'id'` (ODATA.md §3.3,
// hooks:DISCOVERINGS.md). Other names, `ID`/`Id` (hooks: only the lower-case name fails) and `id` inside a
// longer name are unaffected.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataFilterReservedIdNameRuleTests {
    @Test func bareIdIsASyntaxError() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded("id eq 1"))
        #expect(a.status == 400, "\(a.text)")
        #expect(a.odataCode == "-1002")
        #expect(a.odataMessage == "Error: syntax error in URL at: 'id'")
        let later = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded("total gt 1 and id eq 1"))
        #expect(later.status == 400, "\(later.text)")
        #expect(later.odataCode == "-1002")
    }

    @Test func quotedIdIsTheField() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded(#""id" eq 1"#))
        #expect(a.status == 200, "\(a.text)")
        #expect(a.rows.compactMap { $0["total"]?.numberText } == ["10"])
    }

    @Test func otherNamesAreUnaffected() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded("customer_code eq 'OBR'"))
        #expect(a.status == 200, "\(a.text)")
        for filter in ["ID eq 1", "Id eq 1"] {
            let upper = c.send("GET", "/Shop/Orders?$filter=" + percentEncoded(filter))
            #expect(upper.status == 200, "\(filter): \(upper.text)")
            #expect(upper.rows.count == 1, "\(filter)")
        }
    }
}

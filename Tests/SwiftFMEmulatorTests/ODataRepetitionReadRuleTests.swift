// Contract: one repetition of a repeating field is read as `…/{set}({key})/{field}[n]` or `…/{field}/n`
// (Claris, CG:request-field-value; ODATA.md §3.1 "One repetition"), also with `/$value` after it
// (CG:request-field-value-binary). (Without an index Claris says every repetition of a non-container
// field is returned, in a shape it does not document: not asserted here.) A hostile index (past Int.max, negative,
// digits of another script, two indexes) is refused with 400, never read as another repetition nor trapped on.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataRepetitionReadRuleTests {
    /// ALFKI with `phones` = ["111", "222"].
    func client() throws -> ODataClient {
        let c = try ODataClient()
        let w = c.send("PATCH", "/Shop/Customers('ALFKI')", body: #"{"phones":"111","phones[2]":"222"}"#)
        #expect(w.status == 204, "\(w.text)")
        return c
    }

    @Test func bracketIndexReadsThatRepetition() throws {
        let c = try client()
        let a = c.send("GET", "/Shop/Customers('ALFKI')/phones%5B2%5D")
        #expect(a.status == 200, "\(a.text)")
        #expect(a.json?["value"]?.stringValue == "222")
        let literal = c.send("GET", "/Shop/Customers('ALFKI')/phones[2]")
        #expect(literal.status == 200, "\(literal.text)")
        #expect(literal.json?["value"]?.stringValue == "222")
    }

    @Test func pathIndexReadsThatRepetition() throws {
        let c = try client()
        let a = c.send("GET", "/Shop/Customers('ALFKI')/phones/2")
        #expect(a.status == 200, "\(a.text)")
        #expect(a.json?["value"]?.stringValue == "222")
        let first = c.send("GET", "/Shop/Customers('ALFKI')/phones/1")
        #expect(first.json?["value"]?.stringValue == "111")
    }

    @Test func rawValueOfOneRepetition() throws {
        let c = try client()
        let a = c.send("GET", "/Shop/Customers('ALFKI')/phones[2]/$value")
        #expect(a.status == 200, "\(a.text)")
        #expect(a.text == "222")
        let b = c.send("GET", "/Shop/Customers('ALFKI')/phones/2/$value")
        #expect(b.status == 200, "\(b.text)")
        #expect(b.text == "222")
    }

    @Test func anIndexPastTheRepetitionsIsRefused() throws {
        let c = try client()
        for path in ["/Shop/Customers('ALFKI')/phones[3]", "/Shop/Customers('ALFKI')/phones/0", "/Shop/Customers('ALFKI')/name[2]"] {
            let a = c.send("GET", path)
            #expect(a.status == 400, "\(path): \(a.text)")
        }
    }

    @Test func aHostileIndexIsRefused() throws {
        let c = try client()
        let huge = "99999999999999999999999999"
        for index in ["[\(huge)]", "/\(huge)", "[-1]", "/-1", "[%D9%A2]", "/%D9%A2", "[%EF%BC%92]", "/%EF%BC%92", "[2]/2", "[2][1]", "[]", "[+2]", "/+2"] {
            let path = "/Shop/Customers('ALFKI')/phones" + index
            let a = c.send("GET", path)
            #expect(a.status == 400, "\(path): \(a.status) \(a.text)")
            #expect(a.json?["value"]?.stringValue == nil, "\(path): \(a.text)")
        }
    }
}

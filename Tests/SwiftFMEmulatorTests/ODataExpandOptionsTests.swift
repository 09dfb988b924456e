import Foundation
import Testing
@testable import SwiftFMEmulator

/// The options inside `$expand=Nav(…)`, at any depth, are checked as the same options of a read are: a malformed one
/// (`$filter` that does not parse, `$top=-1`, an unknown or repeated option, unbalanced parentheses) or an unknown
/// navigation property is refused, 400 with the code (and message) the same mistake at the top level gets. Before,
/// an expansion's options were read only while its rows were written, and such a request answered 200 with an
/// `error` in every row. An unknown *field* inside an expansion still answers 200 with the error in the row, as
/// FileMaker does (ODATA.md §3.5; `ODataReadTests.navigationAndExpand`).
@Suite struct ODataExpandOptionsTests {
    /// `(status, code, message)` of an answer.
    func refusal(_ a: Answer) -> (Int, String?, String?) { (a.status, a.odataCode, a.odataMessage) }

    @Test func aMalformedNestedOptionIsRefusedAsAtTheTopLevel() throws {
        let c = try ODataClient()
        // (option text inside `Orders(…)`, the same option on a read of Orders)
        let cases: [(nested: String, top: String)] = [
            ("$filter=total%20gt", "$filter=total%20gt"),
            ("$filter=total%20eq%20'", "$filter=total%20eq%20'"),
            ("$top=-1", "$top=-1"),
            ("$top=x", "$top=x"),
            ("$skip=-2", "$skip=-2"),
            ("$count=maybe", "$count=maybe"),
            ("$expand=Nope", "$expand=Nope"),
            ("$select=total;$top=-1", "$select=total&$top=-1"),
        ]
        for (nested, top) in cases {
            let expected = refusal(c.send("GET", "/Shop/Orders?\(top)"))
            #expect(expected.0 == 400, "top level \(top)")
            for path in ["/Shop/Customers?$expand=Orders(\(nested))",
                         "/Shop/Customers('ALFKI')?$expand=Orders(\(nested))",
                         "/Shop/Orders(1)/Customers?$expand=Orders(\(nested))",
                         // Nested deeper: Customers → Orders → Customers → Orders.
                         "/Shop/Customers?$expand=Orders($expand=Customers($expand=Orders(\(nested))))",
                         "/Shop/Orders?$select=total&$expand=Customers($select=code;$expand=Orders(\(nested)))"] {
                let a = c.send("GET", path)
                #expect(refusal(a) == expected, "\(path): \(a.text)")
            }
        }
    }

    @Test func anUnknownNestedNavigationIsRefusedAsAtTheTopLevel() throws {
        let c = try ODataClient()
        let top = refusal(c.send("GET", "/Shop/Customers?$expand=Nope"))
        #expect(top.0 == 400)
        #expect(top.1 == "8309")
        for path in ["/Shop/Orders?$expand=Customers($expand=Nope)",
                     "/Shop/Customers?$expand=Orders($expand=Customers($expand=Nope))",
                     "/Shop/Orders(1)?$expand=Customers($select=code;$expand=Orders,Nope)"] {
            #expect(refusal(c.send("GET", path)) == top, "\(path)")
        }
    }

    @Test func unknownRepeatedAndUnbalancedNestedOptionsAreSyntaxErrors() throws {
        let c = try ODataClient()
        // At the top level an unknown `$` option and a repeated one are syntax errors (-1002).
        #expect(refusal(c.send("GET", "/Shop/Customers?$bogus=1")).1 == "-1002")
        #expect(refusal(c.send("GET", "/Shop/Customers?$top=1&$top=2")).1 == "-1002")
        for expand in ["Orders($bogus=1)", "Orders($expand=Customers($bogus=1))", "Orders($top=1;$top=2)",
                       "Orders($expand=Customers($skip=1;skip=2))",
                       "Orders($top=1))", "Orders(($top=1)", "Orders($top=1", "Orders)", "Orders($expand=Customers($top=1)))",
                       "Orders($expand=Customers(($top=1))", "Orders($select=total)($top=1)"] {
            let a = c.send("GET", "/Shop/Customers?$expand=\(expand)")
            #expect(a.status == 400, "\(expand): \(a.text)")
            #expect(a.odataCode == "-1002", "\(expand): \(a.text)")
        }
    }

    @Test func aBatchPartWithAMalformedExpansionIsRefused() throws {
        let c = try ODataClient()
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$expand=Orders($top=-1) HTTP/1.1\r\n\r\n"
            + "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$select=code&$expand=Orders($select=total) HTTP/1.1\r\n\r\n--b1--\r\n"
        let batch = c.send("POST", "/Shop/$batch", body: body, headers: [("Prefer", "odata.continue-on-error")],
                           contentType: "multipart/mixed; boundary=b1")
        #expect(batch.status == 200)
        #expect(batch.text.contains("HTTP/1.1 400 Bad Request"), "\(batch.text)")
        #expect(batch.text.contains("syntax error in URL at: '$top'"))
        #expect(batch.text.contains("HTTP/1.1 200 OK"))
        #expect(batch.text.contains(#""total":25.5"#))
    }

    /// Well-formed nested options still read, at every depth, and an unknown field inside an expansion is still written
    /// in the row (FileMaker's answer).
    @Test func wellFormedNestedOptionsStillRead() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers?$select=code&$filter=code%20eq%20'ALFKI'&$expand="
                       + "Orders($filter=total%20gt%205;$orderby=total%20desc;$top=1;$skip=0;$count=true;$select=total;"
                       + "$expand=Customers($select=code;$expand=Orders($select=id;$orderby=id)))")
        #expect(a.status == 200, "\(a.text)")
        let orders = try #require(a.rows.first?["Orders"]?.arrayValue)
        #expect(orders.compactMap { $0["total"]?.numberText } == ["25.5"])
        let back = try #require(orders.first?["Customers"]?.arrayValue?.first)
        #expect(back["code"]?.stringValue == "ALFKI")
        #expect(back["Orders"]?.arrayValue?.compactMap { $0["id"]?.numberText } == ["1", "2"])
        let deepField = c.send("GET", "/Shop/Customers('OBR')?$expand=Orders($expand=Customers($select=not_real))")
        #expect(deepField.status == 200, "\(deepField.text)")
        let inner = deepField.json?["Orders"]?.arrayValue?.first?["error"]?.arrayValue?.first?["error"]?["code"]?.stringValue
        #expect(inner == "8309", "\(deepField.text)")
    }
}

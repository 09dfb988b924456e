import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData reads: `$filter`, `$select`, `$orderby`, `$top`, `$skip`, `$count`, paging, keys, `$count`,
/// navigation and `$expand`, and FileMaker's error shapes.
@Suite struct ODataReadTests {
    func codes(_ a: Answer) -> [String] { a.rows.compactMap { $0["code"]?.stringValue } }

    @Test(arguments: Via.allCases) func collectionShape(via: Via) throws {
        let c = try ODataClient(via: via)
        let a = c.send("GET", "/Shop/Customers")
        #expect(a.status == 200)
        #expect(a.header("Content-Type") == "application/json;charset=utf-8")
        #expect(a.json?["@context"]?.stringValue == c.harness.origin + "/fmi/odata/v4/Shop/$metadata#Customers")
        #expect(codes(a) == ["ALFKI", "OBR", "ZOE", "NUL"])
        let first = try #require(a.rows.first)
        #expect(first["@id"]?.stringValue == c.harness.origin + "/fmi/odata/v4/Shop/Customers('ALFKI')")
        #expect(first["@editLink"] == first["@id"])
        #expect(first["joined"]?.stringValue == "2020-01-15")
        #expect(first["score"]?.numberText == "5")
        #expect(first["alarm"]?.stringValue == "07:30:00")
        #expect(first["seen"]?.stringValue == "2024-11-02T20:15:00Z")
        #expect(first["phones"] == .null)
        // Containers are left out of record reads; globals read as null (no session).
        #expect(first["photo"] == nil)
        #expect(first["g_note"] == .null)
        #expect(a.rows[3]["name"] == .null)
        // Without a key: the ROWID.
        let orders = c.send("GET", "/Shop/Orders", headers: [("OData-Version", "4.0")])
        #expect(orders.rows.first?["@odata.id"]?.stringValue == c.harness.origin + "/fmi/odata/v4/Shop/Orders(1)")
        #expect(orders.rows.first?["total"]?.numberText == "10")
    }

    @Test func filters() throws {
        let c = try ODataClient()
        func match(_ filter: String) -> [String] {
            let a = c.send("GET", "/Shop/Customers?$filter=" + percentEncoded(filter))
            #expect(a.status == 200, "\(filter): \(a.text)")
            return codes(a)
        }
        #expect(match("city eq 'Berlin'") == ["ALFKI", "NUL"])
        #expect(match("city eq 'berlin'") == [])
        #expect(match("tolower(city) eq 'berlin'") == ["ALFKI", "NUL"])
        #expect(match("name eq 'O''Brien & Sons'") == ["OBR"])
        #expect(match("name eq 'O''Brien' or name eq 'x'") == [])
        #expect(match("contains(name,'Caf')") == ["ZOE"])
        #expect(match("startswith(name,'Zoë')") == ["ZOE"])
        #expect(match("endswith(name,'Sons')") == ["OBR"])
        #expect(match("score gt 3.5") == ["ALFKI", "ZOE"])
        #expect(match("score ge 3.5 and not (city eq 'Paris')") == ["ALFKI", "OBR"])
        #expect(match("name eq null") == ["NUL"])
        #expect(match("name ne null") == ["ALFKI", "OBR", "ZOE"])
        #expect(match("joined lt 2020-01-01") == ["ZOE"])
        #expect(match("year(joined) eq 2021") == ["OBR"])
        #expect(match("alarm eq 07:30:00") == ["ALFKI"])
        #expect(match("seen gt 2024-11-02T20:00:00Z") == ["ALFKI"])
        #expect(match("seen gt 2024-11-02T21:00:00+02:00") == ["ALFKI"])
        #expect(match("code in ('ZOE','OBR')") == ["OBR", "ZOE"])
        #expect(match(#""city" eq 'Dublin'"#) == ["OBR"])
        #expect(match("FMFID:4296032386 eq 'ZOE'") == ["ZOE"])
        #expect(match("length(code) eq 5") == ["ALFKI"])

        let unknown = c.send("GET", "/Shop/Customers?$filter=" + percentEncoded("nope eq 1"))
        #expect(unknown.status == 400 && unknown.odataCode == "8309")
        let bad = c.send("GET", "/Shop/Customers?$filter=" + percentEncoded("name eq 'open"))
        #expect(bad.status == 400 && bad.odataCode == "-1002")
        let deep = c.send("GET", "/Shop/Customers?$filter=" + String(repeating: "(", count: 5000) + "a")
        #expect(deep.status == 400 && deep.odataCode == "-1002")
    }

    @Test func optionsAndRefusals() throws {
        let c = try ODataClient()
        let page = c.send("GET", "/Shop/Customers?$select=code,name&$orderby=name%20desc&$top=2&$skip=1&$count=true")
        #expect(page.status == 200)
        #expect(page.json?["@odata.count"]?.numberText == "4")
        #expect(codes(page) == ["OBR", "ALFKI"])
        #expect(page.rows.first.flatMap { $0.objectPairs?.map(\.0) } == ["@id", "@editLink", "code", "name"])
        #expect(page.json?["@context"]?.stringValue?.hasSuffix(#"$metadata#Customers("code","name")"#) == true)
        // 4.01: options without `$`, any case.
        #expect(codes(c.send("GET", "/Shop/Customers?top=1&ORDERBY=code%20desc")) == ["ZOE"])
        // Special columns, metadata=none.
        let special = c.send("GET", "/Shop/Orders?$select=ROWID,ROWMODID,total", headers: [("Accept", "application/json;odata.metadata=none")])
        #expect(special.rows.first.flatMap { $0.objectPairs?.map(\.0) } == ["ROWID", "ROWMODID", "total"])
        #expect(special.rows.first?["ROWID"]?.numberText == "1" && special.rows.first?["ROWMODID"]?.numberText == "0")
        let ieee = c.send("GET", "/Shop/Orders?$top=1", headers: [("Accept", "application/json;IEEE754Compatible=true")])
        #expect(ieee.rows.first?["total"]?.stringValue == "10")

        for (query, code) in [("$search=abc", "-1003"), ("$compute=total%20mul%202%20as%20t", "-1003"), ("$top=-1", "-1002"),
                              ("$skip=x", "-1002"), ("$count=maybe", "-1002"), ("$bogus=1", "-1002"), ("$select=nope", "8309"),
                              ("$orderby=nope", "8309"), ("$top=1&$top=2", "-1002")] {
            let a = c.send("GET", "/Shop/Customers?" + query)
            #expect(a.status == 400, "\(query)")
            #expect(a.odataCode == code, "\(query): \(a.text)")
        }
        #expect(c.send("GET", "/Shop/Customers?$top=1").json?["error"] == nil)
        #expect(c.send("GET", "/Shop/Customers?$top=1&custom=1").status == 200)
    }

    @Test func pagingFollowsNextLinksToTheEnd() throws {
        let c = try ODataClient()
        for i in 0..<23 { _ = try c.emulator.addRecord(toTable: "Orders", ["customer_code": "ZOE", "total": String(i)]) }
        c.emulator.odataPageSize = 10
        var path: String? = "/Shop/Orders?$filter=customer_code%20eq%20'ZOE'&$count=true"
        var seen: [String] = []
        var pages = 0
        while let p = path, pages < 10 {
            let a = c.send("GET", p)
            #expect(a.status == 200)
            #expect(a.json?["@odata.count"]?.numberText == "23")
            seen += a.rows.compactMap { $0["total"]?.numberText }
            pages += 1
            path = a.json?["@odata.nextLink"]?.stringValue.map { String($0.dropFirst((c.harness.origin + "/fmi/odata/v4").count)) }
        }
        #expect(pages == 3)
        #expect(seen == (0..<23).map(String.init))
        // The client's Prefer lowers the page; $top bounds the whole read.
        let small = c.send("GET", "/Shop/Orders?$top=5", headers: [("Prefer", "odata.maxpagesize=2")])
        #expect(small.rows.count == 2)
        let next = try #require(small.json?["@odata.nextLink"]?.stringValue)
        #expect(next.contains("$skiptoken=2"))
        var tail = c.send("GET", String(next.dropFirst((c.harness.origin + "/fmi/odata/v4").count)), headers: [("Prefer", "odata.maxpagesize=2")])
        tail = c.send("GET", String((tail.json?["@odata.nextLink"]?.stringValue ?? "").dropFirst((c.harness.origin + "/fmi/odata/v4").count)),
                      headers: [("Prefer", "odata.maxpagesize=2")])
        #expect(tail.rows.count == 1)
        #expect(tail.json?["@odata.nextLink"] == nil)
    }

    @Test func keysCountsAndFields() throws {
        let c = try ODataClient()
        let one = c.send("GET", "/Shop/Customers('OBR')")
        #expect(one.status == 200)
        #expect(one.json?["@context"]?.stringValue?.hasSuffix("$metadata#Customers/$entity") == true)
        #expect(one.json?["name"]?.stringValue == "O'Brien & Sons")
        #expect(c.send("GET", "/Shop/Customers(code='ZOE')").json?["city"]?.stringValue == "Paris")
        let missing = c.send("GET", "/Shop/Customers('NOPE')")
        #expect(missing.status == 404 && missing.odataCode == "-1023")
        #expect(c.send("GET", "/Shop/Orders(3)").json?["customer_code"]?.stringValue == "OBR")
        #expect(c.send("GET", "/Shop/Orders(ROWID=2)").json?["total"]?.numberText == "25.5")
        #expect(c.send("GET", "/Shop/Orders(99)").status == 404)
        #expect(c.send("GET", "/Shop/Customers(1,2)").status == 400)

        let count = c.send("GET", "/Shop/Customers/$count?$filter=city%20eq%20'Berlin'")
        #expect(count.status == 200 && count.text == "2" && count.header("Content-Type")?.hasPrefix("text/plain") == true)

        let field = c.send("GET", "/Shop/Customers('ALFKI')/city")
        #expect(field.json?["value"]?.stringValue == "Berlin")
        #expect(field.json?["@context"]?.stringValue?.hasSuffix("$metadata#Customers('ALFKI')/city") == true)
        let raw = c.send("GET", "/Shop/Customers('ALFKI')/score/$value")
        #expect(raw.text == "5" && raw.header("Content-Type")?.hasPrefix("text/plain") == true)
        #expect(c.send("GET", "/Shop/Customers('ALFKI')/nope").odataCode == "8309")
    }

    @Test func navigationAndExpand() throws {
        let c = try ODataClient()
        let nav = c.send("GET", "/Shop/Customers('ALFKI')/Orders?$orderby=total%20desc")
        #expect(nav.status == 200)
        #expect(nav.rows.compactMap { $0["total"]?.numberText } == ["25.5", "10"])

        let expanded = c.send("GET", "/Shop/Customers?$select=code&$expand=Orders($select=total;$orderby=total%20desc;$top=1)&$top=3")
        #expect(expanded.status == 200)
        #expect(expanded.rows.map { $0["Orders"]?.arrayValue?.compactMap { $0["total"]?.numberText } ?? ["missing"] } == [["25.5"], ["7"], []])
        // Back the other way, nested.
        let back = c.send("GET", "/Shop/Orders(3)?$expand=Customers($select=name;$expand=Orders($select=total))")
        let customer = try #require(back.json?["Customers"]?.arrayValue?.first)
        #expect(customer["name"]?.stringValue == "O'Brien & Sons")
        #expect(customer["Orders"]?.arrayValue?.count == 1)
        // An error inside an expansion does not fail the request.
        let broken = c.send("GET", "/Shop/Customers('ALFKI')?$expand=Orders($select=not_real)")
        #expect(broken.status == 200)
        #expect(broken.json?["error"]?.arrayValue?.first?["error"]?["code"]?.stringValue == "8309")
        // An unknown navigation property is refused.
        #expect(c.send("GET", "/Shop/Customers?$expand=Nope").status == 400)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData writes share the Data API's store: what one API writes, the other reads.
@Suite struct ODataWriteTests {
    @Test(arguments: Via.allCases) func createReadThroughTheDataAPI(via: Via) throws {
        let c = try ODataClient(via: via)
        let created = c.send("POST", "/Shop/Customers",
                             body: #"{"code":"NEW","name":"Ada","joined":"2024-02-29","score":12.25,"alarm":"13:45:00","seen":"2024-01-02T13:45:00Z","phones[2]":"555"}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Location") == c.harness.origin + "/fmi/odata/v4/Shop/Customers('NEW')")
        #expect(created.json?["@context"]?.stringValue?.hasSuffix("$metadata#Customers/$entity") == true)
        #expect(created.json?["joined"]?.stringValue == "2024-02-29")
        #expect(created.json?["seen"]?.stringValue == "2024-01-02T13:45:00Z")

        try c.harness.login()
        let found = c.harness.send("POST", "\(c.harness.base)/layouts/Customers/_find", body: #"{"query":[{"code":"==NEW"}]}"#)
        #expect(found.status == 200)
        let fields = try #require(found.data.first?["fieldData"])
        #expect(fields["name"]?.stringValue == "Ada")
        #expect(fields["joined"]?.stringValue == "02/29/2024")
        #expect(fields["seen"]?.stringValue == "01/02/2024 13:45:00")
        #expect(fields["score"]?.numberText == "12.25")
        #expect(fields["phones(2)"]?.stringValue == "555")
    }

    @Test func dataAPIWritesAreReadThroughOData() throws {
        let c = try ODataClient()
        try c.harness.login()
        let id = try c.harness.create(#"{"code":"DAPI","name":"From the Data API","score":7}"#, layout: "Customers")
        let row = c.send("GET", "/Shop/Customers('DAPI')")
        #expect(row.status == 200 && row.json?["name"]?.stringValue == "From the Data API")
        #expect(c.send("PATCH", "/Shop/Customers('DAPI')", body: #"{"name":"Renamed"}"#).status == 204)
        let back = c.harness.send("GET", "\(c.harness.base)/layouts/Customers/records/\(id)")
        #expect(back.data.first?["fieldData"]?["name"]?.stringValue == "Renamed")
        #expect(back.data.first?["modId"]?.stringValue == "1")
        #expect(c.send("DELETE", "/Shop/Customers('DAPI')").status == 204)
        #expect(c.harness.send("GET", "\(c.harness.base)/layouts/Customers/records/\(id)").code == "101")
    }

    @Test func createPreferencesAndKeylessTables() throws {
        let c = try ODataClient()
        let minimal = c.send("POST", "/Shop/Orders", body: #"{"customer_code":"ZOE","total":1}"#, headers: [("Prefer", "return=minimal")])
        #expect(minimal.status == 204 && minimal.body.isEmpty)
        #expect(minimal.header("Location") == c.harness.origin + "/fmi/odata/v4/Shop/Orders(ROWID=4)")
        let full = c.send("POST", "/Shop/Orders", body: #"{"customer_code":"ZOE"}"#)
        #expect(full.status == 201)
        #expect(full.json?["id"]?.numberText == "5")   // the serial auto-enter
        #expect(full.header("Location") == c.harness.origin + "/fmi/odata/v4/Shop/Orders(5)")
        let rep = c.send("PATCH", "/Shop/Orders(5)", body: #"{"total":null}"#, headers: [("Prefer", "return=representation")])
        #expect(rep.status == 200 && rep.json?["total"] == .null)
        #expect(c.send("PATCH", "/Shop/Orders(5)", body: #"{"total":3}"#).header("fmodata.affected_rows") == "1")
    }

    @Test func refusals() throws {
        let c = try ODataClient()
        let before = c.emulator.recordCount(inTable: "Customers")
        for (body, status, code) in [(#"{"code":"ALFKI"}"#, 400, "504"),            // unique
                                     (#"{"name":"no code"}"#, 400, "509"),          // not empty
                                     (#"{"code":"X","nope":1}"#, 400, "8309"),
                                     (#"{"code":"X","g_note":"g"}"#, 400, "201"),
                                     (#"{"code":"X","ROWID":9}"#, 400, "201"),
                                     (#"{"code":"X","joined":"01/02/2024"}"#, 400, "500"),
                                     (#"{"code":"X","phones[3]":"x"}"#, 400, "111"),
                                     (#"[1,2]"#, 400, "-1002"),
                                     (#"{"code":"X","name":{"a":1}}"#, 400, "-1002")] {
            let a = c.send("POST", "/Shop/Customers", body: body)
            #expect(a.status == status, "\(body): \(a.text)")
            #expect(a.odataCode == code, "\(body): \(a.text)")
        }
        #expect(c.emulator.recordCount(inTable: "Customers") == before)
        #expect(c.send("PATCH", "/Shop/Customers('NOPE')", body: #"{"name":"x"}"#).status == 404)
        #expect(c.send("DELETE", "/Shop/Customers('NOPE')").odataCode == "-1023")
        #expect(c.send("PUT", "/Shop/Customers('ALFKI')/score/$value", body: "1").status == 400)
    }

    /// A filtered PATCH changes every match or, when one fails, none.
    @Test func filteredWritesAreAllOrNothing() throws {
        let c = try ODataClient()
        let ok = c.send("PATCH", "/Shop/Orders?$filter=customer_code%20eq%20'ALFKI'", body: #"{"total":99}"#)
        #expect(ok.status == 204 && ok.header("fmodata.affected_rows") == "2")
        #expect(c.send("GET", "/Shop/Orders?$filter=total%20eq%2099").rows.count == 2)
        // Every customer gets the same code: the second breaks "unique", so the first is restored too.
        let bad = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: #"{"code":"SAME"}"#)
        #expect(bad.status == 400 && bad.odataCode == "504")
        #expect(c.send("GET", "/Shop/Customers('ALFKI')").status == 200)
        #expect(c.send("GET", "/Shop/Customers('NUL')").status == 200)
        let gone = c.send("DELETE", "/Shop/Orders?$filter=total%20eq%2099")
        #expect(gone.status == 204 && gone.header("fmodata.affected_rows") == "2")
        #expect(c.emulator.recordCount(inTable: "Orders") == 1)
        #expect(c.send("DELETE", "/Shop/Orders").status == 400)
    }
}

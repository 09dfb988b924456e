import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import SwiftFMEmulator

/// OData authentication, the database list, the service document and `$metadata` (XML and JSON CSDL).
@Suite struct ODataMetadataTests {
    @Test(arguments: Via.allCases) func basicAuthenticationOnEveryRequest(via: Via) throws {
        let c = try ODataClient(via: via)
        #expect(c.send("GET", "/Shop").status == 200)
        for bad in [nil, "Basic " + Data("admin:wrong".utf8).base64EncodedString(), "Basic !!!", "Bearer 0123456789abcdef",
                    "Digest x", "FMID unknown-token"] as [String?] {
            c.authorization = bad
            let a = c.send("GET", "/Shop/Customers")
            #expect(a.status == 401, "\(String(describing: bad))")
            #expect(a.odataCode == "212")
            #expect(a.header("Content-Type")?.hasPrefix("application/json") == true)
        }
        // Account names are case-insensitive, passwords are not.
        c.authorization = "Basic " + Data("ADMIN:admin".utf8).base64EncodedString()
        #expect(c.send("GET", "/Shop/Customers").status == 200)
        c.authorization = "Basic " + Data("admin:ADMIN".utf8).base64EncodedString()
        #expect(c.send("GET", "/Shop/Customers").status == 401)
    }

    @Test func dataAPITokenIsRefused() throws {
        let c = try ODataClient()
        let token = try c.harness.login()
        c.authorization = "Bearer \(token)"
        let a = c.send("GET", "/Shop/Customers")
        #expect(a.status == 401 && a.odataCode == "212")
    }

    @Test func fmidTokensTheEmulatorAccepted() throws {
        let c = try ODataClient()
        c.authorization = "FMID tok-1"
        #expect(c.send("GET", "/Shop").status == 401)
        c.emulator.acceptClarisIDToken("tok-1")
        #expect(c.send("GET", "/Shop").status == 200)
        c.emulator.revokeClarisIDToken("tok-1")
        #expect(c.send("GET", "/Shop").status == 401)
    }

    /// With Claris ID on, an ID token the emulator's Cognito issued works on every OData request until it
    /// expires (on the emulator's clock), then is refused in OData's shape.
    @Test func fmidTokensOfTheEmulatorsCognitoExpire() throws {
        let c = try ODataClient()
        c.emulator.clarisID = true
        let expiry = c.emulator.now.addingTimeInterval(3600)
        c.emulator.core.cognito.state.withLock { $0.idTokens["id-token-1"] = expiry }
        c.authorization = "FMID id-token-1"
        #expect(c.send("GET", "/Shop/Customers?$top=1").status == 200)
        #expect(c.send("GET", "/Shop/Customers('ALFKI')").status == 200)
        c.emulator.advanceClock(by: 3601)
        let expired = c.send("GET", "/Shop/Customers?$top=1")
        #expect(expired.status == 401 && expired.odataCode == "212")
        #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"LATE"}"#).status == 401)
        #expect(c.emulator.recordCount(inTable: "Customers") == 4)
    }

    @Test func rejectLoginsAppliesToOData() throws {
        let c = try ODataClient()
        c.emulator.rejectLogins(true)
        #expect(c.send("GET", "/Shop").status == 401)
        c.emulator.rejectLogins(false)
        #expect(c.send("GET", "/Shop").status == 200)
    }

    @Test func databaseListAndServiceDocument() throws {
        let c = try ODataClient()
        let list = c.send("GET", "")
        #expect(list.status == 200)
        #expect(list.rows.count == 1)
        #expect(list.rows.first?["name"]?.stringValue == "Shop" && list.rows.first?["kind"]?.stringValue == "EntityContainer")
        #expect(list.rows.first?["url"]?.stringValue == "http://127.0.0.1:3000/fmi/odata/v4/Shop")

        let doc = c.send("GET", "/Shop.fmp12")
        #expect(doc.status == 200)
        #expect(doc.json?["@context"]?.stringValue == "http://127.0.0.1:3000/fmi/odata/v4/Shop.fmp12/$metadata")
        #expect(doc.rows.compactMap { $0["name"]?.stringValue } == ["Customers", "Orders"])
        #expect(doc.rows.allSatisfy { $0["kind"]?.stringValue == "EntitySet" })
        // OData 4.0 clients get the @odata.-prefixed spelling.
        let v40 = c.send("GET", "/Shop", headers: [("OData-Version", "4.0")])
        #expect(v40.json?["@odata.context"] != nil && v40.json?["@context"] == nil)

        let unknown = c.send("GET", "/Nope")
        #expect(unknown.status == 404 && unknown.odataCode == "802")
        let table = c.send("GET", "/Shop/Nope")
        #expect(table.status == 404 && table.odataCode == "-1020")
    }

    @Test func metadataXML() throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/$metadata")
        #expect(a.status == 200)
        #expect(a.header("Content-Type")?.hasPrefix("application/xml") == true)
        let xml = a.text
        #expect(xml.contains(#"<Schema Namespace="com.filemaker.odata.Shop.fmp12""#))
        #expect(xml.contains(#"<Annotation Term="ServerVersion" String="OData Engine 22.0.4"/>"#))
        #expect(xml.contains(#"<EntityType Name="Customers_"><Annotation Term="com.filemaker.odata.TableID" String="FMTID:1065090"/><Key><PropertyRef Name="code"/></Key>"#))
        // Orders has no field that is not empty and unique: no <Key>, ROWID addresses its records.
        #expect(xml.contains(#"<EntityType Name="Orders_"><Annotation Term="com.filemaker.odata.TableID" String="FMTID:1065091"/><Property"#))
        #expect(xml.contains(#"<Property Name="code" Type="Edm.String" Nullable="false"><Annotation Term="com.filemaker.odata.FieldID" String="FMFID:4296032386"/>"#))
        for (field, type) in [("score", "Edm.Decimal"), ("joined", "Edm.Date"), ("alarm", "Edm.TimeOfDay"), ("seen", "Edm.DateTimeOffset"),
                              ("photo", "Edm.Binary")] {
            #expect(xml.contains(#"<Property Name="\#(field)" Type="\#(type)">"#), "\(field)")
        }
        #expect(xml.contains(#"<Annotation Term="com.filemaker.odata.MaxRepetitions" Int="2"/>"#))
        #expect(xml.contains(#"<Annotation Term="com.filemaker.odata.Global" Bool="true"/><Annotation Term="Org.OData.Core.V1.Permissions">"#))
        #expect(xml.contains(#"<Annotation Term="com.filemaker.odata.AutoGenerated" Bool="true"/>"#))
        #expect(xml.contains(#"<NavigationProperty Name="Orders" Type="Collection(com.filemaker.odata.Shop.fmp12.Orders_)"/>"#))
        #expect(xml.contains(#"<NavigationProperty Name="Customers" Type="Collection(com.filemaker.odata.Shop.fmp12.Customers_)"/>"#))
        #expect(xml.contains(#"<EntitySet Name="Customers" EntityType="com.filemaker.odata.Shop.fmp12.Customers_">"#))
        #expect(xml.contains(#"<NavigationPropertyBinding Path="Orders" Target="Orders"/>"#))
        #expect(xml.contains(#"<Annotation Term="com.filemaker.odata.BestRowID" String="ROWID"/>"#))
        // Well-formed XML.
        let parser = XMLParser(data: a.body)
        #expect(parser.parse())

        c.emulator.odataServerVersion = "26.0.1"
        #expect(c.send("GET", "/Shop/$metadata").text.contains(#"String="OData Engine 26.0.1""#))
    }

    @Test func metadataJSON() throws {
        let c = try ODataClient()
        for a in [c.send("GET", "/Shop/$metadata?$format=json"), c.send("GET", "/Shop/$metadata", headers: [("Accept", "application/json")])] {
            #expect(a.status == 200)
            let db = a.json?["Shop.fmp12"]
            #expect(a.json?["$Version"]?.stringValue == "4.01")
            #expect(db?["Customers_"]?["$Key"] == .array([.string("code")]))
            #expect(db?["Customers_"]?["@TableID"]?.stringValue == "FMTID:1065090")
            #expect(db?["Customers_"]?["joined"]?["$Type"]?.stringValue == "Edm.Date")
            #expect(db?["Customers_"]?["Orders"]?["$Kind"]?.stringValue == "NavigationProperty")
            #expect(db?["Orders"]?["$Kind"]?.stringValue == "EntitySet")
        }
    }

    @Test func faultsApplyToOData() throws {
        let c = try ODataClient()
        c.emulator.inject(.fileMakerError(code: "812", status: 500, message: "Exceeded host's capacity"), matching: "odata")
        let a = c.send("GET", "/Shop/Customers")
        #expect(a.status == 500 && a.odataCode == "812" && a.odataMessage == "Exceeded host's capacity")
        #expect(c.send("GET", "/Shop/Customers").status == 200)
    }
}

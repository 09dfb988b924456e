import Foundation
import Testing
@testable import SwiftFMEmulator

/// Schema changes through OData (`FileMaker_Tables`, `FileMaker_Indexes`): the new table is served by
/// both APIs' store at once, and ids stay put when tables and fields come and go.
@Suite struct ODataSchemaTests {
    @Test func createUseAndDropATable() throws {
        let c = try ODataClient()
        let created = c.send("POST", "/Shop/FileMaker_Tables", body: #"""
            {"tableName":"Company","fields":[{"name":"Company ID","type":"int","primary":true},
             {"name":"Name","type":"varchar(5)","nullable":false},{"name":"Since","type":"date","default":"CURRENT_DATE"},
             {"name":"Tags","type":"varchar[3]"},{"name":"Logo","type":"blob"}]}
            """#)
        #expect(created.status == 200, "\(created.text)")
        #expect(created.json?["tableName"]?.stringValue == "Company")
        #expect(created.json?["fields"]?.arrayValue?.first == .object([("name", .string("Company ID")), ("type", .string("numeric")), ("primary", .bool(true))]))
        let meta = c.send("GET", "/Shop/$metadata").text
        #expect(meta.contains(#"<EntityType Name="Company_"><Annotation Term="com.filemaker.odata.TableID" String="FMTID:1065092"/><Key><PropertyRef Name="Company ID"/></Key>"#))
        #expect(meta.contains(#"<Property Name="Tags" Type="Edm.String"><Annotation Term="com.filemaker.odata.FieldID" String="FMFID:17180934276"/><Annotation Term="com.filemaker.odata.MaxRepetitions" Int="3"/>"#))
        // Records at once, with the new rules (not empty, unique, 5 characters, auto-enter date).
        #expect(c.send("POST", "/Shop/Company", body: #"{"Company ID":1,"Name":"Acme"}"#).status == 201)
        #expect(c.send("POST", "/Shop/Company", body: #"{"Company ID":1,"Name":"Other"}"#).odataCode == "504")
        #expect(c.send("POST", "/Shop/Company", body: #"{"Company ID":2,"Name":"Too long"}"#).odataCode == "511")
        let row = c.send("GET", "/Shop/Company(1)")
        #expect(row.json?["Name"]?.stringValue == "Acme" && row.json?["Since"]?.stringValue?.count == 10)
        let tables = c.send("GET", "/Shop/FileMaker_Tables")
        #expect(tables.rows.compactMap { $0["TableName"]?.stringValue } == ["Customers", "Orders", "Company"])

        // Add a field; the existing record keeps its values, ids do not move.
        let added = c.send("PATCH", "/Shop/FileMaker_Tables/Company", body: #"{"fields":[{"name":"Revenue","type":"numeric"}]}"#)
        #expect(added.status == 200 && added.json?["fields"]?.arrayValue?.count == 1)
        #expect(c.send("PATCH", "/Shop/Company(1)", body: #"{"Revenue":12.5}"#).status == 204)
        #expect(c.send("GET", "/Shop/Company(1)").json?["Name"]?.stringValue == "Acme")
        // Delete a field: later fields keep their FMFIDs.
        #expect(c.send("DELETE", "/Shop/FileMaker_Tables/Company/Since").status == 204)
        let after = c.send("GET", "/Shop/$metadata").text
        #expect(after.contains(#"String="FMFID:17180934276""#))
        #expect(!after.contains(#"<Property Name="Since""#))
        #expect(c.send("GET", "/Shop/Company(1)").json?["Since"] == nil)
        #expect(c.send("GET", "/Shop/FileMaker_Tables").rows.last?["ModCount"]?.numberText == "2")

        // Indexes show in $metadata.
        #expect(c.send("POST", "/Shop/FileMaker_Indexes/Company", body: #"{"indexName":"Name"}"#).json?["indexName"]?.stringValue == "Name")
        #expect(c.send("GET", "/Shop/$metadata").text.contains(#"<Annotation Term="com.filemaker.odata.Index" Bool="true"/>"#))
        #expect(c.send("DELETE", "/Shop/FileMaker_Indexes/Company/Name").status == 204)
        #expect(!c.send("GET", "/Shop/$metadata").text.contains(#"com.filemaker.odata.Index""#))

        // Drop the table.
        #expect(c.send("DELETE", "/Shop/FileMaker_Tables/Company").status == 204)
        #expect(c.send("GET", "/Shop/Company").odataCode == "-1020")
        #expect(c.emulator.recordCount(inTable: "Company") == 0)
    }

    @Test func refusals() throws {
        let c = try ODataClient()
        for (method, path, body, code) in [
            ("POST", "/Shop/FileMaker_Tables", #"{"tableName":"Customers","fields":[{"name":"a","type":"int"}]}"#, "-1002"),
            ("POST", "/Shop/FileMaker_Tables", #"{"tableName":"T","fields":[{"name":"a","type":"geometry"}]}"#, "-1002"),
            ("POST", "/Shop/FileMaker_Tables", #"{"tableName":"T","fields":[]}"#, "-1002"),
            ("POST", "/Shop/FileMaker_Tables", #"{"fields":[{"name":"a","type":"int"}]}"#, "-1002"),
            ("DELETE", "/Shop/FileMaker_Tables('Customers')", nil, "-1010"),
            ("DELETE", "/Shop/FileMaker_Tables/Customers", nil, "303"),            // on a layout
            ("DELETE", "/Shop/FileMaker_Tables/Orders/customer_code", nil, "303"), // a match field
            ("DELETE", "/Shop/FileMaker_Tables/Nope", nil, "-1020"),
            ("PATCH", "/Shop/FileMaker_Tables/Orders", #"{"fields":[{"name":"total","type":"int"}]}"#, "-1002"),
            ("POST", "/Shop/FileMaker_Indexes", #"{"tableName":"Orders","indexName":"total"}"#, "-1003"),
            ("POST", "/Shop/FileMaker_Indexes/Orders", #"{"indexName":"nope"}"#, "8309"),
        ] as [(String, String, String?, String)] {
            let a = c.send(method, path, body: body)
            #expect(a.status >= 400, "\(method) \(path)")
            #expect(a.odataCode == code, "\(method) \(path): \(a.text)")
        }
        #expect(c.send("GET", "/Shop/$metadata").text.contains(#"<EntityType Name="Customers_">"#))
    }
}

// Contract: the JSON CSDL `$metadata` carries the FileMaker field annotations the XML one does, without the
// `com.filemaker.odata.` prefix (ODATA.md §2.5: `"<field>":{"$Type":…,"@FieldID":…,"@Index":true}`,
// proofkit sample-metadata.json): an indexed field (`POST …/FileMaker_Indexes/{table}`, shown as the
// `Index` annotation per Docs/FILEMAKER-BEHAVIOUR.md "Schema changes") has `"@Index": true` in both.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataMetadataJSONAnnotationRuleTests {
    @Test func anIndexedFieldIsAnnotatedInJSONAsInXML() throws {
        let c = try ODataClient()
        let made = c.send("POST", "/Shop/FileMaker_Indexes/Customers", body: #"{"indexName":"city"}"#)
        #expect(made.status == 200, "\(made.text)")
        let xml = c.send("GET", "/Shop/$metadata").text
        #expect(xml.contains(#"<Property Name="city" Type="Edm.String"><Annotation Term="com.filemaker.odata.FieldID" String="FMFID:"#))
        #expect(xml.contains(#"<Annotation Term="com.filemaker.odata.Index" Bool="true"/>"#))
        let json = c.send("GET", "/Shop/$metadata", headers: [("Accept", "application/json")]).json
        let type = json?["Shop.fmp12"]?["Customers_"]
        #expect(type?["city"]?["@Index"] == .bool(true))
        #expect(type?["name"]?["@Index"] == nil)
    }
}

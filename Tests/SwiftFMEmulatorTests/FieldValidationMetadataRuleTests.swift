// Contract: a layout's field metadata reports the validation options the schema gives each field, under the names
// FileMaker's Data API uses for them (the XML grammar's `not-empty`, `max-characters`, `numeric-only` attributes,
// camel-cased): `notEmpty`, `maxCharacters`, and `numeric` for "strict data type: numeric only" (`numericOnly` in
// the schema file). A field without them reports `false` and 0. `FMFieldMetadata.numeric` reads the same key.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct FieldValidationMetadataRuleTests {
    static let schema = #"""
    {
      "database": "Checks",
      "tables": { "Items": { "fields": {
        "strict": { "type": "number", "numericOnly": true },
        "loose": "number",
        "required": { "type": "text", "notEmpty": true, "maxCharacters": 12 }
      } } },
      "layouts": { "Items": { "table": "Items", "fields": ["strict", "loose", "required"] } }
    }
    """#

    @Test("Layout metadata reports numeric-only, not-empty and max-characters as the schema sets them", arguments: Via.allCases)
    func validationOptionsAreReported(_ via: Via) throws {
        let h = try Harness(schemaJSON: Self.schema, db: "Checks", via: via)
        try h.login()
        let answer = h.send("GET", "\(h.base)/layouts/Items", contentType: nil)
        #expect(answer.status == 200)
        let fields = try #require(answer.response["fieldMetaData"]?.arrayValue)
        func field(_ name: String) -> JSON? { fields.first { $0["name"]?.stringValue == name } }
        #expect(field("strict")?["numeric"]?.boolValue == true)
        #expect(field("loose")?["numeric"]?.boolValue == false)
        #expect(field("required")?["numeric"]?.boolValue == false)
        #expect(field("required")?["notEmpty"]?.boolValue == true)
        #expect(field("required")?["maxCharacters"]?.numberValue == 12)
        #expect(field("loose")?["notEmpty"]?.boolValue == false)
        #expect(field("loose")?["maxCharacters"]?.numberValue == 0)
    }
}

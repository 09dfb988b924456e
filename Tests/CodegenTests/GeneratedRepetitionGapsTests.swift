import Foundation
import Testing
import SwiftFM

// The contract: a generated model's repeating field (`tags: [String]?`, `[Date?]?`, …) follows the typed rule: each
// repetition the layout sent at its place, one it did not send before it an empty value (`""`, `nil`), and the field
// read even when only later repetitions were sent. `compareFields` (raw against typed) checks the same rule.

@Suite("A generated model's repeating field keeps its gaps' places")
struct GeneratedRepetitionGapsTests {
    static func body(_ fieldData: String) -> Data {
        Data(#"{"response":{"data":[{"fieldData":\#(fieldData),"portalData":{},"recordId":"1","modId":"1"}]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    /// Before the fix: `tags(3)` was dropped after a missing `tags(2)`, and `tags(2)` alone read as `nil`.
    @Test(arguments: [
        (#"{"name":"n","tags":"a","tags(3)":"c"}"#, ["a", "", "c"]),
        (#"{"name":"n","tags(2)":"b","tags(3)":"c"}"#, ["", "b", "c"]),
        (#"{"name":"n","tags(3)":"c"}"#, ["", "", "c"]),
    ])
    func aGeneratedRepeatingFieldKeepsItsPlaces(_ fieldData: String, _ tags: [String]) throws {
        let typed = try FMTypedFoundSet<Artists>(responseBody: Self.body(fieldData))
        #expect(typed.records[0].fieldData.tags == tags)
        let raw = try FMFoundSet(responseBody: Self.body(fieldData))
        let rawFields = try #require(raw.records[0]["fieldData"] as? [String: Any])
        compareFields(raw: rawFields, typed: try encodedObject(typed.records[0].fieldData), context: fieldData)
    }
}

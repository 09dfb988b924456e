import Foundation
import Testing
@testable import SwiftFMEmulator

/// A schema file never loads a misspelt key silently, and a rejected seed record names its
/// table, row, field and the expected format.
@Suite struct SchemaStrictnessTests {
    private func error(_ json: String) -> String {
        do {
            _ = try Emulator(schemaJSON: Data(json.utf8))
            return "no error"
        } catch let e as EmulatorSchemaError {
            return e.message
        } catch {
            return "\(error)"
        }
    }

    private let base = #""database":"D","tables":{"T":{"fields":{"a":"text","n":"number","d":"date"}}}"#

    @Test func unknownKeysAreNamedWithTheirPath() {
        #expect(error("{\(base),\"scirpts\":{}}").hasPrefix(#"top level: unknown key "scirpts" (did you mean "scripts"?)"#))
        #expect(error("{\(base),\"recrods\":{}}").hasPrefix(#"top level: unknown key "recrods" (did you mean "records"?)"#))
        #expect(error(#"{"database":"D","tables":{"Artists":{"fields":{"a":"text"},"recrods":[]}}}"#)
            .hasPrefix(#"tables.Artists: unknown key "recrods""#))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":{"type":"text","notempty":true}}}}}"#)
            .hasPrefix(#"tables.T.fields.a: unknown key "notempty" (did you mean "notEmpty"?)"#))
        #expect(error("{\(base),\"layouts\":{\"L\":{\"table\":\"T\",\"feilds\":[\"a\"]}}}").hasPrefix(#"layouts.L: unknown key "feilds""#))
        #expect(error("{\(base),\"layouts\":{\"L\":{\"table\":\"T\",\"fields\":[{\"name\":\"a\",\"valuelist\":\"V\"}]}}}")
            .hasPrefix(#"layouts.L.fields.a: unknown key "valuelist""#))
        #expect(error("{\(base),\"layouts\":{\"L\":{\"table\":\"T\",\"portals\":{\"p\":{\"table\":\"T\",\"match\":{\"a\":\"a\"},\"sorting\":[]}}}}}")
            .hasPrefix(#"layouts.L.portals.p: unknown key "sorting""#))
        #expect(error("{\(base),\"layouts\":{\"F\":{\"folder\":true,\"layouts\":[],\"table\":\"T\"}}}").hasPrefix(#"layouts.F: unknown key "table""#))
        #expect(error("{\(base),\"scripts\":{\"S\":{\"return\":\"parameter\"}}}").hasPrefix(#"scripts.S: unknown key "return" (did you mean "returns"?)"#))
        #expect(error("{\(base),\"scripts\":{\"F\":{\"folder\":true,\"scripts\":[],\"x\":1}}}").hasPrefix(#"scripts.F: unknown key "x""#))
        #expect(error("{\(base),\"limits\":{\"maxSession\":3}}").hasPrefix(#"limits: unknown key "maxSession" (did you mean "maxSessions"?)"#))
        #expect(error("{\(base),\"accounts\":[{\"username\":\"a\",\"password\":\"b\",\"role\":\"x\"}]}").hasPrefix(#"accounts[0]: unknown key "role""#))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":{"type":"text","autoEnter":{"value":"x","when":1}}}}}}"#)
            .hasPrefix(#"tables.T.fields.a.autoEnter: unknown key "when""#))
        // Several at once are all named.
        #expect(error("{\(base),\"x\":1,\"y\":2}").hasPrefix(#"top level: unknown keys "x", "y""#))
        #expect(error("{\(base)}") == "no error")
    }

    @Test func rejectedSeedRecordsNameTableRowFieldAndFormat() {
        let date = error("{\(base),\"records\":{\"T\":[{\"d\":\"01/02/2020\"},{\"d\":\"31/31/2020\"}]}}")
        #expect(date.hasPrefix(#"records.T[1].d: seed record of table T rejected: "31/31/2020" is not a date MM/dd/yyyy"#))
        let strict = #"{"database":"D","tables":{"T":{"fields":{"n":{"type":"number","numericOnly":true},"u":{"type":"text","unique":true}}}},"#
        #expect(error(strict + #""records":{"T":[{"n":"12abc"}]}}"#).hasPrefix(#"records.T[0].n: seed record of table T rejected: "12abc" is not a number"#))
        #expect(error(strict + #""records":{"T":[{"u":"x"},{"u":"y"},{"u":"X"}]}}"#)
            .hasPrefix("records.T[2].u: seed record of table T rejected with FileMaker error 504"))
    }

    @Test func existingSchemaFilesStillLoad() throws {
        // The demo, the python check's schema and the test fixtures (backward compatibility).
        _ = try EmulatorSchema.loadDemo()
        _ = try Emulator(schemaJSON: Data(contactsSchemaJSON.utf8))
        let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("python/schema.json")
        _ = try Emulator(schemaFile: python)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// Error texts (WIRE.md §12) and schema-file errors (SCHEMA.md).
@Suite struct ErrorTextTests {
    /// §12 lists these codes with FileMaker's texts; an injected fault without a message must use them,
    /// not "Unknown error".
    @Test func everyListedCodeHasItsText() throws {
        let h = try Harness()
        let expected: [(String, String)] = [
            ("202", "Field access is denied"),
            ("402", "Selected field is not a match field for a lookup"),
            ("505", "Value in field is not an existing value in the file"),
            ("506", "Value in field is not listed in the value list"),
            ("507", "Value in field failed calculation test of validation entry option"),
            ("508", "Invalid value entered in Find mode"),
            ("510", "Related value is empty or unavailable"),
            ("954", "Unsupported XML grammar (*)"),
            ("955", "No database name (*)"),
            ("957", "Conflicting commands (*)"),
            ("959", "Custom Web Publishing technology is disabled"),
            ("3", "Command is unavailable"),
        ]
        for (code, text) in expected {
            h.emulator.inject(.fileMakerError(code: code))
            let a = h.send("GET", "/fmi/data/vLatest/productInfo", bearer: false, contentType: nil)
            #expect(a.code == code)
            #expect(a.message?.hasPrefix(text) == true, "\(code): \(a.message ?? "nil")")
        }
    }

    /// SCHEMA.md: a schema file with a wrong type gets a clear error naming the key, never a silent
    /// fallback to a default (a `"notEmpty": "yes"` that quietly means `false`).
    @Test func wrongTypesInSchemaFilesAreErrors() {
        func error(_ json: String) -> String {
            do {
                _ = try Emulator(schemaJSON: Data(json.utf8))
                return "no error"
            } catch let e as EmulatorSchemaError {
                return e.message
            } catch {
                return "\(error)"
            }
        }
        func field(_ def: String) -> String { #"{"database":"D","tables":{"T":{"fields":{"a":\#(def)}}}}"# }
        func layout(_ extra: String) -> String {
            #"{"database":"D","tables":{"T":{"fields":{"a":"text","b":"number"}}},"layouts":{"L":{"table":"T"\#(extra)}}}"#
        }
        let cases: [(String, String)] = [
            (field(#"{"type":"text","notEmpty":"yes"}"#), "notEmpty"),
            (field(#"{"type":"text","unique":1}"#), "unique"),
            (field(#"{"type":"text","global":"true"}"#), "global"),
            (field(#"{"type":"text","repetitions":"3"}"#), "repetitions"),
            (field(#"{"type":"text","repetitions":2.5}"#), "repetitions"),
            (field(#"{"type":"text","maxCharacters":"10"}"#), "maxCharacters"),
            (field(#"{"type":"number","autoEnter":"serial","serialStart":"5"}"#), "serialStart"),
            (field(#"{"type":"text","autoEnter":7}"#), "autoEnter"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"limits":{"maxSessions":"5"}}"#, "maxSessions"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"limits":{"sessionIdleSeconds":"60"}}"#, "sessionIdleSeconds"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"limits":[]}"#, "limits"),
            (layout(#","valueLists":["x"]"#), "valueLists"),
            (layout(#","view":5"#), "view"),
            (layout(#","fields":[{"name":"a","valueList":5}]"#), "valueList"),
            (layout(#","fields":[{"name":"a","displayType":true}]"#), "displayType"),
            (layout(#","portals":{"p":{"table":"T","match":{"b":"b"},"fields":"a"}}"#), "fields"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"F":{"folder":"yes","layouts":[]}}}"#, "folder"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"scripts":{"S":"parameter"}}"#, "scripts.S"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"scripts":{"S":{"error":{}}}}"#, "error"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"scripts":{"S":{"layout":5}}}"#, "layout"),
            (#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"F":{"folder":true,"layouts":["L",5]}}}"#, "layouts"),
        ]
        for (json, key) in cases {
            let message = error(json)
            #expect(message != "no error", "\(json)")
            #expect(message.contains(key), "\(json) → \(message)")
        }
        // The well-typed forms still load.
        #expect(error(field(#"{"type":"text","notEmpty":true,"unique":false,"global":false,"repetitions":3,"maxCharacters":10}"#)) == "no error")
        #expect(error(layout(#","view":"table","valueLists":{"V":["x"]},"fields":[{"name":"a","valueList":"V","displayType":"popupMenu"}]"#)) == "no error")
    }
}

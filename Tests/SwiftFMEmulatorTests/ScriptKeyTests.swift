import Foundation
import Testing
@testable import SwiftFMEmulator

/// Script keys in request bodies (WIRE.md §8.1).
@Suite struct ScriptKeyTests {
    /// §8.1: script names and parameters are strings. A script key with an object, array or null
    /// value is 1708 like any other wrongly typed parameter (never ignored, with the request succeeding
    /// without running the script), and nothing is written.
    @Test(arguments: Via.allCases) func scriptKeysWithWrongTypesAre1708(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        for (key, value) in [("script", #"{"name":"Echo"}"#), ("script.param", "[1]"), ("script.prerequest", "null"),
                             ("script.presort.param", "{}")] {
            let create = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"x"},"\#(key)":\#(value)}"#)
            #expect(create.code == "1708", "\(key)")
            let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"name":"x"},"\#(key)":\#(value)}"#)
            #expect(edit.code == "1708", "\(key)")
            let find = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"John"}],"\#(key)":\#(value)}"#)
            #expect(find.code == "1708", "\(key)")
            let duplicate = h.send("POST", "\(h.base)/layouts/Contacts/records/1", body: #"{"\#(key)":\#(value)}"#)
            #expect(duplicate.code == "1708", "\(key)")
        }
        #expect(h.emulator.recordCount(inTable: "Contacts") == 4)
        #expect(h.emulator.records(inTable: "Contacts").first?["name"] as? String == "John Doe")
        // Strings and numbers still work.
        let ok = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"John"}],"script":"Echo","script.param":42}"#)
        #expect(ok.response["scriptResult"]?.stringValue == "42")
    }
}

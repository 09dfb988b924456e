import Foundation
import Testing
@testable import SwiftFMEmulator

// The emulator's scripts: the three phases (prerequest, presort, after) in order on a find, script keys on every
// record request, missing scripts, scripts registered as closures, and the script list.

@Suite struct ScriptTests {
    @Test func allThreePhasesInOrderOnFind() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"""
        {"query":[{"name":"john"}],"script":"Count","script.prerequest":"Echo","script.prerequest.param":"pre",
         "script.presort":"Fail","script.presort.param":"x"}
        """#)
        #expect(a.status == 200)
        #expect(a.code == "0")
        let keys = a.response.objectPairs?.map(\.0) ?? []
        #expect(keys == ["scriptResult.prerequest", "scriptError.prerequest", "scriptError.presort", "scriptResult", "scriptError", "dataInfo", "data"])
        #expect(a.response["scriptResult.prerequest"]?.stringValue == "pre")
        #expect(a.response["scriptError.presort"]?.stringValue == "3")
        #expect(a.response["scriptResult"]?.stringValue == "2")
        #expect(a.response["scriptError"]?.stringValue == "0")
    }

    @Test func scriptKeysOnEveryRecordRequest() throws {
        let h = try Harness()
        try h.login()
        let create = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"S"},"script":"Echo","script.param":"c"}"#)
        #expect(create.response["scriptResult"]?.stringValue == "c")
        #expect(create.response["recordId"]?.stringValue == "5")
        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/5", body: #"{"fieldData":{"name":"T"},"script.presort":"Echo","script.presort.param":"e"}"#)
        #expect(edit.response["scriptResult.presort"]?.stringValue == "e")
        #expect(edit.response["modId"]?.stringValue == "1")
        let get = h.send("GET", "\(h.base)/layouts/Contacts/records/5?script=Echo&script.param=g+h", contentType: nil)
        #expect(get.response["scriptResult"]?.stringValue == "g h")
        let range = h.send("GET", "\(h.base)/layouts/Contacts/records?script.prerequest=Count&script=Fail", contentType: nil)
        #expect(range.response["scriptResult.prerequest"]?.stringValue == "5")
        #expect(range.response["scriptError"]?.stringValue == "3")
        #expect(range.response["scriptResult"] == nil)
        let dup = h.send("POST", "\(h.base)/layouts/Contacts/records/5", body: #"{"script":"Echo","script.param":"d"}"#)
        #expect(dup.response["scriptResult"]?.stringValue == "d")
        let del = h.send("DELETE", "\(h.base)/layouts/Contacts/records/5?script=Echo&script.param=bye", contentType: nil)
        #expect(del.status == 200)
        #expect(del.response == .object([("scriptResult", .string("bye")), ("scriptError", .string("0"))]))
    }

    @Test func missingScripts() throws {
        let h = try Harness()
        try h.login()
        let run = h.send("GET", "\(h.base)/layouts/Contacts/script/Nope", contentType: nil)
        #expect(run.status == 500)
        #expect(run.code == "104")
        let onRequest = h.send("GET", "\(h.base)/layouts/Contacts/records/1?script=Nope", contentType: nil)
        #expect(onRequest.status == 200)
        #expect(onRequest.response["scriptError"]?.stringValue == "104")
        #expect(h.send("GET", "\(h.base)/layouts/Nope/script/Echo", contentType: nil).code == "105")
        // Script names are case-insensitive and may be percent-encoded.
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/script/eCHO?script.param=x", contentType: nil).response["scriptResult"]?.stringValue == "x")
        let noParam = h.send("GET", "\(h.base)/layouts/Contacts/script/Fail", contentType: nil)
        #expect(noParam.response == .object([("scriptError", .string("3"))]))
    }

    @Test func registeredClosures() throws {
        let h = try Harness()
        try h.login()
        h.emulator.registerScript("Shout Back") { inv in
            inv.parameter == "fail" ? .error("101") : .result("\(inv.phase):\(inv.layout):\((inv.parameter ?? "").uppercased()):\(inv.foundCount)")
        }
        let run = h.send("GET", "\(h.base)/layouts/Contacts/script/Shout%20Back?script.param=hi", contentType: nil)
        #expect(run.response["scriptResult"]?.stringValue == "run:Contacts:HI:4")
        let find = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"john"}],"script":"shout back","script.param":"x"}"#)
        #expect(find.response["scriptResult"]?.stringValue == "after:Contacts:X:2")
        let failing = h.send("GET", "\(h.base)/layouts/Contacts/script/Shout%20Back?script.param=fail", contentType: nil)
        #expect(failing.status == 200)
        #expect(failing.response == .object([("scriptError", .string("101"))]))
        // A closure takes precedence over a schema script of the same name.
        h.emulator.registerScript("Echo") { _ in .result("overridden") }
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/script/Echo?script.param=a", contentType: nil).response["scriptResult"]?.stringValue == "overridden")
    }

    @Test func scriptList() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("GET", "\(h.base)/scripts", contentType: nil)
        #expect(a.status == 200)
        let scripts = try #require(a.response["scripts"]?.arrayValue)
        #expect(scripts.compactMap { $0["name"]?.stringValue } == ["Echo", "Tools"])
        #expect(scripts[0]["isFolder"] == .bool(false))
        let tools = scripts[1]
        #expect(tools["isFolder"] == .bool(true))
        #expect(tools["folderScriptNames"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Fail", "-", "Count"])
    }
}

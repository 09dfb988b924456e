import Foundation
import Testing
@testable import SwiftFMEmulator

/// A find matches records on a snapshot, after the emulator's state lock is released: other clients do not wait for
/// it. Before, a 35 KB `_find` of 2,000 requests over 2,000 records of 1 KB held the lock for over 200 s (debug
/// build), and every other request, `productInfo` included, waited for it. A find with scripts runs its prerequest
/// script under the lock before the snapshot is taken, and its presort script and script under the lock again after.
@Suite struct FindOutsideLockTests {
    func request(_ method: String, _ target: String, token: String, body: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", "Bearer \(token)")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method: method, target: target, headers: headers, body: Data((body ?? "").utf8))
    }

    @Test func otherRequestsAreAnsweredWhileAFindMatches() throws {
        let h = try Harness()
        let token = try h.login()
        let find = request("POST", "\(h.base)/layouts/Contacts/_find", token: token, body: #"{"query":[{"name":"John"}],"sort":[{"fieldName":"id"}]}"#)
        let answer = whileMatching(find, in: h.emulator) {
            // The find is held inside its matching: a request that needs the state lock is answered all the same.
            #expect(h.emulator.handler.handle(request("GET", "\(h.base)/layouts/Contacts/records?_limit=1", token: token)).status == 200)
            let edit = h.emulator.handler.handle(request("PATCH", "\(h.base)/layouts/Contacts/records/1", token: token, body: #"{"fieldData":{"name":"Jon Doe"}}"#))
            #expect(edit.status == 200)
        }
        // The find saw the records as they were when it was asked (John Doe not yet renamed).
        let found = try #require(answer)
        #expect(found.status == 200)
        let json = try JSON.parse(found.body)
        let names = json["response"]?["data"]?.arrayValue?.compactMap { $0["fieldData"]?["name"]?.stringValue }
        #expect(names == ["John Doe", "John Smith"])
        #expect(json["response"]?["dataInfo"]?["foundCount"]?.scalarText == "2")
    }

    @Test func aFindThatMatchesNothingIsStill401AndLoggedSo() throws {
        let h = try Harness()
        try h.login()
        let lines = LockedLines()
        h.emulator.onRequest = { lines.append($0) }
        let none = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"Nobody"}]}"#)
        #expect(none.status == 500)
        #expect(none.code == "401")
        #expect(none.message == "No records match the request")
        #expect(h.emulator.requestLog.last?.status == 500)
        #expect(lines.all.last?.hasSuffix("→ 500 (code 401)") == true)
        // An offset past the found set is 401 too.
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"John"}],"offset":"3"}"#).code == "401")
        // With a script the find answers the same.
        let scripted = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"Nobody"}],"script":"Echo","script.param":"x"}"#)
        #expect(scripted.code == "401")
        #expect(h.emulator.requestLog.last?.status == 500)
        #expect(lines.all.last?.hasSuffix("→ 500 (code 401)") == true)
    }

    @Test func otherRequestsAreAnsweredWhileAScriptedFindMatches() throws {
        let h = try Harness()
        let token = try h.login()
        let find = request("POST", "\(h.base)/layouts/Contacts/_find", token: token, body: #"""
        {"query":[{"name":"John"}],"sort":[{"fieldName":"id"}],"script.prerequest":"Echo","script.prerequest.param":"pre",
         "script.presort":"Count","script":"Count"}
        """#)
        let answer = whileMatching(find, in: h.emulator) {
            // The find is held inside its matching, after its prerequest script: a request that needs the state lock
            // is answered all the same.
            let edit = h.emulator.handler.handle(request("PATCH", "\(h.base)/layouts/Contacts/records/1", token: token, body: #"{"fieldData":{"name":"Jon Doe"}}"#))
            #expect(edit.status == 200)
        }
        // The find matched the records as they were after its prerequest script (John Doe not yet renamed); its
        // scripts ran in order, and the page shows the records as they are after them.
        let found = try #require(answer)
        #expect(found.status == 200)
        let json = try JSON.parse(found.body)
        let response = try #require(json["response"])
        let keys = response.objectPairs?.map(\.0) ?? []
        #expect(keys == ["scriptResult.prerequest", "scriptError.prerequest", "scriptResult.presort", "scriptError.presort",
                         "scriptResult", "scriptError", "dataInfo", "data"])
        #expect(response["scriptResult.prerequest"]?.stringValue == "pre")
        #expect(response["scriptResult.presort"]?.stringValue == "2")
        #expect(response["scriptResult"]?.stringValue == "2")
        let names = response["data"]?.arrayValue?.compactMap { $0["fieldData"]?["name"]?.stringValue }
        #expect(names == ["Jon Doe", "John Smith"])
        #expect(response["dataInfo"]?["foundCount"]?.scalarText == "2")
    }
}

// Contract: every endpoint refuses query parameters it does not know with HTTP 400, code 960,
// `Unknown parameter(s): <names>` (WIRE.md §17, EMULATOR DEFAULT: "960 … every unknown query parameter"), also the
// endpoints that take no query parameter at all (product info, database and layout/script lists, validateSession,
// login, logout, globals, create, edit, duplicate, find), and the refused request changes nothing.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct UnknownQueryParameterRuleTests {
    @Test("Endpoints without query parameters refuse any as 400/960", arguments: Via.allCases)
    func unknownQueryParameters(_ via: Via) throws {
        let h = try Harness(via: via)
        let token = try h.login()
        let host = "/fmi/data/vLatest"
        expect960(h.send("GET", "\(host)/productInfo?foo=1", bearer: false, contentType: nil), "foo")
        expect960(h.send("GET", "\(host)/databases?foo=1&bar=2", bearer: false, contentType: nil), "foo, bar")
        expect960(h.send("GET", "\(host)/validateSession?foo=1", contentType: nil), "foo")
        expect960(h.send("GET", "\(h.base)/layouts?foo=1", contentType: nil), "foo")
        expect960(h.send("GET", "\(h.base)/scripts?foo=1", contentType: nil), "foo")
        expect960(h.send("PATCH", "\(h.base)/globals?foo=1", body: #"{"globalFields":{"Contacts::g_note_id":"1"}}"#), "foo")
        expect960(h.send("POST", "\(h.base)/layouts/Contacts/records?foo=1", body: #"{"fieldData":{"name":"q"}}"#), "foo")
        expect960(h.send("PATCH", "\(h.base)/layouts/Contacts/records/1?foo=1", body: #"{"fieldData":{"name":"q"}}"#), "foo")
        expect960(h.send("POST", "\(h.base)/layouts/Contacts/records/1?foo=1", body: "{}"), "foo")
        expect960(h.send("POST", "\(h.base)/layouts/Contacts/_find?_limit=1", body: #"{"query":[{"name":"John"}]}"#), "_limit")
        expect960(h.send("POST", "\(h.base)/sessions?foo=1", body: "{}", bearer: false,
                         headers: [("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString())]), "foo")
        expect960(h.send("DELETE", "\(h.base)/sessions/\(token)?foo=1", bearer: false, contentType: nil), "foo")

        // Nothing above changed anything: the session is still open, no record was made or edited.
        #expect(h.send("GET", "\(host)/validateSession", contentType: nil).status == 200)
        let read = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        #expect(read.data.first?["modId"]?.stringValue == "0")
        #expect(h.emulator.recordCount(inTable: "Contacts") == 4)
        // Without the unknown parameter each is answered.
        #expect(h.send("GET", "\(host)/productInfo", bearer: false, contentType: nil).status == 200)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        #expect(h.send("DELETE", "\(h.base)/sessions/\(token)", bearer: false, contentType: nil).status == 200)
    }
}

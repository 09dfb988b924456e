import Foundation
import Testing
@testable import SwiftFM

/// An endpoint's kind, as metrics, spans and log lines name it: the method and the path with every name and id as
/// `{}`, also a name spelled like a fixed segment (a layout called "records", a script called "script").
@Suite("Endpoint kinds")
struct EndpointKindTests {
    @Test func kindsNameThePathWithoutNames() {
        #expect(Endpoints.getRecord(layout: "Artists", recordId: 1).kind == "GET layouts/{}/records/{}")
        #expect(Endpoints.getRecords(layout: "records").kind == "GET layouts/{}/records")
        #expect(Endpoints.find(layout: "layouts", payload: ["query": [["a": "1"]]]).kind == "POST layouts/{}/_find")
        #expect(Endpoints.runScript(layout: "L", script: "script").kind == "GET layouts/{}/script/{}")
        #expect(Endpoints.deleteRecord(layout: "L", recordId: 7).kind == "DELETE layouts/{}/records/{}")
        #expect(Endpoints.layoutMetadata(layout: "scripts").kind == "GET layouts/{}")
        #expect(Endpoints.layouts().kind == "GET layouts")
        #expect(Endpoints.scripts().kind == "GET scripts")
        #expect(Endpoints.productInfo().kind == "GET productInfo")
        #expect(Endpoints.databases().kind == "GET databases")
        #expect(Endpoints.setGlobals(["g": "1"]).kind == "PATCH globals")
        #expect(SessionEndpoints.logout(token: "t").kind == "DELETE sessions/{}")
        #expect(SessionEndpoints.login(dataSources: []).kind == "POST sessions")
    }
}

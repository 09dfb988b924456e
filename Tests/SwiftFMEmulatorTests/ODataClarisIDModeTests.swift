import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData while the emulator plays FileMaker Cloud (`clarisID`): `FMID` only, Basic refused.
@Suite struct ODataClarisIDModeTests {
    /// FileMaker Cloud's OData takes `Authorization: FMID <token>` only (ODATA.md §1.2): with Claris ID on,
    /// Basic credentials that FileMaker Server would accept are refused with 401/212 in OData's shape.
    @Test func basicIsRefusedWhileClarisIDIsOn() throws {
        let c = try ODataClient()
        #expect(c.send("GET", "/Shop/Customers?$top=1").status == 200)
        c.emulator.clarisID = true
        let refused = c.send("GET", "/Shop/Customers?$top=1")
        #expect(refused.status == 401 && refused.odataCode == "212")
        #expect(refused.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"BASIC"}"#).status == 401)
        #expect(c.emulator.recordCount(inTable: "Customers") == 4)

        // An ID token of the emulator's Cognito works; an unknown one is refused the same way.
        c.emulator.core.cognito.state.withLock { $0.idTokens["id-token-1"] = c.emulator.now.addingTimeInterval(3600) }
        c.authorization = "FMID id-token-1"
        #expect(c.send("GET", "/Shop/Customers?$top=1").status == 200)
        c.authorization = "FMID not-a-token"
        let unknown = c.send("GET", "/Shop/Customers?$top=1")
        #expect(unknown.status == 401 && unknown.odataCode == "212")

        // Claris ID off again: Basic works.
        c.emulator.clarisID = false
        c.authorization = "Basic " + Data("admin:admin".utf8).base64EncodedString()
        #expect(c.send("GET", "/Shop/Customers?$top=1").status == 200)
    }
}

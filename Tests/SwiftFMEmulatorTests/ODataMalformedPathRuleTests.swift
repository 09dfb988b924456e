// Contract: every answer under `/fmi/odata/v4` is in OData's error shape `{"error":{"code","message"}}`
// (ODATA.md §4.5: "Body (JSON, any status)"), a path whose percent-encoding is malformed included: it is
// a malformed URL, `400 -1002 Error: syntax error in URL at: '…'` (§4.5, proofkit capture), never the Data
// API's `{"messages":[…]}` 404.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataMalformedPathRuleTests {
    @Test(arguments: ["/Shop/Customers('%ZZ')", "/Shop/Cust%GGomers", "/Shop/Customers('ALFKI')/na%2", "/Sh%op/Customers"])
    func malformedPercentEncodingIsAnODataSyntaxError(path: String) throws {
        let c = try ODataClient()
        let a = c.send("GET", path)
        #expect(a.status == 400, "\(path): \(a.text)")
        #expect(a.odataCode == "-1002", "\(path): \(a.text)")
        #expect(a.json?["messages"] == nil)
    }
}

// Contract: FileMaker takes OData 4.01's preference and format-parameter names with or without the
// `odata.` prefix (Claris, CG:index: "prefixed and non-prefixed header/preference names"; ODATA.md §1.1):
// `Prefer: maxpagesize=N` pages as `odata.maxpagesize` does, `Prefer: continue-on-error` lets a `$batch`
// go on after a failure as `odata.continue-on-error` does, and `Accept: application/json;metadata=none`
// leaves `@id`/`@editLink` out as `odata.metadata=none` does.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataUnprefixedPreferenceRuleTests {
    @Test(arguments: ["maxpagesize=1", "odata.maxpagesize=1"])
    func maxPageSize(prefer: String) throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers?$select=code", headers: [("Prefer", prefer)])
        #expect(a.status == 200)
        #expect(a.rows.count == 1, "\(prefer)")
        #expect(a.json?["@odata.nextLink"]?.stringValue?.hasSuffix("$skiptoken=1") == true, "\(prefer)")
    }

    @Test(arguments: ["continue-on-error", "odata.continue-on-error"])
    func continueOnError(prefer: String) throws {
        let c = try ODataClient()
        let body = """
        --b1\r
        Content-Type: application/http\r
        \r
        GET Nope HTTP/1.1\r
        \r
        --b1\r
        Content-Type: application/http\r
        \r
        GET Customers/$count HTTP/1.1\r
        \r
        --b1--\r

        """
        let a = c.send("POST", "/Shop/$batch", body: body, headers: [("Prefer", prefer)], contentType: "multipart/mixed; boundary=b1")
        #expect(a.status == 200)
        let statuses = a.text.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }.map { String($0.dropFirst(9).prefix(3)) }
        #expect(statuses == ["404", "200"], "\(prefer)")
    }

    @Test(arguments: ["application/json;metadata=none", "application/json;odata.metadata=none"])
    func metadataNone(accept: String) throws {
        let c = try ODataClient()
        let a = c.send("GET", "/Shop/Customers?$select=code&$top=1", headers: [("Accept", accept)])
        #expect(a.status == 200)
        let row = try #require(a.rows.first)
        #expect(row["@id"] == nil && row["@editLink"] == nil, "\(accept)")
        #expect(row["code"]?.stringValue == "ALFKI")
    }
}

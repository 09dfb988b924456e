import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A webhook read from the server (`Webhook.Get`, `Webhook.GetAll`) holds its `select` as field names, the names a
// caller gives ``FMODataWebhook/init(url:tableName:headers:queryHeaders:notifySchemaChanges:select:filter:maxFailedAttempts:)``:
// FileMaker echoes the list as it was sent, names that need them in double quotes (`"first_name",age`), and a quoted
// name may hold a comma. So a webhook read back can be added again as it is (FileMaker has no update: a changed
// webhook is deleted and added again), and what is sent is what was read.
@Suite("OData webhooks: a webhook read back can be added again")
struct AWebhookReadBackCanBeAddedAgainTests {
    static let stored = #"""
    {"webhookID":3,"tableName":"contacts","webhook":"https://hooks.example.com/in","headers":{},"notifySchemaChanges":false,
     "select":"\"first_name\", age,\"a,b\",\"Sales (2024)\"","filter":"age gt 3","pendingOperations":[]}
    """#

    /// Failed on main: `select` was `["\"first_name\"", "age", "\"a", "b\"", "\"Sales (2024)\""]`, and adding it
    /// again failed with -1002 before anything was sent.
    @Test func theSelectIsReadAsNamesAndSentBackAsItWas() async throws {
        let added = Locked<[String: Any]?>(nil)
        let setup = ODataHarness { request in
            let path = request.url?.path ?? ""
            if path.hasSuffix("Webhook.Get(3)") { return .json(200, Self.stored) }
            if path.hasSuffix("Webhook.Add") {
                let body = (try? JSONSerialization.jsonObject(with: request.httpBody ?? Data())) as? [String: Any]
                added.withLock { $0 = body }
                return .json(200, #"{"webhookResult":{"webhookID":4}}"#)
            }
            return nil
        }
        let hook = try await setup.odata.webhook(id: 3)
        #expect(hook.select == ["first_name", "age", "a,b", "Sales (2024)"])
        let id = try await setup.odata.addWebhook(hook)
        #expect(id == 4)
        let body = try #require(added.value)
        #expect(body["select"] as? String == #""first_name",age,"a,b","Sales (2024)""#)
        #expect(body["filter"] as? String == "age gt 3")
        #expect(body["tableName"] as? String == "contacts")
    }

    /// Plain names, an empty list and an unterminated quote (kept as it came, not lost).
    @Test(arguments: [
        ("name,age", ["name", "age"]),
        ("", []),
        (" name , age ", ["name", "age"]),
        (#""a""b",c"#, [#"a"b"#, "c"]),
        (#""open,x"#, [#""open"#, "x"]),
    ])
    func selectsAreSplitAtTheirOwnCommas(text: String, names: [String]) throws {
        let object: [String: Any] = ["webhookID": 1, "select": text]
        #expect(try FMODataWebhook(reading: object, status: 200).select == names)
    }
}

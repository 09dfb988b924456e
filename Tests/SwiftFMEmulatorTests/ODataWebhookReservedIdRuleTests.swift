// Contract: a webhook whose `select` (or `filter`) names a field `id` unquoted is created, but FileMaker
// cannot build its deliveries: each pending operation stays `NOT_SENT` with `lastErrorCode -1002` and
// `lastErrorMessage "Error: syntax error in URL at: 'id'"`, nothing reaches the endpoint, and it is retried
// (ODATA.md §9 and §3.3, hooks:DISCOVERINGS.md). Quoted, `"id"` is the field and deliveries are sent.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataWebhookReservedIdRuleTests {
    func pending(_ c: ODataClient, _ id: Int) -> [JSON] {
        c.send("GET", "/Shop/Webhook.Get(\(id))").json?["pendingOperations"]?.arrayValue ?? []
    }

    @Test(arguments: [#""select":"total,id""#, #""filter":"id gt 0""#])
    func bareIdFailsEveryDelivery(option: String) throws {
        let receiver = try WebhookReceiver()
        let c = try ODataClient()
        c.emulator.odataWebhookRetryInterval = 3600
        let add = c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"\#(receiver.url)","tableName":"Orders",\#(option)}"#)
        #expect(add.status == 200, "\(add.text)")
        #expect(c.send("POST", "/Shop/Orders", body: #"{"customer_code":"ZOE","total":3}"#).status == 201)
        let ops = pending(c, 1)
        #expect(ops.count == 1)
        #expect(ops.first?["operation"]?.stringValue == "ADD")
        #expect(ops.first?["status"]?.stringValue == "NOT_SENT")
        #expect(ops.first?["lastErrorCode"]?.numberText == "-1002")
        #expect(ops.first?["lastErrorMessage"]?.stringValue == "Error: syntax error in URL at: 'id'")
        #expect(ops.first?["sendAttempts"]?.numberText == "1")
    }

    @Test func quotedIdIsDelivered() throws {
        let receiver = try WebhookReceiver()
        let c = try ODataClient()
        let add = c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"\#(receiver.url)","tableName":"Orders","select":"total,\"id\""}"#)
        #expect(add.status == 200, "\(add.text)")
        #expect(c.send("POST", "/Shop/Orders", body: #"{"customer_code":"ZOE","total":3}"#).status == 201)
        let delivered = try #require(receiver.next())
        let row = try JSON.parse(delivered.body)["value"]?.arrayValue?.first
        #expect(row?["id"]?.numberText == "4")
    }

    @Test func withOneAttemptAllowedTheOperationIsDropped() throws {
        let c = try ODataClient()
        let add = c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"http://127.0.0.1:9/x","tableName":"Orders","select":"id","maxFailedAttempts":1}"#)
        #expect(add.status == 200, "\(add.text)")
        #expect(c.send("POST", "/Shop/Orders", body: #"{"customer_code":"ZOE","total":3}"#).status == 201)
        #expect(pending(c, 1).isEmpty)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

// OData webhooks: add, list, get and delete; deliveries for changes through either API reach a receiver on loopback,
// honouring filter, select and headers; a refused delivery is retried.

/// A loopback receiver for webhook deliveries: answers `failFirst` requests 500, then 200.
final class WebhookReceiver: HTTPHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var received: [HTTPRequest] = []
    private var failures: Int
    private let arrived = DispatchSemaphore(value: 0)
    private var server: HTTPServer?
    private(set) var url = ""

    init(failFirst: Int = 0) throws {
        failures = failFirst
        let server = HTTPServer(handler: self)
        self.server = server
        url = "http://127.0.0.1:\(try server.start())/hook"
    }

    deinit { server?.stop() }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        lock.lock()
        received.append(request)
        let fail = failures > 0
        if fail { failures -= 1 }
        lock.unlock()
        arrived.signal()
        return HTTPResponse(status: fail ? 500 : 200)
    }

    /// Waits for the next request (generous bound: the suite runs on a loaded machine).
    func next() -> HTTPRequest? {
        guard arrived.wait(timeout: .now() + 300) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return received.first.map { _ in received.removeFirst() }
    }
}

/// OData webhooks (ODATA.md §9): Add/Get/GetAll/Delete/Invoke, and deliveries that really reach a
/// receiver on loopback — on changes through OData and the Data API, honouring filter, select and
/// headers, retried after a refusal.
@Suite struct ODataWebhookTests {
    @Test func registerListDelete() throws {
        let c = try ODataClient()
        let add = c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"http://127.0.0.1:9/x","tableName":"Customers","select":"code","filter":"city eq 'Berlin'","maxFailedAttempts":3,"headers":{"X-A":"1"}}"#)
        #expect(add.status == 200 && add.json?["webhookResult"]?["webhookID"]?.numberText == "1")
        #expect(c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"http://127.0.0.1:9/y","tableName":"Orders"}"#)
            .json?["webhookResult"]?["webhookID"]?.numberText == "2")
        let one = c.send("GET", "/Shop/Webhook.Get(1)")
        #expect(one.json?["tableName"]?.stringValue == "Customers" && one.json?["filter"]?.stringValue == "city eq 'Berlin'")
        #expect(one.json?["headers"]?["X-A"]?.stringValue == "1" && one.json?["maxFailedAttempts"]?.numberText == "3")
        let all = c.send("GET", "/Shop/Webhook.GetAll")
        #expect(all.json?["status"]?.stringValue == "ACTIVE" && all.json?["webhooks"]?.arrayValue?.count == 2)
        #expect(c.send("POST", "/Shop/Webhook.Delete(1)").json?["webhookResult"]?["webhookID"]?.numberText == "1")
        let gone = c.send("GET", "/Shop/Webhook.Get(1)")
        #expect(gone.status == 404 && gone.odataCode == "-1061" && gone.odataMessage == "Specified WebHook not found")
        // IDs are recycled.
        #expect(c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"http://127.0.0.1:9/z","tableName":"Orders"}"#)
            .json?["webhookResult"]?["webhookID"]?.numberText == "1")
        for (body, code) in [(#"{"tableName":"Orders"}"#, "-1002"), (#"{"webhook":"ftp://x","tableName":"Orders"}"#, "-1002"),
                             (#"{"webhook":"http://127.0.0.1:9/","tableName":"Nope"}"#, "-1020"),
                             (#"{"webhook":"http://127.0.0.1:9/","tableName":"Orders","filter":"nope eq 1"}"#, "8309"),
                             (#"{"webhook":"http://127.0.0.1:9/","tableName":"Orders","select":"nope"}"#, "8309")] {
            #expect(c.send("POST", "/Shop/Webhook.Add", body: body).odataCode == code, "\(body)")
        }
    }

    @Test func changesThroughBothAPIsReachTheReceiver() throws {
        let receiver = try WebhookReceiver()
        let c = try ODataClient()
        let add = c.send("POST", "/Shop/Webhook.Add", body: #"""
            {"webhook":"\#(receiver.url)","tableName":"Customers","select":"code,name","filter":"city eq 'Berlin'",
             "endpointHeaders":{"X-Secret":"s3"}}
            """#)
        #expect(add.status == 200)
        // Not matching the filter: no delivery; the next delivery is the matching create.
        #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"PAR","city":"Paris"}"#).status == 201)
        #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"BER","name":"Ber'lin","city":"Berlin"}"#).status == 201)
        let created = try #require(receiver.next())
        #expect(created.method == "POST" && created.target == "/hook")
        #expect(created.header("X-Secret") == "s3")
        let payload = try #require(try? JSON.parse(created.body))
        #expect(payload["@odata.context"]?.stringValue == #"fmi/odata/v4/Shop/$metadata#Customers("code","name")"#)
        let row = try #require(payload["value"]?.arrayValue?.first)
        #expect(row.objectPairs?.map(\.0) == ["@odata.editLink", "@odata.id", "code", "name"])
        #expect(row["code"]?.stringValue == "BER" && row["name"]?.stringValue == "Ber'lin")
        #expect(row["@odata.id"]?.stringValue == "fmi/odata/v4/Shop/Customers('BER')")

        // A Data API edit of a matching record.
        try c.harness.login()
        let found = c.harness.send("POST", "\(c.harness.base)/layouts/Customers/_find", body: #"{"query":[{"code":"==BER"}]}"#)
        let id = try #require(found.data.first?["recordId"]?.stringValue)
        #expect(c.harness.send("PATCH", "\(c.harness.base)/layouts/Customers/records/\(id)", body: #"{"fieldData":{"name":"Renamed"}}"#).status == 200)
        let updated = try #require(receiver.next())
        #expect((try? JSON.parse(updated.body))?["value"]?.arrayValue?.first?["name"]?.stringValue == "Renamed")

        // A filtered OData delete of both Berlin customers: one delivery with both rows.
        #expect(c.send("DELETE", "/Shop/Customers?$filter=city%20eq%20'Berlin'").header("fmodata.affected_rows") == "3")
        let deleted = try #require(receiver.next())
        #expect((try? JSON.parse(deleted.body))?["value"]?.arrayValue?.compactMap { $0["code"]?.stringValue }.sorted() == ["ALFKI", "BER", "NUL"])

        // Invoke: the answer is the payload, and it is delivered too.
        let invoked = c.send("POST", "/Shop/Webhook.Invoke(1)", body: #"{"rowIDs":[2]}"#)
        #expect(invoked.status == 200)
        #expect(invoked.json?["value"]?.arrayValue?.compactMap { $0["code"]?.stringValue } == ["OBR"])
        let delivered = try #require(receiver.next())
        #expect(delivered.body == invoked.body)
        #expect(c.send("POST", "/Shop/Webhook.Invoke(1)").status == 400)
        #expect(c.send("POST", "/Shop/Webhook.Invoke(7)", body: #"{"rowIDs":[]}"#).odataCode == "-1061")
    }

    @Test func refusedDeliveriesAreRetried() throws {
        let receiver = try WebhookReceiver(failFirst: 2)
        let c = try ODataClient()
        c.emulator.odataWebhookRetryInterval = 0.01
        #expect(c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"\#(receiver.url)","tableName":"Orders"}"#).status == 200)
        #expect(c.send("PATCH", "/Shop/Orders(1)", body: #"{"total":11}"#).status == 204)
        let attempts = [receiver.next(), receiver.next(), receiver.next()]
        #expect(attempts.allSatisfy { $0 != nil })
        #expect(Set(attempts.compactMap { $0?.body }).count == 1)
        #expect((try? JSON.parse(attempts[2]?.body ?? Data()))?["value"]?.arrayValue?.first?["total"]?.numberText == "11")
        // A rolled-back change set fires nothing: the next delivery is the later, committed change.
        let batch = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nPATCH Orders(2) HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"total\":1}\r\n--c\r\nContent-Type: application/http\r\n\r\nPATCH Orders(99) HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"total\":1}\r\n--c--\r\n--b--\r\n"
        #expect(c.send("POST", "/Shop/$batch", body: batch, contentType: "multipart/mixed; boundary=b").text.contains("HTTP/1.1 404"))
        #expect(c.send("PATCH", "/Shop/Orders(3)", body: #"{"total":33}"#).status == 204)
        let next = try #require(receiver.next())
        #expect((try? JSON.parse(next.body))?["value"]?.arrayValue?.first?["total"]?.numberText == "33")
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Webhooks end to end through `FMOData`: added with a filter and a select, fired by changes through both
/// the Data API and OData, delivered to a loopback receiver once per matching change with the selected
/// fields, retried up to `maxFailedAttempts`, listed, read, invoked and deleted through the client.
/// Every wait is on the receiver's next request, with a generous bound.
@Suite struct ODataWebhookEndToEndTests {
    private func withShop<T>(_ body: (FMOData, DataAPI, Emulator) async throws -> T) async throws -> T {
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: odataConfiguration(url))
        return try await body(FMOData(sharing: api), api, emulator)
    }

    /// The delivered rows' fields, annotations left out.
    private func fields(_ request: HTTPRequest?) -> [[String: String]] {
        (request?.hookRows ?? []).map { row in
            var out: [String: String] = [:]
            for (key, value) in row where !key.hasPrefix("@") { out[key] = value is NSNull ? "<null>" : "\(value)" }
            return out
        }
    }

    @Test func changesThroughBothAPIsReachTheReceiverOncePerMatchingChange() async throws {
        let receiver = try ODataHookReceiver()
        defer { receiver.stop() }
        try await withShop { odata, api, _ in
            let hook = FMODataWebhook(url: receiver.url, tableName: "Customers", headers: ["X-Hook-Secret": "s3"],
                                      select: ["code", "name"], filter: .eq("city", "Berlin"))
            let (added, addCode) = await odataOnce(odata) { done in odata.addWebhook(hook) { done($0, $1) } }
            #expect(addCode == "0")
            let id = try #require(added)

            // Listed and read back through the client.
            let (listed, listCode) = await odataOnce(odata) { done in odata.webhooks { done($0, $1) } }
            #expect(listCode == "0" && listed?.map(\.id) == [id])
            let stored = try await odata.webhook(id: id)
            #expect(stored.url == receiver.url && stored.tableName == "Customers")
            #expect(stored.select == ["code", "name"] && stored.headers["X-Hook-Secret"] == "s3")
            #expect(stored.filter == .raw("city eq 'Berlin'"))
            #expect(stored.pendingOperations.isEmpty)

            // OData: a create outside the filter sends nothing; the next delivery is the matching create,
            // with only the selected fields and the endpoint headers.
            _ = try await odata.createRecord(in: "Customers", fields: ["code": "PAR", "name": "Paris", "city": "Paris"])
            _ = try await odata.createRecord(in: "Customers", fields: ["code": "BER", "name": "Ber'lin", "city": "Berlin", "score": 9])
            let created = await receiver.next()
            #expect(created?.method == "POST" && created?.target == "/hook")
            #expect(created?.header("X-Hook-Secret") == "s3")
            #expect(created?.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(fields(created) == [["code": "BER", "name": "Ber'lin"]])

            // The Data API: a create and an edit inside the filter, an edit outside it.
            let viaDataAPI = try await api.createRecord(layout: "Customers", fieldData: ["code": "DAPI", "name": "Data API", "city": "Berlin"])
            #expect(fields(await receiver.next()) == [["code": "DAPI", "name": "Data API"]])
            let paris = try #require(try await api.find(layout: "Customers", payload: ["query": [["code": "==PAR"]]]).records.first?["recordId"] as? String)
            _ = try await api.editRecord(layout: "Customers", recordId: try #require(Int(paris)), fieldData: ["name": "Still Paris"])
            let berlin = try #require(try await api.find(layout: "Customers", payload: ["query": [["code": "==BER"]]]).records.first?["recordId"] as? String)
            _ = try await api.editRecord(layout: "Customers", recordId: try #require(Int(berlin)), fieldData: ["name": "Renamed"])
            #expect(fields(await receiver.next()) == [["code": "BER", "name": "Renamed"]])

            // OData: an update inside the filter, then a delete (callback surface).
            #expect(try await odata.updateRecord(in: "Customers", key: "ALFKI", fields: ["name": "Alfreds II"]) == 1)
            #expect(fields(await receiver.next()) == [["code": "ALFKI", "name": "Alfreds II"]])
            let (deleted, deleteCode) = await odataOnce(odata) { done in odata.deleteRecord(in: "Customers", key: "DAPI") { done($0, $1) } }
            #expect(deleteCode == "0" && deleted == 1)
            #expect(fields(await receiver.next()) == [["code": "DAPI", "name": "Data API"]])

            // The Data API deletes one record outside the filter and one inside it.
            _ = try await api.deleteRecord(layout: "Customers", recordId: try #require(Int(paris)))
            _ = try await api.deleteRecord(layout: "Customers", recordId: try #require(Int(berlin)))
            #expect(fields(await receiver.next()) == [["code": "BER", "name": "Renamed"]])
            #expect(viaDataAPI.recordId != paris)

            // Invoke through the client: the answer is the payload, and it is delivered too.
            let invoked = try await odata.invokeWebhook(id: id, rowIDs: [1])
            #expect((invoked["value"] as? [[String: Any]])?.compactMap { $0["code"] as? String } == ["ALFKI"])
            let delivered = await receiver.next()
            #expect(fields(delivered) == [["code": "ALFKI", "name": "Alfreds II"]])

            // Exactly one POST per matching change: six changes and one Invoke.
            #expect(receiver.received.map(\.hookCodes) == [["BER"], ["DAPI"], ["BER"], ["ALFKI"], ["DAPI"], ["BER"], ["ALFKI"]])

            // Deleted through the client (callback surface): gone from the list, unknown to Get.
            let (removed, removeCode) = await odataOnce(odata) { done in odata.deleteWebhook(id: id) { done($0, $1) } }
            #expect(removeCode == "0" && removed == id)
            #expect(try await odata.webhooks().isEmpty)
            let (missing, missingCode) = await odataOnce(odata) { done in odata.webhook(id: id) { done($0, $1) } }
            #expect(missing == nil && missingCode == "-1061")
        }
    }

    @Test func aRefusingReceiverIsRetriedUpToMaxFailedAttempts() async throws {
        // Refuses every delivery of the record FAIL, takes the others.
        let receiver = try ODataHookReceiver(refuse: { $0.hookCodes == ["FAIL"] })
        defer { receiver.stop() }
        try await withShop { odata, api, emulator in
            emulator.odataWebhookRetryInterval = 0.05
            let id = try await odata.addWebhook(FMODataWebhook(url: receiver.url, tableName: "Customers", select: ["code"],
                                                               maxFailedAttempts: 3))
            #expect(try await odata.webhook(id: id).maxFailedAttempts == 3)

            _ = try await odata.createRecord(in: "Customers", fields: ["code": "FAIL", "city": "Oslo"])
            for attempt in 1...3 {
                let request = await receiver.next()
                #expect(request?.hookCodes == ["FAIL"], "attempt \(attempt)")
            }
            // After three refusals FileMaker gives up: a later change is delivered, and the refused change is no
            // longer retried (a delivery's outcome is recorded after its answer, so an operation may still show
            // while its last answer is on the way; the refused one never with three attempts or more).
            _ = try await api.createRecord(layout: "Customers", fieldData: ["code": "OK1", "city": "Rome"])
            #expect(await receiver.next()?.hookCodes == ["OK1"])
            let found = try await api.find(layout: "Customers", payload: ["query": [["code": "==FAIL"]]])
            let failing = try #require((found.records.first?["recordId"] as? String).flatMap { Int($0) })
            let hook = try await odata.webhook(id: id)
            #expect(!hook.pendingOperations.contains { $0.rowIDs == [failing] && $0.sendAttempts >= 3 }, "\(hook.pendingOperations)")
            #expect(receiver.received.map(\.hookCodes) == [["FAIL"], ["FAIL"], ["FAIL"], ["OK1"]])
        }
    }
}

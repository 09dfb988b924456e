import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: FMOData.createRecord answers the new record with the address FileMaker gave it (`@odata.id`, `@odata.editLink`, whichever spelling the server used),
// so a record created in a table without a key (addressed by ROWID) can be read, changed and deleted afterwards.

@Suite("A record created through OData keeps its address")
struct ODataCreatedRecordAddressTests {
    /// The number inside the trailing `(…)` of an OData entity id (`…/Artists(14)`).
    private func rowID(in entityID: String) -> Int? {
        guard entityID.hasSuffix(")"), let open = entityID.lastIndex(of: "(") else { return nil }
        return Int(entityID[entityID.index(after: open)..<entityID.index(before: entityID.endIndex)])
    }

    @Test("async: the @odata.id of a record created in a keyless table addresses it")
    func createdRecordAddressAsync() async throws {
        let emulator = Emulator()   // the demo's Artists has no key: records are addressed by ROWID
        let base = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: FMConfiguration(host: base.absoluteString, database: emulator.database,
                                                           username: "admin", password: "admin"))
        let created = try await odata.createRecord(in: "Artists", fields: ["name": "Nina Simone"])
        #expect(created["name"] as? String == "Nina Simone")
        let entityID = try #require(created["@odata.id"] as? String)
        #expect(created["@odata.editLink"] as? String == entityID)
        let row = try #require(rowID(in: entityID))

        try await odata.updateRecord(in: "Artists", key: .rowID(row), fields: ["city": "Tryon"])
        let back = try await odata.record(from: "Artists", key: .rowID(row))
        #expect(back["name"] as? String == "Nina Simone")
        #expect(back["city"] as? String == "Tryon")
    }

    @Test("callback: the created record carries its @odata.id too")
    func createdRecordAddressCallback() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: FMConfiguration(host: base.absoluteString, database: emulator.database,
                                                           username: "admin", password: "admin"))
        let (entityID, code): (String?, String) = await withCheckedContinuation { done in
            odata.createRecord(in: "Artists", fields: ["name": "Odetta"]) { record, code in
                done.resume(returning: (record?["@odata.id"] as? String, code))
            }
        }
        #expect(code == "0")
        let id = try #require(entityID)
        let row = try #require(rowID(in: id))
        #expect(try await odata.record(from: "Artists", key: .rowID(row))["name"] as? String == "Odetta")
    }
}

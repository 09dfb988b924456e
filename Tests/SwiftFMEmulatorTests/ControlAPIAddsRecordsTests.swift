import Foundation
import Testing
@testable import SwiftFMEmulator

// `POST /v1/tables/{table}/records` with `{"fieldData": {…}}` adds a record as `Emulator.addRecord(toTable:_:)` does
// (no session, auto-enter and validation apply; values are strings or numbers) and answers its `recordId`, so a test
// suite in any language can seed records after a reset without logging in. An unknown table is 404; a rejected record,
// an unknown key or a value that is neither string nor number is 400 naming why.

@Suite("The control API adds records to a table, as addRecord does")
struct ControlAPIAddsRecordsTests {
    @Test("A record is added with its auto-enter values and read back; reset drops it")
    func addsRecord() throws {
        let c = try ControlledEmulator()
        let added = try c.control("POST", "/v1/tables/Contacts/records", #"{"fieldData": {"name": "Seeded", "id": 42, "date": "05/15/1948"}}"#)
        #expect(added.status == 200, "\(added.json)")
        let recordId = try #require(added.json["recordId"] as? Int)
        #expect(added.json["table"] as? String == "Contacts")
        #expect(c.emulator.recordCount(inTable: "Contacts") == 5)
        let records = try #require(try c.control("GET", "/v1/tables/Contacts/records").json["records"] as? [[String: Any]])
        let record = try #require(records.last)
        #expect(record["name"] as? String == "Seeded")
        #expect(record["id"] as? Int == 42)
        #expect(record["required"] as? String == "x")   // auto-enter applied
        #expect(records.count == 5)
        #expect(recordId > 0)
        #expect(try c.control("POST", "/v1/reset").status == 200)
        #expect(c.emulator.recordCount(inTable: "Contacts") == 4)
    }

    @Test("An unknown table is 404; a rejected record, an unknown key or a bad value is 400", arguments: [
        ("/v1/tables/Nope/records", #"{"fieldData": {"name": "x"}}"#, 404),
        ("/v1/tables/Contacts/records", #"{"fieldData": {"nope": "x"}}"#, 400),
        ("/v1/tables/Contacts/records", #"{"fieldData": {"date": "not a date"}}"#, 400),
        ("/v1/tables/Contacts/records", #"{"fieldData": {"name": true}}"#, 400),
        ("/v1/tables/Contacts/records", #"{"fieldData": {"name": ["x"]}}"#, 400),
        ("/v1/tables/Contacts/records", #"{"fieldData": "x"}"#, 400),
        ("/v1/tables/Contacts/records", #"{"fielddata": {"name": "x"}}"#, 400),
    ])
    func refusals(path: String, body: String, status: Int) throws {
        let c = try ControlledEmulator()
        let answer = try c.control("POST", path, body)
        #expect(answer.status == status, "\(answer.json)")
        #expect((answer.json["error"] as? String)?.isEmpty == false)
        #expect(c.emulator.recordCount(inTable: "Contacts") == 4)
    }
}

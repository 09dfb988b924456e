import Foundation
import Testing
@testable import SwiftFMEmulator

/// What a request does after the emulator's state lock is released (a find matching on a snapshot, a `$batch` part
/// by part, an OData `$filter` on a snapshot) answers as it would under the lock, whatever other clients do meanwhile
/// (attack12).
@Suite struct LockReleaseAttackTests {
    /// The emulator, with its clock in the middle of `year`.
    func emulator(clockIn year: Int) throws -> Emulator {
        var parts = DateComponents()
        parts.year = year
        parts.month = 6
        parts.day = 1
        parts.hour = 12
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let now = try #require(calendar.date(from: parts))
        return Emulator(schema: try EmulatorSchema(jsonData: Data(contactsSchemaJSON.utf8)), now: { now })
    }

    /// A two-digit year in a find's criterion is read relative to the emulator's clock, as it is when the record is
    /// written, also when the find matches after the lock is released (with or without scripts). Before, the matching
    /// read it relative to the machine's clock: in 2015, `2/3/46` is stored as 1946, and a find for it looked for 2046
    /// and answered 401.
    @Test(arguments: ["", #","script":"Echo","script.param":"x""#, #","script.prerequest":"Echo""#])
    func aFindReadsTwoDigitYearsOnTheEmulatorsClock(scripts: String) throws {
        let h = try Harness(emulator: emulator(clockIn: 2015), db: "Contacts")
        try h.login()
        let created = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"Y","date":"2/3/46"}}"#)
        #expect(created.status == 200)
        let id = try #require(created.response["recordId"]?.stringValue)
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil).data.first?["fieldData"]?["date"]?.stringValue == "02/03/1946")
        let found = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"date":"2/3/46"}]"# + scripts + "}")
        #expect(found.status == 200, "\(String(decoding: found.body, as: UTF8.self))")
        #expect(found.data.compactMap { $0["recordId"]?.stringValue } == [id])
        // A range too.
        let range = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"date":"1/1/46...12/31/46"}]"# + scripts + "}")
        #expect(range.data.compactMap { $0["recordId"]?.stringValue } == [id])
    }

    /// Sends a `$batch` (boundary `b1`, LF lines made CRLF).
    func batch(_ c: ODataClient, _ body: String) -> Answer {
        c.send("POST", "/Shop/$batch", body: body.replacingOccurrences(of: "\n", with: "\r\n"), contentType: "multipart/mixed; boundary=b1")
    }

    /// A change set is all or nothing for schema changes too: one whose last request fails leaves no table created
    /// and no field added. Before, the tables were rolled back but not the schema they are rebuilt from: after a
    /// reset the table and the field rolled back were there.
    @Test func aChangeSetRolledBackLeavesNoSchemaChange() throws {
        let c = try ODataClient()
        let metadata = c.send("GET", "/Shop/$metadata").text
        let body = """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        POST FileMaker_Tables HTTP/1.1
        Content-Type: application/json

        {"tableName":"Company","fields":[{"name":"Company ID","type":"int","primary":true},{"name":"Name","type":"varchar(20)"}]}
        --cs1
        Content-Type: application/http

        PATCH FileMaker_Tables/Customers HTTP/1.1
        Content-Type: application/json

        {"fields":[{"name":"Extra","type":"varchar(20)"}]}
        --cs1
        Content-Type: application/http

        POST Company HTTP/1.1
        Content-Type: application/json

        {"Company ID":1,"Name":"Acme"}
        --cs1
        Content-Type: application/http

        POST Customers HTTP/1.1
        Content-Type: application/json

        {"code":"ALFKI","name":"Twice"}
        --cs1--
        --b1--
        """
        let a = batch(c, body)
        #expect(a.status == 200, "\(a.text)")
        #expect(a.text.contains("HTTP/1.1 400") || a.text.contains("HTTP/1.1 409") || a.text.contains("HTTP/1.1 500"), "\(a.text)")
        #expect(!a.text.contains("HTTP/1.1 201"), "\(a.text)")
        // Nothing of the change set is left: the schema is as it was.
        #expect(c.send("GET", "/Shop/FileMaker_Tables").rows.compactMap { $0["TableName"]?.stringValue } == ["Customers", "Orders"])
        #expect(c.send("GET", "/Shop/$metadata").text == metadata)
        #expect(c.send("GET", "/Shop/Company").status == 404)
        #expect(c.send("GET", "/Shop/Customers?$select=Extra").status == 400)
        // Nor after a reset, which rebuilds the records from the schema.
        c.emulator.reset()
        #expect(c.send("GET", "/Shop/FileMaker_Tables").rows.compactMap { $0["TableName"]?.stringValue } == ["Customers", "Orders"])
        #expect(c.send("GET", "/Shop/$metadata").text == metadata)
        #expect(c.send("GET", "/Shop/Company").status == 404)
        // The same changes alone succeed.
        #expect(c.send("POST", "/Shop/FileMaker_Tables", body: #"{"tableName":"Company","fields":[{"name":"Company ID","type":"int","primary":true},{"name":"Name","type":"varchar(20)"}]}"#).status == 200)
        #expect(c.send("PATCH", "/Shop/FileMaker_Tables/Customers", body: #"{"fields":[{"name":"Extra","type":"varchar(20)"}]}"#).status == 200)
        #expect(c.send("POST", "/Shop/Company", body: #"{"Company ID":1,"Name":"Acme"}"#).status == 201)
    }
}

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
}

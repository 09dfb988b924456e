import Foundation
import Testing
@testable import SwiftFMEmulator

/// Where the emulator once differed from FileMaker Server, it now behaves as the server does. Each test names the FileMaker behaviour
/// and where it is documented or observed.
@Suite struct FileMakerBehaviourTests {
    /// `Go to Record/Request/Page [Next; Exit after last]` past the last record fails with 101 "Record is
    /// missing" and leaves the loop; 101 stays the script's last error, which the Data API answers as
    /// `scriptError`. Source: python-fmdata's integration suite, run against FileMaker Server, expects
    /// `"101"` after such a loop (WIRE.md §2, §17).
    @Test func exitAfterLastEndsTheScriptWithError101() throws {
        let h = try leagueHarness()
        let answer = h.send("GET", "\(h.base)/layouts/Players/script/Bonus%20All", contentType: nil)
        #expect(answer.code == "0")
        #expect(answer.response["scriptResult"]?.stringValue == String(h.emulator.recordCount(inTable: "Players")),
                "the loop still visits every record")
        #expect(answer.response["scriptError"]?.stringValue == "101")
    }

    /// Two-digit years become four-digit years within the next 30 years or the preceding 70 of the year
    /// the date is entered in. Source: Claris FileMaker Pro Help, "Entering dates with two-digit years"
    /// (its table: in 2019, 47 → 2047 and 50 → 1950; in 2030, 50 → 2050 and 76 → 1976).
    @Test(arguments: [(2019, "47", "2047"), (2019, "50", "1950"), (2030, "50", "2050"), (2030, "76", "1976"),
                      (2015, "45", "2045"), (2015, "46", "1946"), (2015, "02", "2002")])
    func twoDigitYearsFollowClarisWindow(enteredIn year: Int, written: String, stored: String) throws {
        let h = try Harness(emulator: contactsEmulator(clockIn: year), db: "Contacts")
        try h.login()
        let created = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"Y","date":"2/3/\#(written)"}}"#)
        #expect(created.status == 200)
        let id = try #require(created.response["recordId"]?.stringValue)
        let read = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        #expect(read.data.first?["fieldData"]?["date"]?.stringValue == "02/03/\(stored)")
    }

    @Test func theWindowRuleItself() {
        #expect(FMValue.fourDigitYear(45, enteredIn: 2015) == 2045)
        #expect(FMValue.fourDigitYear(46, enteredIn: 2015) == 1946)
        #expect(FMValue.fourDigitYear(0, enteredIn: 2026) == 2000)
        #expect(FMValue.fourDigitYear(56, enteredIn: 2026) == 2056)
        #expect(FMValue.fourDigitYear(57, enteredIn: 2026) == 1957)
    }

    /// `PATCH /globals` takes fully qualified names only. Source: Claris FileMaker Data API Guide, "Set
    /// global field values" ("you must use the fully qualified field name, table-name::field-name"); the
    /// error for a bare name is not documented: 102 "Field is missing" (WIRE.md §11's default).
    @Test func globalsNeedQualifiedNames() throws {
        let h = try Harness()
        try h.login()
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"g_note_id":1}}"#).code == "102")
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":1}}"#).code == "0")
    }

    /// A global field cannot be used to find records. Source: Claris FileMaker Pro Help, "Defining global
    /// fields" ("You can't use a global field to find records"). Its criterion is no criterion, so a find
    /// on global fields alone is an empty find request: 400 "Find criteria are empty"; beside another
    /// criterion it is ignored.
    @Test func aFindOnAGlobalFieldIsAnEmptyFind() throws {
        let h = try Harness()
        try h.login()
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":7}}"#).code == "0")
        let alone = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"g_note_id":"7"}]}"#)
        #expect(alone.code == "400")
        let beside = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"g_note_id":"999","name":"David"}]}"#)
        #expect(beside.code == "0")
        #expect(beside.data.count == 1)
    }

    /// Numbers: a JSON number in a request is read as binary64 ("the FileMaker Data API treats numeric
    /// data values as if they were in double-precision floating-point format (binary64)": Claris FileMaker
    /// Data API Guide, "URL and data format notes"); a number sent as a string keeps every digit; answers
    /// write the stored number digit for digit (the Data API returns 58-digit `Get(UUIDNumber)` values
    /// whole: Luidog/node-red-contrib-filemaker#61, Luidog/fms-api-client#131). Docs/FILEMAKER-BEHAVIOUR.md.
    @Test func jsonNumbersInRequestsAreBinary64() throws {
        let h = try Harness()
        try h.login()
        let viaNumber = try h.create(#"{"name":"n","id":12345678901234567890}"#)
        let viaString = try h.create(#"{"name":"s","id":"12345678901234567890"}"#)
        let viaLong = try h.create(#"{"name":"l","id":0.1000000000000000055511151231257827}"#)
        func raw(_ id: String) -> String {
            String(decoding: h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil).body, as: UTF8.self)
        }
        #expect(raw(viaNumber).contains(#""id":12345678901234567000"#))
        #expect(raw(viaString).contains(#""id":12345678901234567890"#))
        #expect(raw(viaLong).contains(#""id":0.1,"#))
    }

    /// `"TO::field.<recordId>"` in `fieldData` edits that portal row (Claris, FileMaker Data API Guide,
    /// "URL and data format notes": the `tablename::related-field(repetition).recordId` syntax is still
    /// supported). A record that is not one of the portal's rows is 101, as with `portalData`.
    @Test func theOlderPortalRowWriteForm() throws {
        let h = try Harness()
        try h.login()
        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"Notes::note.2":"changed","name":"Jo"}}"#)
        #expect(edit.code == "0")
        let read = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        let rows = read.data.first?["portalData"]?["notes"]?.arrayValue ?? []
        #expect(rows.first { $0["recordId"]?.stringValue == "2" }?["Notes::note"]?.stringValue == "changed")
        #expect(read.data.first?["fieldData"]?["name"]?.stringValue == "Jo")
        // Note 4 belongs to contact 2, not to this record's portal.
        let other = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"Notes::note(1).4":"x"}}"#)
        #expect(other.code == "101")
    }

    /// A range read of a layout whose table has no records answers HTTP 500 with 101 "Record is missing"
    /// (python-fmrest#4, 2018, and #85, 2026, both against FileMaker Server, with the default `_offset=1`);
    /// an offset past the end of a non-empty table stays 401, what python-fmdata's `get_records_paginated`
    /// (tested against FileMaker Server) waits for to end a walk (Docs/FILEMAKER-BEHAVIOUR.md).
    @Test func aRangeReadOfAnEmptyTableIs101() throws {
        let h = try Harness()
        try h.login()
        let empty = h.send("GET", "\(h.base)/layouts/NotesList/records", contentType: nil)
        #expect(empty.code == "0")
        for id in 1...4 { #expect(h.send("DELETE", "\(h.base)/layouts/NotesList/records/\(id)", contentType: nil).code == "0") }
        let none = h.send("GET", "\(h.base)/layouts/NotesList/records?_offset=1", contentType: nil)
        #expect(none.status == 500)
        #expect(none.code == "101")
        #expect(none.message == "Record is missing")
        let past = h.send("GET", "\(h.base)/layouts/Contacts/records?_offset=99", contentType: nil)
        #expect(past.code == "401")
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

// The emulator keeps records as FileMaker does: serials and record ids never reused, `modId` one up per edit, typed
// values and empty numbers, validation codes, date formats, range defaults (100), sorts, duplicates, portal rows
// (edit, create, stale `modId`, paging), globals per session, related fields on the layout.

@Suite struct RecordTests {
    func field(_ a: Answer, _ name: String) -> JSON? { a.data.first?["fieldData"]?[name] }

    @Test func serialsAndRecordIdsAreNeverReused() throws {
        let h = try Harness()
        try h.login()
        let id5 = try h.create(#"{"name":"E"}"#)
        #expect(id5 == "5")
        #expect(field(h.send("GET", "\(h.base)/layouts/Contacts/records/5", contentType: nil), "serial") == .number(5))
        #expect(h.send("DELETE", "\(h.base)/layouts/Contacts/records/5", contentType: nil).status == 200)
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/5", contentType: nil).code == "101")
        let id6 = try h.create(#"{"name":"F"}"#)
        #expect(id6 == "6")
        #expect(field(h.send("GET", "\(h.base)/layouts/Contacts/records/6", contentType: nil), "serial") == .number(6))
        #expect(h.send("DELETE", "\(h.base)/layouts/Contacts/records/5", contentType: nil).code == "101")
    }

    @Test func modIdIncrementsByOnePerEdit() throws {
        let h = try Harness()
        try h.login()
        for expected in 1...3 {
            let a = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"drink":"Tea \#(expected)"}}"#)
            #expect(a.response["modId"]?.stringValue == String(expected))
        }
        // An empty fieldData leaves the record untouched.
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{}}"#).response["modId"]?.stringValue == "3")
    }

    @Test func typedValuesAndEmptyNumbers() throws {
        let h = try Harness()
        try h.login()
        let id = try h.create(#"{"name":"T","id":"667","time":"9:15:55 PM","stamp":"2/3/2024 08:09:10","phones(2)":"555"}"#)
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        #expect(field(a, "id") == .number(667))
        #expect(field(a, "time")?.stringValue == "21:15:55")
        #expect(field(a, "stamp")?.stringValue == "02/03/2024 08:09:10")
        #expect(field(a, "phones")?.stringValue == "")
        #expect(field(a, "phones(2)")?.stringValue == "555")
        #expect(field(a, "phones(3)")?.stringValue == "")
        #expect(field(a, "portrait")?.stringValue == "")
        #expect(field(a, "required")?.stringValue == "x")
        let d = h.send("GET", "\(h.base)/layouts/Contacts/records/4", contentType: nil)
        #expect(field(d, "date")?.stringValue == "")
        // Fields not on the layout are not returned.
        #expect(field(d, "secret") == nil)
        let dec = try h.create(#"{"name":"D","id":5.25}"#)
        #expect(field(h.send("GET", "\(h.base)/layouts/Contacts/records/\(dec)", contentType: nil), "id") == .number(5.25))
    }

    @Test func validationCodes() throws {
        let h = try Harness()
        try h.login()
        let cases: [(String, String)] = [
            (#"{"date":"2022-02-22"}"#, "500"),
            (#"{"date":"02/30/2022"}"#, "500"),
            (#"{"time":"25:99"}"#, "501"),
            (#"{"time":"99999999999999999:00"}"#, "501"),
            (#"{"id":1e400}"#, "502"),
            (#"{"required":""}"#, "509"),
            (#"{"phones(4)":"x"}"#, "111"),
            (#"{"secret":"x"}"#, "102"),
            (#"{"Notes::note":"x"}"#, "102"),
            (#"{"name":["a"]}"#, "1708"),
            (#"{"portrait":"x"}"#, "201"),
        ]
        for (body, code) in cases {
            let a = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":\#(body)}"#)
            #expect(a.code == code, "\(body)")
            #expect(a.isEmptyResponse)
        }
        // A failed create does not consume a record id.
        #expect(try h.create(#"{"name":"ok"}"#) == "5")
        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"required":""}}"#)
        #expect(edit.code == "509")
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil).data.first?["modId"]?.stringValue == "0")
        let noFieldData = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{}"#)
        #expect(noFieldData.status == 400)
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":"#).code == "1708")
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/records", body: "{}", contentType: nil).status == 415)
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{}}"#, contentType: "application/json; charset=utf-8").status == 200)
    }

    @Test func dateFormats() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/records",
                       body: #"{"fieldData":{"name":"iso","date":"2023-04-05","stamp":"2023-04-05T06:07:08"},"dateformats":2}"#)
        let id = try #require(a.response["recordId"]?.stringValue)
        let us = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        #expect(field(us, "date")?.stringValue == "04/05/2023")
        #expect(field(us, "stamp")?.stringValue == "04/05/2023 06:07:08")
        let iso = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)?dateformats=2", contentType: nil)
        #expect(field(iso, "date")?.stringValue == "2023-04-05")
        #expect(field(iso, "stamp")?.stringValue == "2023-04-05T06:07:08")
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)?dateformats=7", contentType: nil).code == "1708")
    }

    @Test func layoutResponseAndRangeDefaults() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records?layout.response=Slim", contentType: nil)
        #expect(a.status == 200)
        #expect(a.data.count == 4)
        #expect(a.data.first?["fieldData"]?.objectPairs?.map(\.0) == ["name"])
        #expect(a.data.first?["portalData"] == .object([]))
        #expect(a.data.first?["portalDataInfo"] == nil)
        #expect(a.response["dataInfo"]?["layout"]?.stringValue == "Slim")
        #expect(a.response["dataInfo"]?["totalRecordCount"] == .number(4))
        // Unsorted = creation order.
        #expect(a.data.compactMap { $0["recordId"]?.stringValue } == ["1", "2", "3", "4"])
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records?layout.response=NotesList", contentType: nil).code == "1708")
        // Offset past the end and empty tables answer 401.
        let past = h.send("GET", "\(h.base)/layouts/Contacts/records?_offset=5", contentType: nil)
        #expect(past.status == 500)
        #expect(past.code == "401")
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records?_limit=abc", contentType: nil).status == 400)
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records?_sort=notjson", contentType: nil).code == "1708")
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records?_sort=%5B%7B%22fieldName%22%3A%22nope%22%7D%5D", contentType: nil).code == "102")
    }

    @Test func defaultLimitIs100() throws {
        let h = try Harness()
        try h.login()
        for i in 0..<120 { _ = try h.emulator.addRecord(toTable: "Contacts", ["name": "n\(i)"]) }
        let a = h.send("GET", "\(h.base)/layouts/Slim/records", contentType: nil)
        #expect(a.data.count == 100)
        #expect(a.response["dataInfo"]?["foundCount"] == .number(124))
    }

    @Test func sortByValueListAndMultipleFields() throws {
        let h = try Harness()
        try h.login()
        let sort = percentEncoded(#"[{"fieldName":"drink","sortOrder":"Drinks"},{"fieldName":"name","sortOrder":"descend"}]"#)
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records?_sort=\(sort)", contentType: nil)
        #expect(a.data.compactMap { $0["fieldData"]?["name"]?.stringValue } == ["John Smith", "David", "John Doe", "Joe Example"])
    }

    @Test func duplicate() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/records/2", body: nil, contentType: nil)
        #expect(a.status == 200)
        #expect(a.response == .object([("recordId", .string("5")), ("modId", .string("0"))]))
        let g = h.send("GET", "\(h.base)/layouts/Contacts/records/5", contentType: nil)
        #expect(field(g, "name")?.stringValue == "John Smith")
        #expect(field(g, "serial") == .number(5))
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/records/99", body: "{}").code == "101")
    }

    @Test func portalRowsEditCreateAndStaleModId() throws {
        let h = try Harness()
        try h.login()
        let created = h.send("POST", "\(h.base)/layouts/Contacts/records",
                             body: #"{"fieldData":{"name":"P"},"portalData":{"notes":[{"Notes::note":"a"},{"Notes::note":"b"}]}}"#)
        #expect(created.status == 200)
        let id = try #require(created.response["recordId"]?.stringValue)
        let info = created.response["newPortalRecordInfo"]?.arrayValue
        // One entry per field written in each new row, in request order (WIRE.md §17).
        #expect(info?.count == 2)
        #expect(info?.compactMap { $0["recordId"]?.stringValue } == ["5", "6"])
        var g = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        let rows = try #require(g.data.first?["portalData"]?["notes"]?.arrayValue)
        #expect(rows.compactMap { $0["Notes::note"]?.stringValue } == ["a", "b"])
        let rid = try #require(rows.first?["recordId"]?.stringValue)

        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)",
                          body: #"{"fieldData":{},"portalData":{"notes":[{"recordId":"\#(rid)","modId":"0","Notes::note":"A"}]}}"#)
        #expect(edit.status == 200)
        #expect(edit.response["newPortalRecordInfo"] == nil)
        g = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        let first = g.data.first?["portalData"]?["notes"]?.arrayValue?.first
        #expect(first?["Notes::note"]?.stringValue == "A")
        #expect(first?["modId"]?.stringValue == "1")
        let stale = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)",
                           body: #"{"fieldData":{"name":"Q"},"portalData":{"notes":[{"recordId":"\#(rid)","modId":"0","Notes::note":"Z"}]}}"#)
        #expect(stale.code == "306")
        // The failed request changed nothing.
        g = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        #expect(field(g, "name")?.stringValue == "P")
        // Documented alternative key spelling "TO::recordId".
        let alt = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)",
                         body: #"{"fieldData":{},"portalData":{"Notes":[{"Notes::recordId":"\#(rid)","Notes::note":"B"}]}}"#)
        #expect(alt.status == 200)
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)",
                       body: #"{"fieldData":{},"portalData":{"nope":[{"x":"1"}]}}"#).code == "102")
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)",
                       body: #"{"fieldData":{"deleteRelated":"Notes.999"}}"#).code == "101")
    }

    @Test func portalPagingAndSelection() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records/1?_offset.notes=2&_limit.notes=5", contentType: nil)
        let rows = a.data.first?["portalData"]?["notes"]?.arrayValue ?? []
        #expect(rows.compactMap { $0["Notes::note"]?.stringValue } == ["second note", "third note"])
        // The body spelling in a GET query is unknown to FileMaker (WIRE.md §17).
        let legacy = h.send("GET", "\(h.base)/layouts/Contacts/records/1?offset.notes=3", contentType: nil)
        #expect(legacy.status == 400)
        #expect(legacy.code == "960")
        #expect(legacy.message == "Unknown parameter(s): offset.notes")
        let none = h.send("GET", "\(h.base)/layouts/Contacts/records/1?portal=%5B%5D", contentType: nil)
        #expect(none.data.first?["portalData"] == .object([]))
        #expect(none.data.first?["portalDataInfo"] == nil)
        let badPortal = h.send("GET", "\(h.base)/layouts/Contacts/records/1?portal=notes", contentType: nil)
        #expect(badPortal.code == "1708")
    }

    @Test func v1TableViewReturnsOnlyTheFirstPortalRow() throws {
        let json = contactsSchemaJSON.replacingOccurrences(of: #""Slim": { "table": "Contacts", "fields": ["name"] }"#,
            with: #""Slim": { "table": "Contacts", "fields": ["name"], "view": "table", "portals": { "notes": { "table": "Notes", "match": { "serial": "contact_id" }, "fields": ["note"] } } }"#)
        #expect(json != contactsSchemaJSON)
        let h = try Harness(schemaJSON: json)
        try h.login()
        let v1 = h.send("GET", "/fmi/data/v1/databases/Contacts/layouts/Slim/records/1", contentType: nil)
        #expect(v1.data.first?["portalData"]?["notes"]?.arrayValue?.count == 1)
        #expect(v1.data.first?["portalDataInfo"]?.arrayValue?.first?["foundCount"] == .number(3))
        let v2 = h.send("GET", "/fmi/data/v2/databases/Contacts/layouts/Slim/records/1", contentType: nil)
        #expect(v2.data.first?["portalData"]?["notes"]?.arrayValue?.count == 3)
    }

    @Test func globalsArePerSessionAndShowInFieldData() throws {
        let h = try Harness()
        try h.login()
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":42}}"#).status == 200)
        #expect(field(h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil), "g_note_id") == .number(42))
        let other = try Harness(emulator: h.emulator, db: "Contacts")
        try other.login()
        #expect(field(other.send("GET", "\(other.base)/layouts/Contacts/records/1", contentType: nil), "g_note_id")?.stringValue == "")
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::name":"x"}}"#).code == "102")
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Nope::g":"x"}}"#).code == "102")
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{}"#).status == 400)
        // A number field holds any text, as in FileMaker (WIRE.md §17).
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":"abc"}}"#).code == "0")
    }

    @Test func relatedFieldsOnTheLayout() throws {
        let json = contactsSchemaJSON.replacingOccurrences(of: #""Slim": { "table": "Contacts", "fields": ["name"] }"#,
            with: #""Slim": { "table": "Contacts", "fields": ["name", "Notes::note"], "portals": { "notes": { "table": "Notes", "match": { "serial": "contact_id" }, "fields": ["note"] } } }"#)
        #expect(json != contactsSchemaJSON)
        let h = try Harness(schemaJSON: json)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Slim/records/1", contentType: nil)
        #expect(a.data.first?["fieldData"]?.objectPairs?.map(\.0) == ["name", "Notes::note"])
        #expect(a.data.first?["fieldData"]?["Notes::note"]?.stringValue == "first note")
        let none = h.send("GET", "\(h.base)/layouts/Slim/records/3", contentType: nil)
        #expect(none.data.first?["fieldData"]?["Notes::note"]?.stringValue == "")
        let meta = h.send("GET", "\(h.base)/layouts/Slim", contentType: nil)
        #expect(meta.response["fieldMetaData"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["name", "Notes::note"])
        #expect(h.send("POST", "\(h.base)/layouts/Slim/_find", body: #"{"query":[{"Notes::note":"only"}]}"#).data.count == 1)
        // Writing a related field edits the first related record (FileMaker's rule; was refused with 201).
        #expect(h.send("PATCH", "\(h.base)/layouts/Slim/records/1", body: #"{"fieldData":{"Notes::note":"x"}}"#).code == "0")
        #expect(h.emulator.records(inTable: "Notes").map { $0["note"] as? String } == ["x", "second note", "third note", "only note"])
        // No related record yet: a portal's own match fields allow creation, so one is created with the match field set.
        let created = h.send("POST", "\(h.base)/layouts/Slim/records", body: #"{"fieldData":{"name":"New","Notes::note":"y"}}"#)
        #expect(created.code == "0")
        #expect(h.emulator.records(inTable: "Notes").last?["note"] as? String == "y")
        #expect(h.emulator.records(inTable: "Notes").last?["contact_id"] as? Int == 5)
        let bad = contactsSchemaJSON.replacingOccurrences(of: #""Slim": { "table": "Contacts", "fields": ["name"] }"#,
            with: #""Slim": { "table": "Contacts", "fields": ["name", "Notes::note"] }"#)
        #expect(throws: EmulatorSchemaError.self) { try Emulator(schemaJSON: Data(bad.utf8)) }
    }

    @Test func globalsDriveRelationships() throws {
        let json = contactsSchemaJSON.replacingOccurrences(of: #""NotesList": { "table": "Notes", "fields": ["contact_id", "note"] }"#,
            with: #""NotesList": { "table": "Notes", "fields": ["contact_id", "note"] }, "ByGlobal": { "table": "Contacts", "fields": ["name"], "portals": { "picked": { "table": "Notes", "match": { "g_note_id": "contact_id" }, "fields": ["note"] } } }"#)
        #expect(json != contactsSchemaJSON)
        let h = try Harness(schemaJSON: json)
        try h.login()
        let before = h.send("GET", "\(h.base)/layouts/ByGlobal/records/4", contentType: nil)
        #expect(before.data.first?["portalData"]?["picked"]?.arrayValue?.isEmpty == true)
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":2}}"#).status == 200)
        let after = h.send("GET", "\(h.base)/layouts/ByGlobal/records/4", contentType: nil)
        #expect(after.data.first?["portalData"]?["picked"]?.arrayValue?.compactMap { $0["Notes::note"]?.stringValue } == ["only note"])
    }

    @Test func directDataAccess() throws {
        let h = try Harness()
        let id = try h.emulator.addRecord(toTable: "Contacts", ["name": "Direct", "id": "9", "phones(2)": "p2"])
        #expect(id == 5)
        let rows = h.emulator.records(inTable: "contacts")
        #expect(rows.count == 5)
        let last = try #require(rows.last)
        #expect(last["recordId"] as? String == "5")
        #expect(last["name"] as? String == "Direct")
        #expect(last["id"] as? Int == 9)
        #expect(last["phones(2)"] as? String == "p2")
        #expect(last["serial"] as? Int == 5)
        #expect(rows.first?["date"] as? String == "01/15/2020")
        #expect(h.emulator.recordCount(inTable: "Notes") == 4)
        #expect(throws: EmulatorSchemaError.self) { try h.emulator.addRecord(toTable: "Contacts", ["date": "bad"]) }
        #expect(h.emulator.records(inTable: "Nope").isEmpty)
    }
}

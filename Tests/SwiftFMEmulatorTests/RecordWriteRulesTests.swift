import Foundation
import Testing
@testable import SwiftFMEmulator

/// Record writes (WIRE.md §6).
@Suite struct RecordWriteRulesTests {
    /// §6.4: portal rows are the *related* records of the parent. `deleteRelated` and a portal row
    /// with a `recordId` must name a row of that parent's portal; the emulator deleted or edited any
    /// record of the related table, even one belonging to another parent.
    @Test(arguments: Via.allCases) func portalWritesOnlyReachRelatedRows(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        // Note 1 belongs to contact 1; contact 2 only has note 4.
        let delete = h.send("PATCH", "\(h.base)/layouts/Contacts/records/2", body: #"{"fieldData":{"deleteRelated":"notes.1"}}"#)
        #expect(delete.status == 500)
        #expect(delete.code == "101")
        #expect(delete.isEmptyResponse)
        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/2",
                          body: #"{"fieldData":{},"portalData":{"notes":[{"recordId":"1","Notes::note":"hijacked"}]}}"#)
        #expect(edit.status == 500)
        #expect(edit.code == "101")
        let notes = h.emulator.records(inTable: "Notes")
        #expect(notes.count == 4)
        #expect(notes.first?["note"] as? String == "first note")
        // The parent's own rows still work, by portal name and by table occurrence name.
        let own = h.send("PATCH", "\(h.base)/layouts/Contacts/records/2",
                         body: #"{"fieldData":{},"portalData":{"Notes":[{"recordId":"4","Notes::note":"edited"}]}}"#)
        #expect(own.status == 200)
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/2", body: #"{"fieldData":{"deleteRelated":"Notes.4"}}"#).status == 200)
        #expect(h.emulator.recordCount(inTable: "Notes") == 3)
    }

    /// §9: `dateformats` is 0, 1 or 2. GET and find already answered 1708 for anything else; create
    /// and edit silently read an unknown value as 0.
    @Test(arguments: Via.allCases) func dateformatsOutOfRangeIs1708OnWritesToo(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        for value in ["5", "-1", "\"3\""] {
            let create = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"date":"01/02/2024"},"dateformats":\#(value)}"#)
            #expect(create.code == "1708", "\(value)")
            let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"date":"01/02/2024"},"dateformats":\#(value)}"#)
            #expect(edit.code == "1708", "\(value)")
            let find = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"John"}],"dateformats":\#(value)}"#)
            #expect(find.code == "1708", "\(value)")
        }
        #expect(h.emulator.recordCount(inTable: "Contacts") == 4)
        #expect(h.emulator.records(inTable: "Contacts").first?["modId"] as? String == "0")
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"date":"2024-01-02"},"dateformats":"2"}"#).status == 200)
    }

    /// §6: a request that fails changes nothing: a global field written in the `fieldData` of a create
    /// or edit that then fails validation keeps its old value, with or without `portalData` in the body.
    @Test(arguments: Via.allCases) func failedWritesLeaveGlobalsUnchanged(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        func global() -> JSON? {
            h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil).data.first?["fieldData"]?["g_note_id"]
        }
        let create = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"g_note_id":7,"required":""}}"#)
        #expect(create.code == "509")
        #expect(global() == .string(""))
        let edit = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"g_note_id":8,"required":""}}"#)
        #expect(edit.code == "509")
        #expect(global() == .string(""))
        // A successful write still sets it.
        #expect(h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{"g_note_id":9}}"#).status == 200)
        #expect(global() == .number(9))
    }
}

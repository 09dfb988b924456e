import Foundation
import Testing
@testable import SwiftFMEmulator

/// Review findings on record writes (WIRE.md §6).
@Suite struct ReviewFindingsRecordsTests {
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
}

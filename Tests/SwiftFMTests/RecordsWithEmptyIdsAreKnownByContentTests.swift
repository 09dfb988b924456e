import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a page walk's same-page check (a server that ignores `_offset` ends with `-1007` on the third identical
// page) knows a record by its `recordId`, and a record whose `recordId` is empty by its content, whichever walk reads
// it: raw or typed (`pages(as:)`, `forEachPage(as:)`) follow one rule (`PageSource.recordKey`). Distinct records with
// empty ids on full pages are walked to the end; the same page of them three times in a row is still `-1007`.

@Suite("A record with an empty record id is known by its content, raw or typed")
struct RecordsWithEmptyIdsAreKnownByContentTests {
    typealias Walk = ServerValuesAttackTests.Walk

    /// Before the fix the typed walks failed with `-1007` on the third page: every record's key was `""`, so three
    /// full pages of distinct records were taken for the same page three times over.
    @Test(arguments: Walk.allCases)
    func distinctRecordsWithEmptyIdsAreWalkedToTheEnd(_ walk: Walk) async {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { request in
            let query = request.url?.query ?? ""
            for (offset, names) in [(1, ["a", "b"]), (3, ["c", "d"]), (5, ["e", "f"]), (7, ["g"])] where query.contains("_offset=\(offset)&") {
                return .json(200, PagingEndsWithoutRecordIdsTests.page(names, recordId: "", found: nil))
            }
            return .json(500, Bodies.noRecords)
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == nil, "\(walk)")
        #expect(records.count == 7, "\(walk)")
        #expect(h.stub.requests.count == 4, "\(walk)")
    }

    /// Guard: the same full page of records with empty ids, a third time in a row, still ends every walk with `-1007`.
    @Test(arguments: Walk.allCases)
    func theSamePageOfEmptyIdsEndsTheWalk(_ walk: Walk) async {
        let served = Locked(0)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }
            return .json(200, PagingEndsWithoutRecordIdsTests.page(["a", "b"], recordId: "", found: nil))
        }
        let (_, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk)")
        #expect(h.stub.requests.count == 3, "\(walk)")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a page walk (raw or typed, `pages` or `forEachPage`) calls a page "the same page again" only when it
// can tell it is: the whole page holds the same records in the same order as the page just before it, and a record id
// says they are the same records. Records without ids (no `recordId`, or `""`) are known by their content, and equal
// content proves nothing while the page's `foundCount` bounds the walk: pages of records that look alike, answered for
// offsets that advance, are walked to the end of that found count. A server that ignores `_offset` is still stopped:
// by the found count (its last page reaches past it: `-1007`), and without one by the same page a third time in a row
// (`RecordsWithEmptyIdsAreKnownByContentTests`, `PagingEndsWithoutRecordIdsTests`).

@Suite("A page walk: records that look alike are not the same page again")
struct RecordsThatLookAlikeAreNotTheSamePageTests {
    typealias Walk = ServerValuesAttackTests.Walk

    /// The same record (the same content, no usable id) `count` times, in a page of a set of `found` records.
    static func alike(_ count: Int, recordId: String?, found: Int) -> String {
        PagingEndsWithoutRecordIdsTests.page(Array(repeating: "same", count: count), recordId: recordId, found: found)
    }

    /// Failed before: every walk ended with `-1007` on the third page ("holds the records of the two pages before it"),
    /// though the server answered each offset asked for and the found count said 7 records.
    @Test(arguments: Walk.allCases, [nil, ""] as [String?])
    func alikeRecordsOnAdvancingPagesAreWalkedToTheEnd(_ walk: Walk, recordId: String?) async {
        if recordId == nil, walk == .typedPages || walk == .typedForEachPage { return }   // typed: no recordId is -1007 at once
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { request in
            let query = request.url?.query ?? ""
            for (offset, count) in [(1, 2), (3, 2), (5, 2), (7, 1)] where query.contains("_offset=\(offset)&") {
                return .json(200, Self.alike(count, recordId: recordId, found: 7))
            }
            return .json(500, Bodies.noRecords)
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == nil, "\(walk) \(recordId ?? "none"): \(code ?? "")")
        if recordId != nil { #expect(records.count == 7, "\(walk)") }
        #expect(h.stub.requests.count == 4, "\(walk) \(recordId ?? "none")")
        #expect(h.logs.values.filter { $0.level == .error }.isEmpty, "\(h.logs.values.map(\.message))")
    }

    /// Guard: a server that ignores `_offset` and sends records that look alike with a found count is still stopped, by
    /// that found count: its page at offset 7 holds 2 records of a set of 7 (`-1007`), not handed out.
    @Test(arguments: Walk.allCases)
    func aServerIgnoringTheOffsetIsStoppedByTheFoundCount(_ walk: Walk) async {
        let served = Locked(0)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }   // so a walk that misses it still ends
            return .json(200, Self.alike(2, recordId: "", found: 7))
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk): \(code ?? "none")")
        #expect(records.count <= 6, "\(walk)")
        #expect(h.stub.requests.count <= 4, "\(walk)")
    }

    /// Guard: records with ids are the same records: the same ids in the same order a third time in a row end the walk
    /// with `-1007` whatever the found count says (the rule for ids is unchanged).
    @Test(arguments: Walk.allCases)
    func theSameIdsAThirdTimeStillEndTheWalk(_ walk: Walk) async {
        let served = Locked(0)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }
            return .json(200, ServerValuesAttackTests.page(ids: [1, 2], found: 7))
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk)")
        #expect(records == ["1", "2", "1", "2"], "\(walk)")
        #expect(h.stub.requests.count == 3, "\(walk)")
    }
}

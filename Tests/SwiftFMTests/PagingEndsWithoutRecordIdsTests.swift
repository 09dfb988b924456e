import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a page walk over a server that ignores `_offset` ends with `-1007` on the third identical page
// whatever the records' ids are: records without a `recordId` (a raw walk tells them apart by their content) and
// records whose `recordId` is `""` are compared as any others, so the walk never asks for ever. Distinct records
// without ids, or with `""` ids (raw: told apart by their content), on the pages of a set are still walked to the end.

@Suite("Paging ends without record ids")
struct PagingEndsWithoutRecordIdsTests {
    typealias Walk = ServerValuesAttackTests.Walk

    /// A page of records without `recordId` (or with `recordId` `id`), named by `names`.
    static func page(_ names: [String], recordId: String?, found: Int?) -> String {
        let rows = names.map { name in
            #"{"fieldData":{"name":"\#(name)"},"portalData":{}\#(recordId.map { #","recordId":"\#($0)""# } ?? ""),"modId":"1"}"#
        }.joined(separator: ",")
        let info = found.map {
            #","dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":\#($0),"foundCount":\#($0),"returnedCount":\#(names.count)}"#
        } ?? ""
        return #"{"response":{"data":[\#(rows)]\#(info)},"messages":[{"code":"0","message":"OK"}]}"#
    }

    /// Before the fix the walk never ended: records without ids (raw) or with `""` ids (raw and typed) turned the
    /// same-page check off, and the walk asked for the same page until the test server's own end (20 pages).
    @Test(arguments: Walk.allCases, [nil, ""] as [String?])
    func aServerIgnoringTheOffsetEndsTheWalk(_ walk: Walk, recordId: String?) async {
        if recordId == nil, walk == .typedPages || walk == .typedForEachPage { return }   // typed: no recordId is -1007 at once
        let served = Locked(0)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }
            return .json(200, Self.page(["a", "b"], recordId: recordId, found: nil))
        }
        let (_, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk) \(recordId ?? "none")")
        #expect(h.stub.requests.count == 3, "\(walk) \(recordId ?? "none")")
    }

    /// Guard: distinct records without ids on the pages of a set are walked to the end.
    @Test func distinctRecordsWithoutIdsAreWalked() async throws {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { request in
            let query = request.url?.query ?? ""
            for (offset, names) in [(1, ["a", "b"]), (3, ["c", "d"]), (5, ["e", "f"])] where query.contains("_offset=\(offset)&") {
                return .json(200, Self.page(names, recordId: nil, found: nil))
            }
            return .json(500, Bodies.noRecords)
        }
        var names: [String] = []
        for try await page in h.api.pages(layout: "L", pageSize: 2) {
            names += page.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
        }
        #expect(names == ["a", "b", "c", "d", "e", "f"])
    }

    /// Guard: distinct raw records whose `recordId` is `""`, on full pages, are walked to the end (they were taken
    /// for the same page three times over, and the walk failed with -1007 on the third).
    @Test func distinctRecordsWithEmptyIdsAreWalked() async throws {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { request in
            let query = request.url?.query ?? ""
            for (offset, names) in [(1, ["a", "b"]), (3, ["c", "d"]), (5, ["e", "f"]), (7, ["g"])] where query.contains("_offset=\(offset)&") {
                return .json(200, Self.page(names, recordId: "", found: nil))
            }
            return .json(500, Bodies.noRecords)
        }
        var names: [String] = []
        for try await page in h.api.pages(layout: "L", pageSize: 2) {
            names += page.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
        }
        #expect(names == ["a", "b", "c", "d", "e", "f", "g"])
    }
}

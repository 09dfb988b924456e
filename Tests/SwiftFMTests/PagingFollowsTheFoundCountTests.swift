import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a page walk (`pages`, `forEachPage`, raw and typed, over a table or a find) delivers every record of
// the found set its pages' `dataInfo.foundCount` announces. A page shorter than the page size ends the walk only when
// it reaches that count (or no count came with it): a server or proxy that answers fewer records than asked for (a
// cap below the page size) is read on, from the record after the last one returned, never cut off without a word.
// A walk still ends: an empty page, a 401, a page reaching the found count, and a server that answers the same
// page again and again (short or full) ends with `-1007` after a bounded number of requests.

@Suite("Paging follows the found count past a short page")
struct PagingFollowsTheFoundCountTests {
    typealias Walk = ServerValuesAttackTests.Walk

    /// The window of a range request (`_offset`, `_limit`) or of a find body (`offset`, `limit`); FileMaker's defaults
    /// (1, 100) when absent.
    static func window(of request: URLRequest) -> (offset: Int, limit: Int) {
        var values: [String: String] = [:]
        for item in URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? [] { values[item.name] = item.value }
        if let body = request.httpBody, let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] {
            values["_offset"] = object["offset"] as? String
            values["_limit"] = object["limit"] as? String
        }
        return (values["_offset"].flatMap { Int($0) } ?? 1, values["_limit"].flatMap { Int($0) } ?? 100)
    }

    /// A table of `found` records (ids 1…found) behind a server that answers at most `cap` records a page.
    static func capped(found: Int, cap: Int) -> Harness {
        Harness(store: ServerValuesAttackTests.loggedIn) { request in
            let (offset, limit) = window(of: request)
            guard offset <= found else { return .json(500, Bodies.noRecords) }
            let ids = Array(offset...min(found, offset + min(limit, cap) - 1))
            return .json(200, ServerValuesAttackTests.page(ids: ids, found: found))
        }
    }

    /// A server that caps pages at 2 records while the walk asks for 3: every record of the 5 is delivered, once, in
    /// order (before the fix: records 1 and 2, then the walk ended with "0" as if the table held two records).
    @Test(arguments: Walk.allCases)
    func aCappedServerIsReadToTheFoundCount(_ walk: Walk) async {
        let h = Self.capped(found: 5, cap: 2)
        let (records, code) = await walk.run(h.api, pageSize: 3)
        #expect(code == nil)
        #expect(records == ["1", "2", "3", "4", "5"], "\(walk)")
        #expect(h.stub.requests.count == 3)
    }

    /// The same for a find walk.
    @Test func aCappedFindIsReadToTheFoundCount() async throws {
        let h = Self.capped(found: 5, cap: 2)
        var seen: [String] = []
        for try await page in h.api.pages(layout: "L", find: FMFindRequest(["name": "n"]), pageSize: 4) {
            seen += page.records.compactMap { $0["recordId"] as? String }
        }
        #expect(seen == ["1", "2", "3", "4", "5"])
    }

    /// Guard: a short page without a `dataInfo` (FileMaker Server 17) still ends the walk.
    @Test(arguments: Walk.allCases)
    func aShortPageWithoutACountEndsTheWalk(_ walk: Walk) async {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, ServerValuesAttackTests.page(ids: [1], found: nil)) }
        let (records, code) = await walk.run(h.api, pageSize: 3)
        #expect(code == nil)
        #expect(records == ["1"])
        #expect(h.stub.requests.count == 1)
    }

    /// Guard: a short page that reaches the found count ends the walk (no request for the record after the last).
    @Test(arguments: Walk.allCases)
    func aShortPageAtTheFoundCountEndsTheWalk(_ walk: Walk) async {
        let h = Self.capped(found: 4, cap: 10)
        let (records, code) = await walk.run(h.api, pageSize: 3)
        #expect(code == nil)
        #expect(records == ["1", "2", "3", "4"])
        #expect(h.stub.requests.count == 2)
    }

    /// A server that ignores `_offset` and answers the same short page with a found count far beyond it: the walk
    /// ends with `-1007` on the third time, as for a full page, rather than asking for ever.
    @Test(arguments: Walk.allCases)
    func theSameShortPageAgainAndAgainEndsTheWalk(_ walk: Walk) async {
        let served = Locked(0)
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }
            return .json(200, ServerValuesAttackTests.page(ids: [1], found: 1_000_000))
        }
        let (records, code) = await walk.run(h.api, pageSize: 3)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk): \(records.count) records")
        #expect(records == ["1", "1"])
        #expect(h.stub.requests.count == 3)
    }
}

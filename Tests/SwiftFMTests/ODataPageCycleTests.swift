import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A server whose next links go round in a cycle (A → B → A) must not keep a page walk busy for ever: each of the
// three walks (pages, typed pages, forEachPage) fails with -1007 when a next link leads where it already went, and
// hands no page out twice. Where a link leads is compared, not how the server spelled it: the same link again with a
// fragment, relative, with the host in upper case or with the default port written out is the same link. Before
// the fixes only a link equal to the one just followed (A → A) was caught, then links were compared as spelled.

@Suite("OData page walks: a cycle of next links, however spelled")
struct ODataPageCycleTests {
    /// The spellings of `Contacts/contacts?$skiptoken=2` a cycle comes back with: as first sent, then others.
    static let spellings = [
        ODataBodies.base + "/contacts?$skiptoken=2",
        ODataBodies.base + "/contacts?$skiptoken=2#again",
        "contacts?$skiptoken=2",
        "https://FMS.Example.COM/fmi/odata/v4/Contacts/contacts?$skiptoken=2",
        "https://fms.example.com:443/fmi/odata/v4/Contacts/contacts?$skiptoken=2",
    ]

    /// First page → A → B → A (spelled `again`) …; after `bound` requests a page without a next link, so a walk
    /// that misses the cycle still ends (and the test fails on its expectations instead of hanging).
    static func cyclingServer(again: String, bound: Int = 12) -> ODataHarness {
        let served = Locked(0)
        let a = ODataBodies.base + "/contacts?$skiptoken=2"
        let b = ODataBodies.base + "/contacts?$skiptoken=4"
        return ODataHarness { request in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count >= bound { return .json(200, ODataBodies.page(["end"], next: nil)) }
            let url = request.url?.absoluteString ?? ""
            if url.hasSuffix("$skiptoken=2") { return .json(200, ODataBodies.page(["b"], next: b)) }
            if url.hasSuffix("$skiptoken=4") { return .json(200, ODataBodies.page(["c"], next: again)) }
            return .json(200, ODataBodies.page(["a"], next: a))
        }
    }

    @Test(arguments: spellings)
    func pagesStopAtALinkFollowedBeforeHoweverSpelled(again: String) async {
        let setup = Self.cyclingServer(again: again)
        var names: [String] = []
        do {
            for try await page in setup.odata.pages(from: "contacts") { names += page.rows.compactMap { $0["name"] as? String } }
            Issue.record("the walk ended without an error after \(names)")
        } catch {
            #expect((error as? FMError)?.code == FMError.ClientCode.malformedResponse)
        }
        #expect(names == ["a", "b"])   // the page that sent the old link is not handed out, as for A → A
        #expect(setup.stub.requests.count == 3)
    }

    @Test(arguments: spellings)
    func typedPagesStopAtALinkFollowedBeforeHoweverSpelled(again: String) async {
        struct Row: Decodable { var name: String }
        let setup = Self.cyclingServer(again: again)
        var names: [String] = []
        do {
            for try await page in setup.odata.pages(as: Row.self, from: "contacts") { names += page.rows.map(\.name) }
            Issue.record("the walk ended without an error after \(names)")
        } catch {
            #expect((error as? FMError)?.code == FMError.ClientCode.malformedResponse)
        }
        #expect(names == ["a", "b"])   // the page that sent the old link is not handed out, as for A → A
        #expect(setup.stub.requests.count == 3)
    }

    @Test(arguments: spellings)
    func forEachPageStopsAtALinkFollowedBeforeHoweverSpelled(again: String) {
        let setup = Self.cyclingServer(again: again)
        let seen = Locked<[String]>([])
        let (total, code) = setup.run { odata, done in
            odata.forEachPage(from: "contacts", page: { page in
                seen.withLock { $0 += page.rows.compactMap { $0["name"] as? String } }
                return true
            }, completion: done)
        }
        #expect(code == FMError.ClientCode.malformedResponse && total == nil)
        #expect(seen.value == ["a", "b", "c"])   // each row once: forEachPage sees a page before its link is checked
        #expect(setup.stub.requests.count == 3)
    }

    @Test func aLinkToItselfStillStops() async {
        let setup = ODataHarness { _ in .json(200, ODataBodies.page(["a"], next: ODataBodies.base + "/contacts?$skiptoken=2")) }
        var names: [String] = []
        do {
            for try await page in setup.odata.pages(from: "contacts") { names += page.rows.compactMap { $0["name"] as? String } }
            Issue.record("the walk ended without an error after \(names)")
        } catch {
            #expect((error as? FMError)?.code == FMError.ClientCode.malformedResponse)
        }
        #expect(names == ["a"])
        #expect(setup.stub.requests.count == 2)
    }

    /// The first page's next link leads to the first page itself (the walk's first request): it is a loop at once,
    /// not after reading the first page a second time.
    @Test func aFirstPageLinkingToItselfIsReadOnce() {
        let setup = ODataHarness { request in
            request.url?.absoluteString == ODataBodies.base + "/contacts"
                ? .json(200, ODataBodies.page(["a"], next: ODataBodies.base + "/contacts")) : nil
        }
        let seen = Locked<[String]>([])
        let (total, code) = setup.run { odata, done in
            odata.forEachPage(from: "contacts", page: { page in
                seen.withLock { $0 += page.rows.compactMap { $0["name"] as? String } }
                return true
            }, completion: done)
        }
        #expect(code == FMError.ClientCode.malformedResponse && total == nil)
        #expect(seen.value == ["a"])
        #expect(setup.stub.requests.count == 1)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A server whose next links go round in a cycle (A → B → A) must not keep a page walk busy for ever: the walk
// fails with -1007 when a next link comes back that it already followed, through all three walks (pages,
// typed pages, forEachPage). Before the fix only a link equal to the one just followed (A → A) was caught.

@Suite("OData page walks: a cycle of next links")
struct ODataPageLoopTests {
    /// Links A → B → A …; after `bound` requests a page without a next link, so a walk that misses the cycle
    /// still ends (and the test fails on its expectations instead of hanging).
    static func cyclingServer(bound: Int = 12) -> ODataHarness {
        let served = Locked(0)
        let a = ODataBodies.base + "/contacts?$skiptoken=2"
        let b = ODataBodies.base + "/contacts?$skiptoken=4"
        return ODataHarness { request in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count >= bound { return .json(200, ODataBodies.page(["end"], next: nil)) }
            let url = request.url?.absoluteString ?? ""
            if url.hasSuffix("$skiptoken=2") { return .json(200, ODataBodies.page(["b"], next: b)) }
            if url.hasSuffix("$skiptoken=4") { return .json(200, ODataBodies.page(["c"], next: a)) }
            return .json(200, ODataBodies.page(["a"], next: a))
        }
    }

    @Test func pagesStopAtALinkFollowedBefore() async {
        let setup = Self.cyclingServer()
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

    @Test func typedPagesStopAtALinkFollowedBefore() async {
        struct Row: Decodable { var name: String }
        let setup = Self.cyclingServer()
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

    @Test func forEachPageStopsAtALinkFollowedBefore() {
        let setup = Self.cyclingServer()
        let seen = Locked<[String]>([])
        let (total, code) = setup.run { odata, done in
            odata.forEachPage(from: "contacts", page: { page in
                seen.withLock { $0 += page.rows.compactMap { $0["name"] as? String } }
                return true
            }, completion: done)
        }
        #expect(code == FMError.ClientCode.malformedResponse && total == nil)
        #expect(seen.value == ["a", "b", "c"])   // forEachPage sees each page before its link is checked
        #expect(setup.stub.requests.count == 3)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A page walk's cycle check compares where next links lead, not how the server spelled them. Before, the walk
// compared the links as URLs: the same link spelled again with a fragment, relative, with the host in upper case
// or with the default port written out read as new, so the walk went round the cycle again and handed the same
// rows out twice before it failed; and a first page whose next link led back to itself was read (and, through
// forEachPage, handed out) twice.

@Suite("OData page walks: a next link spelled another way is the same link")
struct ODataPageLinkSpellingTests {
    /// The spellings of `Contacts/contacts?$skiptoken=2` a cycle comes back with.
    static let spellings = [
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
        #expect(names == ["a", "b"])
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
        #expect(names == ["a", "b"])
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
        #expect(seen.value == ["a", "b", "c"])   // each row once
        #expect(setup.stub.requests.count == 3)
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

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// An empty read is an empty found set, not an error: `getRecords` past the end (or on an empty table) completes
/// with 401 and an empty set, typed or raw, callback or async; a range read answered 101 "Record is missing" is an
/// empty page to `pages` and `forEachPage`, while a find's 101 stays an error.
@Suite("Empty reads are empty found sets")
struct EmptyFoundSetTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture)) }

    /// `getRecords` past the end (or on an empty table) completes like a find with no match: code 401 and
    /// an empty found set, not `nil`; the async forms return the empty set.
    @Test func getRecordsPastTheEndIsAnEmptyFoundSet() async throws {
        let h = Harness(store: Self.loggedIn) { _ in .json(500, Bodies.noRecords) }
        let raw = Recorder<(Int?, String)>()
        h.api.getRecords(layout: "Contacts", offset: 1000) { found, code in raw.record((found?.records.count, code)) }
        #expect(await raw.value().first.map { $0.0 == 0 && $0.1 == "401" } == true)
        struct Row: Decodable { var name: String }
        let typed = Recorder<(Int?, String)>()
        h.api.getRecords(as: Row.self, layout: "Contacts", offset: 1000) { found, code in typed.record((found?.records.count, code)) }
        #expect(await typed.value().first.map { $0.0 == 0 && $0.1 == "401" } == true)
        #expect(try await h.api.getRecords(layout: "Contacts", offset: 1000).records.isEmpty)
        #expect(try await h.api.getRecords(as: Row.self, layout: "Contacts", offset: 1000).records.isEmpty)
    }

    static let recordIsMissing = #"{"messages":[{"code":"101","message":"Record is missing"}],"response":{}}"#

    /// A range read answered 101 "Record is missing" (real servers, for an empty layout) is an empty page
    /// to `pages` and `forEachPage`, never an error; a find's 101 stays an error.
    @Test func aRangeReadAnswered101IsAnEmptyPage() async throws {
        let h = Harness(store: Self.loggedIn) { _ in .json(500, Self.recordIsMissing) }
        var pages = 0
        for try await _ in h.api.pages(layout: "Empty") { pages += 1 }
        #expect(pages == 0)
        let walked = Recorder<(Int?, String)>()
        h.api.forEachPage(layout: "Empty", page: { _ in true }, completion: { count, code in walked.record((count, code)) })
        #expect(await walked.value().first.map { $0.0 == 0 && $0.1 == "0" } == true)
        let found = Recorder<String>()
        h.api.forEachPage(layout: "Empty", find: FMFindRequest(queries: [FMQuery(["a": "b"])]), page: { _ in true },
                          completion: { _, code in found.record(code) })
        #expect(await found.value() == ["101"])
    }
}

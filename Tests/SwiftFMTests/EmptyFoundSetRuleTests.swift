import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The empty-found-set rule, decided once on the endpoint: a find that matches nothing (401), and a range read
/// past the end (401) or over an empty table (101), is an empty found set, on the callback surface (with the
/// code), on the async surface (returned) and in a page walk (its end). Every other failure stays one: a find's
/// 101, a single record's 101 or 401.
@Suite("The empty-found-set rule")
struct EmptyFoundSetRuleTests {
    static let missing = #"{"messages":[{"code":"101","message":"Record is missing"}],"response":{}}"#

    /// A client whose every request after the login is answered with FileMaker's `code`.
    static func harness(answering code: String) -> Harness {
        let body = code == "101" ? missing : Bodies.noRecords
        return Harness { request in isLogin(request) ? .json(200, Bodies.login()) : .json(500, body) }
    }

    @Test func theRuleIsTheEndpoints() {
        let find = FMFindRequest(["name": "x"])
        #expect(Endpoints.find(layout: "L", request: find).noRecords == ["401"])
        #expect(Endpoints.find(as: Person.self, layout: "L", request: find).noRecords == ["401"])
        #expect(Endpoints.find(layout: "L", payload: ["query": [["name": "x"]]]).noRecords == ["401"])
        #expect(Endpoints.getRecords(layout: "L").noRecords == ["401", "101"])
        #expect(Endpoints.getRecords(as: Person.self, layout: "L").noRecords == ["401", "101"])
        #expect(Endpoints.getRecord(layout: "L", recordId: 1).noRecords.isEmpty)
        #expect(Endpoints.getRecord(as: Person.self, layout: "L", recordId: 1).noRecords.isEmpty)
        #expect(Endpoints.createRecord(layout: "L", fieldData: ["a": 1]).noRecords.isEmpty)
    }

    @Test(arguments: ["401", "101"])
    func theCallbackSurfaceReadsTheRule(code: String) async throws {
        let h = Self.harness(answering: code)
        let empty = code == "401" || code == "101"
        let range = Recorder<(FMFoundSet?, String)>()
        h.api.getRecords(layout: "Contacts") { range.record(($0, $1)) }
        let rangeValue = try #require(await range.value().first)
        #expect(rangeValue.0?.isEmpty == empty && rangeValue.1 == code, "a range read: empty, with the code")

        let typedRange = Recorder<(Int?, String)>()
        h.api.getRecords(as: Person.self, layout: "Contacts") { typedRange.record(($0?.records.count, $1)) }
        #expect(await typedRange.value().first.map { $0.0 == 0 && $0.1 == code } == true)

        let find = Recorder<(FMFoundSet?, String)>()
        h.api.find(layout: "Contacts", request: FMFindRequest(["name": "x"])) { find.record(($0, $1)) }
        let findValue = try #require(await find.value().first)
        if code == "401" {
            #expect(findValue.0?.isEmpty == true && findValue.1 == "401", "a find that matches nothing: empty")
        } else {
            #expect(findValue.0 == nil && findValue.1 == "101", "a find's 101 stays a failure")
        }

        let one = Recorder<(FMFoundSet?, String)>()
        h.api.getRecord(layout: "Contacts", recordId: 7) { one.record(($0, $1)) }
        #expect(await one.value().first.map { $0.0 == nil && $0.1 == code } == true, "a single record read: always a failure")
    }

    @Test(arguments: ["401", "101"])
    func theAsyncSurfaceReadsTheRule(code: String) async throws {
        let h = Self.harness(answering: code)
        #expect(try await h.api.getRecords(layout: "Contacts").isEmpty)
        #expect(try await h.api.getRecords(as: Person.self, layout: "Contacts").records.isEmpty)
        if code == "401" {
            #expect(try await h.api.find(layout: "Contacts", request: FMFindRequest(["name": "x"])).isEmpty)
            #expect(try await h.api.find(layout: "Contacts", payload: ["query": [["name": "x"]]]).isEmpty)
            #expect(try await h.api.find(as: Person.self, layout: "Contacts", request: FMFindRequest(["name": "x"])).records.isEmpty)
        } else {
            let error = await #expect(throws: FMError.self) {
                try await h.api.find(layout: "Contacts", request: FMFindRequest(["name": "x"]))
            }
            #expect(error?.code == "101")
        }
        let single = await #expect(throws: FMError.self) { try await h.api.getRecord(layout: "Contacts", recordId: 7) }
        #expect(single?.code == code)
    }

    @Test(arguments: ["401", "101"])
    func aPageWalkEndsWhereTheRuleSaysNoRecords(code: String) async throws {
        let h = Self.harness(answering: code)
        let table = Recorder<(Int?, String)>()
        h.api.forEachPage(layout: "Contacts", page: { _ in true }) { table.record(($0, $1)) }
        #expect(await table.value().first.map { $0.0 == 0 && $0.1 == "0" } == true, "a walk over a table with no records: no pages")

        let found = Recorder<(Int?, String)>()
        h.api.forEachPage(layout: "Contacts", find: FMFindRequest(["name": "x"]), page: { _ in true }) { found.record(($0, $1)) }
        let foundValue = try #require(await found.value().first)
        if code == "401" {
            #expect(foundValue.0 == 0 && foundValue.1 == "0", "a find that matches nothing: no pages")
        } else {
            #expect(foundValue.0 == nil && foundValue.1 == "101", "a find's 101 fails the walk")
        }

        var pages = 0
        for try await _ in h.api.pages(layout: "Contacts") { pages += 1 }
        #expect(pages == 0)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

// The emulator finds as FileMaker does: word starts case-insensitively, exact and whole-word matches, wildcards,
// comparisons and ranges, duplicates, today and invalid criteria, add and omit requests in order, sort, paging and
// `dataInfo`, related criteria and portal parameters, and FileMaker's error codes.

@Suite struct FindTests {
    /// Runs a find on layout Contacts and returns the names found (empty on 401).
    func names(_ h: Harness, _ query: String, extra: String = "") -> [String] {
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":\#(query)\#(extra)}"#)
        return a.data.compactMap { $0["fieldData"]?["name"]?.stringValue }
    }

    func harness() throws -> Harness {
        let h = try Harness()
        try h.login()
        for (name, id, drink, date) in [("Anne-Marie O'Neil", "10", "Green Tea", "03/01/2020"), ("Bob", "20", "", "03/15/2020"),
                                        ("bobby tables", "100", "Tea", "")] {
            _ = try h.create(#"{"name":"\#(name)","id":\#(id),"drink":"\#(drink)","date":"\#(date)"}"#)
        }
        return h
    }

    @Test func plainTextMatchesWordStartsCaseInsensitively() throws {
        let h = try harness()
        #expect(names(h, #"[{"name":"jo"}]"#) == ["John Doe", "John Smith", "Joe Example"])
        #expect(names(h, #"[{"name":"smi jo"}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"marie"}]"#) == ["Anne-Marie O'Neil"])
        #expect(names(h, #"[{"name":"ohn"}]"#) == [])
        #expect(names(h, #"[{"name":"bob"}]"#) == ["Bob", "bobby tables"])
    }

    @Test func exactAndWholeWord() throws {
        let h = try harness()
        #expect(names(h, #"[{"name":"==bob"}]"#) == ["Bob"])
        #expect(names(h, #"[{"name":"==John"}]"#) == [])
        #expect(names(h, #"[{"name":"=bob"}]"#) == ["Bob"])
        #expect(names(h, #"[{"drink":"=tea"}]"#) == ["John Smith", "David", "Anne-Marie O'Neil", "bobby tables"])
        #expect(names(h, #"[{"drink":"=="}]"#) == ["Bob"])
        #expect(names(h, #"[{"drink":"="}]"#) == ["Bob"])
        #expect(names(h, #"[{"date":"*"}]"#).count == 5)
    }

    @Test func wildcards() throws {
        let h = try harness()
        #expect(names(h, #"[{"name":"J@hn"}]"#) == ["John Doe", "John Smith"])
        #expect(names(h, #"[{"name":"==J*e"}]"#) == ["John Doe", "Joe Example"])
        #expect(names(h, #"[{"name":"*ob*"}]"#) == ["Bob", "bobby tables"])
        #expect(names(h, #"[{"id":"=="}]"#) == [])
        #expect(names(h, "[{\"id\":\"##\"}]") == ["Anne-Marie O'Neil", "Bob"])
        #expect(names(h, #"[{"name":"*\"ith\""}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"*\"xith\""}]"#) == [])
        #expect(names(h, #"[{"name":"*\"mith\""}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"\"john s\""}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"\"ohn s\""}]"#) == [])
    }

    @Test func comparisonsAndRanges() throws {
        let h = try harness()
        #expect(names(h, #"[{"id":">10"}]"#) == ["Bob", "bobby tables"])
        #expect(names(h, #"[{"id":">=10"}]"#) == ["Anne-Marie O'Neil", "Bob", "bobby tables"])
        #expect(names(h, #"[{"id":"<2"}]"#) == ["John Doe"])
        #expect(names(h, #"[{"id":"<=2"}]"#) == ["John Doe", "John Smith"])
        #expect(names(h, #"[{"id":"3...20"}]"#) == ["Joe Example", "David", "Anne-Marie O'Neil", "Bob"])
        #expect(names(h, #"[{"id":100}]"#) == ["bobby tables"])
        #expect(names(h, #"[{"date":"01/01/2021...12/31/2022"}]"#) == ["John Smith", "Joe Example"])
        #expect(names(h, #"[{"date":">03/01/2020"}]"#) == ["John Smith", "Joe Example", "Bob"])
        #expect(names(h, #"[{"date":"3/2020"}]"#) == ["Anne-Marie O'Neil", "Bob"])
        #expect(names(h, #"[{"date":"2022"}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"<c"}]"#) == ["Anne-Marie O'Neil", "Bob", "bobby tables"])
    }

    @Test func duplicatesTodayAndInvalid() throws {
        let h = try harness()
        #expect(names(h, #"[{"drink":"!"}]"#) == ["John Smith", "David", "bobby tables"])
        #expect(names(h, #"[{"date":"?"}]"#) == [])
        #expect(names(h, #"[{"date":"//"}]"#) == [])
        let today = FMDate(h.emulator.now).formatted(0)
        _ = try h.create(#"{"name":"Today","date":"\#(today)"}"#)
        #expect(names(h, #"[{"date":"//"}]"#) == ["Today"])
    }

    @Test func requestsAddAndOmitInOrder() throws {
        let h = try harness()
        #expect(names(h, #"[{"name":"john","omit":"true"}]"#) == ["Joe Example", "David", "Anne-Marie O'Neil", "Bob", "bobby tables"])
        #expect(names(h, #"[{"name":"john"},{"name":"doe","omit":"true"},{"name":"john doe"}]"#) == ["John Doe", "John Smith"])
        #expect(names(h, #"[{"name":"john","drink":"tea"}]"#) == ["John Smith"])
        #expect(names(h, #"[{"name":"john"},{"drink":"water"}]"#) == ["John Doe", "John Smith", "Joe Example"])
    }

    @Test func sortPagingAndDataInfo() throws {
        let h = try harness()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                       body: #"{"query":[{"drink":"tea"}],"sort":[{"fieldName":"drink","sortOrder":"ascend"},{"fieldName":"name","sortOrder":"descend"}],"offset":"2","limit":2}"#)
        #expect(a.status == 200)
        #expect(a.data.compactMap { $0["fieldData"]?["name"]?.stringValue } == ["John Smith", "David"])
        let info = a.response["dataInfo"]
        #expect(info?["foundCount"] == .number(4))
        #expect(info?["returnedCount"] == .number(2))
        #expect(info?["totalRecordCount"] == .number(7))
        #expect(info?["table"]?.stringValue == "Contacts")
        #expect(info?["database"]?.stringValue == "Contacts")
    }

    @Test func relatedFieldCriteriaAndPortalParameters() throws {
        let h = try harness()
        #expect(names(h, #"[{"Notes::note":"only"}]"#) == ["John Smith"])
        #expect(names(h, #"[{"notes::note":"note"}]"#) == ["John Doe", "John Smith"])
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                       body: #"{"query":[{"name":"john doe"}],"portal":["notes"],"offset.notes":"2","limit.notes":"1"}"#)
        let rows = a.data.first?["portalData"]?["notes"]?.arrayValue ?? []
        #expect(rows.compactMap { $0["Notes::note"]?.stringValue } == ["second note"])
    }

    @Test func errors() throws {
        let h = try harness()
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"nope":"x"}]}"#).code == "102")
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"secret":"x"}]}"#).code == "102")
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":""}]}"#).code == "400")
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":null}]}"#).code == "1708")
        let missing = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{}"#)
        #expect(missing.status == 400)
        #expect(missing.code == "958")
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"x"}]}"#, contentType: "text/plain").status == 415)
        #expect(h.send("POST", "\(h.base)/layouts/Nope/_find", body: #"{"query":[{"name":"x"}]}"#).code == "105")
    }

    @Test func engineUnits() {
        let e = FindEngine(today: FMDate(year: 2024, month: 1, day: 2), dateformats: 0)
        #expect(e.matches("2024", .date(FMDate(year: 2024, month: 5, day: 1)), type: .date) { false })
        #expect(e.matches("\\*star", .text("*star power"), type: .text) { false })
        #expect(!e.matches("\\*star", .text("start"), type: .text) { false })
        #expect(e.matches("≥5", .number(5), type: .number) { false })
        #expect(e.matches("~john", .text("John"), type: .text) { false })
        #expect(e.matches("12:00...13:00", .time(12 * 3600 + 30), type: .time) { false })
        #expect(e.matches("?", .text("abc"), type: .number) { false })
    }
}

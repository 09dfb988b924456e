import Foundation
import Testing
@testable import SwiftFM

// The contract: FileMaker sends the repetitions of a repeating field that the layout shows as `name` (repetition 1),
// `name(2)`, `name(3)`, …, and a layout may show some of them only (the field placed twice, showing repetitions 1
// and 3; or showing 2 to 4). Read typed, every repetition keeps its place in the array: one the layout did not send,
// before one it did, is an empty value at its place (`""` in a `[String]`, `nil` in an array of optionals; a
// non-optional number fails as an empty field does). The raw record has no key for it: `field("name(2)")` is nil.
// Trailing empty repetitions are still left out.

@Suite("A repeating field's gaps keep their places")
struct RepeatingFieldGapsKeepTheirPlacesTests {
    static func body(_ fieldData: String, portal: String = "{}") -> String {
        FileMakerDecodingTests.body(fieldData, portal: portal)
    }

    struct Contact: Decodable, Equatable {
        var phone: [String]
        var score: [Int?]?
        var seen: [Date?]?
    }

    static func contact(_ fieldData: String) throws -> Contact {
        try decoded(Endpoints.getRecords(as: Contact.self, layout: "L"), body(fieldData)).records[0].fieldData
    }

    /// Before the fix: `phone(3)` was dropped (the run stopped at the missing `phone(2)`).
    @Test func aGapBetweenRepetitionsIsAnEmptyValueAtItsPlace() throws {
        let contact = try Self.contact(#"{"phone":"555-1","phone(3)":"555-3","score":"1","score(3)":7,"seen(3)":"01/02/2024"}"#)
        #expect(contact.phone == ["555-1", "", "555-3"])
        #expect(contact.score == [1, nil, 7])
        #expect(contact.seen == [nil, nil, FileMakerDecodingTests.utc(2024, 1, 2)])
        // Many gaps, in a hostile order.
        let far = try Self.contact(#"{"phone(7)":"7","phone(4)":"4","phone":"1"}"#)
        #expect(far.phone == ["1", "", "", "4", "", "", "7"])
        // A repetition sent twice: its last value, as for any key.
        #expect(try Self.contact(#"{"phone":"1","phone(3)":"a","phone(3)":"b"}"#).phone == ["1", "", "b"])
    }

    /// Before the fix: later repetitions alone failed a non-optional array (`-1007`, "field phone is missing") and
    /// read as `nil` into an optional one.
    @Test func laterRepetitionsAloneKeepTheirPlaces() throws {
        let contact = try Self.contact(#"{"phone(2)":"555-2","phone(3)":"555-3","score(2)":"5"}"#)
        #expect(contact.phone == ["", "555-2", "555-3"])
        #expect(contact.score == [nil, 5])
        #expect(contact.seen == nil, "a field the layout does not show at all is still nil")
        // Through the raw found set's decode, the same.
        let raw = try decoded(Endpoints.getRecords(layout: "L"), Self.body(#"{"phone(2)":"555-2","score(3)":"5"}"#))
        #expect(raw.records[0].field("phone(2)", as: String.self) == "555-2" && raw.records[0].field("phone", as: String.self) == nil)
        let typed = try raw.decode(Contact.self)[0].fieldData
        #expect(typed.phone == ["", "555-2"] && typed.score == [nil, nil, 5])
    }

    /// Repetitions asked for one by one still read exactly what was sent.
    @Test func aRepetitionAskedForByItsKeyIsUnchanged() throws {
        struct Second: Decodable { var second: String?; var first: String?
            enum CodingKeys: String, CodingKey { case second = "phone(2)", first = "phone" } }
        let value = try decoded(Endpoints.getRecords(as: Second.self, layout: "L"), Self.body(#"{"phone(2)":"b"}"#)).records[0].fieldData
        #expect(value.second == "b" && value.first == nil)
    }

    @Test func trailingEmptyAndMissingRepetitionsAreLeftOut() throws {
        #expect(try Self.contact(#"{"phone":"1","phone(3)":"","phone(5)":""}"#).phone == ["1"])
        #expect(try Self.contact(#"{"phone":"","phone(4)":""}"#).phone == [])
    }

    /// A gap in a non-optional number array fails as an empty repetition sent as `""` does.
    @Test func aGapInAnArrayOfNonOptionalNumbersFailsAsAnEmptyRepetition() {
        struct Scores: Decodable { var score: [Int] }
        for fields in [#"{"score":1,"score(3)":3}"#, #"{"score":1,"score(2)":"","score(3)":3}"#] {
            #expect(decodeError(Endpoints.getRecords(as: Scores.self, layout: "L"), Self.body(fields)) == FMError.ClientCode.malformedResponse, "\(fields)")
        }
    }

    /// Portal rows send `TO::field(n)`: the same rule.
    @Test func portalRowRepetitionsKeepTheirPlaces() throws {
        struct Row: Decodable, Equatable {
            var codes: [String]
            enum CodingKeys: String, CodingKey { case codes = "Lines::code" }
        }
        struct Lines: Decodable {}
        let portal = #"{"lines":[{"recordId":"1","modId":"0","Lines::code(1)":"A","Lines::code(3)":"C"},{"recordId":"2","modId":"0","Lines::code(2)":"B"}]}"#
        let record = try decoded(Endpoints.getRecords(as: Lines.self, layout: "L"), Self.body("{}", portal: portal)).records[0]
        let rows = try (record.portalData["lines"] ?? []).map { try $0.decode(Row.self) }
        #expect(rows.map(\.codes) == [["A", "", "C"], ["", "B"]])
    }

    /// A repetition number FileMaker cannot have (above 32,000) is not a repetition; and gaps cannot make a decode
    /// hold far more than the answer (a few bytes per record asking for 32,000 places each).
    @Test func gapsAreBoundedByFileMakerAndByTheAnswer() throws {
        struct Tags: Decodable { var tags: [String]? }
        let most = try decoded(Endpoints.getRecords(as: Tags.self, layout: "L"), Self.body(#"{"tags(32000)":"x"}"#)).records[0].fieldData
        #expect(most.tags?.count == 32_000 && most.tags?.last == "x")
        let beyond = try decoded(Endpoints.getRecords(as: Tags.self, layout: "L"), Self.body(#"{"tags(32001)":"x"}"#)).records[0].fieldData
        #expect(beyond.tags == nil)
        let records = (1...200).map { #"{"fieldData":{"tags(32000)":"x"},"portalData":{},"recordId":"\#($0)","modId":"1"}"# }
        let hostile = #"{"response":{"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#
        #expect(decodeError(Endpoints.getRecords(as: Tags.self, layout: "L"), hostile) == FMError.ClientCode.malformedResponse)
    }
}

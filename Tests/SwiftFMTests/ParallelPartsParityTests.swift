import Foundation
import Testing
@testable import SwiftFM

/// A large found set read in parts (``FMConfiguration/parallelDecoding`` on) answers exactly as the one-part read
/// for hostile bodies: split points next to escaped quotes, brackets and commas inside strings, trailing commas,
/// mismatched brackets, a record that is not an object, duplicate `data` keys, another array before `data`.
@Suite("Parallel decoding: hostile large answers read as in one part")
struct ParallelPartsParityTests {
    struct Row: Decodable, Equatable {
        var id: Int
        var name: String
    }

    static func record(_ index: Int, _ name: String) -> String {
        #"{"fieldData":{"id":\#(index),"name":"\#(name)"},"portalData":{},"recordId":"\#(index)","modId":"1"}"#
    }

    /// `count` records whose names are `name(index)`, in `data`, with `before`/`after` around the array's members.
    static func body(_ count: Int, before: String = "", after: String = "", prefix: String = "", name: (Int) -> String) -> Data {
        let records = (1...count).map { record($0, name($0)) }.joined(separator: ",")
        return Data(#"{"response":{\#(prefix)"dataInfo":{"foundCount":\#(count),"returnedCount":\#(count)},"data":[\#(before)\#(records)\#(after)]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    static let count = 30_000
    static let tricky: [(String, Data)] = [
        ("escaped quotes and brackets in strings", body(count) { #"a\"},{\"b\"],[\\\"x\#($0)"# }),
        ("commas in strings", body(count) { _ in #", , ,],[}{,"# }),
        ("backslash at the end of a string", body(count) { _ in #"tail\\"# }),
        ("trailing comma in data", body(count, after: ",") { "n\($0)" }),
        ("mismatched bracket in the last record", body(count, after: #",{"fieldData":{"id":0,"name":"x"],"recordId":"0","modId":"1"}"#) { "n\($0)" }),
        ("a record that is not an object", body(count, after: ",5") { "n\($0)" }),
        ("a record with no recordId", body(count, after: #",{"fieldData":{"id":0,"name":"x"}}"#) { "n\($0)" }),
        ("a record that does not decode", body(count, after: #",{"fieldData":{"id":"x","name":"x"},"recordId":"0","modId":"1"}"#) { "n\($0)" }),
        ("an array before data", body(count, prefix: #""other":[1,2,3],"#) { "n\($0)" }),
        ("a unicode escape split", body(count) { _ in #"\u00e9\ud83d\ude00"# }),
        ("a lone surrogate deep in the set", body(count) { $0 == count - 3 ? #"\ud800"# : "n" }),
        ("raw control character deep in the set", body(count) { $0 == count / 2 ? "a\u{01}b" : "n" }),
    ]

    static func duplicateData() -> Data {
        let big = (1...count).map { record($0, "first") }.joined(separator: ",")
        let small = record(1, "second")
        return Data(#"{"response":{"data":[\#(big)],"data":[\#(small)]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    static func duplicateDataBigLast() -> Data {
        let big = (1...count).map { record($0, "second") }.joined(separator: ",")
        let small = record(1, "first")
        return Data(#"{"response":{"data":[\#(small)],"data":[\#(big)]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    static func compare(_ body: Data, _ label: String) {
        #expect(body.count > 2 * FileMakerDecoder.splitFrom, "\(label): too small to be read in parts")
        let one = Result { () throws(FMError) in try FileMakerDecoder().foundSet(Row.self, body: body, status: 200) }
        let parts = Result { () throws(FMError) in try FileMakerDecoder().parts(4).foundSet(Row.self, body: body, status: 200) }
        switch (one, parts) {
        case (.success(let a), .success(let b)):
            #expect(a.records.map(\.fieldData) == b.records.map(\.fieldData), "\(label): records differ")
            #expect(a.records.map(\.recordId) == b.records.map(\.recordId), "\(label): record ids differ")
        case (.failure(let a), .failure(let b)):
            #expect(a.code == b.code && a.message == b.message, "\(label): \(a.message) vs \(b.message)")
        case (.success, .failure(let error)):
            Issue.record("\(label): in parts fails (\(error.message)) where one part reads")
        case (.failure(let error), .success):
            Issue.record("\(label): in parts reads where one part fails (\(error.message))")
        }
    }

    @Test(arguments: tricky.indices)
    func sameAsOnePart(_ index: Int) {
        Self.compare(Self.tricky[index].1, Self.tricky[index].0)
    }

    @Test func duplicateDataKeys() {
        Self.compare(Self.duplicateData(), "duplicate data, big first")
        Self.compare(Self.duplicateDataBigLast(), "duplicate data, big last")
    }
}

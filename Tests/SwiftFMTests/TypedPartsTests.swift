import Foundation
import Testing
@testable import SwiftFM

/// A found set of at least 1 MiB is read and decoded in parts on the cores (each part its own tape
/// and decoder); the records, their order and every error are the same as when read in one part.
@Suite("Typed found sets read in parts")
struct TypedPartsTests {
    struct Row: Decodable, Equatable {
        var id: Int
        var name: String
        var price: Double?
        var tags: [String]?
        enum CodingKeys: String, CodingKey { case id, name, price, tags = "tag" }
    }

    /// `count` records, record `bad` (1-based) with `badFields` instead; `tail` after the `data` array.
    static func body(_ count: Int, bad: Int? = nil, badFields: String = "", badRecord: String? = nil) -> Data {
        var records: [String] = []
        records.reserveCapacity(count)
        for index in 1...count {
            if index == bad, let badRecord { records.append(badRecord); continue }
            let fields = index == bad ? badFields
                : #"{"id":\#(index),"name":"name \#(index) with some text to make it longer","price":"\#(index).25","tag":"a","tag(2)":"b\#(index % 7)"}"#
            records.append(#"{"fieldData":\#(fields),"portalData":{},"recordId":"\#(index)","modId":"1"}"#)
        }
        return Data(#"{"response":{"dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":\#(count),"foundCount":\#(count),"returnedCount":\#(count)},"data":[\#(records.joined(separator: ",\n"))]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    /// Reads `body` as a client with ``FMConfiguration/parallelDecoding`` on does: in up to four parts.
    static func inParts(_ body: Data) throws -> FMTypedFoundSet<Row> {
        try FileMakerDecoder(parts: 4).foundSet(Row.self, body: body, status: 200, checkMessages: true)
    }

    @Test func aLargeFoundSetReadsInPartsAsInOne() throws {
        let body = Self.body(20_000)
        #expect(body.count > 2 * FileMakerDecoder.splitFrom, "the answer is large enough to be read in parts")
        let inParts = try Self.inParts(body)
        #expect(inParts.records.count == 20_000)
        for (index, record) in inParts.records.enumerated() {
            let id = index + 1
            guard record.recordId == "\(id)", record.fieldData == Row(id: id, name: "name \(id) with some text to make it longer", price: Double(id) + 0.25,
                                                                      tags: ["a", "b\(id % 7)"]) else {
                Issue.record("record \(id) differs: \(record)")
                break
            }
        }
        #expect(inParts.dataInfo?.foundCount == 20_000)
        // The same records when the answer is read in one part (a decoder on a smaller answer: the same rules).
        let small = try FMTypedFoundSet<Row>(responseBody: Self.body(500))
        #expect(small.records.map(\.fieldData) == Array(inParts.records.prefix(500)).map(\.fieldData))
        // The raw records agree.
        let raw = try FMFoundSet(parsing: body, status: 200, checkMessages: true, parts: 4)
        #expect(raw.records.count == 20_000 && (raw.records[19_999]["recordId"] as? String) == "20000")
    }

    @Test func aRecordThatDoesNotDecodeInALaterPartIsNamedAsBefore() throws {
        let body = Self.body(20_000, bad: 17_321, badFields: #"{"id":"x","name":"n"}"#)
        let error = #expect(throws: FMError.self) { try Self.inParts(body) }
        #expect(error?.code == FMError.ClientCode.malformedResponse)
        #expect(error?.message.contains("record 17321") == true && error?.message.contains("id") == true, "\(error?.message ?? "")")
        // A record without its id: named by its place in the whole found set.
        let noId = Self.body(20_000, bad: 15_000, badRecord: #"{"fieldData":{"id":1,"name":"n"},"portalData":{}}"#)
        let missing = #expect(throws: FMError.self) { try Self.inParts(noId) }
        #expect(missing?.message.contains("record 15000 of the found set") == true, "\(missing?.message ?? "")")
    }

    @Test func bytesThatAreNotJSONInALaterPartFailAsBefore() throws {
        var text = String(decoding: Self.body(20_000), as: UTF8.self)
        let at = try #require(text.range(of: #""recordId":"18000""#))
        text.replaceSubrange(at, with: #""recordId":"18000"#) // an unterminated string deep in the last part
        let error = #expect(throws: FMError.self) { try Self.inParts(Data(text.utf8)) }
        #expect(error?.code == FMError.ClientCode.malformedResponse, "\(error?.message ?? "")")
        // A trailing comma closes the array as JSONSerialization on Linux accepts; a doubled one does not.
        var trailing = String(decoding: Self.body(20_000), as: UTF8.self)
        trailing = trailing.replacingOccurrences(of: "]},\"messages\"", with: ",]},\"messages\"")
        #expect(try Self.inParts(Data(trailing.utf8)).records.count == 20_000)
        let doubled = trailing.replacingOccurrences(of: ",]},\"messages\"", with: ",,]},\"messages\"")
        #expect(throws: FMError.self) { try Self.inParts(Data(doubled.utf8)) }
    }
}

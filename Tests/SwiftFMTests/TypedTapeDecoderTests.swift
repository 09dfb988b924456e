import Foundation
import Testing
@testable import SwiftFM

/// The typed decoder over the tape: containers kept after decoding, lookups that stay linear on
/// hostile answers, optionals asked for by type.
@Suite("Typed decoder over the tape")
struct TypedTapeDecoderTests {
    static func body(_ records: [String]) -> Data {
        let data = records.enumerated().map { #"{"fieldData":\#($1),"portalData":{},"recordId":"\#($0 + 1)","modId":"1"}"# }
        return Data(#"{"response":{"data":[\#(data.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Keeps its containers past `init(from:)` (what a caller must never be able to read freed bytes with).
    struct Keeper: Decodable {
        final class Kept: @unchecked Sendable {
            var keyed: KeyedDecodingContainer<AnyKey>?
            var single: (any SingleValueDecodingContainer)?
        }
        let kept = Kept()
        init(from decoder: any Decoder) throws {
            kept.keyed = try decoder.container(keyedBy: AnyKey.self)
            kept.single = try kept.keyed?.superDecoder(forKey: AnyKey("a")).singleValueContainer()
        }
    }

    static func expectClosed(_ kept: Keeper.Kept) throws {
        let keyed = try #require(kept.keyed)
        let single = try #require(kept.single)
        #expect(!keyed.contains(AnyKey("a")))
        #expect(keyed.allKeys.isEmpty)
        #expect(throws: DecodingError.self) { try keyed.decodeNil(forKey: AnyKey("a")) }
        #expect(throws: DecodingError.self) { try keyed.superDecoder(forKey: AnyKey("a")) }
        #expect(throws: DecodingError.self) { try keyed.nestedUnkeyedContainer(forKey: AnyKey("a")) }
        #expect(throws: DecodingError.self) { try keyed.decode(String.self, forKey: AnyKey("a")) }
        #expect(throws: DecodingError.self) { try single.decode(String.self) }
        #expect(throws: DecodingError.self) { try single.decode(Int.self) }
        #expect(throws: DecodingError.self) { try single.decode(Date.self) }
    }

    @Test func containersKeptAfterDecodingThrowInsteadOfReadingTheBytes() throws {
        // A portal row is written as JSON into a buffer freed when decode returns.
        let row = try FMPortalRow(recordId: "1", modId: nil, fields: ["a": .string("hello")]).decode(Keeper.self)
        try Self.expectClosed(row.kept)
        let set = try FMTypedFoundSet<Keeper>(responseBody: Self.body([#"{"a":"hello"}"#]))
        try Self.expectClosed(set.records[0].fieldData.kept)
    }

    /// Decodes `body` like an answer and gives how many object members the lookups scanned.
    static func scanned<T: Decodable>(_ type: T.Type, _ body: Data) throws -> (FMTypedFoundSet<T>, Int) {
        try body.withUnsafeBytes { bytes in
            let reader = JSONTapeReader(bytes: bytes, tape: try JSONTape(bytes))
            defer { reader.close() }
            return (try FileMakerDecoder().foundSet(T.self, reader, status: 200, checkMessages: true), reader.scannedMembers)
        }
    }

    struct Repeating: Decodable {
        var f: [String]
    }

    @Test func repetitionsAreFoundInOnePass() throws {
        let count = 400
        // Hostile order too: the last repetition first.
        for order in [Array(1...count), Array((1...count).reversed())] {
            let fields = order.map { #""f(\#($0))":"\#($0)""# }.joined(separator: ",")
            let (set, scanned) = try Self.scanned(Repeating.self, Self.body(["{" + fields + #","g":"x"}"#]))
            #expect(set.records[0].fieldData.f == (1...count).map(String.init))
            #expect(scanned <= 4 * (count + 1))
        }
    }

    @Test func aDictionaryOfManyFieldsIsReadInOnePass() throws {
        let count = 400
        let fields = (1...count).map { #""k\#($0)":"\#($0)""# }.joined(separator: ",")
        let (set, scanned) = try Self.scanned([String: String].self, Self.body(["{" + fields + "}"]))
        #expect(set.records[0].fieldData.count == count)
        #expect(set.records[0].fieldData["k\(count)"] == "\(count)")
        #expect(scanned <= 4 * count)
    }

    /// `decode(Int?.self, forKey:)` (a custom `init(from:)`, a generic property): `null` is `nil` as
    /// `JSONDecoder` gives, and `""` is `nil` as for an optional property.
    struct AskedOptional: Decodable, Equatable {
        var number: Int?
        var text: String?
        enum CodingKeys: String, CodingKey { case number, text }
        init(number: Int?, text: String?) { self.number = number; self.text = text }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            number = try container.decode(Int?.self, forKey: .number)
            text = try container.decode(String?.self, forKey: .text)
        }
    }

    struct Box<Value: Decodable & Equatable>: Decodable, Equatable {
        var value: Value
    }

    @Test func optionalsAskedForByTypeReadNullAndEmptyAsNil() throws {
        let json = #"{"number":null,"text":null}"#
        #expect(try JSONDecoder().decode(AskedOptional.self, from: Data(json.utf8)) == AskedOptional(number: nil, text: nil))
        let set = try FMTypedFoundSet<AskedOptional>(responseBody: Self.body([json, #"{"number":"","text":""}"#, #"{"number":"4","text":"t"}"#]))
        #expect(set.records.map(\.fieldData) == [AskedOptional(number: nil, text: nil), AskedOptional(number: nil, text: ""),
                                                 AskedOptional(number: 4, text: "t")])
        let boxes = try FMTypedFoundSet<Box<Date?>>(responseBody: Self.body([#"{"value":""}"#, #"{"value":null}"#]))
        #expect(boxes.records.map(\.fieldData.value) == [nil, nil])
        // A non-optional still fails on null and "", naming the field.
        #expect(throws: FMError.self) { try FMTypedFoundSet<Box<Int>>(responseBody: Self.body([#"{"value":null}"#])) }
        #expect(throws: FMError.self) { try FMTypedFoundSet<Box<Int>>(responseBody: Self.body([#"{"value":""}"#])) }
    }

    /// A container field's URL (FileMaker sends it as text) reads into `URL` as `JSONDecoder` reads it.
    struct Photo: Decodable, Equatable {
        var photo: URL?
        var thumbnail: URL
        var links: [URL]?
    }

    @Test func containerURLsReadIntoURLProperties() throws {
        let url = "https://fms.example.com/Streaming_SSL/MainDB/6A4B.jpg?RCType=EmbeddedRCFileProcessor"
        let json = #"{"photo":"\#(url)","thumbnail":"\#(url)","links":["\#(url)"]}"#
        let expected = Photo(photo: URL(string: url), thumbnail: try #require(URL(string: url)), links: [try #require(URL(string: url))])
        #expect(try JSONDecoder().decode(Photo.self, from: Data(json.utf8)) == expected)
        let set = try FMTypedFoundSet<Photo>(responseBody: Self.body([json, #"{"photo":"","thumbnail":"\#(url)"}"#]))
        #expect(set.records.map(\.fieldData) == [expected, Photo(photo: nil, thumbnail: expected.thumbnail, links: nil)])
        // An empty container into a non-optional URL fails naming the field.
        let error = #expect(throws: FMError.self) { try FMTypedFoundSet<Photo>(responseBody: Self.body([#"{"thumbnail":""}"#])) }
        #expect(error?.message.contains("thumbnail") == true)
    }

    struct Measures: Decodable, Equatable {
        var single: Float
    }

    @Test func aNumberBeyondFloatFailsInsteadOfReadingInfinity() throws {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Measures.self, from: Data(#"{"single":1e39}"#.utf8)) }
        for json in [#"{"single":1e39}"#, #"{"single":"-1e39"}"#] {
            let error = #expect(throws: FMError.self) { try FMTypedFoundSet<Measures>(responseBody: Self.body([json])) }
            #expect(error?.message.contains("single") == true)
        }
        let set = try FMTypedFoundSet<Measures>(responseBody: Self.body([#"{"single":3.4028235e38}"#, #"{"single":"1.5"}"#]))
        #expect(set.records.map(\.fieldData.single) == [Float.greatestFiniteMagnitude, 1.5])
    }

    struct Reading: Decodable {
        var value: Double?
        var taken: Date?
    }

    /// Values made in code that JSON cannot hold (NaN, infinity, a `Date` object) are checked before they are
    /// written as JSON (`JSONSerialization` raises an exception on them on Apple platforms: a crash), and the
    /// error names the record and the field.
    @Test func valuesMadeInCodeThatJSONCannotHoldFailNamingTheField() throws {
        let set = FMFoundSet(records: [["fieldData": ["value": 1.5], "recordId": "1"], ["fieldData": ["value": 2.5, "taken": Date()], "recordId": "2"]],
                             dataInfo: nil)
        let error = #expect(throws: FMError.self) { try set.decode(Reading.self) }
        #expect(error?.code == FMError.ClientCode.malformedResponse)
        #expect(error?.message.contains("record 2") == true)
        #expect(error?.message.contains("taken") == true)
        let row = FMPortalRow(recordId: "5", modId: nil, fields: ["T::value": .number(.nan)])
        let rowError = #expect(throws: FMError.self) { try row.decode([String: Double].self) }
        #expect(rowError?.message.contains("portal row 5") == true)
        #expect(rowError?.message.contains("T::value") == true)
        // Valid values made in code still decode.
        #expect(try FMFoundSet(records: [["fieldData": ["value": 1.5], "recordId": "1"]], dataInfo: nil).decode(Reading.self)[0].fieldData.value == 1.5)
    }

    struct Accented: Decodable, Equatable {
        var café: String
        var größe: [Int]?
    }

    /// A field name whose bytes are decomposed (`e` + U+0301) finds the property spelled precomposed (`é`), as
    /// `JSONDecoder` and the dictionaries of the previous decoder compare keys (Unicode canonical equivalence),
    /// escaped or not, repetitions included.
    @Test func fieldNamesCompareAsTextNotAsBytes() throws {
        let decomposed = "cafe\u{301}", umlaut = "gro\u{308}ße"
        let json = #"{"\#(decomposed)":"x","\#(umlaut)":"1","\#(umlaut)(2)":"2"}"#
        #expect(try JSONDecoder().decode(Accented.self, from: Data(#"{"\#(decomposed)":"x"}"#.utf8)) == Accented(café: "x", größe: nil))
        let set = try FMTypedFoundSet<Accented>(responseBody: Self.body([json, json, #"{"caf\u00e9":"y"}"#, #"{"cafe\u0301":"z"}"#]))
        #expect(set.records.map(\.fieldData) == [Accented(café: "x", größe: [1, 2]), Accented(café: "x", größe: [1, 2]),
                                                 Accented(café: "y", größe: nil), Accented(café: "z", größe: nil)])
    }
}

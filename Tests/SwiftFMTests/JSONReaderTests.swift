import Foundation
import Testing
import TestSupport
@testable import SwiftFM

/// The JSON reader and the typed decoder's tape against `JSONSerialization` as the oracle: the same
/// documents accepted and rejected, the same values and value types, on generated documents and on
/// mutations of them.
@Suite("JSON reader and tape, fuzzed against JSONSerialization")
struct JSONReaderTests {
    typealias Random = SplitMix64

    static let numbers = ["0", "-0", "1", "-1", "42", "255", "256", "1.5", "-2.25", "0.1", "1e2", "1E-2", "-1.5e+3", "3.141592653589793",
                          "1e22", "1e23", "9007199254740993", "123456789.123456789", "9223372036854775807", "-9223372036854775808",
                          "9223372036854775808", "18446744073709551615", "18446744073709551616", "-9223372036854775809",
                          "123456789012345678901234567890", "1e-400", "0.000001", "5e-324", "1.7976931348623157e308",
                          "2.2250738585072014e-308", "100000000000000000000.5", "0.30000000000000004"]
    static let pieces = ["a", "é", "日本", "😀", "\\n", "\\r", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\u0041", "\\u00e9",
                         "\\ud83d\\ude00", "\\u0000", "\\u001f", " ", "field_01", "Contact::name", "03/14/2020"]

    static func string(_ random: inout Random) -> String {
        var text = "\""
        for _ in 0..<random.below(6) { text += pieces[random.below(pieces.count)] }
        return text + "\""
    }

    static func space(_ random: inout Random) -> String {
        random.chance(80) ? "" : [" ", "\n", "\t", "\r\n", "  "][random.below(5)]
    }

    static func value(_ random: inout Random, depth: Int) -> String {
        let kind = depth > 4 ? random.below(4) : random.below(6)
        switch kind {
        case 0: return string(&random)
        case 1: return numbers[random.below(numbers.count)]
        case 2: return ["true", "false", "null"][random.below(3)]
        case 3: return random.chance(50) ? string(&random) : numbers[random.below(numbers.count)]
        case 4:
            let items = (0..<random.below(5)).map { _ in space(&random) + value(&random, depth: depth + 1) + space(&random) }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let items = (0..<random.below(5)).map { _ in
                space(&random) + string(&random) + space(&random) + ":" + space(&random) + value(&random, depth: depth + 1)
            }
            return "{" + items.joined(separator: ",") + "}"
        }
    }

    static func document(_ random: inout Random) -> [UInt8] {
        let body = random.chance(50)
            ? "{" + (0..<random.below(4)).map { _ in string(&random) + ":" + value(&random, depth: 1) }.joined(separator: ",") + "}"
            : "[" + (0..<random.below(4)).map { _ in value(&random, depth: 1) }.joined(separator: ",") + "]"
        return Array((space(&random) + body + space(&random)).utf8)
    }

    /// Breaks a document: flips, inserts, deletes or truncates bytes (invalid UTF-8 and grammar errors).
    static func mutate(_ bytes: [UInt8], _ random: inout Random) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + random.below(3)) {
            guard !bytes.isEmpty else { break }
            let at = random.below(bytes.count)
            switch random.below(5) {
            case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.insert([0xFF, 0xC3, 0x80, 0xED, 0xA0, 0x80, 0x22, 0x5C, 0x2C, 0x5D, 0x7D, 0x00][random.below(12)], at: at)
            case 2: bytes.remove(at: at)
            case 3: bytes = Array(bytes[..<at])
            default: bytes.insert(contentsOf: Array(["\\u", "\\ud800", "\\udc00", ",", "-", "0", ".", "e"][random.below(8)].utf8), at: at)
            }
        }
        return bytes
    }

    /// Same value and same kind of value (a boolean, an integer, a double, a decimal), recursively.
    static func same(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case let (x as String, y as String): return x == y
        case (is NSNull, is NSNull): return true
        case let (x as [Any], y as [Any]): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case let (x as [String: Any], y as [String: Any]):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        case let (x as NSNumber, y as NSNumber):
            if (x is NSDecimalNumber) != (y is NSDecimalNumber) { return false }
            if x is NSDecimalNumber { return x.description == y.description }
            let xBool = type(of: x) != NSNumber.self, yBool = type(of: y) != NSNumber.self
            if xBool != yBool { return false }
            if xBool { return x.boolValue == y.boolValue }
            let floating: Set<String> = ["d", "f"]
            let xFloat = floating.contains(String(cString: x.objCType)), yFloat = floating.contains(String(cString: y.objCType))
            if xFloat != yFloat { return false }
            return xFloat ? x.doubleValue.bitPattern == y.doubleValue.bitPattern : x.stringValue == y.stringValue
        default: return false
        }
    }

    /// The document as the typed decoder sees it: indexed by ``JSONTape``, every node read back.
    static func throughTape(_ data: Data) -> Any? {
        data.withUnsafeBytes { bytes -> Any? in
            guard let tape = try? JSONTape(bytes) else { return nil }
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            return reader.any(0)
        }
    }

    /// Both readers (the tree reader and the tape) against the oracle.
    static func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let data = Data(bytes)
        let oracle = try? JSONSerialization.jsonObject(with: data)
        let text = String(decoding: bytes, as: UTF8.self)
        let readers = [("reader", try? JSONReader.parse(data, templatesFrom: .max, splitFrom: .max)),
                       ("reader with templates", try? JSONReader.parse(data, templatesFrom: 0, splitFrom: .max)),
                       ("reader in parts", try? JSONReader.parse(data, templatesFrom: 0, splitFrom: 0, parts: 4)),
                       ("tape", throughTape(data))]
        for (name, ours) in readers {
            switch (oracle, ours) {
            case (nil, nil): break
            case let (expected?, actual?):
                #expect(same(expected, actual), "\(name): values differ for \(text)", sourceLocation: sourceLocation)
            default:
                #expect(Bool(false), "oracle \(oracle == nil ? "rejects" : "accepts"), \(name) \(ours == nil ? "rejects" : "accepts"): \(text)",
                        sourceLocation: sourceLocation)
            }
        }
    }

    @Test func generatedAndMutatedDocumentsAgreeWithTheOracle() {
        var random = Random(state: 0x5EED_F00D)
        for _ in 0..<2500 {
            let document = Self.document(&random)
            Self.check(document)
            Self.check(Self.mutate(document, &random))
        }
    }

    /// Records that share shapes, as found sets do, with some that differ: a key more or less, another
    /// order, a repeated key, an escaped key (the reader reuses the last object's shape at a depth).
    static func shapedDocument(_ random: inout Random) -> [UInt8] {
        let pool = ["\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"\\u00e9\"", "\"\\u0061\"", "\"é\"", "\"portalData\""]
        func shape() -> [String] { (0..<(1 + random.below(4))).map { _ in pool[random.below(pool.count)] } }
        let shapes = [shape(), shape(), shape()]
        func object(depth: Int) -> String {
            var keys = shapes[random.below(random.chance(70) ? 1 : 3)]
            switch random.below(8) {
            case 0: keys.removeLast()
            case 1: keys.append(pool[random.below(pool.count)])
            case 2: keys.reverse()
            case 3: keys.insert(keys.first ?? "\"a\"", at: 0)
            default: break
            }
            let members = keys.map { key in
                key + ":" + (depth < 3 && random.chance(30) ? object(depth: depth + 1) : value(&random, depth: 5))
            }
            return "{" + members.joined(separator: ",") + "}"
        }
        let records = (0..<(2 + random.below(8))).map { _ in object(depth: 0) }
        return Array(("{\"response\":{\"data\":[" + records.joined(separator: ",") + "]}}").utf8)
    }

    @Test func recordsOfSharedAndChangingShapesAgreeWithTheOracle() {
        var random = Random(state: 0xF1E1_D5E7)
        for _ in 0..<800 {
            let document = Self.shapedDocument(&random)
            Self.check(document)
            Self.check(Self.mutate(document, &random))
        }
    }

    @Test(arguments: [
        "[1]", " [1] ", "\u{FEFF}[1]", "[1,]", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "[\"\\ud800\"]", "[\"\\udc00\\ud800\"]",
        "[\"\\ud83d\\ude00\"]", "[1e400]", "[-1e400]", "[01]", "[1.]", "[.5]", "[1e]", "[-]", "[\"\t\"]", "[nul]", "[truex]",
        "1", "\"a\"", "", " ", "[", "{", "{\"a\"}", "{\"a\":}", "{1:2}", "[1 2]", "[,1]", "[1,,2]", "[\"\\x\"]", "[\"\\u12\"]",
        "[\"\\u00zz\"]", "[1]x", "[] []", "[-0]", "[-0.0]", "[1E+2]", "[\"\u{7F}\"]",
    ])
    func edgeCases(text: String) {
        Self.check(Array(text.utf8))
    }

    @Test func invalidUTF8() {
        for bad: [UInt8] in [[0xFF], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]] {
            Self.check(Array("[\"a".utf8) + bad + Array("\"]".utf8))
            Self.check(Array("[\"\\n".utf8) + bad + Array("\"]".utf8))
        }
    }

    /// The lexer reads a string eight bytes at a time, straight to the first byte that ends, escapes or needs a
    /// check: the word test finds that byte as a byte-by-byte scan does, for every byte value at every position
    /// among plain neighbours at the edges of the ranges (space, `!`, `#`, `[`, `]`, DEL), and in random words.
    @Test func theEightByteScanStopsAtTheFirstByteAStringMustStopAt() {
        func isPlain(_ byte: UInt8) -> Bool {
            byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
        }
        func plainBytes(_ bytes: [UInt8]) -> Int {
            JSONLexer.plainBytes(UInt64(littleEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }))
        }
        for neighbour: UInt8 in [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x61, 0x7F] {
            #expect(plainBytes([UInt8](repeating: neighbour, count: 8)) == 8)
            for byte in UInt8.min...UInt8.max {
                for position in 0..<8 {
                    var bytes = [UInt8](repeating: neighbour, count: 8)
                    bytes[position] = byte
                    #expect(plainBytes(bytes) == (isPlain(byte) ? 8 : position), "byte \(byte) at \(position) among \(neighbour)")
                }
            }
        }
        var random = Random(state: 0x00C0_FFEE)
        let sample: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0x81, 0xA0, 0xC3, 0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in random.chance(70) ? UInt8(0x61 + random.below(26)) : sample[random.below(sample.count)] }
            #expect(plainBytes(bytes) == (bytes.firstIndex { !isPlain($0) } ?? 8), "\(bytes)")
        }
    }

    /// Strings long enough for the eight-byte scan, with one byte that ends, escapes or invalidates them at
    /// every position: accepted and rejected as the oracle does, with the same text.
    @Test func aSpecialByteAtAnyPlaceOfALongStringIsSeen() {
        let specials: [[UInt8]] = [[0x22], [0x5C, 0x6E], [0x5C], [0x01], [0x1F], [0x7F], [0xC3, 0xA9], [0xC3], [0xFF], [0x09]]
        for length in [7, 8, 9, 15, 16, 17, 24] {
            for position in 0...length {
                for special in specials {
                    var text = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    text.insert(contentsOf: special, at: position)
                    Self.check(Array("[\"".utf8) + text + Array("\",\"end\"]".utf8))
                }
            }
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        for depth in [511, 512, 513, 100_000] {
            Self.check(Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8))
        }
        let deepObjects = String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)
        #expect((try? JSONReader.parse(Data(deepObjects.utf8))) == nil)
        #expect(Self.throughTape(Data(deepObjects.utf8)) == nil)
    }

    @Test func foundSetValuesHaveTheTypesOldCallersCastTo() throws {
        let body = #"{"response":{"data":[{"fieldData":{"id":1,"price":2.5,"name":"x","memo":""},"recordId":"1","modId":"0"}]}}"#
        let object = try JSONReader.object(Data(body.utf8))
        let record = try #require(((object["response"] as? [String: Any])?["data"] as? [Any])?.first as? [String: Any])
        let fields = try #require(record["fieldData"] as? [String: Any])
        #expect(fields["id"] as? Int == 1 && (fields["id"] as? NSNumber)?.intValue == 1 && fields["id"] as? Double == 1)
        #expect(fields["price"] as? Double == 2.5 && fields["name"] as? String == "x" && fields["memo"] as? String == "")
        #expect(record["recordId"] as? String == "1")
    }
}

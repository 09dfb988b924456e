import Foundation
import Testing
import TestSupport
@testable import SwiftFM

/// The tape's deferred array read in parts (``JSONTape/init(_:splitFrom:parts:)`` then
/// ``JSONTape/init(part:start:last:depth:)`` on each part, whose bytes end at its comma or at `]`) accepts and
/// rejects what `JSONSerialization` does and gives its values, as the whole scan does; and a string the eight-byte
/// scan reads ends, escapes and fails at the same bytes wherever it lies against an eight-byte boundary and the
/// end of the bytes (a top-level string read as a fragment ends at the last byte; a part's last string at its comma).
@Suite("The tape read in parts, and strings at the end of the bytes, against JSONSerialization")
struct JSONTapePartsOracleTests {
    typealias Random = SplitMix64

    /// The document as the typed decoder's parts see it: its first depth-2 array left unread by the scan, then each
    /// part indexed on its own, the elements put back in place of that array. `nil` when any scan rejects it.
    static func throughTapeInParts(_ data: Data, parts: Int) -> Any? {
        data.withUnsafeBytes { bytes -> Any? in
            guard let tape = try? JSONTape(bytes, splitFrom: 0, parts: parts) else { return nil }
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            guard let deferred = tape.deferred else { return reader.any(0) }
            let starts = [deferred.split.start] + deferred.split.commas.map { $0 + 1 }
            let ends = deferred.split.commas + [deferred.split.close]
            var elements: [Any] = []
            for part in starts.indices {
                let partBytes = UnsafeRawBufferPointer(rebasing: bytes[..<ends[part]])
                guard let partTape = try? JSONTape(part: partBytes, start: starts[part], last: part == starts.count - 1,
                                                   depth: Int(reader.nodes[deferred.node].depth)) else { return nil }
                let partReader = JSONTapeReader(bytes: partBytes, tape: partTape)
                elements += partReader.members(of: 0).map(partReader.any)
                partReader.close()
            }
            func value(_ index: Int) -> Any {
                if index == deferred.node { return elements }
                switch reader.nodes[index].kind {
                case .array: return reader.members(of: index).map(value)
                case .object:
                    var object: [String: Any] = [:]
                    reader.forEachMember(of: index) { key, member in object[reader.string(key)] = value(member) }
                    return object
                default: return reader.any(index)
                }
            }
            return value(0)
        }
    }

    static func throughTape(_ data: Data, fragments: Bool) -> Any? {
        data.withUnsafeBytes { bytes -> Any? in
            guard let tape = try? JSONTape(bytes, fragments: fragments) else { return nil }
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            return reader.any(0)
        }
    }

    /// Every reader against the oracle: the whole tape, the tape in 2, 3 and 8 parts, the tree reader (in parts too).
    static func check(_ bytes: [UInt8], fragments: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) {
        let data = Data(bytes)
        let oracle = try? JSONSerialization.jsonObject(with: data, options: fragments ? [.fragmentsAllowed] : [])
        var readers: [(String, Any?)] = [("tape", throughTape(data, fragments: fragments)),
                                         ("reader", try? JSONReader.parse(data, fragments: fragments, templatesFrom: .max, splitFrom: .max))]
        if !fragments {
            for parts in [2, 3, 8] {
                readers.append(("tape in \(parts) parts", throughTapeInParts(data, parts: parts)))
                readers.append(("reader in \(parts) parts", try? JSONReader.parse(data, templatesFrom: 0, splitFrom: 0, parts: parts)))
            }
        }
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        for (name, ours) in readers {
            switch (oracle, ours) {
            case (nil, nil): break
            case let (expected?, actual?):
                #expect(JSONReaderTests.same(expected, actual), "\(name): values differ for \(text)", sourceLocation: sourceLocation)
            default:
                Issue.record("oracle \(oracle == nil ? "rejects" : "accepts"), \(name) \(ours == nil ? "rejects" : "accepts"): \(text) \(bytes)",
                             sourceLocation: sourceLocation)
            }
        }
    }

    @Test func generatedAndMutatedFoundSetsReadInPartsAgreeWithTheOracle() {
        var random = Random(state: 0x7A9E_5EED)
        for _ in 0..<2000 {
            // The generated array at depth 2, where a found set's `data` is and where the tape defers it.
            let document = Array(#"{"response":{"data":"#.utf8) + JSONReaderTests.document(&random) + Array("}}".utf8)
            Self.check(document)
            Self.check(JSONReaderTests.mutate(document, &random))
        }
    }

    /// A string with a byte that ends, escapes or invalidates it at each place, of each length around the word size,
    /// after each of a few paddings (so it starts at each place of a word), ending at the last byte of the bytes
    /// (a fragment; the last string of a part, before its comma) or running off the end (unterminated).
    @Test func aStringEndsAndFailsAtTheSameBytesWhereverItLies() {
        let specials: [[UInt8]] = [[0x22], [0x5C], [0x5C, 0x75], [0x5C, 0x75, 0x30, 0x30], [0x5C, 0x22], [0x5C, 0x5C], [0x00], [0x1F], [0x7F],
                                   [0x80], [0xC3], [0xC3, 0xA9], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98, 0x80], [0xF0, 0x9F]]
        for padding in [0, 1, 3, 7] {
            let space = [UInt8](repeating: 0x20, count: padding)
            for length in [0, 1, 6, 7, 8, 9, 15, 16, 17] {
                for position in 0...length {
                    for special in specials {
                        var text = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                        text.insert(contentsOf: special, at: position)
                        Self.check(space + [0x22] + text + [0x22], fragments: true)
                        Self.check(space + [0x22] + text, fragments: true)
                        Self.check(Array(#"{"response":{"data":["#.utf8) + space + [0x22] + text + Array(#"",1]}}"#.utf8))
                        Self.check(Array(#"{"response":{"data":[1,"#.utf8) + space + [0x22] + text + Array(#""]}}"#.utf8))
                    }
                }
            }
        }
    }
}

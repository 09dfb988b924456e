import Foundation
import Testing
@testable import SwiftFM

/// A type's `init(from:)` may hold several containers of one object and nest the same key type inside itself
/// (each lookup of one container then interleaves with another's sharing its shape), ask for a super decoder of
/// the object or of a member, and be decoded on several threads in parts: every lookup still finds its own
/// key's value (the containers' positions and the shapes' offsets are not checked for overlapping accesses).
@Suite("Typed decoder: containers re-entered while others are live")
struct TypedDecoderReentryTests {
    /// A found set of these field data objects (the typed decoder's suite's answer).
    static func body(_ fields: [String]) -> Data { TypedTapeDecoderTests.body(fields) }

    /// A tree whose nodes share one key type: two containers on each object, read in alternation around a nested
    /// node decoded with the same keys, a super decoder of the object and one of a member.
    final class Node: Decodable, Sendable {
        let name: String
        let child: Node?
        let children: [Node]
        let sameObject: String?
        let extra: String?

        enum CodingKeys: String, CodingKey { case name, child, children, extra }

        required init(from decoder: any Decoder) throws {
            let first = try decoder.container(keyedBy: CodingKeys.self)
            let second = try decoder.container(keyedBy: CodingKeys.self)
            name = try first.decode(String.self, forKey: .name)
            child = try second.decodeIfPresent(Node.self, forKey: .child)
            children = try first.decodeIfPresent([Node].self, forKey: .children) ?? []
            sameObject = try first.superDecoder().container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .name)
            if first.contains(.extra) {
                extra = try first.superDecoder(forKey: .extra).container(keyedBy: CodingKeys.self).decodeIfPresent(Node.self, forKey: .child)?.name
            } else {
                extra = nil
            }
            guard try second.decode(String.self, forKey: .name) == name, first.allKeys.count == second.allKeys.count else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "two containers of one object disagree"))
            }
        }

        var summary: String {
            "\(name)(\(child?.summary ?? "-") [\(children.map(\.summary).joined(separator: " "))] \(sameObject ?? "-") \(extra ?? "-"))"
        }
    }

    static let leaf = #"{"name":"l\u00e9af","children":[]}"#
    static let middle = #"{"children":[\#(leaf),{"name":"b"}],"name":"mid","child":\#(leaf),"extra":{"name":"x","child":{"name":"deep"}}}"#
    static let top = #"{"name":"top","child":\#(middle),"children":[\#(middle),\#(leaf)],"extra":\#(middle)}"#

    static let expectedLeaf = "léaf(- [] léaf -)"
    static let expectedMiddle = "mid(\(expectedLeaf) [\(expectedLeaf) b(- [] b -)] mid deep)"
    static let expectedTop = "top(\(expectedMiddle) [\(expectedMiddle) \(expectedLeaf)] top léaf)"

    @Test func nestedContainersOfOneKeyTypeFindTheirOwnValues() throws {
        let set = try FMTypedFoundSet<Node>(responseBody: Self.body([Self.top, Self.middle, Self.leaf, Self.top]))
        #expect(set.records.map(\.fieldData.summary) == [Self.expectedTop, Self.expectedMiddle, Self.expectedLeaf, Self.expectedTop])
    }

    @Test func nestedContainersDecodedInPartsOnSeveralThreads() throws {
        let body = Self.body((0..<9_000).map { $0 % 3 == 0 ? Self.top : $0 % 3 == 1 ? Self.middle : Self.leaf })
        #expect(body.count > FileMakerDecoder.splitFrom, "large enough to be read in parts")
        let set = try FileMakerDecoder(parts: 4).foundSet(Node.self, body: body, status: 200)
        #expect(set.records.count == 9_000)
        for (index, record) in set.records.enumerated() {
            let expected = index % 3 == 0 ? Self.expectedTop : index % 3 == 1 ? Self.expectedMiddle : Self.expectedLeaf
            guard record.fieldData.summary == expected else {
                Issue.record("record \(index + 1): \(record.fieldData.summary)")
                break
            }
        }
    }
}

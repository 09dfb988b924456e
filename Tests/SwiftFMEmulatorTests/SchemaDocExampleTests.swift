import Foundation
import Testing
@testable import SwiftFMEmulator

/// The schema contract's examples are real: every ```json block of Docs/SCHEMA.md, put over the League
/// demo solution (its keys replacing the League's), loads; the jsonc example at the top loads once its comments go.
@Suite struct SchemaDocExampleTests {
    static let schemaDoc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Docs/SCHEMA.md")

    /// The fenced blocks of `language` in `text`.
    func blocks(_ language: String, in text: String) -> [String] {
        var out: [String] = [], current: [String]? = nil
        for line in text.components(separatedBy: "\n") {
            if current == nil, line == "```\(language)" { current = [] } else if line == "```", let c = current {
                out.append(c.joined(separator: "\n"))
                current = nil
            } else { current?.append(line) }
        }
        return out
    }

    @Test func everyExampleLoads() throws {
        let text = try String(contentsOf: Self.schemaDoc, encoding: .utf8)
        let fragments = blocks("json", in: text)
        #expect(fragments.count >= 2)
        let league = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: leagueSchemaURL)) as? [String: Any])
        for fragment in fragments {
            let keys = try #require(try JSONSerialization.jsonObject(with: Data("{\(fragment)}".utf8)) as? [String: Any])
            var schema = league
            schema.merge(keys) { _, new in new }
            let data = try JSONSerialization.data(withJSONObject: schema)
            #expect(throws: Never.self, "\(keys.keys.sorted())") { _ = try EmulatorSchema(jsonData: data) }
        }
        // The annotated example: strip `// …` comments outside strings (none of its strings holds `//`).
        let annotated = try #require(blocks("jsonc", in: text).first)
        let plain = annotated.components(separatedBy: "\n").map { line in
            line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? line
        }.joined(separator: "\n")
        #expect(throws: Never.self) { _ = try EmulatorSchema(jsonData: Data(plain.utf8)) }
    }
}

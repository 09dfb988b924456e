import Foundation
import Testing
import SwiftFM
@testable import FMCodegen

/// The metadata shapes that broke fm-codegen (Tests/Fixtures/codegen-edges-metadata.json), whose
/// output is committed under Generated/Edges and compiled here.
let edgesMetadata = packageRoot.appendingPathComponent("Tests/Fixtures/codegen-edges-metadata.json")
let edgesDirectory = packageRoot.appendingPathComponent("Tests/CodegenTests/Generated/Edges")

func roundTrip<T: Codable>(_ value: T) throws -> (T, [String: Any]) {
    let data = try JSONEncoder().encode(value)
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    return (try JSONDecoder().decode(T.self, from: data), object)
}

/// A fresh empty directory under the temporary directory.
func scratchDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("fm-codegen-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite struct CodegenEdgesTests {
    @Test func committedEdgesFilesAreTheGeneratorsOutput() throws {
        let output = CodeGenerator.output(try MetadataSource.read(metadataFile: edgesMetadata))
        let hint = "run: swift run fm-codegen --metadata Tests/Fixtures/codegen-edges-metadata.json --output Tests/CodegenTests/Generated/Edges"
        #expect(MetadataSource.check(output.files, in: edgesDirectory, complete: true) == [], "\(hint)")
        #expect(output.files.count == 5)
    }

    /// An empty layout name stopped the whole run; now it is reported and skipped, the others generated.
    @Test func anEmptyLayoutNameIsSkippedAndTheOthersGenerated() throws {
        let output = CodeGenerator.output(try MetadataSource.read(metadataFile: edgesMetadata))
        #expect(output.skipped == [SkippedLayout(name: "", reason: "the layout name is empty")])
        #expect(output.files.contains { $0.name == "EdgeCases.swift" } && output.files.contains { $0.name == "Orders2.swift" })
    }

    /// `Orders` and `orders` were `Orders.swift` twice on a case-insensitive disk; a 300-character or
    /// 120-CJK-character layout name gave a file name over 255 bytes (ENAMETOOLONG).
    @Test func fileNamesAreDistinctWithoutCaseAndBoundedInBytes() throws {
        let files = CodeGenerator.generate(try MetadataSource.read(metadataFile: edgesMetadata))
        let folded = Set(files.map { Naming.foldKey($0.name) })
        #expect(folded.count == files.count, "\(files.map(\.name))")
        #expect(files.filter { $0.name.hasPrefix("Orders") }.map(\.name) == ["Orders.swift", "Orders2.swift"])
        #expect(Orders.layout == "Orders" && Orders2.layout == "orders")
        #expect(try roundTrip(Orders2(number: 2, status: "open")).0 == Orders2(number: 2, status: "open"))
        for file in files {
            #expect(file.name.utf8.count <= CodeGenerator.maxTypeNameBytes + ".swift".utf8.count, "\(file.name)")
        }
        #expect(files.contains { $0.name.hasPrefix("季度销售") && $0.contents.contains("public static let layout = \"季度销售报告按地区和产品线分类季度") })
        // Written for real: every file lands, nothing else is left beside them.
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try MetadataSource.write(files, to: directory).count == files.count)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == files.map(\.name).sorted())
        #expect(MetadataSource.check(files, in: directory, complete: true) == [])
    }

    /// ENAMETOOLONG came after half the files were written; now a failing write leaves the folder as it was.
    @Test func nothingIsWrittenWhenAWriteFails() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("old".utf8).write(to: directory.appendingPathComponent("A.swift"))
        let files = [GeneratedFile(name: "A.swift", contents: "new"), GeneratedFile(name: "B.swift", contents: "b"),
                     GeneratedFile(name: String(repeating: "x", count: 300) + ".swift", contents: "too long")]
        #expect(throws: (any Error).self) { try MetadataSource.write(files, to: directory) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["A.swift"])
        #expect(try String(contentsOf: directory.appendingPathComponent("A.swift"), encoding: .utf8) == "old")
    }

    /// `--check --layout X` failed on a folder shared with other layouts: a partial check skips other files.
    @Test func aCheckOfSomeLayoutsIgnoresTheOthersFiles() async throws {
        let input = try await MetadataSource.read(schemaFile: Solution.all[1].schema, layouts: ["Teams"])
        let files = CodeGenerator.generate(input)
        let league = Solution.all[1].directory
        #expect(MetadataSource.check(files, in: league, complete: false) == [])
        #expect(MetadataSource.check(files, in: league, complete: true).sorted()
                == ["not generated: Cities.swift", "not generated: Games.swift", "not generated: Players.swift"])
        var changed = files
        changed[0].contents += "\n"
        #expect(MetadataSource.check(changed, in: league, complete: false) == ["differs: Teams.swift"])
    }

    /// Two field names equal after Unicode normalisation (`café` composed, `café` decomposed, `Café`) were one
    /// property, and a write went to the wrong field; now each is a property keyed by its exact name.
    @Test func canonicallyEqualFieldNamesAreDistinctProperties() throws {
        let keys = [EdgeCases.CodingKeys.café, .café2, .café3].map { Array($0.rawValue.unicodeScalars) }
        #expect(keys == ["caf\u{E9}", "cafe\u{301}", "Caf\u{E9}"].map { Array($0.unicodeScalars) })
        // Each value round-trips under its own field's exact name; the other properties stay nil.
        for value in [EdgeCases(café: "composed"), EdgeCases(café2: "decomposed"), EdgeCases(café3: "capital")] {
            let (decoded, object) = try roundTrip(value)
            #expect(decoded == value, "\(object)")
            let names = object.keys.filter { $0.lowercased().hasPrefix("caf") }.map { Array($0.unicodeScalars) }
            let field = value.café != nil ? "caf\u{E9}" : value.café2 != nil ? "cafe\u{301}" : "Caf\u{E9}"
            #expect(names == [Array(field.unicodeScalars)], "\(object)")
        }
        #expect(EdgeCases.layoutFields.filter { $0.name.lowercased().hasPrefix("caf") }.count == 3)
    }

    /// The same in a portal row: `Lines::café` composed and decomposed are two row properties, each read
    /// only under its own exact name.
    @Test func canonicallyEqualPortalFieldNamesAreDistinctRowProperties() throws {
        for row in [EdgeCases.PortalsRow(café: "composed"), EdgeCases.PortalsRow(café2: "decomposed")] {
            let (decoded, object) = try roundTrip(row)
            #expect(decoded == row, "\(object)")
        }
        let keys = [EdgeCases.PortalsRow.CodingKeys.café, .café2].map { Array($0.rawValue.unicodeScalars) }
        #expect(keys == ["Lines::caf\u{E9}", "Lines::cafe\u{301}"].map { Array($0.unicodeScalars) })
    }

    /// A portal named `Portals`, and portal fields named bare `recordId` / `modId`, gave code that does not
    /// compile; this file compiles, and the values round-trip through JSON with their portals.
    @Test func edgeCasesRoundTripWithTheirPortals() throws {
        let value = EdgeCases(
            id: 1, total: 3, gFlag: "g", notes: "a note", container: "c", decoder: "d", encode2: "e", title: "t",
            portals: [.init(recordId: "7", modId: "2", amount: 9.5, label: "nine and a half"), .init(recordId: "8", label: "eight")],
            notes2: [.init(recordId: "1", text: "not coded: a field has this name")],
            source: [.init(recordId: "3", text: "s", recordId2: "r")]
        )
        let (decoded, object) = try roundTrip(value)
        var expected = value
        expected.notes2 = []
        #expect(decoded == expected)
        let rows = try #require(object["Portals"] as? [[String: Any]])
        #expect(rows.count == 2 && rows[0]["recordId"] as? String == "7" && rows[0]["Lines::amount"] as? Double == 9.5)
        #expect(object["notes"] as? String == "a note", "the field keeps its name; the portal of that name is not coded")
        #expect((object["source"] as? [[String: Any]])?.first?["Notes::recordId"] as? String == "r")

        // The SwiftFM read path fills every portal, coded or not, from portalData.
        var read = EdgeCases()
        try read.fillPortals(from: FMPortals(rows: [
            "Portals": [FMPortalRow(recordId: "5", modId: "1", fields: ["Lines::amount": .number(2), "recordId": .string("5"),
                                                                        "Lines::cafe\u{301}": .string("d")])],
            "notes": [FMPortalRow(recordId: "6", modId: "0", fields: ["Notes::text": .string("n")])],
        ]))
        #expect(read.portals == [.init(recordId: "5", modId: "1", amount: 2, café2: "d")])
        #expect(read.notes2.map(\.text) == ["n"])
    }

    /// Fields FileMaker fills itself (auto-enter serial and stamps, calculation, summary, global) are never
    /// written; nor are portals.
    @Test func fieldsFileMakerFillsAreNotWritable() {
        let readOnly = Set(EdgeCases.layoutFields.filter { !$0.isWritable }.map(\.name))
        #expect(readOnly == ["id", "created", "modified", "total", "grand total", "g_flag", "Portals", "source"])
        #expect(Orders2.layoutFields.allSatisfy { $0.isWritable })
    }
}

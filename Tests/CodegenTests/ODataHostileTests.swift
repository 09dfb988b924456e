import Foundation
import Testing
import SwiftFM
import TestSupport
@testable import FMCodegen

// fm-codegen --odata fed hostile documents: names that are Swift keywords, members the generated code declares,
// protocols it uses, paths, quotes, line breaks, bidi and C1 controls; properties of types no Swift type holds;
// documents in another encoding, with an attribute twice, with many names of one stem. The output must compile
// (Tests/Fixtures/odata-hostile-metadata.xml's types are committed under Generated/ODataHostile and compiled
// here; random documents are type-checked with swiftc), decode real rows, and stay inside the output folder.

let odataHostileFixture = packageRoot.appendingPathComponent("Tests/Fixtures/odata-hostile-metadata.xml")
let odataHostileDirectory = packageRoot.appendingPathComponent("Tests/CodegenTests/Generated/ODataHostile")

/// The built `fm-codegen` next to the test bundle (`swift build --build-tests` builds it).
let fmCodegenExecutable: URL? = {
    var directory = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("fm-codegen")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return nil
}()

/// Runs `fm-codegen` with `arguments`: its exit status, stdout and stderr.
func runCodegen(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    guard let executable = fmCodegenExecutable else { throw CodegenRunError(description: "fm-codegen is not built: run swift build --build-tests") }
    let process = try ChildProcess(executable, arguments)
    guard let out = process.standardOutput, let err = process.standardError else { throw CodegenRunError(description: "fm-codegen has no pipes") }
    // Read stderr on another thread so that neither pipe fills while the other is read.
    let errors = ErrorText()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        errors.set(String(decoding: err.readAllRetryingInterrupts(), as: UTF8.self))
        done.signal()
    }
    let text = String(decoding: out.readAllRetryingInterrupts(), as: UTF8.self)
    done.wait()
    process.waitUntilExit()
    return (process.terminationStatus, text, errors.get())
}

/// fm-codegen could not be run.
struct CodegenRunError: Error, CustomStringConvertible {
    var description: String
}

/// A string handed from the stderr reader to the test.
final class ErrorText: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func set(_ value: String) { lock.lock(); text = value; lock.unlock() }
    func get() -> String { lock.lock(); defer { lock.unlock() }; return text }
}

/// Type-checks `files` together as one module (Swift 6 mode) against the SwiftFM module this test run was built
/// with: the exit status and the diagnostics.
func typecheckGenerated(_ files: [GeneratedFile]) throws -> (status: Int32, diagnostics: String) {
    let directory = try scratchDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    try MetadataSource.write(files, to: directory)
    let result = try typecheckAgainstSwiftFM(files.map { directory.appendingPathComponent($0.name) },
                                             arguments: ["-swift-version", "6", "-parse-as-library", "-module-name", "Hostile"],
                                             scratch: directory)
    return (result.status, result.diagnostics)
}

@Suite struct ODataHostileTests {
    /// On main a set named `CaseIterable` was `struct CaseIterable`: every type with exact coding keys in the
    /// module (`café` composed and decomposed) stopped compiling. `tags` (`Collection(Edm.String)`) was `String?`.
    @Test("a hostile but valid $metadata: the committed types are the generator's output, and compile here")
    func committedHostileFiles() throws {
        let hint = "run: swift run fm-codegen --odata Tests/Fixtures/odata-hostile-metadata.xml --output Tests/CodegenTests/Generated/ODataHostile"
        let output = ODataCodeGenerator.output(try ODataMetadataSource.read(odataHostileFixture))
        #expect(output.files.map(\.name) == ["CaseIterable2.swift", "HostileNames.swift", "HostilePasswd.swift"])
        #expect(output.skipped.map(\.name) == ["Hostile Orphan"])
        #expect(MetadataSource.check(output.files, in: odataHostileDirectory, complete: true) == [], "\(hint)")
        #expect(CaseIterable2.entitySet == "CaseIterable" && HostilePasswd.entitySet == "../../hostile/../passwd")
        #expect(HostileNames.fieldNames.count == 34, "every field is listed, read or not")
        #expect(HostileNames.fieldNames.contains("q\"\\*/#\r\nz") && HostileNames.fieldNames.contains("\u{85}nel"))
        #expect(!HostileNames.writableFieldNames.contains("tags") && HostileNames.writableFieldNames.contains("flag"))
        // Every generated line that is a comment stays one line: no name breaks out of it.
        for file in output.files {
            for line in file.contents.split(separator: "\n", omittingEmptySubsequences: false) {
                #expect(!line.unicodeScalars.contains { [0x85, 0x2028, 0x2029, 0x0D, 0x202E].contains($0.value) }, "\(file.name): \(line)")
            }
        }
    }

    /// On main, `Edm.Boolean`, `Collection(…)` and an undefined type were `String?`: a row holding `true`, an array
    /// or an object failed to decode, and with it the whole page.
    @Test("rows with a boolean, a collection, an object and hostile keys decode into the generated type")
    func hostileRowsDecode() throws {
        let row: [String: Any] = [
            "allCases": "key", "rawValue": "r", "stringValue": "s", "intValue": 7, "init": "i", "self": "lower", "Self": "upper",
            "Type": "t", "cafe\u{301}": "decomposed", "default": "d", "a b": "space", "a_b": "underscore", "1st": "first",
            "x\u{202E}y": "bidi", "q\"\\*/#\r\nz": "quoted", "": "empty", "\u{85}nel": "nel", "entitySet": "member",
            "CodingKeys": "keys", "hashValue": "hash", "flag": true, "guid": "0F0E", "tags": ["a", "b"], "shape": ["x": 1],
            "place": ["type": "Point", "coordinates": [1, 2]], "Nowhere": [["id": 1]],
        ]
        let value = try JSONDecoder().decode(HostileNames.self, from: JSONSerialization.data(withJSONObject: row))
        #expect(value.allCases == "key" && value.rawValue == "r" && value.stringValue == "s" && value.intValue == 7)
        #expect(value.init_ == "i" && value.self_ == "lower" && value.self_2 == "upper" && value.type == "t")
        #expect(value.café == nil && value.café2 == "decomposed", "each form of café is read under its own name only")
        #expect(value.default == "d" && value.aB == "space" && value.aB2 == "underscore" && value._1st == "first")
        #expect(value.xY == "bidi" && value.qZ == "quoted" && value.field == "empty" && value.nel == "nel")
        #expect(value.entitySet2 == "member" && value.codingKeys2 == "keys" && value.hashValue2 == "hash")
        #expect(value.flag == true && value.guid == "0F0E")
        let (again, object) = try roundTrip(value)
        #expect(again == value)
        #expect(object["q\"\\*/#\r\nz"] as? String == "quoted" && object["flag"] as? Bool == true && object["tags"] == nil)
    }

    /// A document of random hostile names, generated and type-checked with swiftc in Swift 6 mode: it compiles
    /// without a warning. (On main, the set named `CaseIterable` made it fail.)
    @Test("random hostile names: the generated files type-check in Swift 6 mode, with no warning")
    func randomHostileNamesTypeCheck() throws {
        let tokens = ["CaseIterable", "allCases", "init", "self", "Self", "Type", "Protocol", "default", "class", "any", "String", "Double",
                      "Date", "Bool", "CodingKeys", "entitySet", "hashValue", "fieldNames", "rawValue", "stringValue", "1", "2nd", " ", "_",
                      "-", "::", "\"", "\\", "\n", "\r", "*/", "/*", "#", "`", "\u{202E}", "\u{301}", "e\u{301}", "\u{E9}", "\u{DF}", "SS",
                      "\u{85}", "\u{0}", "\u{1B}[2J", "季", "🎵", "\u{130}", "\u{1C5}", "$", "@", "..", "/", "\u{2028}", "\u{FEFF}", "x"]
        let edm = ["Edm.String", "Edm.Decimal", "Edm.Date", "Edm.TimeOfDay", "Edm.DateTimeOffset", "Edm.Binary", "Edm.Boolean",
                   "Edm.Guid", "Collection(Edm.String)", "Some.Complex", "Edm.Int64"]
        var rng = Xorshift(state: 0x8A77_AC8)
        func name() -> String { (0...rng.below(3)).map { _ in tokens[rng.below(tokens.count)] }.joined() }
        var metadata = FMODataMetadata(namespace: "com.filemaker.odata.H\u{1B}.fmp12")
        for index in 0..<16 {
            var properties = [FMODataProperty(name: "caf\u{E9}", edmType: "Edm.String"), FMODataProperty(name: "cafe\u{301}", edmType: "Edm.Decimal")]
            for _ in 0..<14 { properties.append(FMODataProperty(name: name(), edmType: edm[rng.below(edm.count)], nullable: rng.below(2) == 0)) }
            metadata.entityTypes.append(FMODataEntityType(name: "T\(index)", key: [properties[2].name], properties: properties))
            metadata.entitySets.append(FMODataEntitySet(name: index == 0 ? "CaseIterable" : name(), entityType: "T\(index)"))
        }
        let output = ODataCodeGenerator.output(metadata)
        #expect(output.files.count >= 10, "\(output.skipped)")
        let result = try typecheckGenerated(output.files)
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(!result.diagnostics.contains("warning:"), "\(result.diagnostics)")
    }

    /// On main every claim of a stem counted up from 2: n names of one stem probed n²/2 candidates (8 000
    /// properties named `a`, `a-`, `a.`, … took 28 s in a debug build, 100 000 would take an hour).
    @Test("many names of one stem: distinct, numbered in order, with work linear in their number")
    func manyNamesOfOneStem() {
        var namer = Namer(reserved: ["a5"])
        let count = 5_000
        let names = (0..<count).map { index in namer.claim(index % 2 == 0 ? "a" : "A") }
        #expect(Set(names.map(Naming.foldKey)).count == count)
        #expect(Array(names.prefix(6)) == ["a", "A2", "a3", "A4", "a6", "A7"])
        #expect(namer.probes <= 2 * count + 10, "\(namer.probes) probes for \(count) names")

        // Through the generator: every property of one stem gets its own name, in document order.
        let properties = (0..<2_000).map { index in
            FMODataProperty(name: "a" + String(index, radix: 2).map { $0 == "0" ? "-" : "." }, edmType: "Edm.String")
        }
        let metadata = FMODataMetadata(namespace: "N", entityTypes: [FMODataEntityType(name: "T", properties: properties)],
                                       entitySets: [FMODataEntitySet(name: "S", entityType: "N.T")])
        let file = ODataCodeGenerator.output(metadata).files[0].contents
        #expect(file.contains("public var a: String?") && file.contains("public var a2000: String?") && !file.contains("a2001"))
    }

    /// On main a set's type was looked up by the set's name with Swift's `==`: of two sets named `Café` composed and
    /// decomposed, the second got the first one's type (and every set was a scan of every set: quadratic).
    @Test("two sets whose names are canonically equal each get their own entity type")
    func canonicallyEqualSetNames() throws {
        let metadata = FMODataMetadata(
            namespace: "com.filemaker.odata.M.fmp12",
            entityTypes: [FMODataEntityType(name: "Composed_", properties: [FMODataProperty(name: "composed", edmType: "Edm.String")]),
                          FMODataEntityType(name: "Decomposed_", properties: [FMODataProperty(name: "decomposed", edmType: "Edm.Decimal")])],
            entitySets: [FMODataEntitySet(name: "Caf\u{E9}", entityType: "com.filemaker.odata.M.fmp12.Composed_"),
                         FMODataEntitySet(name: "Cafe\u{301}", entityType: "Decomposed_")])
        let files = ODataCodeGenerator.output(metadata).files
        #expect(files.count == 2)
        // Swift's `contains` equates the two forms: look for the exact bytes.
        func exactly(_ part: String) -> (GeneratedFile) -> Bool { { Data($0.contents.utf8).range(of: Data(part.utf8)) != nil } }
        let decomposed = try #require(files.first(where: exactly("entitySet = \"Cafe\u{301}\""))).contents
        #expect(decomposed.contains("public var decomposed: Double?") && !decomposed.contains("composed: String?"))
        let composed = try #require(files.first(where: exactly("entitySet = \"Caf\u{E9}\""))).contents
        #expect(composed.contains("public var composed: String?"))
        // The namespace, short and qualified forms still find a type; the first type of a name wins.
        var twice = metadata
        twice.entityTypes.append(FMODataEntityType(name: "Composed_", properties: [FMODataProperty(name: "second", edmType: "Edm.String")]))
        twice.entitySets = [FMODataEntitySet(name: "A", entityType: "M.fmp12.Composed_"), FMODataEntitySet(name: "B", entityType: "Composed_")]
        #expect(ODataCodeGenerator.output(twice).files.allSatisfy { $0.contents.contains("public var composed: String?") })
    }

    /// On main a Latin-1 document was read as UTF-8: `café` became `caf\u{FFFD}`, a field name that matches nothing.
    @Test("a document not in UTF-8 is refused, naming the byte; an ASCII one declaring Latin-1 is read")
    func encodings() throws {
        func document(_ name: [UInt8], declaration: String = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>") -> Data {
            Data(declaration.utf8) + Data("<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\"><EntityType Name=\"T\"><Property Name=\"".utf8)
                + Data(name) + Data("\" Type=\"Edm.String\"/></EntityType></Schema></edmx:DataServices></edmx:Edmx>".utf8)
        }
        let latin1 = document([0x63, 0x61, 0x66, 0xE9])
        let refused = #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(latin1) }
        #expect(refused?.description.contains("ISO-8859-1") == true, "\(String(describing: refused))")
        #expect(refused?.description.contains("at byte \(latin1.firstIndex(of: 0xE9) ?? -1)") == true, "\(String(describing: refused))")
        // Bytes that are UTF-8 but declared Latin-1 (`Ã©`) are refused too: they would be read as `é`.
        #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(document([0x63, 0xC3, 0xA9])) }
        #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(document([0x63, 0xE9], declaration: "")) }
        #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(document([0x63, 0xC3], declaration: "")) }
        let utf16 = Data([0xFF, 0xFE]) + Data("<edmx:Edmx/>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        #expect((#expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(utf16) })?.description.contains("UTF-16") == true)
        // ASCII declared Latin-1, and UTF-8 declared or not, are read.
        #expect(try ODataMetadataSource.read(document(Array("cafe".utf8))).entityTypes.first?.properties.first?.name == "cafe")
        let utf8 = try ODataMetadataSource.read(document([0x63, 0x61, 0x66, 0xC3, 0xA9], declaration: "<?xml version='1.0' encoding='UTF-8'?>"))
        #expect(utf8.entityTypes.first?.properties.first?.name == "caf\u{E9}")
        #expect(try ODataMetadataSource.read(Data([0xEF, 0xBB, 0xBF]) + document([0xC3, 0xA9], declaration: "")).entityTypes.count == 1)
    }

    /// On main the last of two `Name` attributes won: another reader of the same document would see another name.
    @Test("an attribute given twice is an error")
    func duplicateAttribute() {
        let xml = "<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\"><EntityType Name=\"T\" Name=\"U\"/></Schema></edmx:DataServices></edmx:Edmx>"
        let error = #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(Data(xml.utf8)) }
        #expect(error?.description.contains("attribute Name twice in <EntityType>") == true, "\(String(describing: error))")
    }

    /// On main a combining mark after a reference's `;` (valid XML for `&\u{301}`) made the reference unreadable
    /// ("a bare &"), and a line break or tab written as such in an attribute stayed one (XML reads a space there:
    /// the field `a b` was generated as `a\nb`, a key no row has).
    @Test("references are read by Unicode scalar, and white space in attribute values is normalised as XML says")
    func referencesAndAttributeWhiteSpace() throws {
        let xml = "<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\"><EntityType Name=\"T\">"
            + "<Property Name=\"R&amp;\u{301}D\" Type=\"Edm.String\"/><Property Name=\"a\r\nb\tc\nd\" Type=\"Edm.String\"/>"
            + "<Property Name=\"e&#10;f&#9;g\" Type=\"Edm.String\"/><Property Name=\"&lt;\u{301}&#x41;\u{308}\" Type=\"Edm.String\"/>"
            + "</EntityType></Schema></edmx:DataServices></edmx:Edmx>"
        let names = try #require(try ODataMetadataSource.read(Data(xml.utf8)).entityTypes.first).properties.map { Array($0.name.unicodeScalars) }
        #expect(names == ["R&\u{301}D", "a b c d", "e\nf\tg", "<\u{301}A\u{308}"].map { Array($0.unicodeScalars) })
    }

    /// On main the number of elements and of attributes was not bounded: 8 MB of `<a/>` took 215 MB of memory, so a
    /// large hostile document exhausted it.
    @Test("the number of elements and the attributes of an element are bounded")
    func elementsAndAttributesAreBounded() throws {
        func document(_ elements: Int) -> Data {
            Data(("<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\">" + String(repeating: "<a/>", count: elements)
                  + "</Schema></edmx:DataServices></edmx:Edmx>").utf8)
        }
        #expect(ODataXML.maxElements == 4_000_000 && ODataXML.maxAttributes == 256)
        _ = try ODataXML.metadata(document(997), maxElements: 1_000)
        let many = #expect(throws: ODataXML.Failure.self) { try ODataXML.metadata(document(998), maxElements: 1_000) }
        #expect(many?.description.contains("more than 1000 elements") == true, "\(String(describing: many))")
        // Name and a0…a255: 257 attributes; without a255, 256.
        let attributes = (0..<256).map { " a\($0)=\"\"" }.joined()
        let wide = "<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\"><EntityType Name=\"T\"\(attributes)/></Schema></edmx:DataServices></edmx:Edmx>"
        let refused = #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(Data(wide.utf8)) }
        #expect(refused?.description.contains("more than 256 attributes in <EntityType>") == true, "\(String(describing: refused))")
        #expect(try ODataMetadataSource.read(Data(wide.replacingOccurrences(of: " a255=\"\"", with: "").utf8)).entityTypes.count == 1)
    }

    /// On main the temporary file was written through whatever was at its (predictable) name: a link planted
    /// there sent the generated text outside the output folder. And a folder in the way of one file was found
    /// only after the files before it were replaced, so a failing write changed some files.
    @Test("writing never follows a link at the temporary name, and a folder in the way changes nothing")
    func writesStayInTheFolder() throws {
        let root = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let outside = root.appendingPathComponent("outside.txt")
        try Data("outside".utf8).write(to: outside)
        let pid = ProcessInfo.processInfo.processIdentifier
        for index in 0..<2 {
            try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent(".fm-codegen-\(pid)-\(index).tmp"), withDestinationURL: outside)
        }
        let files = [GeneratedFile(name: "A.swift", contents: "a"), GeneratedFile(name: "B.swift", contents: "b")]
        #expect(try MetadataSource.write(files, to: folder) == ["A.swift", "B.swift"])
        #expect(try String(contentsOf: outside, encoding: .utf8) == "outside")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["A.swift", "B.swift"])
        #expect(try String(contentsOf: folder.appendingPathComponent("A.swift"), encoding: .utf8) == "a")

        try FileManager.default.removeItem(at: folder.appendingPathComponent("B.swift"))
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("B.swift"), withIntermediateDirectories: false)
        let changed = [GeneratedFile(name: "A.swift", contents: "a2"), GeneratedFile(name: "B.swift", contents: "b2")]
        #expect(throws: (any Error).self) { try MetadataSource.write(changed, to: folder) }
        #expect(try String(contentsOf: folder.appendingPathComponent("A.swift"), encoding: .utf8) == "a")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["A.swift", "B.swift"])
    }

    /// On main C1 controls (U+0085, a line break to some editors) were written raw into comments and literals.
    @Test("control characters of every kind are escaped in literals and comments")
    func controlsAreEscaped() {
        #expect(Naming.literal("a\u{85}b\u{9F}c\u{1B}d\u{7F}") == "a\\u{85}b\\u{9f}c\\u{1b}d\\u{7f}")
        #expect(Naming.doc("`x`\u{2028}") == "'x'\\u{2028}")
    }

    @Test("fm-codegen --odata on hostile documents: files only in the output folder, names escaped in messages, exit status")
    func executable() throws {
        let root = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let output = root.appendingPathComponent("deep/out")
        let run = try runCodegen(["--odata", odataHostileFixture.path, "--output", output.path])
        #expect(run.status == 0, "\(run.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.path).sorted()
                == ["CaseIterable2.swift", "HostileNames.swift", "HostilePasswd.swift"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["deep"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("deep").path) == ["out"])
        #expect(run.out.contains("database Ho\"st\\ile\\u{a}*/,") && !run.out.dropLast().contains("\n"), "\(run.out)")
        #expect(run.err == "fm-codegen: skipped entity set \"Hostile Orphan\": its entity type Hostile.Missing_ is not in the document\n")

        // A name with a terminal escape sequence and a line break is shown escaped.
        let evil = root.appendingPathComponent("evil.xml")
        try Data(("<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N&#27;]0;owned&#7;\"><EntityContainer>"
                  + "<EntitySet Name=\"&#27;[2J&#10;fm-codegen: all good\" EntityType=\"N.None&#27;\"/></EntityContainer></Schema>"
                  + "</edmx:DataServices></edmx:Edmx>").utf8).write(to: evil)
        let shown = try runCodegen(["--odata", evil.path, "--output", root.appendingPathComponent("evil").path])
        #expect(shown.status == 0)
        #expect(!shown.err.contains("\u{1B}") && !shown.out.contains("\u{1B}") && !shown.out.contains("\u{7}"), "\(shown)")
        #expect(shown.err.contains("\\u{1b}[2J\\u{a}fm-codegen: all good") && shown.err.split(separator: "\n").count == 1, "\(shown.err)")

        // --check: up to date, stale, missing, extra, and a missing folder.
        #expect(try runCodegen(["--odata", odataHostileFixture.path, "--output", output.path, "--check"]).status == 0)
        try Data("// edited\n".utf8).write(to: output.appendingPathComponent("HostileNames.swift"))
        try FileManager.default.removeItem(at: output.appendingPathComponent("CaseIterable2.swift"))
        try Data().write(to: output.appendingPathComponent("Old.swift"))
        let stale = try runCodegen(["--odata", odataHostileFixture.path, "--output", output.path, "--check"])
        #expect(stale.status == 1)
        #expect(stale.out == "differs: CaseIterable2.swift\ndiffers: HostileNames.swift\nnot generated: Old.swift\n", "\(stale.out)")
        #expect(try String(contentsOf: output.appendingPathComponent("HostileNames.swift"), encoding: .utf8) == "// edited\n", "--check writes nothing")
        let missing = try runCodegen(["--odata", odataHostileFixture.path, "--output", root.appendingPathComponent("none").path, "--check"])
        #expect(missing.status == 1 && missing.out.split(separator: "\n").count == 3)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("none").path))

        // Documents that cannot be read: exit 1, the reason on stderr, nothing written.
        let bad: [(String, Data, String)] = [
            ("latin1.xml", Data("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><edmx:Edmx/>".utf8) + Data([0xE9]), "ISO-8859-1"),
            ("truncated.xml", Data("<edmx:Edmx><edmx:DataServices><Schema Namespace=\"N\"><EntityType Na".utf8), "XML: an attribute without a value"),
            ("utf16.xml", Data([0xFE, 0xFF]) + Data("<edmx:Edmx/>".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }), "UTF-16"),
            ("laughs.xml", Data("<!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]><edmx:Edmx>&b;</edmx:Edmx>".utf8), "document type"),
            ("binary.xml", Data([0x00, 0x01, 0xFF, 0xFE]), "neither JSON nor XML"),
        ]
        for (name, data, reason) in bad {
            let file = root.appendingPathComponent(name)
            try data.write(to: file)
            let target = root.appendingPathComponent("bad")
            let result = try runCodegen(["--odata", file.path, "--output", target.path])
            #expect(result.status == 1 && result.err.contains(reason) && result.err.hasPrefix("fm-codegen: reading the OData metadata failed"), "\(name): \(result.err)")
            #expect(!FileManager.default.fileExists(atPath: target.path), "\(name)")
        }
    }
}

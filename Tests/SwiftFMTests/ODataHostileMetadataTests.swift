import Foundation
import Testing
import TestSupport
@testable import SwiftFM

// A hostile server's `$metadata` and other OData answers: read or refused with -1006/-1007, never a crash.

@Suite("FMOData $metadata and answers from a hostile server")
struct ODataHostileMetadataTests {
    static func read(_ text: String) -> Result<FMODataMetadata, FMError> {
        do throws(FMError) { return .success(try FMODataMetadata(json: Data(text.utf8))) } catch { return .failure(error) }
    }

    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    @Test("deep nesting: read up to the JSON reader's depth (through the pipeline too), -1007 past it, never a stack overflow")
    func deepNesting() async throws {
        let deep = #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","@Deep":\#(Self.nested(500)),"a":{"@Deep":\#(Self.nested(500))}}}}"#
        let metadata = try Self.read(deep).get()
        #expect(metadata.entityTypes.first?.properties.map(\.name) == ["a"])
        let setup = ODataHarness { _ in .body(200, Data(deep.utf8), contentType: "application/json") }
        #expect(try await setup.odata.metadata().entityTypes.count == 1)
        let tooDeep = #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","@Deep":\#(Self.nested(600))}}}"#
        #expect(throws: FMError.self) { try Self.read(tooDeep).get() }
        if case .failure(let error) = Self.read(tooDeep) { #expect(error.code == FMError.ClientCode.malformedResponse) }
    }

    @Test("odd but well-formed CSDL: repeated keys, a $Key naming no property, a binding to no set, huge numbers, odd annotations")
    func oddDocuments() throws {
        let odd = #"""
        {"$Version":"4.01","$Version":"4.0","@ServerVersion":{"x":1},"@SchemaVersion":[1,"a",true],
         "NS":{"T_":{"$Kind":"EntityType","$Key":["nope",{"alias":"path"}],"a":{"$Type":"Edm.Int64","$DefaultValue":123456789012345678901234567890},
                     "a":{"$Type":"Edm.String","@MaxLength":1e300,"@Odd":null,"@Also":{"nested":[1]}},"n":{"$Kind":"NavigationProperty","$Type":"NS.None_"}},
               "C":{"$Kind":"EntityContainer","S":{"$Collection":true,"$Type":"NS.T_","$NavigationPropertyBinding":{"n":"Missing","n":"Gone"}}}}}
        """#
        let metadata = try Self.read(odd).get()
        let type = try #require(metadata.entityTypes.first)
        #expect(type.key == ["nope", "path"])
        #expect(type.properties.map(\.name) == ["a", "a"])
        #expect(type.properties.first?.defaultValue == "123456789012345678901234567890")
        #expect(metadata.entitySets.first?.navigationBindings["n"] == "Gone")
    }

    @Test("wrong member types are -1007, not a crash", arguments: [
        #"{"$Version":"4.01","NS":{"T_":{"$Kind":7}}}"#,
        #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","$Key":"id"}}}"#,
        #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","$Key":[1]}}}"#,
        #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","a":{"$Type":[]}}}}"#,
        #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","n":{"$Kind":"NavigationProperty"}}}}"#,
        #"{"$Version":"4.01","NS":{"S":{"$Kind":"EntitySet"}}}"#,
        #"{"$Version":"4.01","NS":{"S":{"$Kind":"EntitySet","$Type":"T","$NavigationPropertyBinding":["n"]}}}"#,
        #"{"$Version":"4.01","NS":{"S":{"$Kind":"EntitySet","$Type":"T","$NavigationPropertyBinding":{"n":1}}}}"#,
        #"[]"#, #"{"NS":{}}"#, #"{"$Version":"4.01","NS":{"T_":{"$Kind":"EntityType","@x":1e999}}}"#,
    ])
    func wrongTypes(_ text: String) {
        guard case .failure(let error) = Self.read(text) else {
            Issue.record("read \(text)")
            return
        }
        #expect(error.code == FMError.ClientCode.malformedResponse)
    }

    @Test("seeded fuzz: byte edits of FileMaker's $metadata sample are read or refused with -1006/-1007")
    func fuzzMetadata() {
        var rng = SplitMix64(seed: 0x3E7A)
        let sample = Array(ODataBodies.metadataFileMakerSample.utf8)
        let inserts = Array(#"{}[]":,\-0e9.tfn $@ä"#.utf8)
        var read = 0
        var refused = 0
        for iteration in 0..<1500 {
            var bytes = sample
            for _ in 0..<(1 + rng.below(4)) {
                guard !bytes.isEmpty else { break }
                let at = rng.below(bytes.count)
                switch rng.below(4) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(inserts[rng.below(inserts.count)], at: at)
                case 2: bytes[at] = inserts[rng.below(inserts.count)]
                default:
                    let end = min(bytes.count, at + rng.below(200))
                    bytes.insert(contentsOf: bytes[at..<end], at: at)
                }
            }
            do throws(FMError) {
                _ = try FMODataMetadata(json: Data(bytes))
                read += 1
            } catch {
                refused += 1
                #expect([FMError.ClientCode.notJSON, FMError.ClientCode.malformedResponse].contains(error.code),
                        "iteration \(iteration): \(error)")
            }
        }
        // Both sides of the reader were exercised.
        #expect(read > 50 && refused > 50, "read \(read), refused \(refused)")
    }

    @Test("counts, script results and error bodies of odd shapes: a clear code, never a crash")
    func oddAnswers() {
        for text in ["", " ", "-1", "1e3", "99999999999999999999", "\u{FEFF}12", "0x10", "12 13", "١٢"] {
            let count = Result { () throws(FMError) in try ODataEnvelope.plainCount(Data(text.utf8), status: 200) }
            if case .failure(let error) = count { #expect(error.code == FMError.ClientCode.malformedResponse, "\(text)") }
        }
        #expect((try? ODataEnvelope.plainCount(Data("\u{FEFF} 12 \n".utf8), status: 200)) == 12)
        for body in [#"{"scriptResult":{"code":1.5}}"#, #"{"scriptResult":{"code":true}}"#, #"{"scriptResult":{"code":[1]}}"#,
                     #"{"scriptError":1e300}"#, #"{"scriptResult":[1,{"a":null}]}"#, "[]", "<html>"] {
            let result = Result { () throws(FMError) in try ODataEnvelope.script(Data(body.utf8), status: 200) }
            if case .failure(let error) = result {
                #expect([FMError.ClientCode.notJSON, FMError.ClientCode.malformedResponse].contains(error.code), "\(body)")
            }
        }
        for body in [#"{"error":{"code":"0"}}"#, #"{"error":{"code":0}}"#, #"{"error":{"code":true}}"#, #"{"error":[]}"#, #"{"error":{"code":1e300}}"#,
                     "<m:code></m:code>", "<m:code>0</m:code>", "<m:code>7", String(repeating: "[", count: 10_000), "\u{0}"] {
            let error = ODataEnvelope.error(status: 500, body: Data(body.utf8))
            #expect([FMError.ClientCode.notJSON, FMError.ClientCode.malformedResponse].contains(error.code), "\(body) gave \(error.code)")
        }
    }

    @Test("a collection's @odata.count that is negative, fractional or not a number is -1007, in both readers")
    func oddCollectionCounts() {
        struct Row: Decodable { let a: Int }
        for count in ["-1", "-9223372036854775808", "1.5", "\"-3\"", "\"x\"", "true", "1e300"] {
            let body = Data(#"{"value":[{"a":1}],"@odata.count":\#(count)}"#.utf8)
            let page = Result { () throws(FMError) in try ODataEnvelope.page(body, status: 200) }
            let typed = Result { () throws(FMError) in try ODataEnvelope.typedPage(Row.self, body, status: 200) }
            if case .success(let value) = page { Issue.record("count \(count) read as \(String(describing: value.count))") }
            if case .success(let value) = typed { Issue.record("typed count \(count) read as \(String(describing: value.count))") }
            if case .failure(let error) = page { #expect(error.code == FMError.ClientCode.malformedResponse, "\(count)") }
            if case .failure(let error) = typed { #expect(error.code == FMError.ClientCode.malformedResponse, "\(count)") }
        }
        let fine = Data(#"{"value":[{"a":1}],"@odata.count":"7"}"#.utf8)
        #expect((try? ODataEnvelope.page(fine, status: 200))?.count == 7)
        #expect((try? ODataEnvelope.typedPage(Row.self, fine, status: 200))?.count == 7)
    }
}

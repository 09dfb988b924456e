import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator
@testable import FMCodegen
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The demo solution's `$metadata` (XML, as the emulator serves it), committed; the types generated from it
/// with `--type-prefix OData` are committed under Generated/OData and compiled into this target.
let odataMetadataFixture = packageRoot.appendingPathComponent("Tests/Fixtures/demo-odata-metadata.xml")
let odataGeneratedDirectory = packageRoot.appendingPathComponent("Tests/CodegenTests/Generated/OData")
let odataHint = "run: swift run fm-codegen --odata Tests/Fixtures/demo-odata-metadata.xml --type-prefix OData --output Tests/CodegenTests/Generated/OData"

/// Starts an emulator serving the demo solution, runs `body` with an OData client and the server's URL.
func withDemoOData<T>(_ body: (FMOData, URL) async throws -> T) async throws -> T {
    let emulator = try Emulator(schemaFile: Solution.all[0].schema)
    let url = try emulator.start()
    defer { emulator.stop() }
    var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
    configuration.timeout = 120
    return try await body(FMOData(configuration: configuration), url)
}

/// `GET url` with the demo's Basic credentials and `accept`; the body.
func fetch(_ url: URL, accept: String) async throws -> Data {
    var request = URLRequest(url: url)
    request.setValue("Basic " + Data("admin:admin".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
    request.setValue(accept, forHTTPHeaderField: "Accept")
    let (data, response) = try await URLSession.shared.data(for: request)
    #expect((response as? HTTPURLResponse)?.statusCode == 200)
    return data
}

@Suite struct ODataCodegenTests {
    @Test("the committed fixture is the emulator's $metadata, and the committed types are the generator's output")
    func committedFixtureAndFiles() async throws {
        let served = try await withDemoOData { _, url in
            try await fetch(url.appendingPathComponent("fmi/odata/v4/Music/$metadata"), accept: "application/xml")
        }
        let committed = try Data(contentsOf: odataMetadataFixture)
        #expect(String(decoding: served, as: UTF8.self) == String(decoding: committed, as: UTF8.self),
                "the demo's $metadata changed: save it to Tests/Fixtures/demo-odata-metadata.xml, then \(odataHint)")
        let files = ODataCodeGenerator.output(try ODataMetadataSource.read(odataMetadataFixture), typePrefix: "OData")
        #expect(files.skipped.isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: odataGeneratedDirectory.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(names == files.files.map(\.name), "\(odataHint)")
        #expect(MetadataSource.check(files.files, in: odataGeneratedDirectory, complete: true).isEmpty, "\(odataHint)")
    }

    @Test("the JSON and the XML form of the same $metadata give the same types")
    func jsonAndXMLAgree() async throws {
        let (json, xml) = try await withDemoOData { odata, url in
            (try await odata.metadata(),
             try ODataMetadataSource.read(try await fetch(url.appendingPathComponent("fmi/odata/v4/Music/$metadata"), accept: "application/xml")))
        }
        #expect(json.entitySets.map(\.name) == xml.entitySets.map(\.name))
        #expect(json.entityTypes.map(\.name) == xml.entityTypes.map(\.name))
        #expect(json.entityTypes.map(\.key) == xml.entityTypes.map(\.key))
        #expect(json.entityTypes.map { $0.properties.map(\.name) } == xml.entityTypes.map { $0.properties.map(\.name) })
        #expect(json.entityTypes.map { $0.properties.map(\.edmType) } == xml.entityTypes.map { $0.properties.map(\.edmType) })
        #expect(json.serverVersion == xml.serverVersion && xml.serverVersion?.hasPrefix("OData Engine ") == true)
        #expect(ODataCodeGenerator.output(json, typePrefix: "OData") == ODataCodeGenerator.output(xml, typePrefix: "OData"))
        // The JSON read through ODataMetadataSource (a saved file) is the same as through FMOData.
        let saved = try await withDemoOData { _, url in
            try await fetch(url.appendingPathComponent("fmi/odata/v4/Music/$metadata"), accept: "application/json")
        }
        #expect(try ODataMetadataSource.read(saved) == json)
    }

    @Test("rows read through FMOData from the emulator decode into the generated types, field for field")
    func typedReadRoundTrip() async throws {
        try await withDemoOData { odata, _ in
            let raw = try await odata.records(from: ODataArtists.entitySet, query: FMODataQuery(orderBy: [.ascending("id")]))
            let typed = try await odata.records(as: ODataArtists.self, from: ODataArtists.entitySet,
                                                query: FMODataQuery(orderBy: [.ascending("id")]))
            #expect(raw.rows.count == 5)
            #expect(typed.rows.count == raw.rows.count)
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
            func date(_ text: Any?) -> Date? {
                guard let text = text as? String else { return nil }
                let iso = ISO8601DateFormatter()
                iso.formatOptions = text.count == 10 ? [.withFullDate] : [.withInternetDateTime]
                if text.count == 8, text.dropFirst(2).first == ":" {
                    let parts = text.split(separator: ":").compactMap { Double($0) }
                    return Date(timeIntervalSince1970: parts[0] * 3600 + parts[1] * 60 + parts[2])
                }
                return iso.date(from: text)
            }
            for (row, value) in zip(raw.rows, typed.rows) {
                #expect(value.id == (row["id"] as? NSNumber)?.doubleValue)
                #expect(value.name == row["name"] as? String)
                #expect(value.city == row["city"] as? String)
                #expect(value.rating == (row["rating"] as? NSNumber)?.doubleValue)
                #expect(value.born == date(row["born"]))
                #expect(value.lastSeen == date(row["lastSeen"]))
                #expect(value.alarm == date(row["alarm"]))
                #expect(value.created == date(row["created"]))
                #expect(value.tags == row["tags"] as? String)
                #expect(value.gNote == nil, "globals are null in OData")
                #expect(value.headshot == nil, "containers are sent only when selected")
            }
            let eno = try #require(typed.rows.first)
            #expect(eno.name == "Brian Eno" && eno.rating == 5 && eno.tags == "ambient")
            #expect(eno.born == utc.date(from: DateComponents(year: 1948, month: 5, day: 15)))
            #expect(eno.alarm == Date(timeIntervalSince1970: 7.5 * 3600))
            #expect(ODataArtists.keyFields.isEmpty, "the demo's Artists has no not-empty + unique field: ROWID")
            #expect(ODataArtists.fieldNames.first == "id" && !ODataArtists.writableFieldNames.contains("id"))
            #expect(!ODataArtists.writableFieldNames.contains("g_note") && ODataArtists.writableFieldNames.contains("name"))

            // Selected columns decode; the rest stay nil.
            let some = try await odata.records(as: ODataAlbums.self, from: ODataAlbums.entitySet,
                                               query: FMODataQuery(filter: .eq("artist_id", 3), select: ["title", "year"], orderBy: [.ascending("year")]))
            #expect(some.rows.map(\.title) == ["Razed to the Ground", "Concept Unification"])
            #expect(some.rows.map(\.year) == [2015, 2018])
            #expect(some.rows.allSatisfy { $0.artistId == nil && $0.id == nil })
        }
    }

    static func type(_ name: String, _ properties: [FMODataProperty], key: [String] = []) -> FMODataEntityType {
        FMODataEntityType(name: name + "_", key: key, properties: properties)
    }

    @Test("names: distinct after case folding and normalisation, bounded, keywords and reserved members; bad sets skipped")
    func naming() throws {
        let long = String(repeating: "Quarterly Report ", count: 20)
        let sets = ["Artists", "artists", "Caf\u{E9}", "Cafe\u{301}", long, "", "Orphan", "class"]
        let metadata = FMODataMetadata(
            namespace: "com.filemaker.odata.Odd.fmp12",
            entityTypes: sets.filter { $0 != "Orphan" }.map {
                Self.type($0, [FMODataProperty(name: "id", edmType: "Edm.Decimal", nullable: false),
                               FMODataProperty(name: "ID", edmType: "Edm.String"),
                               FMODataProperty(name: "first name", edmType: "Edm.String"),
                               FMODataProperty(name: "fieldNames", edmType: "Edm.Date"),
                               FMODataProperty(name: "default", edmType: "Edm.TimeOfDay"),
                               FMODataProperty(name: "photo", edmType: "Edm.Binary"),
                               FMODataProperty(name: "total", edmType: "Edm.Decimal",
                                               annotations: ["com.filemaker.odata.Calculation": "true"])], key: ["id"])
            },
            entitySets: sets.map { FMODataEntitySet(name: $0, entityType: "com.filemaker.odata.Odd.fmp12.\($0)_") })
        let output = ODataCodeGenerator.output(metadata, typePrefix: "")
        #expect(output.skipped.map(\.name) == ["", "Orphan"])
        let names = output.files.map(\.name)
        #expect(Set(names.map { $0.lowercased().precomposedStringWithCanonicalMapping }).count == names.count, "\(names)")
        #expect(names.contains("Artists.swift") && names.contains("Artists2.swift"))
        #expect(names.allSatisfy { $0.utf8.count <= 106 })
        #expect(names.contains("Class.swift"))
        let artists = try #require(output.files.first { $0.name == "Artists.swift" }).contents
        #expect(artists.contains("public static let entitySet = \"Artists\""))
        #expect(artists.contains("public static let keyFields: [String] = [\"id\"]"))
        #expect(artists.contains("public var id: Double?") && artists.contains("public var id2: String?") && artists.contains("case id2 = \"ID\""))
        #expect(artists.contains("public var firstName: String?") && artists.contains("case firstName = \"first name\""))
        #expect(artists.contains("public var fieldNames2: Date?"), "a field named like a generated member gets a suffix")
        #expect(artists.contains("public var `default`: Date?"))
        #expect(artists.contains("public var photo: String?"))
        #expect(artists.contains("public static let writableFieldNames: [String] = [\"id\", \"ID\", \"first name\", \"fieldNames\", \"default\"]"))
        // Same metadata, same bytes; the order of the document does not matter.
        var shuffled = metadata
        shuffled.entitySets.reverse()
        #expect(ODataCodeGenerator.output(shuffled).files == output.files)
        #expect(ODataCodeGenerator.output(metadata, typePrefix: "X").files.allSatisfy { $0.name.hasPrefix("X") })
    }

    @Test("the XML reader: entities, CDATA, comments, namespaces; malformed documents are errors, never crashes")
    func xmlReader() throws {
        let xml = """
        <?xml version="1.0"?>
        <!-- a comment -->
        <edmx:Edmx Version="4.01" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
        <Schema Namespace="com.filemaker.odata.A&amp;B.fmp12" xmlns="http://docs.oasis-open.org/odata/ns/edm">
        <Annotation Term="ServerVersion" String="OData Engine 22.0.2"/>
        <EntityType Name="T&#233;_"><Key><PropertyRef Name="k"/></Key>
        <Property Name="k" Type="Edm.String" Nullable="false"/>
        <Property Name="a &lt;b&gt; &quot;c&quot; &apos;d&apos;" Type="Edm.Decimal">
          <Annotation Term="Org.OData.Core.V1.Permissions"><EnumMember>Org.OData.Core.V1.Permission/Read</EnumMember></Annotation>
          <Annotation Term="com.filemaker.odata.FMComment"><String><![CDATA[x < y]]></String></Annotation>
        </Property>
        <NavigationProperty Name="U" Type="Collection(com.filemaker.odata.A&amp;B.fmp12.U_)"/>
        </EntityType>
        <EntityContainer Name="A&amp;B.fmp12"><EntitySet Name="T&#xE9;" EntityType="com.filemaker.odata.A&amp;B.fmp12.T&#233;_">
        <NavigationPropertyBinding Path="U" Target="U"/></EntitySet></EntityContainer>
        </Schema></edmx:DataServices></edmx:Edmx>
        """
        let metadata = try ODataMetadataSource.read(Data(xml.utf8))
        #expect(metadata.namespace == "com.filemaker.odata.A&B.fmp12")
        #expect(metadata.serverVersion == "OData Engine 22.0.2")
        #expect(metadata.entitySets == [FMODataEntitySet(name: "Té", entityType: "com.filemaker.odata.A&B.fmp12.Té_", navigationBindings: ["U": "U"])])
        let type = try #require(metadata.entityType(ofSet: "Té"))
        #expect(type.key == ["k"])
        #expect(type.properties.map(\.name) == ["k", "a <b> \"c\" 'd'"])
        #expect(type.properties.map(\.nullable) == [false, true])
        #expect(type.properties[1].isReadOnly && type.properties[1].comment == "x < y")
        #expect(type.navigationProperties == [FMODataNavigationProperty(name: "U", targetType: "com.filemaker.odata.A&B.fmp12.U_", isCollection: true)])

        for bad in ["", "   ", "<html><body>502</body></html>", "<!DOCTYPE x [<!ENTITY a \"b\">]><edmx:Edmx/>", "<a><b></a></b>",
                    "<edmx:Edmx><edmx:DataServices>", "<edmx:Edmx x=1/>", "<edmx:Edmx a=\"&bogus;\"/>", "<edmx:Edmx/><x/>",
                    "<edmx:Edmx></edmx:Edmx>", "{\"not\": \"csdl\"}", "[1]", "plain text"] {
            #expect(throws: ODataMetadataSource.Failure.self, "\(bad)") { try ODataMetadataSource.read(Data(bad.utf8)) }
        }
        // Deep nesting is bounded; every prefix of a real document is an error or a document, never a crash.
        let deep = "<edmx:Edmx>" + String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000) + "</edmx:Edmx>"
        #expect(throws: ODataMetadataSource.Failure.self) { try ODataMetadataSource.read(Data(deep.utf8)) }
        let bytes = Array(xml.utf8)
        var rng = Xorshift(state: 0xC5D1)
        for _ in 0..<400 {
            var sample = Array(bytes.prefix(rng.below(bytes.count + 1)))
            if !sample.isEmpty, rng.below(2) == 0 { sample[rng.below(sample.count)] = UInt8(truncatingIfNeeded: rng.below(256)) }
            _ = try? ODataMetadataSource.read(Data(sample))
        }
    }
}

/// A small deterministic generator for the XML reader's fuzzing.
struct Xorshift {
    var state: UInt64

    mutating func below(_ bound: Int) -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return bound <= 0 ? 0 : Int(state % UInt64(bound))
    }
}

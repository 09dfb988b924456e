import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator
@testable import FMCodegen
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// fm-codegen writes the committed files byte for byte, from a server or from a schema file alike, with readable,
// distinct type names (one bad layout reported and skipped); the generated types read every record as the raw API
// does, take the id `createRecord` gave, and never send what FileMaker fills itself.

/// The package's root directory (this file is Tests/CodegenTests/CodegenTests.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A solution whose generated types are committed under Generated/<name> and compiled into this target.
struct Solution: Sendable, CustomStringConvertible {
    var name: String
    var schemaPath: String
    var schema: URL { packageRoot.appendingPathComponent(schemaPath) }
    var directory: URL { packageRoot.appendingPathComponent("Tests/CodegenTests/Generated/\(name)") }
    var description: String { name }

    static let all = [
        Solution(name: "Music", schemaPath: "Sources/SwiftFMEmulator/Resources/demo-schema.json"),
        Solution(name: "League", schemaPath: "Tests/Fixtures/league-schema.json"),
        Solution(name: "Names", schemaPath: "Tests/Fixtures/codegen-names-schema.json"),
    ]
}

/// Starts an emulator serving `solution`'s schema and a client for it, runs `body`, stops the emulator.
func withSolution<T>(_ solution: Solution, _ body: (DataAPI, Emulator) async throws -> T) async throws -> T {
    let schema = try EmulatorSchema.load(from: solution.schema)
    let emulator = try Emulator(schemaFile: solution.schema)
    emulator.logsBodies = true
    let url = try emulator.start()
    defer { emulator.stop() }
    let account = try #require(schema.accounts.first)
    var configuration = FMConfiguration(host: url.absoluteString, database: schema.database,
                                        username: account.username, password: account.password)
    configuration.timeout = 120
    return try await body(DataAPI(configuration: configuration), emulator)
}

@Suite struct GeneratorOutputTests {
    @Test(arguments: Solution.all)
    func committedFilesAreTheGeneratorsOutput(_ solution: Solution) async throws {
        let files = CodeGenerator.generate(try await MetadataSource.read(schemaFile: solution.schema))
        let hint = "run: swift run fm-codegen --schema \(solution.schemaPath) --output Tests/CodegenTests/Generated/\(solution.name)"
        let committed = try FileManager.default.contentsOfDirectory(atPath: solution.directory.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(committed == files.map(\.name), "\(hint)")
        for file in files {
            let text = try String(contentsOf: solution.directory.appendingPathComponent(file.name), encoding: .utf8)
            #expect(text == file.contents, "\(file.name) differs from the generator's output; \(hint)")
        }
    }

    @Test(arguments: Solution.all)
    func aServerServingTheSchemaGivesTheSameBytes(_ solution: Solution) async throws {
        let fromSchema = CodeGenerator.generate(try await MetadataSource.read(schemaFile: solution.schema))
        let fromServer = try await withSolution(solution) { api, _ in
            CodeGenerator.generate(try await MetadataSource.read(api: api))
        }
        #expect(fromServer == fromSchema)
        // Twice from the same input: the same bytes (no dates, no order from hashing).
        #expect(CodeGenerator.generate(try await MetadataSource.read(schemaFile: solution.schema)) == fromSchema)
    }

    @Test func fmBenchsGeneratedTypeIsTheGeneratorsOutput() async throws {
        // Sources/fm-bench/Generated/GeneratedBench.swift: fm-bench's table, its layout only, prefixed.
        let input = try await MetadataSource.read(schemaFile: packageRoot.appendingPathComponent("Tests/Fixtures/bench-schema.json"), layouts: ["Bench"])
        let file = try #require(CodeGenerator.generate(input, typePrefix: "Generated").first)
        let committed = try String(contentsOf: packageRoot.appendingPathComponent("Sources/fm-bench/Generated/\(file.name)"), encoding: .utf8)
        #expect(committed == file.contents, "run: swift run fm-codegen --schema Tests/Fixtures/bench-schema.json --layout Bench --type-prefix Generated --output Sources/fm-bench/Generated")
    }

    @Test func namedLayoutsOnly() async throws {
        let input = try await MetadataSource.read(schemaFile: Solution.all[1].schema, layouts: ["Players", "Teams"])
        #expect(CodeGenerator.generate(input).map(\.name) == ["Players.swift", "Teams.swift"])
    }

    /// One bad layout (one the server does not have, an empty name) stopped the whole run; now it
    /// is reported with the server's reason and skipped, and the others are read.
    @Test func aBadLayoutIsReportedAndSkipped() async throws {
        let input = try await MetadataSource.read(schemaFile: Solution.all[1].schema, layouts: ["Nope", "", "Players"])
        #expect(input.layouts.map(\.name) == ["Players"])
        #expect(input.skipped.map(\.name) == ["Nope", ""])
        #expect(input.skipped.first?.reason.contains("105") == true, "\(input.skipped)")
        #expect(input.skipped.last?.reason.contains("-1002") == true, "\(input.skipped)")
        let output = CodeGenerator.output(input)
        #expect(output.files.map(\.name) == ["Players.swift"])
        #expect(output.skipped == input.skipped)
    }

    /// A layout's type name does not depend on which layouts are generated: the others take part in naming.
    @Test func typeNamesDoNotDependOnTheLayoutsPicked() async throws {
        let all = CodeGenerator.generate(try await MetadataSource.read(schemaFile: Solution.all[1].schema))
        for name in ["Teams", "Players", "Games", "Cities"] {
            let one = CodeGenerator.generate(try await MetadataSource.read(schemaFile: Solution.all[1].schema, layouts: [name]))
            #expect(one.count == 1 && all.contains(one[0]), "\(name)")
        }
        let date = CodegenInput(database: "D", layouts: [.init(name: "date", table: "T", metadata: FMLayoutMetadata(fieldMetaData: []))],
                                otherLayouts: ["Date"])
        #expect(CodeGenerator.generate(date).map(\.name) == ["Date3.swift"])
    }

    @Test func namesAreReadableValidAndDistinct() {
        #expect(Naming.property("First Name") == "firstName")
        #expect(Naming.property("g_note") == "gNote")
        #expect(Naming.property("lastSeen") == "lastSeen")
        #expect(Naming.property("HTTPCode") == "httpCode")
        #expect(Naming.property("ID") == "id")
        #expect(Naming.property("2nd Address") == "_2ndAddress")
        #expect(Naming.property("Prénom") == "prénom")
        #expect(Naming.property("🎵") == "field")
        #expect(Naming.code("class") == "`class`")
        #expect(Naming.type("Album Detail / Print") == "AlbumDetailPrint")
        #expect(Naming.type("2024 Report") == "Layout2024Report")
        #expect(CodeGenerator.baseName("Team_city::population", home: "Teams") == "teamCityPopulation")
        #expect(CodeGenerator.baseName("Players::name", home: "Players") == "name")
        var namer = Namer()
        #expect([namer.claim(Naming.property("e-mail")), namer.claim(Naming.property("e_mail")), namer.claim(Naming.property("self"))]
                == ["eMail", "eMail2", "self_"])
        #expect(Naming.literal("a\"b\\c\nd") == "a\\\"b\\\\c\\nd")
        // Distinct after Unicode normalisation and case folding; bounded in UTF-8 bytes.
        var types = Namer(maxBytes: 12)
        #expect([types.claim("Artists"), types.claim("ARTISTS"), types.claim("Stra\u{DF}e"), types.claim("STRASSE"),
                 types.claim("Caf\u{E9}"), types.claim("Cafe\u{301}"), types.claim("Abcdefghijklmnop"), types.claim("Abcdefghijklmnopq")]
                .map { Array($0.unicodeScalars) }
                == ["Artists", "ARTISTS2", "Stra\u{DF}e", "STRASSE2", "Caf\u{E9}", "Cafe\u{301}2", "Abcdefghijkl", "Abcdefghijk2"].map { Array($0.unicodeScalars) })
        #expect(Array(Naming.property("cafe\u{301}").unicodeScalars) == Array("caf\u{E9}".unicodeScalars), "identifiers in normal form C")
    }

    @Test func aTypePrefixStartsEveryTypeName() async throws {
        let input = try await MetadataSource.read(schemaFile: Solution.all[1].schema, layouts: ["Teams"])
        let file = try #require(CodeGenerator.generate(input, typePrefix: "League").first)
        #expect(file.name == "LeagueTeams.swift")
        #expect(file.contents.contains("public struct LeagueTeams: FMLayoutRecord") && file.contents.contains("public static let layout = \"Teams\""))
    }

    @Test func typeNamesThatWouldHideSwiftTypesAreChanged() {
        let input = CodegenInput(database: "D", layouts: [
            .init(name: "Date", table: "T", metadata: FMLayoutMetadata(fieldMetaData: [FMFieldMetadata(name: "x")])),
            .init(name: "date", table: "T", metadata: FMLayoutMetadata(fieldMetaData: [])),
        ])
        #expect(CodeGenerator.generate(input).map(\.name) == ["Date2.swift", "Date3.swift"])
    }
}

// MARK: - Reading every record through the generated types

/// A value of a FileMaker answer compared with a value of a generated type (encoded by `JSONEncoder`, dates
/// as seconds since 1970): `""` is nil, numbers may be text, dates are written as FileMaker writes them.
func sameValue(raw: Any?, typed: Any?) -> Bool {
    let typed = typed is NSNull ? nil : typed
    guard let raw, !(raw is NSNull) else { return typed == nil }
    if let text = raw as? String {
        if text.isEmpty { return typed == nil || (typed as? String) == "" }
        if let string = typed as? String { return string == text }
        guard let number = (typed as? NSNumber)?.doubleValue else { return false }
        if let value = Double(text.trimmingCharacters(in: .whitespaces)), value == number { return true }
        return fileMakerText(number, like: text) == text
    }
    guard let number = (raw as? NSNumber)?.doubleValue, let value = (typed as? NSNumber)?.doubleValue else { return false }
    return number == value
}

/// `seconds` (since 1970, UTC) written in the shape of `sample` (`MM/dd/yyyy`, `HH:mm:ss` or both).
func fileMakerText(_ seconds: Double, like sample: String) -> String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
    let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: seconds))
    let date = String(format: "%02d/%02d/%04d", c.month ?? 0, c.day ?? 0, c.year ?? 0)
    let time = String(format: "%02d:%02d:%02d", c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    switch sample.count {
    case 8: return time
    case 10: return date
    default: return date + " " + time
    }
}

/// Compares one raw record's fields (keys `name`, `name(2)`, …) with a generated value's encoding.
func compareFields(raw: [String: Any], typed: [String: Any], context: String) {
    var covered = Set<String>()
    for (name, value) in typed {
        if let values = value as? [Any] {
            for (index, element) in values.enumerated() {
                let key = index == 0 ? (raw[name] != nil ? name : "\(name)(1)") : "\(name)(\(index + 1))"
                covered.insert(key)
                // A repetition the layout did not send (a gap before one it did) reads as an empty value at its place.
                let gap = raw[key] == nil && (element is NSNull || (element as? String) == "")
                #expect(gap || sameValue(raw: raw[key], typed: element), "\(context): \(key) raw \(String(describing: raw[key])) typed \(element)")
            }
        } else {
            covered.insert(name)
            #expect(sameValue(raw: raw[name], typed: value), "\(context): \(name) raw \(String(describing: raw[name])) typed \(value)")
        }
    }
    for (key, value) in raw where !covered.contains(key) {
        #expect(sameValue(raw: value, typed: nil), "\(context): raw \(key) = \(value) is missing from the typed value")
    }
}

func encodedObject<E: Encodable>(_ value: E) throws -> [String: Any] {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .secondsSince1970
    return try #require(try JSONSerialization.jsonObject(with: encoder.encode(value)) as? [String: Any])
}

/// Reads every record of `T.layout` typed and raw, and compares fields and portals.
func compareEveryRecord<T: FMLayoutRecord & Encodable & Sendable>(_ type: T.Type, _ api: DataAPI) async throws {
    let typed = try await api.getRecords(as: T.self, limit: 10_000)
    let raw = try await api.getRecords(layout: T.layout, limit: 10_000)
    #expect(typed.records.count == raw.records.count, "\(T.layout)")
    #expect(typed.records.count > 0, "\(T.layout) has records to compare")
    for (record, rawRecord) in zip(typed.records, raw.records) {
        let context = "\(T.layout) record \(record.recordId)"
        #expect(record.recordId == rawRecord["recordId"] as? String, "\(context)")
        // The typed value also codes its portals (under their names): compare the fields without them.
        let rawPortals = rawRecord["portalData"] as? [String: Any] ?? [:]
        var typedFields = try encodedObject(record.fieldData)
        for name in rawPortals.keys { typedFields[name] = nil }
        compareFields(raw: try #require(rawRecord["fieldData"] as? [String: Any]), typed: typedFields, context: context)
        // Portals: the generated property named after each portal holds its rows.
        let children = Mirror(reflecting: record.fieldData).children
        for (portal, rows) in rawPortals {
            let rawRows = try #require(rows as? [[String: Any]])
            let property = Naming.property(portal)
            let child = try #require(children.first { $0.label == property }, "\(context): no property \(property) for portal \(portal)")
            let typedRows = try #require(child.value as? [any Encodable], "\(context): \(property)")
            #expect(typedRows.count == rawRows.count, "\(context): portal \(portal)")
            for (row, rawRow) in zip(typedRows, rawRows) {
                compareFields(raw: rawRow, typed: try encodedObject(row), context: "\(context) portal \(portal)")
            }
        }
    }
}

@Suite struct GeneratedTypesTests {
    @Test func everyRecordOfMusic() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            try await compareEveryRecord(Artists.self, api)
            try await compareEveryRecord(ArtistList.self, api)
            try await compareEveryRecord(Albums.self, api)
            try await compareEveryRecord(AlbumDetailPrint.self, api)
            let eno = try #require(try await api.getRecords(as: Artists.self).records.first?.fieldData)
            #expect(eno.name == "Brian Eno")
            #expect(eno.tags == ["ambient", "producer"])
            #expect(eno.albums.map(\.title) == ["Music for Airports", "Another Green World"])
        }
    }

    @Test func everyRecordOfLeague() async throws {
        try await withSolution(Solution.all[1]) { api, _ in
            try await compareEveryRecord(Teams.self, api)
            try await compareEveryRecord(Players.self, api)
            try await compareEveryRecord(Cities.self, api)
            try await compareEveryRecord(Games.self, api)
            let teams = try await api.getRecords(as: Teams.self)
            #expect(teams.records.contains { !$0.fieldData.roster.isEmpty }, "the roster portal is filled")
        }
    }

    @Test func everyRecordOfTheOddNames() async throws {
        try await withSolution(Solution.all[2]) { api, _ in
            try await compareEveryRecord(OddNamesTest.self, api)
            try await compareEveryRecord(Layout2024Report.self, api)
            try await compareEveryRecord(Class.self, api)
            let first = try #require(try await api.getRecords(as: OddNamesTest.self).records.first?.fieldData)
            #expect(first.eMail == "a@b.c")
            #expect(first.eMail2 == "x")
            #expect(first.名前 == "太郎")
            #expect(first.scores == [1, nil, 7.5])
            #expect(first.kidsList.map(\.label) == ["one", "two"])
        }
    }

    @Test func findPagesAndOneRecordNeedNoLayout() async throws {
        try await withSolution(Solution.all[1]) { api, _ in
            let found = try await api.find(as: Players.self, request: FMFindRequest(["team_id": "1"]))
            #expect(!found.records.isEmpty && found.records.allSatisfy { $0.fieldData.teamId == 1 })
            var count = 0
            for try await page in api.pages(as: Players.self, pageSize: 2) { count += page.records.count }
            #expect(count == 4)
            let one = try await api.getRecord(as: Teams.self, recordId: 1)
            #expect(one.records.first?.fieldData.name != nil)
            let none = try await api.find(as: Players.self, request: FMFindRequest(["name": "==Nobody"]))
            #expect(none.records.isEmpty)
        }
    }

    @Test func callbackCallsNeedNoLayout() async throws {
        try await withSolution(Solution.all[1]) { api, _ in
            let (set, code) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int?, String), Never>) in
                api.getRecords(as: Cities.self) { set, code in continuation.resume(returning: (set?.records.count, code)) }
            }
            #expect(code == "0" && set == 2)
            let (delivered, walkCode) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int?, String), Never>) in
                api.forEachPage(as: Players.self, pageSize: 3, page: { _ in true }) { continuation.resume(returning: ($0, $1)) }
            }
            #expect(walkCode == "0" && delivered == 4)
        }
    }

    @Test func createAndEditThroughAGeneratedValue() async throws {
        try await withSolution(Solution.all[1]) { api, emulator in
            let created = try await api.createRecord(Players(teamId: 1, name: "Zed", score: 12.5, nicknames: ["z", "", "zz"]))
            let id = try #require(created.recordID)
            let body = try #require(emulator.requestLog.last { $0.method == "POST" && $0.decodedPath.hasSuffix("/records") }?.bodyText)
            #expect(body.contains("\"nicknames(3)\":\"zz\"") && !body.contains("\"id\""), "only the set fields: \(body)")
            var read = try #require(try await api.getRecord(as: Players.self, recordId: id).records.first)
            #expect(read.fieldData.name == "Zed" && read.fieldData.score == 12.5 && read.fieldData.nicknames == ["z", "", "zz"])

            _ = try await api.editRecord(Players(score: 99), recordId: id, modId: read.modId)
            read = try #require(try await api.getRecord(as: Players.self, recordId: id).records.first)
            #expect(read.fieldData.name == "Zed" && read.fieldData.score == 99)

            // A global is never sent, even when set.
            _ = try await api.createRecord(Teams(name: "Owls", gMinScore: 5))
            let teamBody = try #require(emulator.requestLog.last { $0.method == "POST" && $0.decodedPath.hasSuffix("/records") }?.bodyText)
            #expect(!teamBody.contains("g_min_score"), "\(teamBody)")
        }
    }

    /// The `String` id `createRecord` gave goes straight into the layout record calls (callback and
    /// async); an integer literal still picks the `Int` overloads; text that is not an id is `-1002`, unsent.
    @Test func theIdCreateGaveReadsAndEditsAGeneratedValue() async throws {
        try await withSolution(Solution.all[1]) { api, emulator in
            let ref = try await api.createRecord(Players(teamId: 1, name: "Ida", score: 1))
            _ = try await api.editRecord(Players(score: 2), recordId: ref.recordId, modId: ref.modId)
            let read = try await api.getRecord(as: Players.self, recordId: ref.recordId)
            #expect(read.records.first?.fieldData.score == 2 && read.records.first?.fieldData.name == "Ida")

            let (edited, editCode) = await withCheckedContinuation { (continuation: CheckedContinuation<(FMEditResult?, String), Never>) in
                api.editRecord(Players(score: 3), recordId: ref.recordId) { continuation.resume(returning: ($0, $1)) }
            }
            #expect(edited != nil && editCode == "0")
            let (got, getCode) = await withCheckedContinuation { (continuation: CheckedContinuation<(Double??, String), Never>) in
                api.getRecord(as: Players.self, recordId: ref.recordId) { continuation.resume(returning: ($0?.records.first?.fieldData.score, $1)) }
            }
            #expect(got == 3 && getCode == "0")

            // Integer literals: the Int overloads, as before.
            _ = try await api.editRecord(Players(score: 4), recordId: 1)
            #expect(try await api.getRecord(as: Players.self, recordId: 1).records.first?.fieldData.score == 4)

            let before = emulator.requestLog.count
            await #expect(throws: FMError.self) { try await api.editRecord(Players(score: 5), recordId: "x1") }
            let (_, badCode) = await withCheckedContinuation { (continuation: CheckedContinuation<(FMTypedFoundSet<Players>?, String), Never>) in
                api.getRecord(as: Players.self, recordId: "") { continuation.resume(returning: ($0, $1)) }
            }
            #expect(badCode == "-1002")
            #expect(emulator.requestLog.count == before, "text that is not a record id is never sent")
        }
    }

    @Test func datesRoundTripThroughAWrite() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            let born = Date(timeIntervalSince1970: 86_400 * 365)                 // 01/01/1971
            let seen = Date(timeIntervalSince1970: 1_700_000_000)                // 11/14/2023 22:13:20
            let alarm = Date(timeIntervalSince1970: 7 * 3600 + 8 * 60 + 9)      // 07:08:09
            let reference = try await api.createRecord(Artists(name: "New", born: born, lastSeen: seen, alarm: alarm))
            let id = try #require(reference.recordID)
            let read = try #require(try await api.getRecord(as: Artists.self, recordId: id).records.first)
            #expect(read.fieldData.born == born && read.fieldData.lastSeen == seen && read.fieldData.alarm == alarm)
            #expect(read.fieldData.created != nil)
        }
    }

    @Test func aJSONDecoderReadsWellTypedJSON() throws {
        let json = Data(#"{"id": 3, "name": "Hawks", "Team_city::zips": ["1", "2"], "g_min_score": 2}"#.utf8)
        let team = try JSONDecoder().decode(Teams.self, from: json)
        #expect(team == Teams(id: 3, name: "Hawks", gMinScore: 2, teamCityZips: ["1", "2"]))
        #expect(team.roster.isEmpty)
        // Portals are arrays of rows keyed by the portal's name (they were left out of Codable).
        let withRoster = Data(#"{"name": "Owls", "roster": [{"recordId": "4", "modId": "1", "Players::name": "Ann", "Players::nicknames": ["a", "", "aa"]}]}"#.utf8)
        let owls = try JSONDecoder().decode(Teams.self, from: withRoster)
        #expect(owls.roster == [Teams.RosterRow(recordId: "4", modId: "1", name: "Ann", nicknames: ["a", "", "aa"])])
    }

    /// A generated value cached or sent as JSON lost its portals; now they encode and decode under
    /// the portal's name, as arrays of rows, and the value read through SwiftFM comes back equal.
    @Test func aGeneratedValueRoundTripsThroughJSONWithItsPortals() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            let artists = try await api.getRecords(as: Artists.self).records.map(\.fieldData)
            let eno = try #require(artists.first)
            #expect(eno.albums.count == 2)
            for artist in artists {
                let data = try JSONEncoder().encode(artist)
                #expect(try JSONDecoder().decode(Artists.self, from: data) == artist)
                let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                let rows = try #require(object["albums"] as? [[String: Any]], "\(object)")
                #expect(rows.map { $0["Albums::title"] as? String } == artist.albums.map(\.title))
                #expect(rows.map { $0["recordId"] as? String } == artist.albums.map(\.recordId))
            }
            let league = try await withSolution(Solution.all[1]) { api, _ in try await api.getRecords(as: Teams.self).records.map(\.fieldData) }
            #expect(league.contains { !$0.roster.isEmpty })
            for team in league { #expect(try JSONDecoder().decode(Teams.self, from: JSONEncoder().encode(team)) == team) }
        }
    }

    /// Auto-enter fields (the serial `id`, the creation stamp) were sent by a create or edit; they,
    /// and the portals now coded with the value, are never sent.
    @Test func aWriteNeverSendsWhatFileMakerFillsNorPortals() async throws {
        try await withSolution(Solution.all[0]) { api, emulator in
            let stamp = Date(timeIntervalSince1970: 0)
            let created = try await api.createRecord(Artists(id: 99, name: "Auto", created: stamp, albums: [.init(title: "Sent?")]))
            let body = try #require(emulator.requestLog.last { $0.method == "POST" && $0.decodedPath.hasSuffix("/records") }?.bodyText)
            #expect(body.contains("\"name\":\"Auto\"") && !body.contains("\"id\"") && !body.contains("created")
                    && !body.contains("albums") && !body.contains("Sent?"), "\(body)")
            _ = try await api.editRecord(Artists(id: 98, rating: 4, created: stamp), recordId: created.recordId)
            let edit = try #require(emulator.requestLog.last { $0.method == "PATCH" }?.bodyText)
            #expect(edit.contains("rating") && !edit.contains("\"id\"") && !edit.contains("created"), "\(edit)")
            let read = try #require(try await api.getRecord(as: Artists.self, recordId: created.recordId).records.first?.fieldData)
            #expect(read.name == "Auto" && read.rating == 4 && read.id != 99 && read.id != 98 && read.created != stamp)
            #expect(Artists.layoutFields.filter { !$0.isWritable }.map(\.name) == ["id", "headshot", "g_note", "created", "albums"])
        }
    }

    @Test func aPortalRowOfTheWrongShapeIsMinus1007NamingTheRecord() async throws {
        struct Team: FMLayoutRecord, Codable, Sendable, Hashable {
            static let layout = "Teams"
            var name: String?
            var roster: [Row] = []
            struct Row: Codable, Sendable, Hashable {
                var name: Double   // the portal sends text: not a number
                enum CodingKeys: String, CodingKey { case name = "Players::name" }
            }
            enum CodingKeys: String, CodingKey { case name }
            mutating func fillPortals(from portals: FMPortals) throws { roster = try portals.decode("roster") }
        }
        try await withSolution(Solution.all[1]) { api, _ in
            do {
                _ = try await api.getRecords(as: Team.self)
                Issue.record("a roster name is not a number: the read must fail")
            } catch let error as FMError {
                #expect(error.code == "-1007" && error.message.contains("record 1") && error.message.contains("Players::name"), "\(error.message)")
            }
        }
    }

    @Test func aHandWrittenLayoutRecordWorks() async throws {
        struct City: FMLayoutRecord, Codable, Sendable, Hashable {
            static let layout = "Cities"
            var name: String
            var population: Int?
        }
        try await withSolution(Solution.all[1]) { api, _ in
            let cities = try await api.getRecords(as: City.self)
            #expect(cities.records.count == 2 && cities.records.allSatisfy { !$0.fieldData.name.isEmpty })
        }
    }
}

/// The code of README's "Typed models from your solution" and of TypedModels.md, run against the demo solution.
@Suite struct TypedModelsArticleTests {
    @Test func readmeAndArticle() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            let artists = try await api.getRecords(as: Artists.self)
            #expect(artists.records.contains { !$0.fieldData.albums.isEmpty })
            let found = try await api.find(as: Artists.self, request: FMFindRequest(["city": "Dallas"]))
            #expect(found.records.count == 2)
            var pages = 0
            for try await page in api.pages(as: Artists.self, pageSize: 500) { pages += 1; #expect(page.records.count == 5) }
            #expect(pages == 1)
            let one = try await api.getRecord(as: Artists.self, recordId: 1)
            #expect(one.records.first?.fieldData.name == "Brian Eno")
            let created = try await api.createRecord(Artists(name: "Nina Simone", city: "Dallas"))
            try await api.editRecord(Artists(rating: 5), recordId: created.recordId)
            let read = try await api.getRecord(as: Artists.self, recordId: created.recordId)
            #expect(read.records.first?.fieldData.rating == 5 && read.records.first?.fieldData.name == "Nina Simone")
            // README: a value cached as JSON keeps its portals.
            let cached = try JSONEncoder().encode(artists.records[0].fieldData)
            #expect(try JSONDecoder().decode(Artists.self, from: cached).albums == artists.records[0].fieldData.albums)
            // TypedModels.md: the Codable round trip.
            let artist = try await api.getRecords(as: Artists.self).records[0].fieldData
            let data = try JSONEncoder().encode(artist)
            let same = try JSONDecoder().decode(Artists.self, from: data)
            #expect(same == artist && !same.albums.isEmpty)
        }
    }
}

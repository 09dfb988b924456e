// Call sites written against SwiftFM 2.x (2022, async) compile unchanged and do what they did, against the
// emulator.
// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation
import Testing

// Call sites in the style of the SwiftFM 2.x README (2022): validate-or-new-session, `getRecords`
// decoded into the caller's own `Codable` type, query, create/duplicate/edit/delete, globals,
// metadata, scripts, containers, and `deleteSession` from a background hook.

/// The README's model.
struct Artist {
    struct Record: Codable {
        let recordId: String
        let modId: String
        let fieldData: FieldData
    }

    struct FieldData: Codable {
        let name: String
    }
}

/// The README's view logic, without SwiftUI: a non-Sendable model object with a data source.
final class ArtistsModel {
    var artists = [Artist.Record]()
    let token: String

    init(defaults: UserDefaults) {
        token = defaults.string(forKey: "fm-token") ?? ""
    }

    /// The README's `.task { }` body.
    func task() async {
        let isValid = await SwiftFM.validateSession(token: token)
        switch isValid {
        case true:
            await fetchArtists(token: token)
        case false:
            if let newToken = await SwiftFM.newSession() {
                await fetchArtists(token: newToken)
            }
        }
    }

    /// fetch 20 artists
    func fetchArtists(token: String) async {
        guard let (data, _) = try? await SwiftFM.getRecords(layout: "Artists", limit: 20, sortField: "name", ascending: false, portal: nil, token: token),
              let records = try? JSONDecoder().decode([Artist.Record].self, from: data)
        else { return }
        self.artists = records
    }
}

@Suite struct CorpusSwiftFM2Tests {
    @Test func validateOrNewSessionThenDecode() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        try await DataAPI.withLegacyDefaults(server.defaults) {
            let model = ArtistsModel(defaults: server.defaults)
            await model.task()
            #expect(model.artists.map(\.fieldData.name) == ["Sudie", "Geoff", "Brian"])
            #expect(model.artists.first?.recordId == "3")
            let token = try #require(server.defaults.string(forKey: "fm-token"))
            #expect(DataAPI.isActiveToken())
            let target = try #require(server.requests("GET", "/layouts/Artists/records").last?.target)
            #expect(target.contains("_limit=20") && target.contains("_sort=") && target.contains("descend"))
            // A second model finds the stored token valid: no second login.
            let again = ArtistsModel(defaults: server.defaults)
            await again.task()
            #expect(again.artists.count == 3)
            #expect(again.token == token)
            #expect(server.requests("POST", "/sessions").count == 1)
        }
    }

    @Test func queryAndGetRecord() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        try await DataAPI.withLegacyDefaults(server.defaults) {
            let token = try #require(await SwiftFM.newSession())
            // find artists named Brian or Geoff
            let payload = ["query": [["name": "Brian"], ["name": "Geoff"]]]
            let (data, info) = try await SwiftFM.query(layout: "Artists", payload: payload, token: token)
            let records = try JSONDecoder().decode([Artist.Record].self, from: data)
            #expect(records.map(\.fieldData.name).sorted() == ["Brian", "Geoff"])
            #expect(info.foundCount == 2)
            #expect(info.database == "Legacy")
            #expect(info.layout == "Artists")
            // getRecord(id:)
            guard let (one, _) = try? await SwiftFM.getRecord(id: 2, layout: "Artists", token: token),
                  let artist = try? JSONDecoder().decode(Artist.Record.self, from: one)
            else { Issue.record("getRecord failed"); return }
            #expect(artist.fieldData.name == "Geoff")
            // A find with no match throws FMError 401; a missing record throws 101.
            await #expect(throws: FMError.self) {
                _ = try await SwiftFM.query(layout: "Artists", payload: ["query": [["name": "Nobody"]]], token: token)
            }
            do {
                _ = try await SwiftFM.getRecord(id: 99, layout: "Artists", token: token)
                Issue.record("expected an error")
            } catch let error as FMError {
                #expect(error.code == "101")
            }
        }
    }

    @Test func createDuplicateEditDeleteGlobals() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        try await DataAPI.withLegacyDefaults(server.defaults) {
            let token = try #require(await SwiftFM.newSession())
            let payload = ["fieldData": ["name": "Brian Hamm", "city": "Dallas"]]
            let recordId = await SwiftFM.createRecord(layout: "Artists", payload: payload, token: token)
            #expect(recordId == "4")
            // A nil payload creates an empty record.
            let empty = await SwiftFM.createRecord(layout: "Albums", payload: nil, token: token)
            #expect(empty == "2")
            let duplicate = await SwiftFM.duplicateRecord(id: 4, layout: "Artists", token: token)
            #expect(duplicate == "5")
            let modId = await SwiftFM.editRecord(id: 4, layout: "Artists", payload: ["fieldData": ["city": "Austin"], "modId": "0"], token: token)
            #expect(modId == "1")
            let stale = await SwiftFM.editRecord(id: 4, layout: "Artists", payload: ["fieldData": ["city": "Waco"], "modId": "0"], token: token)
            #expect(stale == nil)
            let deleted = await SwiftFM.deleteRecord(id: 5, layout: "Artists", token: token)
            #expect(deleted == true)
            let deletedAgain = await SwiftFM.deleteRecord(id: 5, layout: "Artists", token: token)
            #expect(deletedAgain == false)
            let globals = await SwiftFM.setGlobals(payload: ["globalFields": ["Artists::g_note": "newValue"]], token: token)
            #expect(globals == true)
        }
    }

    @Test func metadataScriptsAndContainers() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        try await DataAPI.withLegacyDefaults(server.defaults) {
            let info = try #require(await SwiftFM.getProductInfo())
            #expect(!info.name.isEmpty)
            let databases = try #require(await SwiftFM.getDatabases())
            #expect(databases.map(\.name).contains("Legacy"))

            let token = try #require(await SwiftFM.newSession())
            let layouts = try #require(await SwiftFM.getLayouts(token: token))
            let folders = layouts.filter { $0.isFolder == true }.sorted()
            #expect(folders.map(\.name) == ["Web"])
            #expect(folders.first?.folderLayoutNames?.sorted().map(\.name) == ["Artist List / Web"])
            #expect(layouts.sorted().first?.name == "Albums")

            let metadata = try #require(await SwiftFM.getLayoutMetadata(layout: "Artists", token: token))
            let fields = try #require(metadata.fieldMetaData?.sorted())
            #expect(fields.map(\.name).contains("name"))
            #expect(metadata.valueLists?.first?.values.sorted().map(\.value) == ["Austin", "Dallas"])
            // A layout name with spaces and a slash reaches the right endpoint.
            let web = await SwiftFM.getLayoutMetadata(layout: "Artist List / Web", token: token)
            #expect(web?.fieldMetaData?.count == 3)
            #expect(server.emulator.requestLog.contains { $0.target.contains("Artist%20List%20%2F%20Web") })

            let scripts = try #require(await SwiftFM.getScripts(token: token))
            #expect(scripts.sorted().map(\.name) == ["Echo Back"])
            let fired = await SwiftFM.executeScript(script: "Echo Back", parameter: "hello world", layout: "Artists", token: token)
            #expect(fired == true)
            let scriptCall = try #require(server.requests("GET", "/script/Echo Back").last)
            #expect(scriptCall.target.contains("script.param=hello%20world"))
            let missing = await SwiftFM.executeScript(script: "Nope", parameter: nil, layout: "Artists", token: token)
            #expect(missing == false)

            // setContainer(recordId:layout:container:filePath:inferType:token:)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("headshot-\(UUID().uuidString).png")
            try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3, 4]).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let fileName = await SwiftFM.setContainer(recordId: 1, layout: "Artists", container: "photo", filePath: file, inferType: true, token: token)
            #expect(fileName == file.lastPathComponent)
            let upload = try #require(server.requests("POST", "/containers/photo").last)
            #expect(upload.bodyText.contains("Content-Type: image/png"))
            #expect(upload.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
        }
    }

    @Test func deleteSessionFromABackgroundHook() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        try await DataAPI.withLegacyDefaults(server.defaults) {
            let token = try #require(await SwiftFM.newSession())
            #expect(await SwiftFM.validateSession(token: token))
            let stored = try #require(server.defaults.string(forKey: "fm-token"))
            let deleted: Bool = await withCheckedContinuation { continuation in
                // applicationDidEnterBackground
                SwiftFM.deleteSession(token: stored) { ok in continuation.resume(returning: ok) }
            }
            #expect(deleted)
            #expect(server.defaults.string(forKey: "fm-token") == nil)
            #expect(await SwiftFM.validateSession(token: token) == false)
            // The README's fire-and-forget form compiles too.
            SwiftFM.deleteSession(token: token) { _ in }
        }
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The variants the other suites leave out, each through the callback and the async surface: explicit
/// tokens, encoded credentials, raw payloads, `Encodable` fields, typed reads, file uploads and downloads.
@Suite("Callback ↔ async parity against the emulator")
struct ParityTests {
    struct Band: Codable, Equatable {
        var name: String
        var city: String
    }

    static let encoded = Data("admin:admin".utf8).base64EncodedString()

    @Test func explicitTokensAndEncodedCredentials() async throws {
        try await withClient { api, emulator in
            let counter = CallCounter()
            let refreshed: UncheckedResult<String> = await withCheckedContinuation { continuation in
                api.refreshToken(encodedCredentials: Self.encoded) { token, _, code in
                    if counter.hit() == 1 { continuation.resume(returning: UncheckedResult(value: token, code: code)) }
                }
            }
            let token = try #require(refreshed.value)
            #expect(refreshed.code == "0")
            let (valid, c1) = await callback(api) { done in api.validateSession(token: token) { done($0, $1) } }
            #expect(valid == true && c1 == "0")
            let (out, c2) = await callback(api) { done in api.logout(token: token) { done($0, $1) } }
            #expect(out == true && c2 == "0")
            let (stale, c3) = await callback(api) { done in api.validateSession(token: token) { done($0, $1) } }
            #expect(stale == false && c3 == "952")

            let asyncToken = try await api.refreshToken(encodedCredentials: Self.encoded).token
            #expect(try await api.validateSession(token: asyncToken))
            try await api.logout(token: asyncToken)
            #expect(try await api.validateSession(token: asyncToken) == false)
            #expect(emulator.activeSessionCount == 0)
        }
    }

    @Test func rawPayloadsAsOldCodeBuildsThem() async throws {
        try await withClient { api, emulator in
            let (ref, c1) = await callback(api) { api.createRecord(layout: "Bands", payload: ["fieldData": ["name": "Raw", "city": "Austin"]], completion: $0) }
            let id = try #require(ref.flatMap { Int($0.recordId) })
            #expect(c1 == "0")
            let (edit, c2) = await callback(api) { api.editRecord(layout: "Bands", recordId: id, payload: ["fieldData": ["city": "Dallas"]], modId: 0, completion: $0) }
            #expect(c2 == "0" && edit?.modId == "1")
            let sent = try JSONSerialization.jsonObject(with: emulator.requestLog.last { $0.method == "PATCH" }?.body ?? Data()) as? [String: Any]
            #expect(sent?["modId"] as? String == "0")
            let (found, c3) = await callback(api) { api.find(layout: "Bands", payload: ["query": [["name": "==Raw"]]], completion: $0) }
            #expect(c3 == "0" && found?.records.count == 1)

            let asyncRef = try await api.createRecord(layout: "Bands", payload: ["fieldData": ["name": "Raw Async", "city": "Houston"]])
            let asyncId = try #require(Int(asyncRef.recordId))
            #expect(try await api.editRecord(layout: "Bands", recordId: asyncId, payload: ["fieldData": ["city": "Austin"]], modId: 0).modId == "1")
            #expect(try await api.find(layout: "Bands", payload: ["query": [["name": "==Raw Async"]]]).records.count == 1)
        }
    }

    @Test func encodableFieldsAndTypedReads() async throws {
        try await withClient { api, _ in
            let (ref, c1) = await callback(api) { api.createRecord(layout: "Bands", fields: Band(name: "Typed", city: "Austin"), completion: $0) }
            let id = try #require(ref.flatMap { Int($0.recordId) })
            #expect(c1 == "0")
            let (one, c2) = await callback(api) { api.getRecord(as: Band.self, layout: "Bands", recordId: id, completion: $0) }
            #expect(c2 == "0" && one?.records.map(\.fieldData) == [Band(name: "Typed", city: "Austin")])
            let (page, c3) = await callback(api) { api.getRecords(as: Band.self, layout: "Bands", limit: 2, completion: $0) }
            #expect(c3 == "0" && page?.records.count == 2 && page?.dataInfo?.foundCount == 5)
            let query = FMFindRequest(queries: [FMQuery(["name": "==Typed"])])
            let (found, c4) = await callback(api) { api.find(as: Band.self, layout: "Bands", request: query, completion: $0) }
            #expect(c4 == "0" && found?.records.first?.recordId == ref?.recordId)
            let (edited, c5) = await callback(api) { api.editRecord(layout: "Bands", recordId: id, fields: Band(name: "Typed", city: "Dallas"), completion: $0) }
            #expect(c5 == "0" && edited?.modId == "1")

            let asyncRef = try await api.createRecord(layout: "Bands", fields: Band(name: "Typed Async", city: "Houston"))
            let asyncId = try #require(Int(asyncRef.recordId))
            #expect(try await api.getRecord(as: Band.self, layout: "Bands", recordId: asyncId).records.first?.fieldData.city == "Houston")
            #expect(try await api.find(as: Band.self, layout: "Bands", request: FMFindRequest(queries: [FMQuery(["city": "Houston"])])).records.count == 2)
            #expect(try await api.editRecord(layout: "Bands", recordId: asyncId, fields: Band(name: "Typed Async", city: "Austin")).modId == "1")
        }
    }

    @Test func containerFilesBothWays() async throws {
        try await withClient { api, _ in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-parity-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let source = directory.appendingPathComponent("cover.gif")
            let gif = Data("GIF89a".utf8) + Data((0..<64).map { UInt8($0) })
            try gif.write(to: source)

            func photoURL(_ id: Int) async throws -> URL {
                let record = try await api.getRecord(layout: "Bands", recordId: id)
                let text = (record.records.first?["fieldData"] as? [String: Any])?["photo"] as? String
                return try #require(text.flatMap { URL(string: $0) })
            }

            let (_, c1) = await callback(api) { api.uploadContainer(layout: "Bands", recordId: 3, field: "photo", fileURL: source, completion: $0) }
            #expect(c1 == "0")
            let saved = directory.appendingPathComponent("callback.gif")
            let streaming = try await photoURL(3)
            let (url, c2) = await callback(api) { api.downloadContainer(url: streaming, to: saved, completion: $0) }
            #expect(c2 == "0" && url == saved && (try? Data(contentsOf: saved)) == gif)

            _ = try await api.uploadContainer(layout: "Bands", recordId: 4, field: "photo", fileURL: source)
            let asyncSaved = try await api.downloadContainer(url: try await photoURL(4), to: directory.appendingPathComponent("async.gif"))
            #expect(try Data(contentsOf: asyncSaved) == gif)

            let missing = directory.appendingPathComponent("nope.png")
            let (_, c3) = await callback(api) { api.uploadContainer(layout: "Bands", recordId: 3, field: "photo", fileURL: missing, completion: $0) }
            #expect(c3 == FMError.ClientCode.fileError)
        }
    }
}

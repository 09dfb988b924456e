import Foundation
import Testing
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The SwiftFM client over HTTPS through a real nginx in front of `fm-emulator`. Enabled only
/// when `FM_TLS_BASE_URL` is set: `Tests/tls/run.sh` (run by `.ci/run`) makes a throwaway CA, starts
/// nginx and the emulator, installs the CA the way a Linux user does (in a private mount namespace) and
/// runs this suite. The emulator serves its demo solution (database `Music`, layout `Artists`).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["FM_TLS_BASE_URL"] != nil, "needs Tests/tls/run.sh (nginx TLS front)"))
struct TLSFrontTests {
    let base = ProcessInfo.processInfo.environment["FM_TLS_BASE_URL"] ?? ""
    let payload = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<4096).map { UInt8($0 % 251) })

    func client() -> DataAPI {
        DataAPI(host: base, database: "Music", username: "admin", password: "admin")
    }

    /// The container URL of `headshot` in a found set's first record.
    func containerURL(_ found: FMFoundSet?) throws -> URL {
        let text = try #require((found?.records.first?["fieldData"] as? [String: Any])?["headshot"] as? String)
        #expect(text.hasPrefix(base + "/Streaming_SSL/"), "the container URL keeps the client's scheme and host: \(text)")
        return try #require(URL(string: text))
    }

    @Test func callbacksOverHTTPS() async throws {
        let api = client()
        let (token, c0) = await callback(api) { api.login(completion: $0) }
        #expect(c0 == "0" && token?.count == 52)
        let (created, c1) = await callback(api) { api.createRecord(layout: "Artists", fieldData: ["name": "TLS callbacks"], completion: $0) }
        let id = try #require(created.flatMap { Int($0.recordId) }, "create: \(c1)")
        let (_, c2) = await callback(api) {
            api.uploadContainer(layout: "Artists", recordId: id, field: "headshot", data: payload, fileName: "t.png", completion: $0)
        }
        #expect(c2 == "0")
        let (one, c3) = await callback(api) { api.getRecord(layout: "Artists", recordId: id, completion: $0) }
        #expect(c3 == "0")
        let url = try containerURL(one)
        // The 302 to the streaming session must stay on https: an http:// Location would reach nginx's TLS
        // port in plain text and fail.
        let (bytes, c4) = await callback(api) { api.downloadContainer(url: url, completion: $0) }
        #expect(c4 == "0" && bytes == payload)
        let (found, c5) = await callback(api) { api.find(layout: "Artists", payload: ["query": [["name": "==TLS callbacks"]]], completion: $0) }
        #expect(c5 == "0" && found?.records.count == 1)
        let (out, c6) = await callback(api) { done in api.logout { done($0, $1) } }
        #expect(out == true && c6 == "0")
    }

    @Test func asyncOverHTTPS() async throws {
        let api = client()
        let created = try await api.createRecord(layout: "Artists", fieldData: ["name": "TLS async"])
        let id = try #require(Int(created.recordId))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-tls-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: file) }
        try payload.write(to: file)
        _ = try await api.uploadContainer(layout: "Artists", recordId: id, field: "headshot", fileURL: file)
        let url = try containerURL(try await api.getRecord(layout: "Artists", recordId: id))
        #expect(try await api.downloadContainer(url: url) == payload)
        let saved = file.deletingLastPathComponent().appendingPathComponent("swiftfm-tls-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: saved) }
        #expect(try await api.downloadContainer(url: url, to: saved) == saved)
        #expect(try Data(contentsOf: saved) == payload)
        let records = try await api.getRecords(layout: "Artists", limit: 100)
        #expect(records.records.contains { ($0["recordId"] as? String) == String(id) })
        try await api.logout()
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Containers stream to and from files against the emulator: a large file round-trips byte for byte, a download to a
// file is not capped (one to memory is), and a failed download leaves no partial file and keeps the old one.

/// Reports the last progress figure it was given.
final class ProgressRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var last: (Int64, Int64) = (0, 0)
    private var count = 0
    func record(_ written: Int64, _ expected: Int64) { lock.withLock { last = (written, expected); count += 1 } }
    var value: (written: Int64, expected: Int64, calls: Int) { lock.withLock { (last.0, last.1, count) } }
}

@Suite("Streamed containers, client against the emulator")
struct StreamedContainerTests {
    /// A file of `size` pseudo-random bytes.
    private func makeFile(_ size: Int) throws -> URL {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-stream-\(UUID().uuidString).bin")
        try Data(bytes).write(to: url)
        return url
    }

    private func containerURL(_ api: DataAPI) async throws -> URL {
        let record = try await api.getRecord(layout: "Bands", recordId: 1)
        let text = try #require((record.records.first?["fieldData"] as? [String: Any])?["photo"] as? String)
        return try #require(URL(string: text))
    }

    @Test func aLargeFileRoundTripsByteForByteThroughFiles() async throws {
        let source = try makeFile(6 * 1024 * 1024 + 17)
        defer { try? FileManager.default.removeItem(at: source) }
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-stream-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: target) }
        try await withClient { api, emulator in
            // The upload streams the file into the multipart body (callback surface).
            let (_, code) = await callback(api) { api.uploadContainer(layout: "Bands", recordId: 1, field: "photo", fileURL: source, completion: $0) }
            #expect(code == "0")
            let url = try await containerURL(api)
            // The download streams to the file, reporting progress (async surface).
            let progress = ProgressRecorder()
            let written = try await api.downloadContainer(url: url, to: target) { progress.record($0, $1) }
            #expect(written == target)
            #expect(try Data(contentsOf: target) == Data(contentsOf: source))
            #expect(progress.value.written == Int64(6 * 1024 * 1024 + 17))
            #expect(progress.value.calls >= 1)
        }
    }

    @Test func aFileDownloadIsNotCappedButADataDownloadIs() async throws {
        let source = try makeFile(300 * 1024)
        defer { try? FileManager.default.removeItem(at: source) }
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-stream-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: target) }
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let base = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: base.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.maxResponseBytes = 100 * 1024
        let api = DataAPI(configuration: configuration)
        _ = try await api.uploadContainer(layout: "Bands", recordId: 1, field: "photo", fileURL: source)
        let url = try await containerURL(api)
        let (data, code) = await callback(api) { api.downloadContainer(url: url, completion: $0) }
        #expect(data == nil && code == FMError.ClientCode.responseTooLarge)
        let (file, fileCode) = await callback(api) { api.downloadContainer(url: url, to: target, completion: $0) }
        #expect(file == target && fileCode == "0")
        #expect(try Data(contentsOf: target) == Data(contentsOf: source))
    }

    @Test func aFailedDownloadRemovesThePartialFileAndKeepsTheOldOne() async throws {
        let source = try makeFile(512 * 1024)
        defer { try? FileManager.default.removeItem(at: source) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        try Data("the old content".utf8).write(to: target)
        try await withClient(retry: .none) { api, emulator in  // one attempt: its two hops are the subject
            _ = try await api.uploadContainer(layout: "Bands", recordId: 1, field: "photo", fileURL: source)
            let url = try await containerURL(api)
            // The bytes hop is cut in the middle of its body.
            emulator.inject(.closeMidBody, count: 5, matching: "Streaming")
            let (file, code) = await callback(api) { api.downloadContainer(url: url, to: target, completion: $0) }
            #expect(file == nil && code != "0")
            // Both hops were made: the 302 went through and the bytes hop failed while the file was written.
            #expect(emulator.requestLog.filter { $0.decodedPath.contains("Streaming") }.count == 2)
            #expect(try Data(contentsOf: target) == Data("the old content".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["photo.bin"])
        }
    }
}

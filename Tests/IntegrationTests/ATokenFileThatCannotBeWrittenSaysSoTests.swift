import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// The contract: an FMFileTokenStore that cannot write its file (its directory missing, no permission) costs no call
// (the session is kept in memory) but says so, once, at `warning`, naming the file and the system's reason: a daemon
// set up with a wrong path would otherwise log in again after every restart without a word. The same problem is not
// logged again on the next writes; a write that succeeds again ends it. On main a failed write was silent.

/// The log lines of a client, kept for the test.
final class KeptLines: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [FMLogEvent] = []
    func keep(_ event: FMLogEvent) { lock.withLock { events.append(event) } }
    var all: [FMLogEvent] { lock.withLock { events } }
}

@Suite("A token file that cannot be written says so")
struct ATokenFileThatCannotBeWrittenSaysSoTests {
    @Test func aMissingDirectoryIsOneWarningNamingTheFile() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-no-such-dir-\(UUID().uuidString)")
        let file = missing.appendingPathComponent("music.token")
        let lines = KeptLines()
        let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin"),
                          tokenStore: FMFileTokenStore(url: file), logger: { lines.keep($0) })

        _ = try await api.getRecords(layout: "Artists", limit: 1)   // logs in: the token is written (and fails)
        _ = try await api.getRecords(layout: "Artists", limit: 1)   // the session serves; its slid expiry is written
        let warnings = lines.all.filter { $0.level == .warning && $0.message.contains("token store") }
        #expect(warnings.count == 1, "\(lines.all.map(\.description))")
        #expect(warnings.first?.message.contains(file.path) == true, "\(warnings.map(\.message))")
        #expect(warnings.first?.message.contains("No such file or directory") == true, "\(warnings.map(\.message))")
        #expect(!FileManager.default.fileExists(atPath: file.path))

        // The directory appears: the next write succeeds, silently, and a later failure would be told again.
        try FileManager.default.createDirectory(at: missing, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: missing) }
        _ = try await api.login()
        #expect(FileManager.default.fileExists(atPath: file.path))
        #expect(lines.all.filter { $0.level == .warning && $0.message.contains("token store") }.count == 1)
        await api.shutdown()
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: an answer that arrives but cannot be read (a cut JSON body: `-1007`) is a failure the caller must see,
// so the log says so: a line at `warning` or above carries the code the call completes with (`fm.code`) and names
// the code in its words. The answer's own `debug` line is not the only trace of the call, and a daemon logging at
// `info` still sees the failure.

@Suite("An answer that cannot be read is logged as a failure")
struct UnreadableAnswerIsLoggedTests {
    private final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var events: [FMLogEvent] = []
        func add(_ event: FMLogEvent) { lock.withLock { events.append(event) } }
        var all: [FMLogEvent] { lock.withLock { events } }
    }

    private func api(_ emulator: Emulator, _ base: URL, _ events: Events, level: FMLogEvent.Level) -> DataAPI {
        var configuration = FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.retry = .none
        configuration.logLevel = level
        return DataAPI(configuration: configuration, logger: { events.add($0) })
    }

    @Test("a cut JSON answer to a read logs its code at warning or above", arguments: [FMLogEvent.Level.debug, .info])
    func cutAnswerIsLogged(level: FMLogEvent.Level) async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let events = Events()
        let api = api(emulator, base, events, level: level)
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.truncatedJSON, count: 1, matching: "/records")
        var code: String?
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read whose answer was cut succeeded")
        } catch let error as FMError {
            code = error.code
        }
        let failed = try #require(code)
        let lines = events.all.filter { $0.level >= .warning && $0.metadata["fm.code"] == failed }
        #expect(!lines.isEmpty, "no warning or error line for \(failed): \(events.all.map(\.description))")
        #expect(lines.allSatisfy { $0.message.contains(failed) }, "\(lines.map(\.description))")
    }

    @Test("the callback form logs it too")
    func cutAnswerIsLoggedForCallbacks() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let events = Events()
        let api = api(emulator, base, events, level: .info)
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.truncatedJSON, count: 1, matching: "/records")
        let code: String = await withCheckedContinuation { done in
            api.getRecords(layout: "Artists", limit: 5) { _, code in done.resume(returning: code) }
        }
        #expect(code != "0")
        #expect(events.all.contains { $0.level >= .warning && $0.metadata["fm.code"] == code },
                "\(events.all.map(\.description))")
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The core's tracing hook (FMConfiguration.instrumentation) and its log levels, against the emulator.
@Suite struct InstrumentationTests {
    @TaskLocal static var caller: String?

    /// Records every start (with the task-local value it saw) and every span's events and ends.
    final class Recorder: FMInstrumentation, @unchecked Sendable {
        final class Span: FMCallSpan, @unchecked Sendable {
            let start: FMCallStart
            let caller: String?
            private let lock = NSLock()
            private var _events: [FMCallEvent] = []
            private var _ends: [FMCallOutcome] = []
            init(start: FMCallStart, caller: String?) {
                self.start = start
                self.caller = caller
            }
            func record(_ event: FMCallEvent) { lock.withLock { _events.append(event) } }
            func end(_ outcome: FMCallOutcome) { lock.withLock { _ends.append(outcome) } }
            var events: [FMCallEvent] { lock.withLock { _events } }
            var ends: [FMCallOutcome] { lock.withLock { _ends } }
        }
        private let lock = NSLock()
        private var _spans: [Span] = []
        func startCall(_ call: FMCallStart) -> any FMCallSpan {
            let span = Span(start: call, caller: InstrumentationTests.caller)
            lock.withLock { _spans.append(span) }
            return span
        }
        var spans: [Span] { lock.withLock { _spans } }
    }

    private func client(_ emulator: Emulator, _ recorder: Recorder, logger: FMLogHandler? = nil) throws -> DataAPI {
        let url = try #require(emulator.baseURL)
        var configuration = FMConfiguration(host: url.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0.001, maxDelay: 0.01)
        configuration.instrumentation = recorder
        return DataAPI(configuration: configuration, logger: logger)
    }

    /// The start runs in the caller's task (its task-local value is seen there, for the call and for the
    /// login it starts); each span ends exactly once, before the call returns, with the outcome.
    @Test func startsInTheCallersTaskAndEndsOnceWithTheOutcome() async throws {
        try await Emulator.withRunning { emulator in
            let recorder = Recorder()
            let api = try client(emulator, recorder)
            let found = try await Self.$caller.withValue("request 1") {
                try await api.getRecords(layout: "Artists", limit: 2)
            }
            #expect(found.records.count == 2)
            let spans = recorder.spans
            let call = try #require(spans.first { $0.start.endpoint == "GET layouts/{}/records" })
            let login = try #require(spans.first { $0.start.endpoint == "POST sessions" })
            #expect(call.caller == "request 1")
            #expect(login.caller == "request 1")
            #expect(login.start.parent === call)
            #expect(call.start.parent == nil)
            #expect(call.start.layout == "Artists")
            #expect(call.start.database == "Music")
            #expect(call.start.serverAddress == "127.0.0.1")
            #expect(call.start.serverPort == emulator.baseURL?.port)
            #expect(call.start.scheme == "http")
            #expect(call.start.requestID != 0 && call.start.requestID != login.start.requestID)
            #expect(call.ends.count == 1)
            #expect(login.ends.count == 1)
            let outcome = try #require(call.ends.first)
            #expect(outcome.code == "0" && !outcome.isFailure && outcome.error == nil)
            #expect(outcome.httpStatus == 200)
            #expect(outcome.attempts == 1)
            #expect(outcome.bytesReceived > 0)
            #expect(outcome.queueWait >= 0 && outcome.queueWait <= outcome.duration)
            #expect(call.events.isEmpty)
        }
    }

    /// A failure ends the span with its code, error and status; a retry and a replay are events.
    @Test func failuresRetriesAndReplays() async throws {
        try await Emulator.withRunning { emulator in
            let recorder = Recorder()
            let api = try client(emulator, recorder)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            let failed = try #require(recorder.spans.first { $0.start.layout == "NoSuchLayout" })
            #expect(failed.ends.count == 1)
            #expect(failed.ends.first?.code == "105")
            #expect(failed.ends.first?.error?.code == "105")
            #expect(failed.ends.first?.httpStatus == 500)

            emulator.inject(.html502, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let retried = try #require(recorder.spans.last { $0.start.layout == "Artists" })
            #expect(retried.events.map(\.kind) == [.retry])
            #expect(retried.events.first?.code == FMError.ClientCode.notJSON && retried.events.first?.attempt == 1)   // an HTML 502 page
            #expect(retried.ends.count == 1 && retried.ends.first?.attempts == 2 && retried.ends.first?.code == "0")

            emulator.inject(.expireSession, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let replayed = try #require(recorder.spans.last { $0.start.layout == "Artists" })
            #expect(replayed !== retried)
            #expect(replayed.events.map(\.kind) == [.replay])
            #expect(replayed.events.first?.code == "952")
            #expect(replayed.ends.count == 1 && replayed.ends.first?.attempts == 2)
            let relogin = try #require(recorder.spans.last { $0.start.endpoint == "POST sessions" })
            #expect(relogin.start.parent === replayed)
            #expect(recorder.spans.allSatisfy { $0.ends.count == 1 })
        }
    }

    /// A call refused while shutting down still gets its one span, ended with -1012.
    @Test func aRefusedCallEndsItsSpan() async throws {
        try await Emulator.withRunning { emulator in
            let recorder = Recorder()
            let api = try client(emulator, recorder)
            await api.shutdown(grace: 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "Artists") }
            let refused = try #require(recorder.spans.last { $0.start.layout == "Artists" })
            #expect(refused.ends.map(\.code) == [FMError.ClientCode.shuttingDown])
            #expect(refused.ends.first?.attempts == 0)
        }
    }

    /// Request and answer lines are debug and carry the call's metadata; a FileMaker error is a warning,
    /// a retry a warning; "no records match" (401) stays debug.
    @Test func logLevelsAndMetadata() async throws {
        try await Emulator.withRunning { emulator in
            let recorder = Recorder()
            let lines = LockedEvents()
            let api = try client(emulator, recorder, logger: { event in lines.append(event) })
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            _ = try? await api.find(layout: "Artists", request: FMFindRequest(queries: [FMQuery(["name": "==no such artist"])]))
            emulator.inject(.html502, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let events = lines.all
            let call = try #require(recorder.spans.first { $0.start.layout == "Artists" })
            let id = String(call.start.requestID)
            let mine = events.filter { $0.metadata["fm.request_id"] == id }
            #expect(mine.map(\.level) == [.debug, .debug])
            #expect(mine.allSatisfy { $0.metadata["fm.endpoint"] == "GET layouts/{}/records" && $0.metadata["fm.layout"] == "Artists" })
            #expect(mine.last?.metadata["fm.code"] == "0")
            #expect(mine.last?.metadata["http.response.status_code"] == "200")
            let missing = try #require(events.first { $0.message.hasPrefix("←") && $0.metadata["fm.layout"] == "NoSuchLayout" })
            #expect(missing.level == .warning && missing.metadata["fm.code"] == "105")
            let noMatch = try #require(events.first { $0.message.hasPrefix("←") && $0.metadata["fm.code"] == "401" })
            #expect(noMatch.level == .debug)
            let retry = try #require(events.first { $0.message.contains("retry") })
            #expect(retry.level == .warning && retry.metadata["fm.code"] == FMError.ClientCode.notJSON)
            #expect(!events.contains { $0.level == .info && ($0.message.hasPrefix("→") || $0.message.hasPrefix("←")) })
        }
    }

    /// FMConfiguration.logLevel: lines below it never reach the hook (nor are formatted); a failure above it does.
    @Test func logLevelFiltersBeforeTheHook() async throws {
        try await Emulator.withRunning { emulator in
            let url = try #require(emulator.baseURL)
            var configuration = FMConfiguration(host: url.absoluteString, database: emulator.database, username: "admin", password: "admin")
            configuration.logLevel = .info
            let lines = LockedEvents()
            let api = DataAPI(configuration: configuration, logger: { event in lines.append(event) })
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            let events = lines.all
            #expect(!events.contains { $0.level < .info }, "\(events.map(\.description))")
            #expect(events.contains { $0.level == .info && $0.message.hasPrefix("logging in") })
            #expect(events.contains { $0.level == .warning && $0.metadata["fm.code"] == "105" && $0.message.hasPrefix("← GET") })
        }
    }

    /// With nothing in flight the shutdown's lines come in order: "shutting down" before "shut down".
    @Test func shutdownLinesInOrder() async throws {
        try await Emulator.withRunning { emulator in
            let lines = LockedEvents()
            let api = try client(emulator, Recorder(), logger: { event in lines.append(event) })
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await api.shutdown(grace: 5)
            let shutdown = lines.all.filter { $0.message.hasPrefix("shut") }.map(\.message)
            #expect(shutdown.count == 2)
            #expect(shutdown.first?.hasPrefix("shutting down") == true, "\(shutdown)")
            #expect(shutdown.last?.hasPrefix("shut down") == true, "\(shutdown)")
        }
    }
}

/// Log events behind a lock (tests).
private final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [FMLogEvent] = []
    func append(_ event: FMLogEvent) { lock.withLock { events.append(event) } }
    var all: [FMLogEvent] { lock.withLock { events } }
}

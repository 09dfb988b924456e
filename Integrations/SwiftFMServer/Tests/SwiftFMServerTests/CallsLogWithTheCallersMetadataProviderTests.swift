import Foundation
import InMemoryLogging
import Logging
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

/// A swift-log `Logger.MetadataProvider` that reads task-locals (a trace id, as swift-distributed-tracing users read
/// `ServiceContext`) sees, on every line of a call, the context of the task (or thread) that made the call: a
/// `DataAPI(configuration:logger:)` reads the logger's provider as each call begins, in the caller's context, and SwiftFM
/// adds what it returned to that call's lines, which it logs on its own queues. Concurrent calls keep theirs apart.
/// Before, the provider ran when SwiftFM logged, on SwiftFM's queues, and found nothing.
@Suite struct CallsLogWithTheCallersMetadataProviderTests {
    enum Trace {
        @TaskLocal static var id: String?
    }

    static func logger(_ handler: InMemoryLogHandler) -> Logger {
        var handler = handler
        handler.metadataProvider = Logger.MetadataProvider { Trace.id.map { ["trace_id": .string($0)] } ?? [:] }
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .trace
        return logger
    }

    static func string(_ entry: InMemoryLogHandler.Entry, _ key: String) -> String? {
        if case .string(let value)? = entry.metadata[key] { return value }
        return nil
    }

    /// Failed before: the request and answer lines had no `trace_id`.
    @Test func concurrentCallsLogTheirOwnTasksContext() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            let api = DataAPI(configuration: try configuration(for: emulator), logger: Self.logger(handler))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for trace in ["t-1", "t-2", "t-3"] {
                    group.addTask {
                        try await Trace.$id.withValue(trace) { _ = try await api.getRecords(layout: "Artists", limit: 1) }
                    }
                }
                try await group.waitForAll()
            }
            await api.shutdown(grace: 5)
            let reads = handler.entries.filter { Self.string($0, "fm.layout") == "Artists" }
            let calls = Dictionary(grouping: reads) { Self.string($0, "fm.request_id") ?? "" }
            #expect(calls.count == 3, "\(calls.keys)")
            var traces: [String] = []
            for (id, lines) in calls {
                let seen = Set(lines.map { Self.string($0, "trace_id") ?? "none" })
                #expect(seen.count == 1, "call \(id): \(seen)")
                traces += seen
            }
            #expect(traces.sorted() == ["t-1", "t-2", "t-3"], "\(reads.map { "\($0.message) \($0.metadata)" })")
        }
    }

    /// Failed before: the failure line had no `trace_id`.
    @Test func aFailedCallsLinesCarryTheContext() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            let api = DataAPI(configuration: try configuration(for: emulator), logger: Self.logger(handler))
            await #expect(throws: FMError.self) {
                try await Trace.$id.withValue("failing") { _ = try await api.getRecords(layout: "NoSuchLayout") }
            }
            await api.shutdown(grace: 5)
            let lines = handler.entries.filter { Self.string($0, "fm.layout") == "NoSuchLayout" }
            #expect(lines.contains { $0.level == .warning }, "\(lines.map { "\($0.message)" })")
            #expect(!lines.isEmpty && lines.allSatisfy { Self.string($0, "trace_id") == "failing" }, "\(lines.map(\.metadata))")
        }
    }

    /// Held: a configuration's own provider is kept (the logger's is used only when none is set).
    @Test func aConfiguredProviderIsKept() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            var configuration = try configuration(for: emulator)
            configuration.logMetadataProvider = FMLogMetadataProvider { ["tenant": "acme"] }
            let api = DataAPI(configuration: configuration, logger: Self.logger(handler))
            _ = try await Trace.$id.withValue("t") { try await api.getRecords(layout: "Artists", limit: 1) }
            await api.shutdown(grace: 5)
            let lines = handler.entries.filter { Self.string($0, "fm.layout") == "Artists" }
            #expect(!lines.isEmpty && lines.allSatisfy { Self.string($0, "tenant") == "acme" }, "\(lines.map(\.metadata))")
        }
    }

    /// `Logger.fmLogMetadataProvider` reads the logger's provider, values as text; `nil` for a logger without one.
    @Test func theProviderReadsTheLoggersProvider() throws {
        #expect(Logger(label: "plain") { _ in InMemoryLogHandler() }.fmLogMetadataProvider == nil)
        let provider = try #require(Self.logger(InMemoryLogHandler()).fmLogMetadataProvider)
        #expect(Trace.$id.withValue("x") { provider.metadata() } == ["trace_id": "x"])
        #expect(provider.metadata() == [:])
    }
}

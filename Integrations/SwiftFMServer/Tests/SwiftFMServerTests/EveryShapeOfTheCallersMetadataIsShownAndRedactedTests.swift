import Foundation
import InMemoryLogging
import Logging
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

/// Contract: what a swift-log `Logger.MetadataProvider` returns reaches a call's lines through
/// `Logger.fmLogMetadataProvider` in every shape swift-log has: a `.string`, a `.stringConvertible`, an `.array` and a
/// `.dictionary` (nested ones too) are each shown as the text swift-log itself shows for them (`MetadataValue.description`),
/// none dropped; and a configured secret inside any of them is redacted, also where swift-log writes it escaped (a string
/// inside an array or a dictionary is quoted, its `"` and `\` escaped).
@Suite struct EveryShapeOfTheCallersMetadataIsShownAndRedactedTests {
    static let password = #"pa"ss\word-9"#

    /// Set in the task that makes the call: the logger's provider returns the context there only, so what a line shows
    /// is what SwiftFM carried from the call's start (not what the handler's provider adds as SwiftFM logs).
    enum Caller {
        @TaskLocal static var isSet = false
    }

    struct Tenant: CustomStringConvertible, Sendable {
        var description: String { "tenant-42" }
    }

    static let context: Logger.Metadata = [
        "plain": .string("text"),
        "convertible": .stringConvertible(Tenant()),
        "list": .array([.string("a"), .string("b c"), .stringConvertible(Tenant())]),
        "map": .dictionary(["k": .string("v"), "nested": .array([.string("x")])]),
        "secret_list": .array([.string(password), .string("kept")]),
        "secret_map": .dictionary(["pw": .string(password)]),
        "secret_plain": .string("before \(password) after"),
    ]

    /// Failed before: the password inside `secret_list` and `secret_map` was shown, escaped as swift-log writes it
    /// (`"pa\"ss\\word-9"`), on every line of the call.
    @Test func everyShapeIsShownAndNoneShowsTheSecret() async throws {
        var schema = EmulatorSchema.demo
        schema.accounts.append(.init(username: "quoted", password: Self.password))
        try await Emulator.withRunning(Emulator(schema: schema)) { emulator in
            let handler = InMemoryLogHandler()
            var withProvider = handler
            withProvider.metadataProvider = Logger.MetadataProvider { Caller.isSet ? Self.context : [:] }
            var logger = Logger(label: "test") { _ in withProvider }
            logger.logLevel = .trace
            var configuration = try configuration(for: emulator)
            configuration.credentials = .basic(username: "quoted", password: Self.password)
            let api = DataAPI(configuration: configuration, logger: logger)
            // One call that succeeds, one that fails (a layout that does not exist): their lines, failure lines included.
            _ = try await Caller.$isSet.withValue(true) { try await api.getRecords(layout: "Artists", limit: 1) }
            await #expect(throws: FMError.self) {
                try await Caller.$isSet.withValue(true) { _ = try await api.getRecords(layout: "NoSuchLayout", limit: 1) }
            }
            await api.shutdown(grace: 5)
            // The call's own lines (a login's serve the pool and carry no caller's context).
            let lines = handler.entries.filter { ["Artists", "NoSuchLayout"].contains($0.metadata["fm.layout"]?.description) }
            #expect(lines.count >= 4, "\(handler.entries.map(\.message))")
            let escaped = String(Self.password.debugDescription.dropFirst().dropLast())
            for line in lines {
                let values = line.metadata.mapValues(\.description)
                for key in ["plain", "convertible", "list", "map"] {
                    #expect(values[key] == Self.context[key]?.description, "\(key): \(values[key] ?? "dropped")")
                }
                #expect(values["secret_list"] == #"["<redacted>", "kept"]"#, "\(values["secret_list"] ?? "dropped")")
                #expect(values["secret_map"] == #"["pw": "<redacted>"]"#, "\(values["secret_map"] ?? "dropped")")
                #expect(values["secret_plain"] == "before <redacted> after", "\(values["secret_plain"] ?? "dropped")")
                let text = (["\(line.message)"] + values.values).joined(separator: " ")
                #expect(!text.contains(Self.password) && !text.contains(escaped), "\(text)")
            }
        }
    }
}

import Foundation
import InMemoryLogging
import Logging
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

/// Contract: a line that `Logger.fmLogHandler` hands to swift-log carries no secret the client knows, also in what the
/// logger adds to it: the values its handler's metadata provider returns as the line is logged (on SwiftFM's queues),
/// and the logger's own metadata (`logger[metadataKey:]`), keys and values, in every shape (`.string`,
/// `.stringConvertible`, `.array`, `.dictionary`). They are redacted as the line itself is (`FMLogEvent.redact(_:)`);
/// what is not a secret is shown as it was, and SwiftFM's own keys win over the provider's.
@Suite struct WhatTheHandlerAddsToALineIsRedactedTests {
    static let password = "hunter2-Secret"

    struct Convertible: CustomStringConvertible, Sendable {
        var description: String { "pw=\(WhatTheHandlerAddsToALineIsRedactedTests.password)" }
    }

    /// Failed before: every line showed the password in `ambient`, `nested`, `convertible` and `service`, and as a key.
    @Test func theProvidersValuesAndTheLoggersMetadataAreRedacted() async throws {
        var schema = EmulatorSchema.demo
        schema.accounts.append(.init(username: "owner", password: Self.password))
        try await Emulator.withRunning(Emulator(schema: schema)) { emulator in
            let handler = InMemoryLogHandler()
            var withProvider = handler
            withProvider.metadataProvider = Logger.MetadataProvider {
                ["ambient": .string("token=\(Self.password)"), "nested": .dictionary(["pw": .array([.string(Self.password)])]),
                 "convertible": .stringConvertible(Convertible()), "plain": "kept", "fm.endpoint": "the provider's",
                 "key-\(Self.password)": "x"]
            }
            var logger = Logger(label: "test") { _ in withProvider }
            logger.logLevel = .trace
            logger[metadataKey: "service"] = .string("db password \(Self.password)")
            logger[metadataKey: "region"] = "eu"
            var configuration = try configuration(for: emulator)
            configuration.credentials = .basic(username: "owner", password: Self.password)
            configuration.logLevel = .debug
            let api = DataAPI(configuration: configuration, logger: logger.fmLogHandler)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout", limit: 1) }
            await api.shutdown(grace: 5)
            let lines = handler.entries
            #expect(lines.count >= 4, "\(lines.map(\.message))")
            for line in lines {
                let text = ([line.message.description] + line.metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
                #expect(!text.contains(Self.password), "\(text)")
                #expect(line.metadata["ambient"]?.description == "token=<redacted>", "\(text)")
                #expect(line.metadata["convertible"]?.description == "pw=<redacted>", "\(text)")
                #expect(line.metadata["nested"]?.description.contains("<redacted>") == true, "\(text)")
                #expect(line.metadata["service"]?.description == "db password <redacted>", "\(text)")
                #expect(line.metadata["key-<redacted>"]?.description == "x", "\(text)")
                #expect(line.metadata["plain"]?.description == "kept" && line.metadata["region"]?.description == "eu", "\(text)")
                if let endpoint = line.metadata["fm.endpoint"] { #expect(endpoint.description != "the provider's", "\(text)") }
            }
        }
    }
}

import Foundation
import InMemoryLogging
import Logging
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

/// Contract: what `Logger.fmLogHandler` hands to swift-log of what the logger adds to a line (its own metadata, its
/// handler's metadata provider) is the text it redacted, not a value that is read again after: a `.stringConvertible`
/// is described once, redacted, and handed on as that text. A value whose description changes between reads (a
/// reference to state that changes, a session's current token) cannot show the handler a secret on its second read.
@Suite struct WhatTheHandlerAddsIsHandedOnAsRedactedTests {
    static let password = "hunter2-Changing"

    /// Describes itself as `state` the first time, as the password every time after.
    final class Changing: CustomStringConvertible, @unchecked Sendable {
        // @unchecked: `reads` under `lock`.
        private let lock = NSLock()
        private var reads = 0
        var description: String {
            lock.lock()
            defer { lock.unlock() }
            reads += 1
            return reads == 1 ? "state" : "pw=\(WhatTheHandlerAddsIsHandedOnAsRedactedTests.password)"
        }
    }

    /// Failed before: the line's `changing` value was the `.stringConvertible` itself, whose description the handler read
    /// again after the redaction: `pw=hunter2-Changing`.
    @Test func aConvertibleIsHandedOnAsTheTextThatWasRedacted() async throws {
        var schema = EmulatorSchema.demo
        schema.accounts.append(.init(username: "owner", password: Self.password))
        try await Emulator.withRunning(Emulator(schema: schema)) { emulator in
            let handler = InMemoryLogHandler()
            var logger = Logger(label: "test") { _ in handler }
            logger.logLevel = .trace
            logger[metadataKey: "changing"] = .stringConvertible(Changing())
            var configuration = try configuration(for: emulator)
            configuration.credentials = .basic(username: "owner", password: Self.password)
            configuration.logLevel = .debug
            let api = DataAPI(configuration: configuration, logger: logger.fmLogHandler)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await api.shutdown(grace: 5)
            let lines = handler.entries
            #expect(!lines.isEmpty)
            for line in lines {
                let text = ([line.message.description] + line.metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
                #expect(!text.contains(Self.password), "\(text)")
            }
        }
    }
}

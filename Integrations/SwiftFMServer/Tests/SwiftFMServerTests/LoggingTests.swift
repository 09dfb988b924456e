import Foundation
import InMemoryLogging
import Logging
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

@Suite struct LoggingTests {
    /// Request and answer lines reach the logger at `debug` with the call's metadata; a FileMaker error
    /// answer at `warning`; no line or value holds the password, the Basic value or a token.
    @Test func linesReachTheLoggerWithLevelsAndMetadata() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            var logger = Logger(label: "test") { _ in handler }
            logger.logLevel = .trace
            let api = DataAPI(configuration: try configuration(for: emulator), logger: logger)

            _ = try await api.getRecords(layout: "Artists", limit: 2)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            await api.shutdown(grace: 5)

            let entries = handler.entries
            func string(_ entry: InMemoryLogHandler.Entry, _ key: String) -> String? {
                if case .string(let value)? = entry.metadata[key] { return value }
                return nil
            }
            let request = try #require(entries.first { "\($0.message)".hasPrefix("→ GET") && "\($0.message)".contains("/layouts/Artists/") })
            #expect(request.level == .debug)
            #expect(string(request, "fm.endpoint") == "GET layouts/{}/records")
            #expect(string(request, "fm.layout") == "Artists")
            let id = try #require(string(request, "fm.request_id"))
            let answer = try #require(entries.first { "\($0.message)".hasPrefix("← GET") && string($0, "fm.request_id") == id })
            #expect(answer.level == .debug)
            #expect(string(answer, "fm.code") == "0")
            #expect(string(answer, "http.response.status_code") == "200")
            #expect(string(answer, "fm.layout") == "Artists")

            let failed = try #require(entries.first { "\($0.message)".hasPrefix("← GET") && string($0, "fm.layout") == "NoSuchLayout" })
            #expect(failed.level == .warning)
            #expect(string(failed, "fm.code") == "105")
            #expect(string(failed, "fm.request_id") != id)

            let login = try #require(entries.first { "\($0.message)".hasPrefix("logging in") })
            #expect(login.level == .info)
            // Nothing above debug but the login, the failure and the shutdown's lines.
            #expect(entries.filter { $0.level > .info }.count == 1)

            let secrets = secrets(of: emulator)
            #expect(!secrets.isEmpty)
            for entry in entries {
                let text = "\(entry.message) \(entry.metadata)"
                for secret in secrets { #expect(!text.contains(secret), "\(text)") }
            }
        }
    }

    /// A logger at `info` (the usual daemon level) gets no request or answer line of a call that succeeds.
    @Test func anInfoLoggerSeesNoRequestLines() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            var logger = Logger(label: "test") { _ in handler }
            logger.logLevel = .info
            let api = DataAPI(configuration: try configuration(for: emulator), logger: logger)
            #expect(api.configuration.logLevel == .info)   // debug lines are not even formatted
            for _ in 0..<3 { _ = try await api.getRecords(layout: "Artists", limit: 1) }
            let lines = handler.entries.map { "\($0.message)" }
            #expect(!lines.isEmpty)   // the login
            #expect(!lines.contains { $0.hasPrefix("→") || $0.hasPrefix("←") }, "\(lines)")
        }
    }

    /// A retried call logs its retry at `warning`, with the code in the metadata.
    @Test func aRetryIsAWarning() async throws {
        try await Emulator.withRunning { emulator in
            let handler = InMemoryLogHandler()
            var logger = Logger(label: "test") { _ in handler }
            logger.logLevel = .trace
            let api = DataAPI(configuration: try configuration(for: emulator), logger: logger)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            emulator.inject(.html502, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let retry = try #require(handler.entries.first { "\($0.message)".contains("retry") })
            #expect(retry.level == .warning)
            #expect(retry.metadata["fm.code"] == .string(FMError.ClientCode.notJSON))   // an HTML 502 page
        }
    }
}

import Foundation
import SwiftFM
import Testing

extension LegacyLoggingTests {
    /// Contract: the warning a failed SwiftFM 2.x call logs (`SwiftFM 2.x FUNCTION failed: ERROR`, through
    /// `DataAPI.legacyLogger`) carries the metadata every other failure line carries: `fm.endpoint`, `fm.code`, `fm.layout`
    /// when the call names one, the `fm.request_id` of the request whose answer failed it (the number on that request's
    /// own `←` line), and the caller's logging context (`FMConfiguration.logMetadataProvider`, set through
    /// `DataAPI.configureLegacyCalls`), read as the call began. Nested in ``LegacyLoggingTests``, which is serialized:
    /// both set the process-wide `legacyLogger`.
    @Suite struct ASwiftFM2FailureLineCarriesItsCallsMetadataTests {
        enum Trace {
            @TaskLocal static var id: String?
        }

        /// Failed before: the warning had no metadata at all.
        @Test func aFailedCallsWarningCarriesItsEndpointCodeRequestAndContext() async throws {
            let server = try LegacyServer(.hostAndDatabase)
            server.defaults.set(Data("admin:wrong".utf8).base64EncodedString(), forKey: "fm-auth")
            LegacyAdjustments.shared.set(server.url.absoluteString) { configuration in
                configuration.logMetadataProvider = FMLogMetadataProvider { Trace.id.map { ["trace_id": $0] } ?? [:] }
            }
            defer { LegacyAdjustments.shared.remove(server.url.absoluteString) }
            let lines = LegacyLoggingTests.Lines()
            DataAPI.legacyLogger = { lines.append($0) }
            defer { DataAPI.legacyLogger = nil }
            await DataAPI.withLegacyDefaults(server.defaults) {
                await Trace.$id.withValue("login-call") { #expect(await SwiftFM.newSession() == nil) }
                await Trace.$id.withValue("create-call") {
                    #expect(await SwiftFM.createRecord(layout: "Artists", payload: nil, token: "not-a-token") == nil)
                }
            }
            let events = lines.events
            let login = try #require(events.first { $0.message.hasPrefix("SwiftFM 2.x newSession() failed") }, "\(events.map(\.message))")
            let loginAnswer = try #require(events.first { $0.message.hasPrefix("← ") && $0.metadata["fm.code"] == "212" })
            #expect(login.metadata["fm.code"] == "212", "\(login.metadata)")
            #expect(login.metadata["fm.endpoint"] == loginAnswer.metadata["fm.endpoint"], "\(login.metadata)")
            #expect(login.metadata["fm.request_id"] != nil && login.metadata["fm.request_id"] == loginAnswer.metadata["fm.request_id"],
                    "\(login.metadata) vs \(loginAnswer.metadata)")
            #expect(login.metadata["trace_id"] == "login-call", "\(login.metadata)")

            let create = try #require(events.first { $0.message.hasPrefix("SwiftFM 2.x createRecord(") }, "\(events.map(\.message))")
            let createAnswer = try #require(events.first { $0.message.hasPrefix("← ") && $0.metadata["fm.code"] == "952" })
            #expect(create.metadata["fm.code"] == "952", "\(create.metadata)")
            #expect(create.metadata["fm.endpoint"] == createAnswer.metadata["fm.endpoint"], "\(create.metadata)")
            #expect(create.metadata["fm.layout"] == "Artists", "\(create.metadata)")
            #expect(create.metadata["fm.request_id"] != nil && create.metadata["fm.request_id"] == createAnswer.metadata["fm.request_id"],
                    "\(create.metadata) vs \(createAnswer.metadata)")
            #expect(create.metadata["trace_id"] == "create-call", "\(create.metadata)")
        }

        /// Failed before: the warning of a call that failed before any service existed (no `fm-host`) had no metadata.
        @Test func aCallRefusedForItsConfigurationCarriesItsEndpointAndCode() async throws {
            let defaults = try #require(UserDefaults(suiteName: "SwiftFM.LegacyTests.\(UUID().uuidString)"))
            let lines = LegacyLoggingTests.Lines()
            DataAPI.legacyLogger = { lines.append($0) }
            defer { DataAPI.legacyLogger = nil }
            await DataAPI.withLegacyDefaults(defaults) {
                #expect(await SwiftFM.createRecord(layout: "Artists", payload: nil, token: "t") == nil)
            }
            let line = try #require(lines.events.first { $0.message.hasPrefix("SwiftFM 2.x createRecord(") }, "\(lines.events.map(\.message))")
            #expect(line.metadata["fm.code"] == "-1001", "\(line.metadata)")
            #expect(line.metadata["fm.endpoint"] == "POST layouts/{}/records", "\(line.metadata)")
            #expect(line.metadata["fm.layout"] == "Artists", "\(line.metadata)")
        }
    }
}

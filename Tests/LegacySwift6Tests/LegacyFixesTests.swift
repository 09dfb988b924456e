import Foundation
import Testing

// The originals' bugs that are fixed, not reproduced (LEGACY.md §3.4), observed on the wire.

@Suite struct LegacyFixesTests {
    @Test func missingConfigurationStillCallsBack() throws {
        let suite = "SwiftFM.LegacyTests.empty.\(UUID().uuidString)"
        let empty = try #require(UserDefaults(suiteName: suite))
        defer { empty.removePersistentDomain(forName: suite) }
        DataAPI.withLegacyDefaults(empty) {
            let refresh = wait { done in DataAPI.refreshToken(for: "eA==") { token, expiry, code in done((token, expiry, code)) } }
            #expect(refresh?.0 == nil)
            #expect(refresh?.1 == nil)
            #expect(refresh?.2 == FMError.ClientCode.invalidConfiguration)
            let records = wait { done in
                DataAPI.getRecords(token: "t", layout: "Artists", offset: 1, limit: 1) { records, code, message in done((records, code, message)) }
            }
            #expect(records?.0 == nil)
            #expect(records?.1 == "-1001")
            #expect(records?.2.contains("fm-host") == true)
            let code = wait { done in DataAPI.deleteRecordWith(id: 1, token: "t", layout: "Artists") { code in done(code) } }
            #expect(code == "-1001")
            let valid = wait { done in DataAPI.validateSession(token: "t") { ok, message in done(ok) } }
            #expect(valid == false)
        }
    }

    @Test func unusableAnswersStillCallBack() throws {
        let server = try LegacyServer(.dbPath)
        // Three attempts (the default before reads rode out a restart), for this test's server only.
        LegacyAdjustments.shared.set(server.url.absoluteString) { $0.retry = FMRetryPolicy(maxAttempts: 3) }
        defer { LegacyAdjustments.shared.remove(server.url.absoluteString) }
        try server.run {
            let token = try server.login()
            // A 502 is retried, here 3 attempts: fail them all.
            server.emulator.inject(.html502, count: 3)
            let html = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done((records, code)) } }
            #expect(html?.0 == nil)
            #expect(html?.1 == FMError.ClientCode.notJSON)
            server.emulator.inject(.truncatedJSON)
            let truncated = wait { done in DataAPI.getRecordWith(id: 1, token: token, layout: "Artists") { record, code in done((record, code)) } }
            #expect(truncated?.0 == nil)
            #expect(truncated?.1 == FMError.ClientCode.malformedResponse)
            // The pre-2019-06 shapes used to skip FileMaker errors too.
            server.emulator.inject(.fileMakerError(code: "802"))
            let e1 = wait { done in DataAPI.deleteRecord(token: token, layout: "Artists", recordId: 1) { code in done(code) } }
            #expect(e1 == "802")
        }
    }

    @Test func namesWithSpacesAndSlashes() throws {
        let server = try LegacyServer(.hostAndDatabase)
        try server.run {
            let token = try #require(wait { done in DataAPI.refreshToken(auth: LegacyServer.auth) { token, _, _ in done(token) } } ?? nil)
            let layout = "Artist List / Web"
            let page = wait { done in
                DataAPI.getRecords(token: token, layout: layout, offset: 1, limit: 2) { records, code, message in done((names(records), code)) }
            }
            #expect(page?.0 == ["Brian", "Geoff"])
            #expect(page?.1 == "0")
            let request = try #require(server.emulator.requestLog.last)
            #expect(request.target.contains("/layouts/Artist%20List%20%2F%20Web/records"))
        }
    }

    @Test func expirySlidesWhenTheStoredTokenIsUsed() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            let soon = Date(timeIntervalSinceNow: 5)
            server.defaults.set(soon, forKey: "fm-token-expiry")
            let code = wait { done in DataAPI.getRecordWith(id: 1, token: token, layout: "Artists") { _, code in done(code) } }
            #expect(code == "0")
            let slid = try #require(server.defaults.object(forKey: "fm-token-expiry") as? Date)
            #expect(slid > soon.addingTimeInterval(600))
        }
    }

    @Test func processWideDefaultsInjection() throws {
        // DataAPI.legacyDefaults is the process-wide setting (default .standard); every other corpus
        // test scopes its own suite with withLegacyDefaults, so swapping the global here is safe.
        #expect(DataAPI.legacyDefaults === UserDefaults.standard)
        let server = try LegacyServer(.dbPath)
        DataAPI.legacyDefaults = server.defaults
        defer { DataAPI.legacyDefaults = .standard }
        let code = wait { done in DataAPI.refreshToken(for: LegacyServer.auth) { _, _, code in done(code) } }
        #expect(code == "0")
        #expect(server.defaults.string(forKey: "fm-token") != nil)
        #expect(DataAPI.isActiveToken())
    }
}

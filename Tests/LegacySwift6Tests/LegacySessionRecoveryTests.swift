import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// The 2019 explicit-token pattern after a server restart: keep the stored token while `isActiveToken()`
/// is true, else `refreshToken(for:)`. Before the fix it stayed stuck on 952 for up to 15 minutes.
@Suite struct LegacySessionRecoveryTests {
    @Test func the2019PatternRecoversAfterARestart() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let daemon = SyncDaemon(defaults: server.defaults)
            let first = wait { done in daemon.sync { done(true) } }
            #expect(first == true && daemon.fetched.count > 0)
            #expect(DataAPI.isActiveToken())
            #expect(server.requests("POST", "/sessions").count == 1)

            server.emulator.restart()   // every token forgotten
            daemon.fetched = []
            let failed = wait { done in daemon.sync { done(true) } }
            #expect(failed == true && daemon.fetched.isEmpty)
            #expect(daemon.log.last == "get records sad. 952")
            // The 952 expired the stored token: the pattern's guard now logs in again.
            #expect(DataAPI.isActiveToken() == false)
            #expect(server.defaults.integer(forKey: "fm-token-expiry") == 0)

            let recovered = wait { done in daemon.sync { done(true) } }
            #expect(recovered == true && daemon.fetched.count > 0)
            #expect(server.requests("POST", "/sessions").count == 2)
            #expect(DataAPI.isActiveToken())
        }
    }

    @Test func anHTML401AndA112ExpireTheStoredTokenToo() throws {
        for fault in [EmulatorFault.html401, .killSession] {
            let server = try LegacyServer(.dbPath)
            try server.run {
                let token = try server.login()
                #expect(DataAPI.isActiveToken())
                server.emulator.inject(fault, count: 1, matching: "records")
                let code = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { _, code in done(code) } }
                #expect(code != "0")
                #expect(DataAPI.isActiveToken() == false)
            }
        }
    }

    @Test func theInstanceExplicitTokenModelRecovers() async throws {
        let emulator = try Emulator(schemaJSON: Data(LegacySchema.json.utf8))
        let url = try emulator.start()
        defer { emulator.stop() }
        let store = FMMemoryTokenStore()
        let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: LegacySchema.database,
                                                         username: "admin", password: "admin"), tokenStore: store)
        let (token, _) = try await api.refreshToken()
        #expect(api.isActiveToken())
        emulator.restart()
        do {
            _ = try await api.validateSession(token: token)
        } catch let error as FMError {
            #expect(error.code == "952")
        }
        #expect(api.isActiveToken() == false)
        #expect(store.load() == nil)
    }
}

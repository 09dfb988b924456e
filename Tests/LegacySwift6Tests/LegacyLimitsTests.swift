import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The whole-call deadline and the size cap through the 2019 surface (`DataAPI.getRecords(token:…)`), with
/// limits set by `DataAPI.configureLegacyCalls`. Each limit has a server of its own: a legacy service keeps
/// the configuration it was made with, and only the deadline test needs a deadline short enough to reach
/// (on a busy machine a 1 s deadline would also end the calls that test the cap).
@Suite struct LegacyLimitsTests {
    @Test func theDeadlineHoldsForLegacyCalls() throws {
        let server = try LegacyServer(.dbPath)
        let host = server.url.absoluteString
        // Through DataAPI.configureLegacyCalls, for this test's server only (LegacyAdjustments).
        LegacyAdjustments.shared.set(host) { configuration in
            configuration.timeout = 1
            configuration.retry = .none
        }
        defer { LegacyAdjustments.shared.remove(host) }
        try server.run {
            // The token comes from a client of its own: a login through the legacy service would have this test's 1 s
            // deadline too, which a loaded machine can pass before the emulator answers (-1004 from the login, not
            // from the call under test). The client's deadline is a hang bound; it stays alive (its session open).
            var configuration = FMConfiguration(host: host, database: LegacySchema.database, username: "admin", password: "admin")
            configuration.timeout = 300
            let client = DataAPI(configuration: configuration)
            let token = try #require(wait { done in client.login { token, _ in done(token) } } ?? nil)
            defer { withExtendedLifetime(client) {} }
            // A body dripped at 1 byte/s: the call ends at its deadline with -1004, once.
            server.emulator.inject(.drip(bytesPerSecond: 1), count: 1, matching: "records")
            let dripped = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done((records == nil, code)) } }
            #expect(dripped?.0 == true && dripped?.1 == FMError.ClientCode.timeout)
        }
    }

    @Test func theSizeCapHoldsForLegacyCalls() throws {
        let server = try LegacyServer(.dbPath)
        let host = server.url.absoluteString
        LegacyAdjustments.shared.set(host) { configuration in
            configuration.timeout = 600
            configuration.maxResponseBytes = 600
            configuration.retry = .none
        }
        defer { LegacyAdjustments.shared.remove(host) }
        try server.run {
            let token = try server.login()
            // An answer larger than the cap: -1011, once.
            let big = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 100) { records, code in done((records == nil, code)) } }
            #expect(big?.0 == true && big?.1 == FMError.ClientCode.responseTooLarge)
            // A small one still passes.
            let small = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done((records?.count, code)) } }
            #expect(small?.1 == "0" && small?.0 == 1)
        }
    }
}

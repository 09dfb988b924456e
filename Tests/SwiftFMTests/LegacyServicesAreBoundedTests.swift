import Foundation
import Testing
@testable import SwiftFM

/// The contract: the legacy surfaces keep one `DataAPI` per server and database they reach (its transport is shared
/// per transport setting), and keep at most ``LegacyState/maxServices`` of them, the most recently used: a daemon that
/// reaches a database per tenant (through ``DataAPI/withLegacyDefaults(_:_:)``), or whose `fm-db` comes from its
/// input, does not grow one service per database for weeks (about 6 KB each: 125 MB for 20,000). A service in use
/// stays the same object however many others come and go; one let go is made again, the same way, when next reached
/// (its calls in flight still end: a call holds its pipeline, not its `DataAPI`).
@Suite("Legacy services are bounded")
struct LegacyServicesAreBoundedTests {
    private static func target(_ database: String) -> LegacyTarget {
        LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: database)
    }

    /// 5,000 databases, one after the other, with one of them reached between each: at most the bound is kept, and the
    /// one in use all along is the same service at the end (on main: 5,001 services kept).
    @Test func atMostTheBoundTheMostRecentlyUsed() {
        let state = LegacyState()
        let busy = state.service(for: Self.target("busy"))
        for index in 0..<5_000 {
            _ = state.service(for: Self.target("tenant-\(index)"))
            #expect(state.service(for: Self.target("busy")) === busy)
        }
        #expect(state.serviceCount <= LegacyState.maxServices, "\(state.serviceCount) services kept")
        #expect(state.service(for: Self.target("busy")) === busy)
        // The last one reached is still kept.
        let last = state.service(for: Self.target("tenant-4999"))
        #expect(state.service(for: Self.target("tenant-4999")) === last)
    }
}

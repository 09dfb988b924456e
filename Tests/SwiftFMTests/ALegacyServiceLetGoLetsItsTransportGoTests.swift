import Foundation
import Testing
@testable import SwiftFM

/// The contract: the legacy layer keeps at most ``LegacyState/maxTransports`` transports (with libcurl, an engine and
/// its thread each), those of the settings reached most recently. Services that share a transport setting share one
/// transport; when ``DataAPI/configureLegacyCalls(_:)`` gives servers or databases settings of their own (a pinned key
/// per server, a timeout per database), the transports of settings no longer reached are let go past that bound (their
/// calls in flight still end: they hold it). Before, the bound on services bounded nothing of what they were made on: a
/// daemon reaching a server per tenant kept one transport, and one thread, per server it ever reached. (How transports
/// outlive the services let go: ``LegacyTransportsAreKeptPerSettingNotPerServiceTests``.)
@Suite("A legacy service let go lets its transport go")
struct ALegacyServiceLetGoLetsItsTransportGoTests {
    private final class Weak: @unchecked Sendable {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    /// 300 databases, each with a timeout of its own (so a transport setting of its own): at most the bound of services
    /// is kept, and at most that many of their transports are alive (failed before: all 300 transports alive).
    @Test func atMostTheKeptServicesTransportsAreAlive() {
        let state = LegacyState()
        state.adjust = { configuration in
            let number = Int(configuration.database.dropFirst("tenant-".count)) ?? 0
            configuration.timeout = 10 + TimeInterval(number)
        }
        let count = LegacyState.maxServices + 44
        var transports: [Weak] = []
        for index in 0..<count {
            let target = LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "tenant-\(index)")
            transports.append(Weak(state.service(for: target).transport as AnyObject))
        }
        #expect(state.serviceCount <= LegacyState.maxServices)
        let alive = transports.filter { $0.object != nil }.count
        #expect(alive <= LegacyState.maxServices, "\(alive) transports alive for \(state.serviceCount) services kept")
        // The most recent one's transport is still the one its service uses.
        let last = LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "tenant-\(count - 1)")
        #expect(state.service(for: last).transport as AnyObject === transports[count - 1].object)
    }

    /// Services that agree on their setting still share one transport, however many come and go.
    @Test func servicesOfOneSettingShareOneTransportAcrossEvictions() {
        let state = LegacyState()
        let first = state.service(for: LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "a"))
        let shared = first.transport as AnyObject
        for index in 0..<(LegacyState.maxServices * 2) {
            let service = state.service(for: LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest,
                                                          database: "db-\(index)"))
            #expect(service.transport as AnyObject === shared)
        }
    }
}

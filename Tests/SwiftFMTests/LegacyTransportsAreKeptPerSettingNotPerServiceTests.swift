import Foundation
import Testing
@testable import SwiftFM

/// The contract: the legacy layer keeps one transport (with libcurl, an engine and its thread) per transport setting,
/// for the ``LegacyState/maxTransports`` settings reached most recently, whichever services come and go: a program that
/// cycles through more servers and databases than ``LegacyState/maxServices`` (so each of its services is let go and
/// made again) makes one transport per setting in rotation, once, not one each time a setting's services were all let
/// go. Before, a transport went with the last kept service that used it: a setting shared by a few targets that came
/// round together (a pinned server with a handful of databases, a timeout per group of tenants) lost its transport
/// between two rounds and got a new one, and a new thread, every round.
@Suite("Legacy transports are kept per setting, not per service")
struct LegacyTransportsAreKeptPerSettingNotPerServiceTests {
    /// 300 databases in 60 groups of 5, each group with a timeout of its own (so a transport setting of its own),
    /// reached in turn three times (900 calls): 60 transports made in all (failed before: a new transport for every
    /// group in every round, 180).
    @Test func cyclingMoreTargetsThanKeptMakesOneTransportPerSetting() {
        let state = LegacyState()
        state.adjust = { configuration in
            let number = Int(configuration.database.dropFirst("tenant-".count)) ?? 0
            configuration.timeout = 10 + TimeInterval(number / 5)
        }
        let count = LegacyState.maxServices + 44
        // Held, so that no transport's address is reused by another (each seen is counted once).
        var seen: [ObjectIdentifier: AnyObject] = [:]
        for _ in 0..<3 {
            for index in 0..<count {
                let target = LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "tenant-\(index)")
                let transport = state.service(for: target).transport as AnyObject
                seen[ObjectIdentifier(transport)] = transport
            }
        }
        #expect(seen.count == count / 5, "\(seen.count) transports made over \(3 * count) calls for \(count / 5) settings")
        #expect(state.serviceCount <= LegacyState.maxServices)
    }

    /// 300 databases of one setting, reached in turn three times: one transport for all 900 calls (a guard: their
    /// services are let go and made again, their transport is not).
    @Test func cyclingTargetsOfOneSettingKeepsOneTransport() {
        let state = LegacyState()
        let count = LegacyState.maxServices + 44
        var seen: [ObjectIdentifier: AnyObject] = [:]
        for _ in 0..<3 {
            for index in 0..<count {
                let target = LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "db-\(index)")
                let transport = state.service(for: target).transport as AnyObject
                seen[ObjectIdentifier(transport)] = transport
            }
        }
        #expect(seen.count == 1, "\(seen.count) transports made")
    }

    /// More settings than are kept, each reached once: at most ``LegacyState/maxTransports`` of their transports stay
    /// alive once the services are let go (no growth with the settings ever reached), and a setting reached again
    /// after its transport was let go gets a working one again.
    @Test func settingsBeyondTheBoundLetTheirTransportsGo() {
        final class Weak: @unchecked Sendable {
            weak var object: AnyObject?
            init(_ object: AnyObject) { self.object = object }
        }
        let state = LegacyState()
        state.adjust = { configuration in
            let number = Int(configuration.database.dropFirst("tenant-".count)) ?? 0
            configuration.timeout = 10 + TimeInterval(number)
        }
        let count = LegacyState.maxTransports + 100
        var transports: [Weak] = []
        for index in 0..<count {
            let target = LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "tenant-\(index)")
            transports.append(Weak(state.service(for: target).transport as AnyObject))
        }
        let alive = transports.filter { $0.object != nil }.count
        #expect(alive <= LegacyState.maxTransports, "\(alive) transports alive")
        #expect(state.transportCount <= LegacyState.maxTransports)
        let first = state.service(for: LegacyTarget(server: URL(string: "https://fms.example.com")!, version: .vLatest, database: "tenant-0"))
        #expect(refusal(of: first.transport, for: first.configuration) == nil)
        #expect(first.configuration.timeout == 10)
    }
}

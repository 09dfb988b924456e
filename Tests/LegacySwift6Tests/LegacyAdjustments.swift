import Foundation
import SwiftFM

/// Per-server limits for legacy tests that run in parallel. `DataAPI.configureLegacyCalls` holds one
/// process-wide closure; this installs it once and applies the adjustment registered for the server a
/// legacy service is made for, so one test's settings never reach another test's server.
final class LegacyAdjustments: @unchecked Sendable {
    static let shared: LegacyAdjustments = {
        let table = LegacyAdjustments()
        DataAPI.configureLegacyCalls { configuration in table.apply(&configuration) }
        return table
    }()

    private let lock = NSLock()
    private var byHost: [String: @Sendable (inout FMConfiguration) -> Void] = [:]

    /// Applies `adjust` to the services made from now on for the server at `host` (its URL).
    func set(_ host: String, _ adjust: @escaping @Sendable (inout FMConfiguration) -> Void) {
        lock.withLock { byHost[host] = adjust }
    }

    func remove(_ host: String) {
        _ = lock.withLock { byHost.removeValue(forKey: host) }
    }

    private func apply(_ configuration: inout FMConfiguration) {
        let host = configuration.host
        let adjust = lock.withLock { byHost.first { host.hasPrefix($0.key) }?.value }
        adjust?(&configuration)
    }
}

import Foundation
import SwiftFM

/// An observer that does nothing: what the hook itself costs, with no work of the app's behind it.
final class NoOpMetrics: FMMetricsObserver {
    func callFinished(_ call: FMCallMetrics) {}
    func poolEvent(_ event: FMPoolEvent) {}
}

extension Bench {
    // MARK: Scenario: the metrics hook

    /// What the metrics hook costs a call: get one record through callbacks with `metrics` unset against
    /// the same call with a no-op observer set (``hookCost(of:unset:set:setting:)``). Target: unset no slower
    /// than before the hook, within this spread.
    func metrics() async throws {
        try await hookCost(of: "the metrics hook", unset: "metrics unset", set: "no-op observer") { $0.metrics = NoOpMetrics() }
    }

    /// What a configuration hook costs a call: get one record through callbacks with the hook unset against
    /// the same call with `setting` applied, from a plain thread, each call semaphore-waited, interleaved call by
    /// call (the order rotating) in `--rounds`
    /// blocks of `--calls` calls. Per block the mean µs per call of each; printed: the median block and the
    /// fastest and slowest block, and the per-block ratio.
    func hookCost(of title: String, unset unsetLabel: String, set name: String,
                  setting: (inout FMConfiguration) -> Void) async throws {
        var configured = api.configuration
        setting(&configured)
        let unset = DataAPI(configuration: api.configuration), hooked = DataAPI(configuration: configured)
        let wait = DispatchSemaphore(value: 0)
        let contenders: [ThreadContender] = [("unset", { callbackGetRecord(unset, wait: wait) }),
                                             (name, { callbackGetRecord(hooked, wait: wait) })]
        guard let tally = try await measuredOnThread(contenders) else { return }
        func perCall(_ name: String) -> String {
            let blocks = tally.rounds.compactMap { $0[name] }.map { $0 / Double(settings.calls) * 1e6 }.sorted()
            guard !blocks.isEmpty else { return "n/a" }
            return String(format: "%.1f µs (blocks %.1f … %.1f)", blocks[blocks.count / 2], blocks[0], blocks[blocks.count - 1])
        }
        say("\(title), get one record through callbacks from a thread, semaphore-waited (\(settings.rounds) blocks × \(settings.calls) calls, interleaved call by call):")
        say("  \(unsetLabel) \(perCall("unset")), a \(name) \(perCall(name))")
        say("  \(name) / unset  \(tally.ratioText(name, over: "unset"))")
    }
}

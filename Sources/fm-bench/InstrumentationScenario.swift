import Foundation
import SwiftFM

/// An instrumentation that does nothing: what the tracing hook itself costs, with no tracer behind it.
final class NoOpInstrumentation: FMInstrumentation {
    final class Span: FMCallSpan {
        func record(_ event: FMCallEvent) {}
        func end(_ outcome: FMCallOutcome) {}
    }
    func startCall(_ call: FMCallStart) -> any FMCallSpan { Span() }
}

extension Bench {
    // MARK: Scenario: the tracing hook

    /// What the tracing hook costs a call: get one record through callbacks with `instrumentation` unset
    /// against the same call with a no-op instrumentation set, interleaved call by call (the order rotating)
    /// in `--rounds` blocks of `--calls` calls. Per block the mean µs per call of each; printed: the median
    /// block and the fastest and slowest block, and the per-block ratio. Target: a no-op instrumentation
    /// ≤ 1.03× unset.
    func instrumentation() async throws {
        func client(_ instrumentation: FMInstrumentation?) -> DataAPI {
            var configuration = api.configuration
            configuration.instrumentation = instrumentation
            return DataAPI(configuration: configuration)
        }
        func get(_ api: DataAPI) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                api.getRecord(layout: "Bench", recordId: 1) { _, _ in continuation.resume() }
            }
        }
        let contenders: [(String, DataAPI)] = [("unset", client(nil)), ("no-op instrumentation", client(NoOpInstrumentation()))]
        for _ in 0..<100 { for (_, api) in contenders { await get(api) } } // logs both in, warms both up
        let tally = try await interleaved(contenders.map { contender in (contender.0, { await get(contender.1) }) },
                                          rounds: settings.rounds, calls: settings.calls)
        func perCall(_ name: String) -> String {
            let blocks = tally.rounds.compactMap { $0[name] }.map { $0 / Double(settings.calls) * 1e6 }.sorted()
            guard !blocks.isEmpty else { return "n/a" }
            return String(format: "%.1f µs (blocks %.1f … %.1f)", blocks[blocks.count / 2], blocks[0], blocks[blocks.count - 1])
        }
        say("the tracing hook, get one record through callbacks (\(settings.rounds) blocks × \(settings.calls) calls, interleaved call by call):")
        say("  instrumentation unset \(perCall("unset")), a no-op instrumentation \(perCall("no-op instrumentation"))")
        say("  no-op instrumentation / unset  \(tally.ratioText("no-op instrumentation", over: "unset"))")
    }
}

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
    /// against the same call with a no-op instrumentation set (``hookCost(of:unset:set:setting:)``). Target: a
    /// no-op instrumentation ≤ 1.03× unset.
    func instrumentation() async throws {
        try await hookCost(of: "the tracing hook", unset: "instrumentation unset", set: "no-op instrumentation") {
            $0.instrumentation = NoOpInstrumentation()
        }
    }
}

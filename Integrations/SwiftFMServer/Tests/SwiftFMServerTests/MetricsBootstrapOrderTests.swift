// Contract: an FMSwiftMetricsObserver made without a factory records through whatever MetricsSystem.bootstrap
// set before its first metric is made, not what was set when the observer was created: a configuration
// (and its observer) may be built before the daemon bootstraps its metrics backend, as the order of a
// program's setup often has it, and its metrics still reach that backend.
import Foundation
import Metrics
import MetricsTestKit
import SwiftFM
import SwiftFMServer
import Testing

@Suite struct TheDefaultFactoryIsReadWhenAMetricIsMade {
    /// Observer first, bootstrap second, then a call: the call is counted by the bootstrapped backend. Failed on
    /// main: the observer had kept the factory of its creation (swift-metrics' no-op one) and nothing was counted.
    /// (In a process of its own: a process bootstraps MetricsSystem once.)
    @Test func anObserverMadeBeforeTheBootstrap() async {
        await #expect(processExitsWith: .success) {
            let observer = FMSwiftMetricsObserver(dimensions: [("database", "Music")])
            let metrics = TestMetrics()
            MetricsSystem.bootstrap(metrics)
            observer.callFinished(FMCallMetrics(endpoint: "GET layouts/{}/records", queueWait: 0, duration: 0.001, code: "0",
                                                attempts: 1, bytesSent: 0, bytesReceived: 10))
            observer.poolUsage(open: 1, busy: 0)
            guard metrics.counterTotal(label: "swiftfm_calls_total") == 1,
                  metrics.counterTotal(label: "swiftfm_bytes_received_total") == 10,
                  (try? metrics.expectGauge("swiftfm_pool_sessions_open", [("database", "Music")]).lastValue) == 1 else { exit(1) }
        }
    }
}

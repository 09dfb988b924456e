import Foundation
import MetricsTestKit
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

@Suite struct MetricsTests {
    private static let records = "GET layouts/{}/records"

    private func client(_ emulator: Emulator, _ metrics: TestMetrics) throws -> DataAPI {
        var configuration = try configuration(for: emulator)
        configuration.metrics = FMSwiftMetricsObserver(dimensions: [("database", emulator.database)], factory: metrics)
        return DataAPI(configuration: configuration)
    }

    private func calls(_ metrics: TestMetrics, _ endpoint: String, _ outcome: String, _ code: String) -> Int64 {
        metrics.counterTotal(label: "swiftfm_calls_total",
                             dimensions: [("database", "Music"), ("endpoint", endpoint), ("outcome", outcome), ("code", code)])
    }

    @Test func aSuccessfulCall() async throws {
        try await Emulator.withRunning { emulator in
            let metrics = TestMetrics()
            let api = try client(emulator, metrics)
            _ = try await api.getRecords(layout: "Artists", limit: 2)

            #expect(calls(metrics, Self.records, "success", "0") == 1)
            #expect(calls(metrics, "POST sessions", "success", "0") == 1)
            #expect(metrics.counterTotal(label: "swiftfm_logins_total", dimensions: [("database", "Music"), ("outcome", "success"), ("code", "0")]) == 1)
            let duration = try metrics.expectTimer("swiftfm_call_duration_seconds",
                                                   [("database", "Music"), ("endpoint", Self.records), ("outcome", "success")])
            #expect(duration.values.count == 1)
            #expect(duration.values.allSatisfy { $0 > 0 })
            let wait = try metrics.expectTimer("swiftfm_call_queue_wait_seconds", [("database", "Music"), ("endpoint", Self.records)])
            #expect(wait.values.count == 1)
            #expect(wait.values[0] <= duration.values[0])
            #expect(try metrics.expectCounter("swiftfm_bytes_received_total", [("database", "Music"), ("endpoint", Self.records)]).totalValue > 0)
            #expect(metrics.counters(label: "swiftfm_call_retries_total").isEmpty)
            #expect(try metrics.expectGauge("swiftfm_pool_sessions_open", [("database", "Music")]).lastValue == 1)
            #expect(try metrics.expectGauge("swiftfm_pool_sessions_busy", [("database", "Music")]).values.contains(1))
        }
    }

    @Test func aRetriedCall() async throws {
        try await Emulator.withRunning { emulator in
            let metrics = TestMetrics()
            let api = try client(emulator, metrics)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            emulator.inject(.html502, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)

            #expect(calls(metrics, Self.records, "success", "0") == 2)
            #expect(calls(metrics, Self.records, "failure", "502") == 0)
            #expect(metrics.counterTotal(label: "swiftfm_call_retries_total", dimensions: [("database", "Music"), ("endpoint", Self.records)]) == 1)
        }
    }

    @Test func a952Replay() async throws {
        try await Emulator.withRunning { emulator in
            let metrics = TestMetrics()
            let api = try client(emulator, metrics)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            emulator.inject(.expireSession, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)

            #expect(calls(metrics, Self.records, "success", "0") == 2)
            #expect(metrics.counterTotal(label: "swiftfm_sessions_lost_total", dimensions: [("database", "Music"), ("code", "952")]) == 1)
            #expect(metrics.counterTotal(label: "swiftfm_logins_total", dimensions: [("database", "Music"), ("outcome", "success"), ("code", "0")]) == 2)
            #expect(metrics.counterTotal(label: "swiftfm_call_retries_total", dimensions: [("database", "Music"), ("endpoint", Self.records)]) == 1)
            #expect(try metrics.expectGauge("swiftfm_pool_sessions_open", [("database", "Music")]).lastValue == 1)
        }
    }

    @Test func aFailedCall() async throws {
        try await Emulator.withRunning { emulator in
            let metrics = TestMetrics()
            let api = try client(emulator, metrics)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }

            #expect(calls(metrics, Self.records, "failure", "105") == 1)
            #expect(calls(metrics, Self.records, "success", "0") == 0)
            let duration = try metrics.expectTimer("swiftfm_call_duration_seconds",
                                                   [("database", "Music"), ("endpoint", Self.records), ("outcome", "failure")])
            #expect(duration.values.count == 1)

            // A failed login: counted with its code, and the call that waited for it fails with it.
            emulator.rejectLogins(true)
            let other = try client(emulator, metrics)
            await #expect(throws: FMError.self) { _ = try await other.getRecords(layout: "Artists") }
            #expect(metrics.counters(label: "swiftfm_logins_total").contains {
                $0.dimensions.contains { $0 == ("outcome", "failure") } && $0.totalValue == 1
            })
        }
    }
}

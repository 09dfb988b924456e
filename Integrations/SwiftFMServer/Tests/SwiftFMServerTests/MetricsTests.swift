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

    /// The `code` dimension comes from the server's answer: codes that are not short integers, and codes past
    /// the first `maxCodes` distinct ones, are `other`, so a server or proxy answering with codes of its own
    /// cannot grow the metrics (and the observer's cache) without bound. Failed on main (1,000 counters).
    @Test func theCodeDimensionStaysBounded() {
        let metrics = TestMetrics()
        let observer = FMSwiftMetricsObserver(factory: metrics)
        func call(_ code: String) -> FMCallMetrics {
            FMCallMetrics(endpoint: Self.records, queueWait: 0, duration: 0.001, code: code, attempts: 1, bytesSent: 0, bytesReceived: 0)
        }
        observer.callFinished(call("0"))
        observer.callFinished(call("-1012"))
        observer.callFinished(call("952"))
        for index in 0..<500 { observer.callFinished(call("token-\(index)-\(UUID().uuidString)")) }
        for index in 0..<500 { observer.callFinished(call("\(10_000 + index)")) }
        observer.poolEvent(FMPoolEvent(kind: .loginFailed, session: 0, code: "Bearer abc.def.ghi"))

        let counters = metrics.counters(label: "swiftfm_calls_total")
        let codes = Set(counters.compactMap { $0.dimensions.first { $0.0 == "code" }?.1 })
        // The server's codes within the bound, `0` and `-1012` (success and client codes are not counted), `other`.
        #expect(codes.count <= FMSwiftMetricsObserver.maxCodes + 2 + 1, "\(codes.count) code values")
        for code in ["0", "-1012", "952", "other"] { #expect(codes.contains(code), "\(code)") }
        #expect(!codes.contains { $0.hasPrefix("token-") })
        #expect(counters.reduce(0) { $0 + $1.totalValue } == 1003)   // every call counted, under some code
        #expect(metrics.counterTotal(label: "swiftfm_calls_total",
                                     dimensions: [("endpoint", Self.records), ("outcome", "failure"), ("code", "other")]) >= 500)
        let logins = metrics.counters(label: "swiftfm_logins_total")
        #expect(logins.count == 1)
        #expect(logins.first?.dimensions.contains { $0 == ("code", "other") } == true)
    }

    /// A duration or wait past what `Int64` nanoseconds hold (infinity, 1e300 s: values a caller can build)
    /// is recorded as the largest value, and NaN as 0, instead of trapping. Failed on main (the process
    /// crashed converting to `Int64`).
    @Test func durationsPastInt64DoNotTrap() async {
        await #expect(processExitsWith: .success) {
            let metrics = TestMetrics()
            let observer = FMSwiftMetricsObserver(factory: metrics)
            observer.callFinished(FMCallMetrics(endpoint: "GET layouts/{}/records", queueWait: .nan, duration: .infinity,
                                                code: "0", attempts: 1, bytesSent: 0, bytesReceived: 0))
            observer.poolEvent(FMPoolEvent(kind: .opened, session: 0, loginDuration: 1e300))
            let duration = metrics.timers(label: "swiftfm_call_duration_seconds").first?.values
            let wait = metrics.timers(label: "swiftfm_call_queue_wait_seconds").first?.values
            let login = metrics.timers(label: "swiftfm_login_duration_seconds").first?.values
            guard duration == [.max], wait == [0], login == [.max] else { exit(1) }
        }
    }
}

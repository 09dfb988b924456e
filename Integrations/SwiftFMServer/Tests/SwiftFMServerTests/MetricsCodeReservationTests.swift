// Contract: FMSwiftMetricsObserver's `code` dimension is bounded against the codes a server sends, and that
// bound is spent on the server's codes only: success (`0`) and SwiftFM's own client codes (`-1000` … `-1099`,
// a fixed set: a timeout, a cancel, a shutdown) are always recorded as themselves, however many distinct codes
// a server or a proxy answered before, so that a success rate or a count of timeouts by code stays true for
// the life of the process.
import Foundation
import MetricsTestKit
import SwiftFM
import SwiftFMServer
import Testing

@Suite struct SuccessAndClientCodesAreNeverOther {
    private static let records = "GET layouts/{}/records"

    private func call(_ code: String) -> FMCallMetrics {
        FMCallMetrics(endpoint: Self.records, queueWait: 0, duration: 0.001, code: code, attempts: 1, bytesSent: 0, bytesReceived: 0)
    }

    private func codes(_ metrics: TestMetrics, _ label: String) -> Set<String> {
        Set(metrics.counters(label: label).compactMap { $0.dimensions.first { $0.0 == "code" }?.1 })
    }

    /// A server's many distinct codes first, then a success, a timeout and a shutdown: each keeps its code.
    /// Failed on main: once the server's codes had filled `maxCodes`, `0`, `-1004` and `-1012` were `other`.
    @Test func afterAServerFilledTheCodes() {
        let metrics = TestMetrics()
        let observer = FMSwiftMetricsObserver(factory: metrics)
        for index in 0..<(FMSwiftMetricsObserver.maxCodes + 10) { observer.callFinished(call("\(20_000 + index)")) }
        observer.callFinished(call("0"))
        observer.callFinished(call(FMError.ClientCode.timeout))
        observer.callFinished(call(FMError.ClientCode.shuttingDown))
        observer.poolEvent(FMPoolEvent(kind: .opened, session: 0, loginDuration: 0.01))
        observer.poolEvent(FMPoolEvent(kind: .loginFailed, session: 0, loginDuration: 0.01, code: FMError.ClientCode.transport))

        let calls = codes(metrics, "swiftfm_calls_total")
        for code in ["0", FMError.ClientCode.timeout, FMError.ClientCode.shuttingDown, "other"] {
            #expect(calls.contains(code), "\(code) in \(calls.sorted())")
        }
        #expect(metrics.counterTotal(label: "swiftfm_calls_total",
                                     dimensions: [("endpoint", Self.records), ("outcome", "success"), ("code", "0")]) == 1)
        #expect(codes(metrics, "swiftfm_logins_total") == ["0", FMError.ClientCode.transport])
        // Still bounded: the server's codes, the ones kept, and `other`.
        #expect(calls.count == FMSwiftMetricsObserver.maxCodes + 3 + 1, "\(calls.count)")
    }

    /// The client range is a fixed set: codes outside it that merely look alike (`-1100`, `-10000`) are the server's.
    @Test func onlyTheClientRangeIsKept() {
        let metrics = TestMetrics()
        let observer = FMSwiftMetricsObserver(factory: metrics)
        for index in 0..<FMSwiftMetricsObserver.maxCodes { observer.callFinished(call("\(30_000 + index)")) }
        for code in ["-1100", "-10000", "-100", "00", "-0"] { observer.callFinished(call(code)) }
        observer.callFinished(call("-1099"))
        observer.callFinished(call("-1000"))
        let calls = codes(metrics, "swiftfm_calls_total")
        #expect(calls.contains("-1099") && calls.contains("-1000"))
        for code in ["-1100", "-10000", "-100", "00", "-0"] { #expect(!calls.contains(code), "\(code)") }
    }
}

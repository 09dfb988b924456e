import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: a `Retry-After` in seconds is `delay-seconds = 1*DIGIT` (RFC 9110 §10.2.3): ASCII digits, with
/// optional spaces or tabs around them. A very long run of digits is a very long wait (clamped, never an overflow, a
/// trap or an infinite number). An HTTP date keeps its own reading (against the answer's `Date` header). Anything else
/// — an exponent (`1e3`), a hexadecimal float (`0x1p10`), a sign (`+5`, `-1`), a fraction (` 5.5`), other digits
/// (`５`, `٥`), `inf`, `nan` — is no `Retry-After` at all: the call backs off by its policy, as it would without the
/// header, and never waits what such a value would read as when parsed as a floating-point number.
@Suite("Retry-After seconds are digits only")
struct RetryAfterSecondsAreDigitsOnlyTests {
    static let notSeconds = ["1e3", "1E3", "0x1p10", "+1000", "+5", " 5.5", "1000.0", "1000.", ".5", "1000e0", "1_000",
                             "10 00", "-1", "-0", "inf", "infinity", "nan", "５", "٥", "\u{00A0}5", "5\u{00A0}", "0x10", "",
                             "   ", "5s", "1,000"]

    @Test(arguments: notSeconds)
    func aValueThatIsNotDigitsIsNoRetryAfter(_ value: String) {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(Classifier.retryAfter(["Retry-After": value], now: now) == nil, "\(value.debugDescription) was read as a wait")
    }

    @Test func digitsWithSpacesOrTabsAroundThemAreSeconds() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for (value, seconds) in [("7", 7.0), ("0", 0), ("007", 7), (" 7", 7), ("7 ", 7), ("\t120\t", 120), ("  3600  ", 3600)] {
            #expect(Classifier.retryAfter(["Retry-After": value], now: now) == seconds, "\(value.debugDescription)")
        }
    }

    /// Digits past what any number holds: the longest wait, finite, without a trap.
    @Test func aVeryLongRunOfDigitsIsTheLongestWait() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for value in [String(repeating: "9", count: 400), String(repeating: "9", count: 20), "18446744073709551616", "315360001"] {
            let wait = Classifier.retryAfter(["Retry-After": value], now: now)
            #expect(wait == Deadline.longest, "\(value) → \(String(describing: wait))")
        }
        #expect(Classifier.retryAfter(["Retry-After": "315360000"], now: now) == 315_360_000)
    }

    // MARK: end to end, against a loopback server

    /// A client of `server` with a live token (no login: request 0 is the call) and a back-off drawn at its least (0 s).
    private static func api(_ server: TestServer) -> DataAPI {
        let configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        let store = FMMemoryTokenStore(FMStoredToken(token: "hostile-token", expiry: Date().addingTimeInterval(600)))
        let api = DataAPI(configuration: configuration, transport: FMURLSessionTransport(idleTimeout: TestBound.seconds), tokenStore: store)
        api.retryJitter.withLock { $0 = { $0.lowerBound } }
        return api
    }

    /// The server answers the first read `503` with `retryAfter`, then `200`.
    private static func server(retryAfter: String) -> TestServer {
        TestServer { _, index in
            index == 0 ? .answer(TestServer.json("{}", status: "503 Service Unavailable", headers: ["Retry-After": retryAfter]))
                : .answer(TestServer.json(Bodies.value("ok")))
        }
    }

    /// Read as a number, each of these asked for 1000 s or more: past the deadline, so the read ended at once with the 503.
    /// It is no `Retry-After`: the read backs off by its policy and gets its answer.
    @Test(arguments: ["1e3", "0x1p10", "+1000", " 1000.5", "1000.0", "1000e0", "1E4"])
    func aHostileValueIsIgnoredAndTheReadRetries(_ retryAfter: String) {
        let server = Self.server(retryAfter: retryAfter)
        defer { server.stop() }
        let recorder = Recorder<Result<String, FMError>>()
        Self.api(server).perform(TestEndpoints.records()) { recorder.record($0) }
        let result = recorder.wait().first
        #expect(result?.testValue == "ok", "Retry-After: \(retryAfter) → \(String(describing: result))")
        #expect(server.count("GET ") == 2)
    }

    /// Digits too many for any number are a wait past every deadline: the read ends at once with the 503, after one
    /// request (not read as nothing and retried at once).
    @Test func aRunOfDigitsTooLongForANumberEndsTheReadAtOnce() throws {
        let server = Self.server(retryAfter: String(repeating: "9", count: 400))
        defer { server.stop() }
        let recorder = Recorder<Result<String, FMError>>()
        Self.api(server).perform(TestEndpoints.records()) { recorder.record($0) }
        let error = try #require(recorder.wait().first?.testError)
        #expect(error.httpStatus == 503, "\(error)")
        #expect(server.count("GET ") == 1)
    }
}

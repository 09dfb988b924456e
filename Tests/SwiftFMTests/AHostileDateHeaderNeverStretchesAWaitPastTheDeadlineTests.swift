import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM
import TestSupport

/// The contract: whatever a server's `Date` and `Retry-After` headers say — absent, garbage, far in the past or the
/// future, a date that makes the wait hours or centuries — the wait read from them is nothing (`nil`) or a finite number
/// of seconds, never negative, NaN or infinite; and a wait longer than what is left of the call's deadline is not waited
/// for: the call ends at once with the server's answer, after one request.
@Suite("A hostile Date header never stretches a wait past the deadline")
struct AHostileDateHeaderNeverStretchesAWaitPastTheDeadlineTests {
    @Test func everyReadingIsNothingOrAFiniteWaitOfZeroOrMore() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let dates = [nil, "", "garbage", "Mon, 99 Foo 2026 99:99:99 GMT", httpDate(.distantPast), httpDate(.distantFuture),
                     httpDate(now.addingTimeInterval(-86_400 * 365 * 50)), httpDate(now.addingTimeInterval(86_400 * 365 * 50)),
                     httpDate(now)]
        let retryAfters = ["0", "-5", "1e308", "1e400", "inf", "nan", "-inf", "0x1p1023", "soon", httpDate(.distantPast),
                           httpDate(.distantFuture), httpDate(now.addingTimeInterval(3_600)), httpDate(now)]
        for date in dates {
            for retryAfter in retryAfters {
                var headers = ["Retry-After": retryAfter]
                if let date { headers["Date"] = date }
                if let wait = Classifier.retryAfter(headers, now: now) {
                    #expect(wait.isFinite && wait >= 0, "\(headers) → \(wait)")
                }
            }
        }
    }

    /// The answer's clock far in the past and a `Retry-After` date near the client's now: a wait of decades, read on the
    /// answer's clock, is more than the deadline leaves, so the read ends with the 503 after one request.
    @Test func aWaitOfDecadesEndsTheCallAtOnce() throws {
        let clock = TestClock()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = 60
        let headers = ["Date": httpDate(Date(timeIntervalSince1970: 0)), "Retry-After": httpDate(clock.now)]
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "tok", expiry: .distantFuture)),
                        clock: clock) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            return .json(503, #"{"messages":[{"code":"0","message":"maintenance"}],"response":{}}"#, headers: headers)
        }
        let recorder = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let error = try #require(recorder.wait().first?.testError)
        #expect(error.httpStatus == 503, "\(error)")
        #expect(h.stub.count("GET", "/records") == 1)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM
import TestSupport

/// The contract: a `Retry-After` given as an HTTP date is a moment on the server's clock. The wait it asks for is that
/// date less the answer's own `Date` header (the server's clock when it answered), so a client whose clock is off by an
/// hour waits what the server meant; an answer without a `Date` header is read against the client's wall clock (the
/// injected `now`), never against another clock (on main it was read against `Date()`: a client clock ahead of the
/// server's retried at once, one behind waited too long or gave up).
@Suite("A Retry-After date is read on the answer's clock")
struct ARetryAfterDateIsReadOnTheAnswersClockTests {
    /// Two minutes after the answer's `Date`: a wait of two minutes, whatever the client's clock says (on main: 0, the
    /// date being long past on this machine's clock).
    @Test func theWaitIsTheDateLessTheAnswersDate() throws {
        let answered = Date(timeIntervalSince1970: 1_000_000_000)
        let headers = ["Retry-After": httpDate(answered.addingTimeInterval(120)), "Date": httpDate(answered)]
        #expect(Classifier.retryAfter(headers, now: Date(timeIntervalSince1970: 0)) == 120)
        // Seconds are seconds, and an unreadable date asks for nothing.
        #expect(Classifier.retryAfter(["Retry-After": "7"], now: answered) == 7)
        #expect(Classifier.retryAfter(["Retry-After": "soon"], now: answered) == nil)
    }

    /// Without a `Date` header, the client's clock: an hour after the injected clock is an hour's wait, more than the
    /// call's deadline, so the call ends with the 503 instead of retrying (on main it was read against `Date()`, past
    /// for this test's clock of 2023: a retry at once).
    @Test func withoutADateHeaderTheInjectedClockIsTheReference() throws {
        let clock = TestClock()
        let until = httpDate(clock.now.addingTimeInterval(3600))
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = 60
        let reads = Locked(0)
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "tok", expiry: .distantFuture)),
                        clock: clock) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            // Maintenance for the first read; a retry (which should not come) is answered.
            guard reads.withLock({ $0 += 1; return $0 }) == 1 else { return .json(200, Bodies.value("ok")) }
            return .json(503, #"{"messages":[{"code":"0","message":"maintenance"}],"response":{}}"#, headers: ["Retry-After": until])
        }
        h.api.retryJitter.withLock { $0 = { $0.lowerBound } }
        let recorder = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let error = try #require(recorder.wait().first?.testError)
        #expect(error.httpStatus == 503, "\(error)")
        #expect(h.stub.count("GET", "/records") == 1, "retried before the date the server gave")
    }
}

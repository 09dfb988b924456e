import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A `Retry-After` that asks for no wait (0, a negative number, a date passed) must not undercut the policy's
/// own back-off: a read rides out a 503 until its deadline, and with `Retry-After: 0` it retried at once, again
/// and again — as many requests as the network carries, for the whole timeout, against a server that is away.
@Suite("Retry-After never undercuts the back-off")
struct RetryAfterAttackTests {

    @Test func aRetryAfterSetsTheLeastWaitNotTheOnlyOne() {
        let policy = FMRetryPolicy.standard
        let ceiling: (ClosedRange<Double>) -> Double = { $0.upperBound }
        for attempt in 1...6 {
            let backoff = policy.delay(afterAttempt: attempt, retryAfter: nil, random: ceiling)
            #expect(backoff > 0)
            #expect(policy.delay(afterAttempt: attempt, retryAfter: 0, random: ceiling) == backoff, "attempt \(attempt)")
            #expect(policy.delay(afterAttempt: attempt, retryAfter: -30, random: ceiling) == backoff, "attempt \(attempt)")
            #expect(policy.delay(afterAttempt: attempt, retryAfter: backoff + 7, random: ceiling) == backoff + 7, "attempt \(attempt)")
        }
        #expect(FMRetryPolicy.none.delay(afterAttempt: 1, retryAfter: 3, random: ceiling) == 3)
    }

    /// End to end: a read answered `503` with `Retry-After: 0` four times draws its back-off before each retry.
    @Test(arguments: ["0", "-1", "Thu, 01 Jan 1970 00:00:00 GMT"])
    func aReadMeetingA503WithRetryAfterZeroBacksOff(_ retryAfter: String) async throws {
        let failures = Locked(0)
        let drawn = Locked<[ClosedRange<Double>]>([])
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "tok", expiry: .distantFuture))) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            let failing = failures.withLock { count -> Bool in
                guard count < 4 else { return false }
                count += 1
                return true
            }
            return failing ? .json(503, "{}", headers: ["Retry-After": retryAfter]) : .json(200, Bodies.value("ok"))
        }
        h.api.retryJitter.withLock { $0 = { range in drawn.withLock { $0.append(range) }; return range.lowerBound } }
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(h.stub.count("GET", "/records") == 5)
        #expect(drawn.value == [0...0.25, 0...0.5, 0...1, 0...2])
    }
}

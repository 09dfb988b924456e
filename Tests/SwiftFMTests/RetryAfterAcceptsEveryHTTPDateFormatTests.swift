import Foundation
import Testing
@testable import SwiftFM

/// The contract: a `Retry-After` date is an HTTP-date, and a recipient accepts all three of its formats (RFC 9110
/// §5.6.7): the IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 date (`Sunday, 06-Nov-94 08:49:37
/// GMT`, a two-digit year more than 50 years ahead being the most recent past year with those digits) and the asctime
/// date (`Sun Nov  6 08:49:37 1994`). Each is the same wait: the date less the answer's `Date` (or the client's clock).
/// A value in none of them is still no `Retry-After`. On main only the IMF-fixdate was read: the other two were ignored
/// as if absent, so a server that asked for an hour's pause in them was asked again after the policy's back-off.
@Suite("Retry-After accepts every HTTP-date format")
struct RetryAfterAcceptsEveryHTTPDateFormatTests {
    /// 1994-11-06 07:49:37 GMT: an hour before the dates below.
    static let now = Date(timeIntervalSince1970: 784_108_177)

    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func eachFormatIsTheSameWait(_ value: String) {
        #expect(Classifier.retryAfter(["Retry-After": value], now: Self.now) == 3600, "\(value.debugDescription)")
        // Against the answer's own Date header (in any of the formats too), not the client's clock.
        let answered = ["Retry-After": value, "Date": "Sunday, 06-Nov-94 08:19:37 GMT"]
        #expect(Classifier.retryAfter(answered, now: Date(timeIntervalSince1970: 0)) == 1800, "\(value.debugDescription)")
    }

    @Test func aValueInNoFormatIsNoRetryAfter() {
        for value in ["Sun, 06 Nov 1994 08:49:37 GMT junk", "Sunday, 06-Nov-94", "Sun Nov 6 1994", "Someday"] {
            #expect(Classifier.retryAfter(["Retry-After": value], now: Self.now) == nil, "\(value.debugDescription)")
        }
    }
}

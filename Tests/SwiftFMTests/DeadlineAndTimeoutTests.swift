import Foundation
import Testing
@testable import SwiftFM

/// One deadline rule and one request timeout: ``Deadline`` clamps every wait the same way and reads the time
/// left until a moment, and a built request carries the transport's idle timeout (deadline + 5 s), never the
/// deadline itself, so URLSession's own timeout cannot race the deadline's cancel.
@Suite("Deadline: one clamp, one time left, one request timeout")
struct DeadlineAndTimeoutTests {
    @Test(arguments: [(-1.0, 0.0), (0.0, 0.0), (2.5, 2.5), (Double.infinity, Deadline.longest), (-Double.infinity, Deadline.longest),
                      (Double.nan, Deadline.longest), (1e300, Deadline.longest)])
    func everyWaitIsClampedTheSameWay(_ seconds: Double, _ expected: Double) {
        #expect(Deadline.clamped(seconds) == expected)
    }

    @Test func theTimeLeftUntilAMomentNeverGoesBelowZero() {
        #expect(Deadline.remaining(until: .now() - .seconds(5)) == 0)
        let left = Deadline.remaining(until: .now() + .seconds(100))
        #expect(left > 90 && left <= 100)
    }

    /// Failed before: the request's timeout was the configuration's `timeout`, while the transport waits `timeout + 5`.
    @Test(arguments: [7.0, 30.0, 0.5])
    func aBuiltRequestCarriesTheTransportsIdleTimeoutNotTheDeadline(_ timeout: Double) throws {
        let configuration = FMConfiguration(host: "fms.invalid", database: "db", credentials: nil, timeout: timeout)
        let request = try RequestBuilder.request(for: TestEndpoints.records(), configuration: configuration, authorization: nil).get()
        #expect(request.timeoutInterval == defaultIdleTimeout(for: configuration))
        #expect(request.timeoutInterval == timeout + 5)
    }

    @Test func basicAuthorizationPrefersTheGivenValueAndRefusesControlCharacters() throws {
        let credentials = FMCredentials.basic(username: "u", password: "p")
        #expect(try RequestBuilder.basicAuthorization(nil, credentials: credentials).get() == "Basic " + Data("u:p".utf8).base64EncodedString())
        #expect(try RequestBuilder.basicAuthorization(" abc ", credentials: credentials).get() == "Basic abc")
        #expect(throws: FMError.self) { try RequestBuilder.basicAuthorization("a\r\nb", credentials: nil).get() }
        #expect(throws: FMError.self) { try RequestBuilder.basicAuthorization(nil, credentials: nil).get() }
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// When a Claris ID token is renewed: at the end of the lifetime the token states (`exp` − `iat`), counted on the
/// local clock from when it arrived, however far that clock is from Cognito's; and an empty refresh token is none.
@Suite("Claris ID: a token's lifetime on a local clock that is off")
struct ClarisIDExpiryTests {
    typealias C = HostileCognito

    /// A local clock set `offset` seconds from the real one, moved on by `advance`.
    final class SkewedClock: @unchecked Sendable {
        private let lock = NSLock()
        private var offset: TimeInterval
        init(offset: TimeInterval) { self.offset = offset }
        func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
        var now: @Sendable () -> Date { { [self] in lock.withLock { Date().addingTimeInterval(offset) } } }
    }

    /// A Cognito (on the real clock) whose ID tokens live an hour from when they are issued.
    static func cognito() -> HostileServer {
        C.server { _, index in
            guard index > 0 else { return C.passwordVerifier() }   // then the SRP answer and every refresh
            let issued = Int(Date().timeIntervalSince1970)
            return C.tokens(C.jwt(#"{"iat":\#(issued),"exp":\#(issued + 3600),"n":\#(index)}"#))
        }
    }

    @Test("A local clock two hours fast keeps a fresh token (before: renewed on every call)")
    func aFastClockKeepsAFreshToken() async {
        let server = Self.cognito()
        defer { server.stop() }
        let signIn = C.signIn(server, now: SkewedClock(offset: 7200).now)
        let first = await C.fetch(signIn)
        for _ in 0..<3 {
            #expect(await C.fetch(signIn).successValue == first.successValue)
        }
        #expect(signIn.counts == (1, 0))
        #expect(server.requests.count == 2)
    }

    @Test("A local clock two hours slow renews the token when its hour is up (before: kept two hours past its end)")
    func aSlowClockRenewsOnTime() async {
        let server = Self.cognito()
        defer { server.stop() }
        let clock = SkewedClock(offset: -7200)
        let signIn = C.signIn(server, now: clock.now)
        let first = await C.fetch(signIn)
        #expect(first.successValue != nil)
        clock.advance(1800)
        #expect(await C.fetch(signIn).successValue == first.successValue, "renewed at half its life")
        clock.advance(1800)
        let renewed = await C.fetch(signIn)
        #expect(renewed.successValue != nil && renewed.successValue != first.successValue, "not renewed at the end of its hour")
        #expect(signIn.counts == (1, 1))
    }

    @Test("A lifetime the token states is at most a day, and one that ended before it began is over at once")
    func statedLifetimesAreBounded() {
        let received = Date(timeIntervalSince1970: 2_000_000_000)
        func expiry(_ claims: String, expiresIn: TimeInterval = 3600) -> TimeInterval {
            ClarisIDSignIn.expiry(ofJWT: C.jwt(claims), received: received, expiresIn: expiresIn).timeIntervalSince(received)
        }
        #expect(expiry(#"{"iat":100,"exp":3700}"#) == 3600)
        #expect(expiry(#"{"iat":0,"exp":1e308}"#) == 24 * 3600)
        #expect(expiry(#"{"iat":5000,"exp":100}"#) == 0)
        #expect(expiry(#"{"exp":2000000600}"#) == 600, "without iat, exp is the moment")
        #expect(ClarisIDSignIn.expiry(ofJWT: "opaque", received: received, expiresIn: 900).timeIntervalSince(received) == 900)
    }

    @Test("An empty RefreshToken is none: the next renewal signs in again instead of sending it")
    func anEmptyRefreshTokenIsNone() async throws {
        let server = C.server { _, index in
            index % 2 == 0 ? C.passwordVerifier() : C.tokens(C.jwt(#"{"n":\#(index)}"#), refreshToken: "")
        }
        defer { server.stop() }
        let signIn = C.signIn(server)
        #expect(await C.fetch(signIn).successValue != nil)
        let again = await C.fetch(signIn, refresh: true)
        #expect(again.successValue != nil, "\(again)")
        let third = try #require(server.requests.dropFirst(2).first)
        #expect(String(decoding: third.body, as: UTF8.self).contains("USER_SRP_AUTH"))
        #expect(signIn.counts == (2, 0))
    }

    @Test("A token already over when it arrives is reused for 30 s unless rejected (before: a renewal on every fetch)",
          arguments: [#"{"iat":1000,"exp":1000}"#, #"{"exp":1000}"#, #"{"iat":0,"exp":30}"#])
    func aTokenOverOnArrivalIsReusedBriefly(claims: String) async {
        let server = C.server { _, index in
            index == 0 ? C.passwordVerifier() : C.tokens(C.jwt(String(claims.dropLast()) + #","n":\#(index)}"#))
        }
        defer { server.stop() }
        let clock = SkewedClock(offset: 0)
        let signIn = C.signIn(server, now: clock.now)
        let first = await C.fetch(signIn)
        #expect(first.successValue != nil, "\(first)")
        for _ in 0..<3 {
            #expect(await C.fetch(signIn).successValue == first.successValue)
        }
        #expect(signIn.counts == (1, 0), "renewed before its 30 s were up")
        let rejected = await C.fetch(signIn, refresh: true)
        #expect(rejected.successValue != nil && rejected.successValue != first.successValue, "a rejected token is renewed at once")
        clock.advance(31)
        let later = await C.fetch(signIn)
        #expect(later.successValue != nil && later.successValue != rejected.successValue, "not renewed after 30 s")
        #expect(signIn.counts == (1, 2))
    }

    @Test("The renewal moment: a margin before the end of a long lifetime, never sooner than 30 s after arrival")
    func theRenewalMoment() {
        let received = Date(timeIntervalSince1970: 2_000_000_000)
        func renewal(after lifetime: TimeInterval) -> TimeInterval {
            ClarisIDSignIn.renewal(expiry: received.addingTimeInterval(lifetime), received: received).timeIntervalSince(received)
        }
        #expect(renewal(after: 3600) == 3540)
        #expect(renewal(after: 100) == 40)
        #expect(renewal(after: 60) == 30)
        #expect(renewal(after: 0) == 30)
        #expect(renewal(after: -500) == 30)
    }
}

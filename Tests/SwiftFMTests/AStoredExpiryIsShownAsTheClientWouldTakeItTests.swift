import Foundation
import Testing
@testable import SwiftFM

/// The contract: a token read from the token store before the pool has taken it is shown as the client would take it.
/// FileMaker ends a session 15 minutes after its last use, so a stored expiry is believed for at most 15 minutes from
/// the moment the token is taken (what a call then does): ``DataAPI/tokenExpiry`` shows that, not a stored date days
/// ahead (another clock's, or a hand-written value), and agrees with the expiry shown once a call has taken the token.
/// An expiry within 15 minutes is shown as stored; `.distantFuture` (a token that never expires here) stays
/// `.distantFuture`. On main a stored expiry three days ahead was shown as it was, while the call that then took the
/// token believed it for 15 minutes.
@Suite("A stored expiry is shown as the client would take it")
struct AStoredExpiryIsShownAsTheClientWouldTakeItTests {
    static let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
    static let stored = "0123456789abcdef0123456789abcdef-stored"

    /// A client over an empty store, which another process then fills (so the client's pool has not taken the token).
    static func client(clock: TestClock) -> (DataAPI, FMMemoryTokenStore, StubTransport) {
        let store = FMMemoryTokenStore()
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let api = DataAPI(configuration: configuration, transport: stub, tokenStore: store, now: { clock.now })
        return (api, store, stub)
    }

    @Test func aStoredExpiryDaysAheadIsShownAsFifteenMinutesFromNow() throws {
        let clock = TestClock()
        let (api, store, stub) = Self.client(clock: clock)
        store.save(FMStoredToken(token: Self.stored, expiry: clock.now.addingTimeInterval(3 * 86_400)))

        let limit = clock.now.addingTimeInterval(15 * 60)
        #expect(api.isActiveToken())
        #expect(api.currentToken == Self.stored)
        let shown = try #require(api.tokenExpiry)
        #expect(shown <= limit, "a stored expiry three days ahead was shown as \(shown), not at most \(limit)")
        #expect(shown == limit)

        // A call takes the stored token (no login) and believes it for 15 minutes from its use: the same expiry.
        let done = DispatchSemaphore(value: 0)
        api.perform(TestEndpoints.records()) { _ in done.signal() }
        #expect(done.wait(timeout: TestBound.deadline) == .success)
        #expect(stub.count("POST", "/sessions") == 0)
        #expect(api.tokenExpiry == shown)
    }

    @Test func aStoredExpiryWithinFifteenMinutesIsShownAsStored() throws {
        let clock = TestClock()
        let (api, store, _) = Self.client(clock: clock)
        let expiry = clock.now.addingTimeInterval(5 * 60)
        store.save(FMStoredToken(token: Self.stored, expiry: expiry))
        #expect(api.tokenExpiry == expiry)
    }

    @Test func aStoredDistantFutureIsShownAsDistantFuture() throws {
        let clock = TestClock()
        let (api, store, _) = Self.client(clock: clock)
        store.save(FMStoredToken(token: Self.stored, expiry: .distantFuture))
        #expect(api.tokenExpiry == .distantFuture)
        #expect(api.isActiveToken())
    }
}

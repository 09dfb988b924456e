import Foundation
import Testing
@testable import SwiftFM

/// The contract: a token whose expiry is `.distantFuture` (a custom token store that keeps no expiry, a pinned session)
/// never expires locally, and the expiry a caller is shown for it (``DataAPI/tokenExpiry``, the legacy
/// `fm-token-expiry`) is `.distantFuture`, as the store holds it: a finite, printable date that compares as the store's.
/// On main, since sessions moved to the elapsed clock, it was the wall clock plus an infinite time left: a `Date` whose
/// interval is `+inf`, which no store, formatter or legacy `as? Date` comparison expects.
@Suite("A stored token that never expires shows the distant future")
struct AStoredTokenThatNeverExpiresShowsTheDistantFutureTests {
    @Test func theMachineShowsTheDistantFuture() throws {
        let now = SessionTime(wall: Date(timeIntervalSince1970: 1_800_000_000), elapsed: 500)
        let machine = SessionStateMachine<Int>(stored: FMStoredToken(token: "S", expiry: .distantFuture), now: now)
        let later = SessionTime(wall: now.wall.addingTimeInterval(86_400), elapsed: 500 + 86_400)
        let shown = try #require(machine.validToken(now: later))
        #expect(shown.expiry == .distantFuture, "\(shown.expiry.timeIntervalSinceReferenceDate)")
        #expect(shown.expiry.timeIntervalSinceReferenceDate.isFinite)
    }

    @Test func tokenExpiryOfADataAPIIsTheDistantFuture() throws {
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "tok", expiry: .distantFuture))) { _ in
            .json(200, Bodies.value("ok"))
        }
        #expect(h.api.isActiveToken())
        #expect(h.api.currentToken == "tok")
        let expiry = try #require(h.api.tokenExpiry)
        #expect(expiry == .distantFuture, "\(expiry.timeIntervalSinceReferenceDate)")
    }
}

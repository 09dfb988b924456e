import Foundation
import Testing
@testable import SwiftFM

// The session state machine, pure: one login for many waiters, expiry before use, sliding expiry, a rejection that
// invalidates only the current token, a stored token adopted, a failed login delivered to every waiter and not
// retried, a logout during a login, persist versions that only increase.

@Suite("Session state machine (pure)")
struct SessionStateMachineTests {
    typealias Machine = SessionStateMachine<Int>
    let t0 = Date(timeIntervalSince1970: 1_000_000)

    @Test func firstAcquireLogsInOthersWait() {
        var machine = Machine(now: t0)
        #expect(machine.acquire(now: t0, stored: nil, force: false, waiter: 1) == .login(id: 1))
        #expect(machine.acquire(now: t0, stored: nil, force: false, waiter: 2) == .wait)
        #expect(machine.acquire(now: t0, stored: nil, force: true, waiter: 3) == .wait)
        let (waiters, persist) = machine.loginFinished(id: 1, token: "A", now: t0)
        #expect(waiters == [1, 2, 3])
        #expect(persist?.token == FMStoredToken(token: "A", expiry: t0 + 900))
        #expect(machine.acquire(now: t0 + 899, stored: nil, force: false, waiter: 4) == .use("A"))
    }

    @Test("Open means a token the clock says is valid: isOpen and currentToken agree with validToken")
    func openness() {
        var machine = Machine(now: t0)
        #expect(!machine.isOpen(now: t0) && machine.currentToken(now: t0) == nil)
        #expect(machine.acquire(now: t0, stored: nil, force: false, waiter: 1) == .login(id: 1))
        #expect(!machine.isOpen(now: t0), "a login in flight is not an open session")
        _ = machine.loginFinished(id: 1, token: "A", now: t0)
        for time in [t0, t0 + 899, t0 + 900, t0 + 901] {
            #expect(machine.isOpen(now: time) == (machine.validToken(now: time) != nil))
            #expect(machine.currentToken(now: time) == machine.validToken(now: time)?.token)
        }
        #expect(machine.isOpen(now: t0 + 899) && !machine.isOpen(now: t0 + 900))
        _ = machine.rejected(token: "A")
        #expect(!machine.isOpen(now: t0) && machine.currentToken(now: t0) == nil)
    }

    @Test func expiryBeforeUseStartsALogin() {
        var machine = Machine(stored: FMStoredToken(token: "A", expiry: t0 + 900), now: t0)
        #expect(machine.acquire(now: t0 + 900, stored: nil, force: false, waiter: 1) == .login(id: 1))
    }

    @Test func slidingExpiry() {
        var machine = Machine(stored: FMStoredToken(token: "A", expiry: t0 + 900), now: t0)
        #expect(machine.used(token: "A", now: t0 + 10) == nil) // moved < 30 s: not persisted
        let persist = machine.used(token: "A", now: t0 + 600)
        #expect(persist?.token == FMStoredToken(token: "A", expiry: t0 + 1500))
        #expect(machine.validToken(now: t0 + 1499)?.token == "A")
        #expect(machine.validToken(now: t0 + 1500) == nil)
        #expect(machine.used(token: "other", now: t0 + 700) == nil)
        #expect(machine.validToken(now: t0)?.expiry == t0 + 1500)
    }

    @Test func rejectionInvalidatesOnlyTheCurrentToken() {
        var machine = Machine(stored: FMStoredToken(token: "B", expiry: t0 + 900), now: t0)
        #expect(machine.rejected(token: "A") == nil) // a stale token: B stays
        #expect(machine.validToken(now: t0)?.token == "B")
        let persist = machine.rejected(token: "B")
        #expect(persist != nil && persist?.token == nil)
        #expect(machine.phase == .noToken)
        // The rejected token is not adopted again from a stale store.
        #expect(machine.acquire(now: t0, stored: FMStoredToken(token: "B", expiry: t0 + 900), force: false, waiter: 1) == .login(id: 1))
    }

    @Test func storedTokenIsAdoptedWhenNoneInMemory() {
        var machine = Machine(now: t0)
        #expect(machine.acquire(now: t0, stored: FMStoredToken(token: "S", expiry: t0 + 60), force: false, waiter: 1) == .use("S"))
        #expect(machine.acquire(now: t0, stored: FMStoredToken(token: "T", expiry: t0 + 60), force: false, waiter: 1) == .use("S"))
        // An expired stored token is ignored.
        var empty = Machine(now: t0)
        #expect(empty.acquire(now: t0, stored: FMStoredToken(token: "S", expiry: t0), force: false, waiter: 1) == .login(id: 1))
    }

    @Test func failedLoginIsDeliveredToEveryWaiterAndNotRetried() {
        var machine = Machine(now: t0)
        _ = machine.acquire(now: t0, stored: nil, force: false, waiter: 1)
        _ = machine.acquire(now: t0, stored: nil, force: false, waiter: 2)
        let (waiters, persist) = machine.loginFinished(id: 1, token: nil, now: t0)
        #expect(waiters == [1, 2])
        #expect(persist == nil)
        #expect(machine.phase == .noToken)
        // Only a new call starts a new login.
        #expect(machine.acquire(now: t0, stored: nil, force: false, waiter: 3) == .login(id: 2))
    }

    @Test func logoutDuringLoginDoesNotAdoptItsToken() {
        var machine = Machine(now: t0)
        _ = machine.acquire(now: t0, stored: nil, force: false, waiter: 1)
        let (token, persist) = machine.reset()
        #expect(token == nil)
        #expect(persist.token == nil)
        let (waiters, adopt) = machine.loginFinished(id: 1, token: "late", now: t0)
        #expect(waiters == [1]) // the waiter still gets its answer
        #expect(adopt == nil)
        #expect(machine.phase == .noToken)
    }

    @Test func persistVersionsIncrease() {
        var machine = Machine(now: t0)
        let a = machine.adopt(token: "A", expiry: t0 + 900)
        let b = machine.reset().persist
        #expect(b.version > a.version)
        #expect(machine.adopt(token: "C", expiry: t0 + 900).version > b.version)
    }
}

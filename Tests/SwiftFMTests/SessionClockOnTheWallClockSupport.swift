import Foundation
@testable import SwiftFM

// The session stage's clocks given a wall clock alone, as the tests have always injected one: the elapsed clock a
// session's idle time is measured on follows the wall clock (``SessionClock``), so moving the wall clock drives expiry.

extension SessionStage {
    /// A stage whose clocks both follow `now`.
    convenience init(pool: SessionPool, tokenStore: FMTokenStore, configuration: FMConfiguration, logger: Logger, lifecycle: Lifecycle,
                     queue: DispatchQueue = DispatchQueue(label: "SwiftFM.DataAPI.sessions"), now: @escaping @Sendable () -> Date,
                     pinnedAPI: PinnedAPI? = nil, send: @escaping Send) {
        self.init(pool: pool, tokenStore: tokenStore, configuration: configuration, logger: logger, lifecycle: lifecycle, queue: queue,
                  clock: SessionClock(wall: now, elapsed: nil), pinnedAPI: pinnedAPI, send: send)
    }
}

extension DataAPI {
    /// The default transport's client on a wall clock alone, libcurl loaded from `curlLibraryPath`.
    convenience init(configuration: FMConfiguration, callbackQueue: DispatchQueue?, tokenStore: FMTokenStore, logger: FMLogHandler?,
                     now: @escaping @Sendable () -> Date, curlLibraryPath: String) {
        self.init(configuration: configuration, callbackQueue: callbackQueue, tokenStore: tokenStore, logger: logger,
                  clock: SessionClock(wall: now, elapsed: nil), curlLibraryPath: curlLibraryPath)
    }
}

extension Reachability {
    /// The rule timed on a wall clock alone (the elapsed clock follows it).
    convenience init(now: @escaping @Sendable () -> Date, home: URLComponents? = nil) {
        self.init(elapsed: { SessionClock.following(now()) }, home: home)
    }
}

extension SessionStateMachine {
    init(stored: FMStoredToken? = nil, now: Date) {
        self.init(stored: stored, now: SessionTime(wall: now))
    }

    func validToken(now: Date) -> FMStoredToken? { validToken(now: SessionTime(wall: now)) }
    func currentToken(now: Date) -> String? { currentToken(now: SessionTime(wall: now)) }
    func isOpen(now: Date) -> Bool { isOpen(now: SessionTime(wall: now)) }

    mutating func acquire(now: Date, stored: FMStoredToken?, force: Bool, waiter: Waiter) -> Acquire {
        acquire(now: SessionTime(wall: now), stored: stored, force: force, waiter: waiter)
    }

    mutating func loginFinished(id: UInt64, token: String?, now: Date) -> (waiters: [Waiter], persist: Persist?) {
        loginFinished(id: id, token: token, now: SessionTime(wall: now))
    }

    /// Adopted at the moment a session lifetime before `expiry`: valid until the wall clock reaches `expiry`.
    mutating func adopt(token: String, expiry: Date) -> Persist {
        adopt(token: token, expiry: expiry, now: SessionTime(wall: expiry.addingTimeInterval(-Self.lifetime)))
    }

    mutating func used(token: String, now: Date) -> Persist? {
        used(token: token, now: SessionTime(wall: now))
    }

    /// Used at `now` on the wall clock and `uptime` on the elapsed clock.
    mutating func used(token: String, now: Date, uptime: TimeInterval) -> Persist? {
        used(token: token, now: SessionTime(wall: now, elapsed: uptime))
    }
}

extension SessionPool {
    convenience init(size: Int, idleTimeout: TimeInterval = 300, callsPerSession: Int = 1, stored: FMStoredToken?, now: Date) {
        self.init(size: size, idleTimeout: idleTimeout, callsPerSession: callsPerSession, stored: stored, now: SessionTime(wall: now))
    }

    func lease(now: Date, stored: FMStoredToken?, front: Bool, owner: (any SessionLeaseOwner)? = nil,
               deliver: @escaping @Sendable (Result<SessionLease, FMError>) -> Void) -> (id: UInt64?, plan: Plan) {
        lease(now: SessionTime(wall: now), stored: stored, front: front, owner: owner, deliver: deliver)
    }

    func usage(now: Date) -> (open: Int, busy: Int) { usage(now: SessionTime(wall: now)) }

    func giveBack(_ lease: SessionLease, now: Date, stored: FMStoredToken?) -> Plan {
        giveBack(lease, now: SessionTime(wall: now), stored: stored)
    }

    func loginFinished(slot: Int, id: UInt64, result: Result<String, FMError>, now: Date, stored: FMStoredToken?)
        -> (waiters: [SessionWaiter], adopted: Bool, plan: Plan) {
        loginFinished(slot: slot, id: id, result: result, now: SessionTime(wall: now), stored: stored)
    }

    func wake(now: Date, stored: FMStoredToken?) -> Plan { wake(now: SessionTime(wall: now), stored: stored) }

    func forceLogin(now: Date, waiter: @escaping SessionWaiter) -> SessionStateMachine<SessionWaiter>.Acquire {
        forceLogin(now: SessionTime(wall: now), waiter: waiter)
    }

    func letGo(_ token: String, now: Date) { letGo(token, now: SessionTime(wall: now)) }

    func used(slot: Int, token: String, now: Date) -> SessionStateMachine<SessionWaiter>.Persist? {
        used(slot: slot, token: token, now: SessionTime(wall: now))
    }

    func adopt(token: String, expiry: Date, now: Date) -> SessionStateMachine<SessionWaiter>.Persist {
        adopt(token: token, expiry: expiry, now: SessionTime(wall: now))
    }

    func validToken(slot: Int, now: Date) -> FMStoredToken? { validToken(slot: slot, now: SessionTime(wall: now)) }

    func wantsStored(now: Date) -> Bool { wantsStored(now: SessionTime(wall: now)) }
}

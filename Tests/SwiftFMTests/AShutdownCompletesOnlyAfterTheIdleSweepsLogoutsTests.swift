import Foundation
import Testing
@testable import SwiftFM

/// The contract: a shutdown is complete only when every session SwiftFM was logging out has been logged out, the idle
/// sweep's included. A shutdown begun while the sweep's logout of an idle session is in flight waits for it (within its
/// grace), so nothing SwiftFM sent is still unanswered when the shutdown's completion runs; and a sweep that fires once
/// the shutdown has begun leaves the sessions to the shutdown, which logs every one out. On main the shutdown forgot the
/// session the sweep had taken and completed at once, with the sweep's logout still in flight (sent after the caller was
/// told every session was logged out, when the caller may already have ended the process or the server).
@Suite("A shutdown completes only after the idle sweep's logouts")
struct AShutdownCompletesOnlyAfterTheIdleSweepsLogoutsTests {
    /// Records the stage's requests; logins are answered at once with `tok1`, `tok2`…, logouts when the test says.
    final class Server: @unchecked Sendable {
        private let condition = NSCondition()
        private var logins = 0
        private var logouts: [(token: String, answer: @Sendable (Result<String, FMError>) -> Void)] = []

        var send: SessionStage.Send {
            { [self] _, request, _, completion in
                switch request {
                case .login:
                    let token = condition.withLock { logins += 1; return "tok\(logins)" }
                    completion(.success(token))
                case .logout(let token):
                    condition.withLock { logouts.append((token, completion)); condition.broadcast() }
                }
            }
        }

        /// Waits for the logout of `token` (bounded), and returns its answer.
        func waitForLogout(of token: String) -> (@Sendable (Result<String, FMError>) -> Void)? {
            let limit = Date().addingTimeInterval(TestBound.seconds)
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let found = logouts.first(where: { $0.token == token }) { return found.answer }
                guard condition.wait(until: limit) else { return nil }
            }
        }

        var loggedOut: [String] { condition.withLock { logouts.map(\.token) } }
    }

    @Test func aShutdownBegunWhileTheSweepLogsOutWaitsForIt() throws {
        let server = Server()
        let elapsed = TestElapsedClock()
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = SessionClock(wall: { wall }, elapsed: { elapsed.now })
        var configuration = FMConfiguration(host: "fms.invalid", database: "db", username: "u", password: "p")
        configuration.sessionPoolSize = 2
        configuration.sessionIdleTimeout = 0.5
        let pool = SessionPool(size: 2, idleTimeout: 0.5, stored: nil, now: clock.now)
        let lifecycle = Lifecycle()
        let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                 logger: Logger(handler: nil) { [] }, lifecycle: lifecycle, clock: clock, send: server.send)

        // A burst of two: two sessions, both given back; the second idles past the timeout and the sweep logs it out.
        let (first, second) = (PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        let leases = try [#require(first.lease), #require(second.lease)]
        #expect(Set(leases.map(\.token)) == ["tok1", "tok2"])
        let idle = try #require(leases.first { $0.slot == 1 }).token
        for lease in leases { lease.release() }
        elapsed.advance(10)
        let answerSweep = try #require(server.waitForLogout(of: idle), "the sweep did not log the idle session out")

        // The shutdown begins while the sweep's logout is unanswered. It logs out what is left (as DataAPI does).
        let completed = Locked(false)
        _ = lifecycle.beginShutdown(notify: { completed.withLock { $0 = true } }) { finished in
            let tokens = stage.resetAll()
            let left = Locked(tokens.count)
            if tokens.isEmpty { return finished() }
            for token in tokens {
                stage.closeOnServer(token) { if left.withLock({ $0 -= 1; return $0 }) == 0 { finished() } }
            }
        }
        // The first session's logout is answered; the sweep's is not yet: the shutdown is not complete.
        let primary = try #require(leases.first { $0.slot == 0 }).token
        if let answer = server.loggedOut.contains(primary) ? server.waitForLogout(of: primary) : nil { answer(.success(primary)) }
        #expect(!completed.value, "the shutdown completed while the sweep's logout of \(idle) was in flight")

        answerSweep(.success(idle))
        let answerPrimary = try #require(server.waitForLogout(of: primary), "the shutdown did not log out the first session")
        answerPrimary(.success(primary))
        #expect(completed.value)
        #expect(server.loggedOut.filter { $0 == idle }.count == 1, "\(server.loggedOut)")
    }
}

extension AShutdownCompletesOnlyAfterTheIdleSweepsLogoutsTests {
    /// The sweep's timer fires while the shutdown waits for work in flight: it logs nothing out (the sessions are the
    /// shutdown's now), and the shutdown logs out both, each once. (With the sweep as on main, it logged the idle session
    /// out during the grace.)
    @Test func aSweepThatFiresDuringTheShutdownLeavesTheSessionsToIt() throws {
        let server = Server()
        let elapsed = TestElapsedClock()
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = SessionClock(wall: { wall }, elapsed: { elapsed.now })
        var configuration = FMConfiguration(host: "fms.invalid", database: "db", username: "u", password: "p")
        configuration.sessionPoolSize = 2
        configuration.sessionIdleTimeout = 0.5
        let pool = SessionPool(size: 2, idleTimeout: 0.5, stored: nil, now: clock.now)
        let lifecycle = Lifecycle()
        let stage = SessionStage(pool: pool, tokenStore: FMMemoryTokenStore(), configuration: configuration,
                                 logger: Logger(handler: nil) { [] }, lifecycle: lifecycle, clock: clock, send: server.send)
        let sweeps = Locked<[@Sendable () -> Void]>([])
        stage.armSweep.withLock {
            $0 = { _, fire in
                sweeps.withLock { $0.append(fire) }
                let never = Deadline.after(seconds: .infinity) {}
                never.cancel()
                return never
            }
        }

        let (first, second) = (PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        let leases = try [#require(first.lease), #require(second.lease)]
        for lease in leases { lease.release() }
        let sweep = try #require(sweeps.value.first, "no sweep was armed")

        // Work in flight keeps the shutdown in its grace; the sweep's time comes meanwhile.
        let inFlight = try #require(lifecycle.hold(refusedWhileShuttingDown: false))
        let completed = Locked(false)
        _ = lifecycle.beginShutdown(notify: { completed.withLock { $0 = true } }) { finished in
            let tokens = stage.resetAll()
            let left = Locked(tokens.count)
            if tokens.isEmpty { return finished() }
            for token in tokens {
                stage.closeOnServer(token) { if left.withLock({ $0 -= 1; return $0 }) == 0 { finished() } }
            }
        }
        elapsed.advance(10)
        sweep()
        #expect(server.loggedOut.isEmpty, "the sweep logged out \(server.loggedOut) during the shutdown's grace")

        inFlight()
        for lease in leases {
            let answer = try #require(server.waitForLogout(of: lease.token), "the shutdown did not log out \(lease.token)")
            answer(.success(lease.token))
        }
        #expect(completed.value)
        #expect(server.loggedOut.sorted() == leases.map(\.token).sorted(), "\(server.loggedOut)")
    }
}

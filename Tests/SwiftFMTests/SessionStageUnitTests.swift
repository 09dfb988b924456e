import Foundation
import Testing
@testable import SwiftFM

/// The session stage on its own: a ``SessionStage`` over a fake `send` (no ``DataAPI``, no transport). It logs
/// in once for the calls that wait, hands out leases that give themselves back, forgets a token the server
/// rejected, writes the token store in the state machine's order, renews a provider's rejected credentials
/// once, and logs idle sessions out through the same `send`.
@Suite("Session stage: the stage alone, over a fake send")
struct SessionStageUnitTests {
    /// What the stage asked `send` for; the test answers each request when it chooses.
    final class FakeSend: @unchecked Sendable {
        private let lock = NSLock()
        private var requests: [(SessionRequest, @Sendable (Result<String, FMError>) -> Void)] = []

        var sent: [SessionRequest] { lock.withLock { requests.map(\.0) } }

        var send: SessionStage.Send {
            { [self] _, request, _, completion in lock.withLock { requests.append((request, completion)) } }
        }

        /// Answers request `index` with `result`.
        func answer(_ index: Int, _ result: Result<String, FMError>) {
            let completion = lock.withLock { requests[index].1 }
            completion(result)
        }
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var current = Date(timeIntervalSince1970: 1_700_000_000)
        var now: Date { lock.withLock { current } }
        func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
    }

    private static func stage(_ fake: FakeSend, clock: Clock = Clock(), size: Int = 1, idle: TimeInterval = 300,
                              store: FMTokenStore = FMMemoryTokenStore(),
                              credentials: FMCredentials = .basic(username: "u", password: "p")) -> SessionStage {
        var configuration = FMConfiguration(host: "fms.invalid", database: "db", credentials: credentials)
        configuration.sessionPoolSize = size
        configuration.sessionIdleTimeout = idle
        let pool = SessionPool(size: size, idleTimeout: idle, stored: nil, now: clock.now)
        return SessionStage(pool: pool, tokenStore: store, configuration: configuration, logger: Logger(handler: nil) { [] },
                            lifecycle: Lifecycle(), now: { clock.now }, send: fake.send)
    }

    private static let basic = SessionRequest.login(headers: ["Authorization": "Basic " + Data("u:p".utf8).base64EncodedString()])

    @Test func twoWaitingCallsShareOneLoginAndTheLeaseGivesItselfBackOnce() throws {
        let fake = FakeSend()
        let store = FMMemoryTokenStore()
        let stage = Self.stage(fake, store: store)
        let (first, second, third) = (PoolTaker(), PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        #expect(fake.sent == [Self.basic])
        fake.answer(0, .success("tok"))
        let lease = try #require(first.lease)
        #expect(lease.token == "tok" && second.lease == nil)
        #expect(store.load()?.token == "tok")
        lease.release()
        #expect(try #require(second.lease).token == "tok")
        stage.lease(front: false) { third.deliver($0) }
        // The first lease is given back already: releasing it again must not free the session the second holds.
        lease.release()
        #expect(third.lease == nil)
        second.lease?.release()
        #expect(third.lease?.token == "tok")
        #expect(fake.sent.count == 1)
    }

    @Test func aRejectedLeaseForgetsItsTokenClearsTheStoreAndTheNextLeaseLogsIn() throws {
        let fake = FakeSend()
        let store = FMMemoryTokenStore()
        let stage = Self.stage(fake, store: store)
        let first = PoolTaker()
        stage.lease(front: false) { first.deliver($0) }
        fake.answer(0, .success("old"))
        let lease = try #require(first.lease)
        lease.rejected(code: "952")
        #expect(store.load() == nil)
        lease.release()
        let replay = PoolTaker()
        stage.lease(front: true) { replay.deliver($0) }
        #expect(fake.sent == [Self.basic, Self.basic])
        fake.answer(1, .success("new"))
        #expect(replay.lease?.token == "new" && store.load()?.token == "new")
    }

    @Test func aUsedLeaseSlidesTheStoredExpiry() throws {
        let fake = FakeSend()
        let clock = Clock()
        let store = FMMemoryTokenStore()
        let stage = Self.stage(fake, clock: clock, store: store)
        let taker = PoolTaker()
        stage.lease(front: false) { taker.deliver($0) }
        fake.answer(0, .success("tok"))
        let before = try #require(store.load()?.expiry)
        clock.advance(60)
        try #require(taker.lease).used()
        #expect(try #require(store.load()?.expiry) == before.addingTimeInterval(60))
    }

    @Test func aFailedLoginFailsEveryWaitingCallOnce() {
        let fake = FakeSend()
        let stage = Self.stage(fake)
        let (first, second) = (PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        fake.answer(0, .failure(FMError(code: "212", message: "no")))
        #expect(first.error?.code == "212" && second.error?.code == "212")
        #expect(first.lease == nil && second.lease == nil)
    }

    @Test func aProviderWhoseTokenTheServerRejectsIsAskedOnceForAFreshOne() {
        let fake = FakeSend()
        let asked = Locked<[Bool]>([])
        let provider = FMClarisIDTokenProvider { refresh, completion in
            asked.withLock { $0.append(refresh) }
            completion(.success(refresh ? "fresh" : "cached"))
        }
        let stage = Self.stage(fake, credentials: .clarisID(provider))
        let taker = PoolTaker()
        stage.lease(front: false) { taker.deliver($0) }
        #expect(fake.sent == [.login(headers: ["Authorization": "FMID cached"])])
        fake.answer(0, .failure(FMError(code: "952", message: "rejected", httpStatus: 401)))
        #expect(fake.sent.last == .login(headers: ["Authorization": "FMID fresh"]))
        fake.answer(1, .success("tok"))
        #expect(asked.value == [false, true] && taker.lease?.token == "tok")
    }

    @Test func theTokenStoreKeepsTheNewestWriteWhateverOrderTheyArriveIn() {
        let store = FMMemoryTokenStore()
        let stage = Self.stage(FakeSend(), store: store)
        let newer = FMStoredToken(token: "newer", expiry: .distantFuture)
        stage.apply(.init(token: newer, version: 2))
        stage.apply(.init(token: FMStoredToken(token: "older", expiry: .distantFuture), version: 1))
        #expect(store.load() == newer)
    }

    @Test func anIdleSessionIsLoggedOutThroughSendAndTheJustUsedOneIsKept() throws {
        let fake = FakeSend()
        let clock = Clock()
        let stage = Self.stage(fake, clock: clock, size: 2, idle: 10)
        let (first, second) = (PoolTaker(), PoolTaker())
        stage.lease(front: false) { first.deliver($0) }
        stage.lease(front: false) { second.deliver($0) }
        fake.answer(0, .success("t0"))
        fake.answer(1, .success("t1"))
        try #require(first.lease).release()
        clock.advance(11)
        try #require(second.lease).release()
        #expect(fake.sent == [Self.basic, Self.basic, .logout(token: "t0")])
        #expect(stage.pool.validToken(slot: 1, now: clock.now)?.token == "t1")
    }
}

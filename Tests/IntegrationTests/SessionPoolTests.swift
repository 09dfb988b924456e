import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// The session pool against the emulator: as many sessions as the load needs, up to the pool size; one login per
// session (not per call) after an expiry or a restart; a lost session renewed and its read replayed once, never a
// write that may have run; the new-session hook; Claris ID and OAuth logins; a shutdown that drains and logs out.

/// Starts an emulator with ``integrationSchema`` and a client configured by `configure`.
private func withPool<T>(
    poolSize: Int,
    clock: TestClock? = nil,
    configure: (inout FMConfiguration) -> Void = { _ in },
    _ body: (DataAPI, Emulator) async throws -> T
) async throws -> T {
    let emulator = try Emulator(schemaJSON: integrationSchema)
    let url = try emulator.start()
    defer { emulator.stop() }
    var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
    configuration.sessionPoolSize = poolSize
    configuration.timeout = 600 // calls wait for the test's steps (hooks it answers): never a race with a clock
    configure(&configuration)
    let api: DataAPI
    if let clock {
        api = DataAPI(configuration: configuration, now: { clock.now })
    } else {
        api = DataAPI(configuration: configuration)
    }
    return try await body(api, emulator)
}

/// A clock a test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
    func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
}

/// Runs `count` `getRecords` calls at once through the callback surface; returns their codes.
private func concurrentReads(_ api: DataAPI, _ count: Int) async -> [String] {
    await withTaskGroup(of: String.self) { group in
        for _ in 0..<count {
            group.addTask { await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }.1 }
        }
        var codes: [String] = []
        for await code in group { codes.append(code) }
        return codes
    }
}

/// Hands the test the `done` of the first hook run.
final class HookGate: @unchecked Sendable {
    private let lock = NSLock()
    private var done: (@Sendable (FMError?) -> Void)?
    private var waiter: CheckedContinuation<@Sendable (FMError?) -> Void, Never>?

    func arrived(_ done: @escaping @Sendable (FMError?) -> Void) {
        let waiter: CheckedContinuation<@Sendable (FMError?) -> Void, Never>? = lock.withLock {
            self.done = done
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: done)
    }

    func wait() async -> @Sendable (FMError?) -> Void {
        await withCheckedContinuation { continuation in
            let ready: (@Sendable (FMError?) -> Void)? = lock.withLock {
                if let done { return done }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Collects completion codes and lets a test await a number of them.
final class Codes: @unchecked Sendable {
    private let lock = NSLock()
    private var codes: [String] = []
    private var waiter: (count: Int, continuation: CheckedContinuation<[String], Never>)?

    func add(_ code: String) {
        let resume: (CheckedContinuation<[String], Never>, [String])? = lock.withLock {
            codes.append(code)
            guard let waiter, codes.count >= waiter.count else { return nil }
            self.waiter = nil
            return (waiter.continuation, codes)
        }
        if let resume { resume.0.resume(returning: resume.1) }
    }

    func wait(for count: Int) async -> [String] {
        await withCheckedContinuation { continuation in
            let ready: [String]? = lock.withLock {
                if codes.count >= count { return codes }
                waiter = (count, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// The global `g_motto` as the first record of `found` shows it.
private func motto(_ found: FMFoundSet) -> String? {
    (found.records.first?["fieldData"] as? [String: Any])?["g_motto"] as? String
}

/// The distinct session tokens the emulator saw on record reads.
private func sessionsUsed(_ emulator: Emulator) -> Set<String> {
    Set(emulator.requestLog.filter { $0.decodedPath.contains("/records") }.compactMap(\.token))
}

@Suite("Session pool and recovery, client against the emulator")
struct SessionPoolTests {
    // MARK: pool

    @Test func aPoolOfFourUsesFourSessionsUnderLoad() async throws {
        try await withPool(poolSize: 4) { api, emulator in
            emulator.serializesSessions = true
            emulator.serviceTime = 0.05   // long enough that the 40 calls overlap, however loaded the machine
            let codes = await concurrentReads(api, 40)
            #expect(codes.count == 40 && codes.allSatisfy { $0 == "0" })
            #expect(emulator.loginCount == 4)
            #expect(sessionsUsed(emulator).count == 4)
        }
    }

    @Test func aPoolOfOneUsesOneSession() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            emulator.serializesSessions = true
            emulator.serviceTime = 0.002
            let codes = await concurrentReads(api, 40)
            #expect(codes.count == 40 && codes.allSatisfy { $0 == "0" })
            #expect(emulator.loginCount == 1)
            #expect(sessionsUsed(emulator).count == 1)
        }
    }

    @Test func anIdlePoolHoldsOneSession() async throws {
        try await withPool(poolSize: 4) { api, emulator in
            for _ in 0..<5 {
                let (_, code) = await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }
                #expect(code == "0")
            }
            #expect(emulator.loginCount == 1)
            #expect(emulator.activeSessionCount == 1)
        }
    }

    @Test func aThousandCallsOnExpiredTokensLogInAtMostOncePerSession() async throws {
        let clock = TestClock()
        try await withPool(poolSize: 4, clock: clock) { api, emulator in
            emulator.serializesSessions = true
            emulator.serviceTime = 0.05
            _ = await concurrentReads(api, 40)
            let opened = emulator.loginCount
            #expect(opened == 4)
            // Every token expires by the local clock (16 minutes later) and on the server.
            clock.advance(16 * 60)
            emulator.advanceClock(by: 16 * 60)
            emulator.serviceTime = 0
            emulator.serializesSessions = false
            let codes = await concurrentReads(api, 1000)
            #expect(codes.count == 1000)
            #expect(codes.allSatisfy { $0 == "0" })
            #expect(emulator.loginCount - opened <= 4)
        }
    }

    @Test func aRestartCostsOneLoginPerSessionNotPerCall() async throws {
        try await withPool(poolSize: 2) { api, emulator in
            emulator.serializesSessions = true
            emulator.serviceTime = 0.05
            _ = await concurrentReads(api, 10)
            #expect(emulator.loginCount == 2)
            emulator.serviceTime = 0
            emulator.restart()   // every token forgotten: each call gets 952, renews, replays
            let codes = await concurrentReads(api, 100)
            #expect(codes.allSatisfy { $0 == "0" }, "\(codes.filter { $0 != "0" })")
            #expect(emulator.loginCount <= 4)
        }
    }

    // MARK: recovery, each way a session dies

    @Test(arguments: [EmulatorFault.expireSession, .killSession, .html401])
    func aLostSessionIsRenewedAndTheReadReplayed(_ fault: EmulatorFault) async throws {
        try await withPool(poolSize: 1) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(fault, count: 1, matching: "records")
            let (found, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "0" && found?.records.count == 4)
            #expect(emulator.loginCount == 2)
            // The async surface too.
            emulator.inject(fault, count: 1, matching: "records")
            let again = try await api.getRecords(layout: "Bands")
            #expect(again.records.count == 4)
            #expect(emulator.loginCount == 3)
        }
    }

    @Test func aServerRestartIsRecovered() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.restart()
            let (found, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "0" && found?.records.count == 4)
            #expect(emulator.loginCount == 2)
        }
    }

    @Test func aWriteThatMayHaveRunIsNotReplayed() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            let before = emulator.recordCount(inTable: "Bands")
            // 112: the session died while the create ran — it may have been performed, so it is reported.
            emulator.inject(.killSession, count: 1, matching: "records")
            let (created, code) = await callback(api) { api.createRecord(layout: "Bands", fieldData: ["name": "X"], completion: $0) }
            #expect(created == nil && code == "112")
            #expect(emulator.requestLog.filter { $0.method == "POST" && $0.decodedPath.hasSuffix("/records") }.count == 1)
            // 952: the token was refused before anything ran — the write is replayed once and happens once.
            emulator.inject(.expireSession, count: 1, matching: "records")
            let (again, code2) = await callback(api) { api.createRecord(layout: "Bands", fieldData: ["name": "Y"], completion: $0) }
            #expect(again != nil && code2 == "0")
            #expect(emulator.recordCount(inTable: "Bands") == before + 1 + (emulator.records(inTable: "Bands").contains { $0["name"] as? String == "X" } ? 1 : 0))
        }
    }

    @Test func aRepeated952IsReportedNotLooped() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.expireSession, count: 5, matching: "records")
            let (_, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "952")
            #expect(emulator.loginCount == 2)
        }
    }

    // MARK: new-session hook

    @Test func theHookRestoresAGlobalAfterAServerSideExpiry() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            let runs = CallCounter()
            api.onNewSession = { session, done in
                _ = runs.hit()
                session.api.setGlobals(["Bands::g_motto": "restored"]) { _, code in
                    done(code == "0" ? nil : FMError(code: code, message: "globals"))
                }
            }
            let first = try await api.getRecord(layout: "Bands", recordId: 1)
            #expect(motto(first) == "restored")
            emulator.expireAllTokens()
            let second = try await api.getRecord(layout: "Bands", recordId: 1)
            #expect(motto(second) == "restored")
            #expect(runs.value == 2)
            #expect(emulator.loginCount == 2)
        }
    }

    @Test func theAsyncHookRunsBeforeWaitingCalls() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            api.onNewSession { session in
                try await session.api.setGlobals(["Bands::g_motto": "async"])
            }
            let codes = await concurrentReads(api, 10)
            #expect(codes.allSatisfy { $0 == "0" })
            let record = try await api.getRecord(layout: "Bands", recordId: 1)
            #expect(motto(record) == "async")
            #expect(emulator.loginCount == 1)
        }
    }

    @Test func aFailingHookFailsTheWaitersOnceAndIsNotLooped() async throws {
        try await withPool(poolSize: 1) { api, emulator in
            let runs = CallCounter()
            let hookCalled = HookGate()
            api.onNewSession = { _, done in
                _ = runs.hit()
                hookCalled.arrived(done)
            }
            // Five calls wait for the same login (each callback method registers before it returns).
            let codes = Codes()
            for _ in 0..<5 {
                api.getRecords(layout: "Bands", limit: 1) { _, code in codes.add(code) }
            }
            let done = await hookCalled.wait()
            done(FMError(code: "100", message: "setup failed"))
            let all = await codes.wait(for: 5)
            #expect(all == Array(repeating: "100", count: 5))
            #expect(runs.value == 1)
            #expect(emulator.loginCount == 1)
            // The session the hook refused was closed on the server before the calls were told.
            #expect(emulator.activeSessionCount == 0)
            #expect(emulator.logoutCount == 1)
        }
    }

    // MARK: logins

    @Test func clarisIDAsksTheProviderAgainAfterARejectedToken() async throws {
        let asked = CallCounter()
        let provider = FMClarisIDTokenProvider { refresh, completion in
            _ = asked.hit()
            completion(.success(refresh ? "fresh-id-token" : "stale-id-token"))
        }
        try await withPool(poolSize: 1, configure: { $0.credentials = .clarisID(provider) }) { api, emulator in
            emulator.acceptClarisIDToken("fresh-id-token")
            let (found, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "0" && found?.records.count == 4)
            #expect(asked.value == 2)
            let logins = emulator.requestLog.filter { $0.decodedPath.hasSuffix("/sessions") }
            #expect(logins.map { $0.header("Authorization") } == ["FMID stale-id-token", "FMID fresh-id-token"])
            #expect(String(describing: api.configuration).contains("id-token") == false)
        }
    }

    @Test func clarisIDWithARejectedTokenFailsOnce() async throws {
        try await withPool(poolSize: 1, configure: { $0.credentials = .clarisID(FMClarisIDTokenProvider(token: "nope")) }) { api, emulator in
            do {
                _ = try await api.getRecords(layout: "Bands")
                Issue.record("expected a failure")
            } catch let error as FMError {
                #expect(error.code == "212")
            }
            #expect(emulator.loginCount == 2)   // the token, then the provider's (same) renewal
        }
    }

    @Test func oauthLogsIn() async throws {
        try await withPool(poolSize: 1, configure: { $0.credentials = .oauth(requestId: "req-1", identifier: "ident-1") }) { api, emulator in
            emulator.acceptOAuth(requestId: "req-1", identifier: "ident-1")
            let found = try await api.getRecords(layout: "Bands")
            #expect(found.records.count == 4)
            let login = try #require(emulator.requestLog.first { $0.decodedPath.hasSuffix("/sessions") })
            #expect(login.header("X-FM-Data-OAuth-Request-Id") == "req-1")
            #expect(login.header("X-FM-Data-OAuth-Identifier") == "ident-1")
            #expect(login.header("Authorization") == nil)
        }
        try await withPool(poolSize: 1, configure: { $0.credentials = .oauth(requestId: "req-1", identifier: "wrong") }) { api, emulator in
            emulator.acceptOAuth(requestId: "req-1", identifier: "ident-1")
            let (_, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "212")
        }
    }

    // MARK: shutdown

    @Test func shutdownFinishesInFlightCallsRefusesNewOnesAndLogsOutEverySession() async throws {
        let store = FMMemoryTokenStore()
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.sessionPoolSize = 3
        let api = DataAPI(configuration: configuration, tokenStore: store)
        emulator.serializesSessions = true
        emulator.serviceTime = 0.05
        _ = await concurrentReads(api, 12)
        #expect(emulator.activeSessionCount == 3)
        #expect(store.load() != nil)
        // Calls in flight when the shutdown starts still complete with their answer.
        async let inFlight = concurrentReads(api, 6)
        await Task.yield()
        await api.shutdown()
        let codes = await inFlight
        #expect(codes.count == 6)
        #expect(codes.allSatisfy { $0 == "0" || $0 == FMError.ClientCode.shuttingDown })
        #expect(emulator.activeSessionCount == 0)
        #expect(emulator.logoutCount == 3)
        #expect(store.load() == nil)
        // Later calls are refused without reaching the server.
        let requests = emulator.requestLog.count
        let (_, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
        #expect(code == FMError.ClientCode.shuttingDown)
        do {
            _ = try await api.getRecords(layout: "Bands")
            Issue.record("expected -1012")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.shuttingDown)
        }
        #expect(emulator.requestLog.count == requests)
        // A second shutdown completes too.
        await api.shutdown()
    }
}

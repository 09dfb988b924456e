import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Where a call is when its handle is cancelled.
enum CancelStage: String, CaseIterable, Sendable {
    case login, hook, send, replayLogin, backoff
}

@Suite("A cancel at each stage of a session call")
struct CancelStageTests {
    /// Cancelling at each stage completes the call once with -1005; once everything settles (a shutdown is
    /// the barrier: it waits for calls and logins), no slot stays busy and every session is logged out.
    @Test(arguments: CancelStage.allCases)
    func aCancelAtEachStageCompletesOnceAndFreesTheSlot(stage: CancelStage) throws {
        let reached = DispatchSemaphore(value: 0)
        let logins = Locked(0)
        let reads = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let run = logins.withLock { count -> Int in count += 1; return count }
                if (stage == .login && run == 1) || (stage == .replayLogin && run == 2) { reached.signal(); return .hold }
                return .json(200, Bodies.login(String(format: "%052d", run)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            let run = reads.withLock { count -> Int in count += 1; return count }
            switch stage {
            case .send: reached.signal(); return .hold
            case .replayLogin where run == 1: return .json(401, Bodies.expired)
            case .backoff: return .body(503, Data("busy".utf8), contentType: "text/plain")
            default: return .json(200, Bodies.value("ok"))
            }
        }
        let backingOff = DispatchSemaphore(value: 0)
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 20, maxDelay: 20)
        configuration.timeout = 30
        let api = DataAPI(configuration: configuration, transport: stub, logger: { event in
            if event.message.contains("retry 1") { backingOff.signal() }
        })
        let hookDone = Locked<(@Sendable (FMError?) -> Void)?>(nil)
        api.onNewSession = { _, done in
            if stage == .hook {
                hookDone.withLock { $0 = done }
                reached.signal()
            } else {
                done(nil)
            }
        }
        let call = Recorder<Result<String, FMError>>()
        let handle = api.perform(TestEndpoints.records()) { call.record($0) }
        #expect((stage == .backoff ? backingOff : reached).wait(timeout: TestBound.deadline) == .success)
        handle.cancel()
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.cancelled)
        // Let what the call left behind end: a held login or read is cancelled, a waiting hook says ready.
        for task in stub.tasks { task.cancel() }
        hookDone.withLock { $0 }?(nil)
        let shutDown = Recorder<Void>()
        api.shutdown(grace: 5) { shutDown.record(()) }
        shutDown.wait()
        api.callbackQueue.sync {}
        #expect(call.values.count == 1)
        #expect(api.pool.busyCounts == [0])
        #expect(!api.isActiveToken())
    }
}

@Suite("Hostile credentials and hooks")
struct HostileCredentialTests {
    private static func api(_ stub: StubTransport, _ credentials: FMCredentials) -> DataAPI {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.credentials = credentials
        configuration.retry = .none
        configuration.timeout = 600 // an async provider runs on the cooperative pool, which a busy machine delays
        return DataAPI(configuration: configuration, transport: stub)
    }

    /// OAuth values carrying CR/LF (header injection) are refused before anything is sent, and the error
    /// does not echo them.
    @Test func oauthValuesWithLineBreaksAreRefusedUnsent() {
        let stub = StubTransport { _ in .json(200, Bodies.login()) }
        let api = Self.api(stub, .oauth(requestId: "req\r\nX-Evil: 1", identifier: "id\nX-Other: 2"))
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        let error = call.wait().first?.testError
        #expect(error?.code == FMError.ClientCode.invalidArgument)
        #expect(!(error.map(String.init(describing:)) ?? "").contains("Evil"))
        #expect(stub.requests.isEmpty)
        #expect(api.pool.busyCounts == [0])
    }

    /// A Claris ID provider that throws: the waiting calls get its error once, and the next call asks again.
    @Test func aThrowingClarisProviderFailsTheWaitersOnce() async {
        struct Broken: Error {}
        let asked = Locked(0)
        let provider = FMClarisIDTokenProvider(async: { _ in
            asked.withLock { $0 += 1 }
            throw Broken()
        })
        let stub = StubTransport { _ in .json(200, Bodies.login()) }
        let api = Self.api(stub, .clarisID(provider))
        let calls = Recorder<String>(expecting: 5)
        for _ in 0..<5 { api.perform(TestEndpoints.records()) { calls.record($0.testFailureCode ?? "0") } }
        #expect(await calls.value() == Array(repeating: FMError.ClientCode.invalidConfiguration, count: 5))
        #expect((1...5).contains(asked.withLock { $0 }))   // one per login, never a loop
        #expect(stub.requests.isEmpty)
        #expect(api.pool.busyCounts == [0])
    }

    /// A hook that calls `done` twice (ready, then an error): the first answer counts, once.
    @Test func aHookCallingDoneTwiceCountsOnce() {
        let stub = StubTransport { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        let api = Self.api(stub, .basic(username: "admin", password: "pw"))
        api.onNewSession = { _, done in
            done(nil)
            done(FMError(code: "100", message: "late"))
        }
        let calls = Recorder<String>(expecting: 3)
        for _ in 0..<3 { api.perform(TestEndpoints.records()) { calls.record($0.testValue ?? "failed") } }
        #expect(calls.wait() == ["ok", "ok", "ok"])
        #expect(stub.count("POST", "/sessions") == 1)
        #expect(stub.count("DELETE", Bodies.token) == 0)
    }
}

@Suite("Calls racing a shutdown")
struct ShutdownRaceTests {
    /// 200 calls from several threads on a pool of 4 while the shutdown starts: each completes once ("ok" or
    /// -1012), no slot stays busy, and every session any login opened is logged out.
    @Test func callsRacingAShutdownCompleteOnceAndLeaveNoSessionOpen() {
        let logins = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let run = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login(String(format: "%052d", run)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 4
        let api = DataAPI(configuration: configuration, transport: stub)
        api.onNewSession = { session, done in
            session.api.perform(TestEndpoints.records("Setup")) { done($0.testError) }
        }
        let total = 200
        let results = Recorder<String>(expecting: total)
        let shutDown = Recorder<Void>()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<(total / 4) {
                if worker == 0 && index == total / 8 { api.shutdown(grace: 5) { shutDown.record(()) } }
                api.perform(TestEndpoints.records()) { results.record($0.testValue ?? $0.testFailureCode ?? "?") }
            }
        }
        let codes = results.wait()
        shutDown.wait()
        api.callbackQueue.sync {}
        #expect(results.values.count == total)
        #expect(codes.allSatisfy { $0 == "ok" || $0 == FMError.ClientCode.shuttingDown })
        #expect(api.pool.busyCounts == [0, 0, 0, 0])
        let opened = Set((1...logins.withLock { $0 }).map { String(format: "%052d", $0) })
        let deleted = Set(stub.requests.filter { $0.httpMethod == "DELETE" }.compactMap { $0.url?.lastPathComponent })
        #expect(deleted == opened)
    }
}

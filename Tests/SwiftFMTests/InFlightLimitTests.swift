import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The transport's connection limit follows `maxConcurrentRequests` and the pool: 32 allowed means 32 at the server.

/// Counts the requests a server holds at once, holding each until `target` are held together.
///
/// The release is the event itself (the `target`-th arrival); the guard below only ends a test that can never
/// reach it (a transport that queues requests where SwiftFM cannot see them), so it fails on the count
/// instead of hanging.
final class ConcurrencyGate: @unchecked Sendable {
    // @unchecked: every `var` is behind `condition`'s lock.
    private let condition = NSCondition()
    private let target: Int
    private var held = 0
    private var released = false
    private(set) var most = 0

    init(target: Int) { self.target = target }

    var mostAtOnce: Int { condition.lock(); defer { condition.unlock() }; return most }

    /// Called by the server for each request: returns once `target` requests are held at once.
    func hold() {
        condition.lock()
        held += 1
        most = max(most, held)
        if held >= target {
            released = true
            condition.broadcast()
        }
        let guardDeadline = Date(timeIntervalSinceNow: TestBound.seconds) // a hang guard, not a synchronisation
        while !released {
            if !condition.wait(until: guardDeadline) {
                released = true // never reached: let everything through, the test fails on `most`
                condition.broadcast()
            }
        }
        held -= 1
        condition.unlock()
    }
}

/// The transport's connection limit follows ``FMConfiguration/maxConcurrentRequests`` and the pool,
/// so that SwiftFM's queue is the only one: with 32 allowed, 32 requests reach the server at once.
@Suite("In-flight limit (real transports, loopback)")
struct InFlightLimitTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        /// What ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)`` picks for this host.
        case defaultTransport
        /// URLSession with the connection limit the default init gives it.
        case urlSession
        var testDescription: String { rawValue }
    }

    static let foundSet = #"{"response":{"dataInfo":{"database":"DB","layout":"L","table":"T","totalRecordCount":1,"foundCount":0,"returnedCount":0},"data":[]},"messages":[{"code":"0","message":"OK"}]}"#

    @Test(arguments: Kind.allCases)
    func thirtyTwoAllowedMeansThirtyTwoAtTheServer(_ kind: Kind) async {
        let calls = 32
        let gate = ConcurrencyGate(target: calls)
        let server = HostileServer { head, _ in
            if HostileServer.isLogin(head) { return HostileServer.login() }
            gate.hold()
            return .answer(HostileServer.json(Self.foundSet))
        }
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 300)
        configuration.maxConcurrentRequests = calls
        configuration.sessionPoolSize = calls
        let store = FMMemoryTokenStore(FMStoredToken(token: "hostile-token", expiry: Date().addingTimeInterval(600)))
        let api: DataAPI
        switch kind {
        case .defaultTransport:
            api = DataAPI(configuration: configuration, tokenStore: store)
        case .urlSession:
            api = DataAPI(configuration: configuration,
                          transport: FMURLSessionTransport(idleTimeout: 300, maxConnectionsPerHost: configuration.transportConnectionLimit),
                          tokenStore: store)
        }
        // Called the way a Dispatch daemon calls: callbacks, no task around each call.
        let codes = Locked<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for _ in 0..<calls {
                api.getRecords(layout: "L") { _, code in
                    let all = codes.withLock { codes -> Bool in
                        codes.append(code)
                        return codes.count == calls
                    }
                    if all { done.resume() }
                }
            }
        }
        #expect(gate.mostAtOnce >= 24, "at most \(gate.mostAtOnce) requests reached the server at once")
        #expect(codes.value.allSatisfy { $0 == "0" }, "codes: \(codes.value)")
        await api.shutdown()
    }

    @Test func theLimitFollowsTheConfiguration() {
        var configuration = FMConfiguration(host: "http://127.0.0.1:1", database: "DB", username: "a", password: "b")
        #expect(configuration.transportConnectionLimit == 64)
        configuration.maxConcurrentRequests = 32
        #expect(configuration.transportConnectionLimit == 32)
        configuration.maxConcurrentRequests = nil
        configuration.sessionPoolSize = 100
        #expect(configuration.transportConnectionLimit == 200)
    }
}

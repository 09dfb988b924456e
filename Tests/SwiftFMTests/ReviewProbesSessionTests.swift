import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// An object whose release a test can observe.
private final class Sentinel: @unchecked Sendable {}

@Suite("Review probes: busy counts and releases")
struct ReviewProbesSessionTests {

    /// Many calls over a pool of 3 with a mix of lost sessions, cancels and deadlines: every completion
    /// arrives once and no slot stays busy.
    @Test func busyCountsReturnToZeroAfterAMixOfFailures() {
        let counter = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) {
                let n = counter.withLock { c -> Int in c += 1; return c }
                return .json(200, Bodies.login(String(format: "%052d", n)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            let path = request.url?.path ?? ""
            if path.contains("hold") { return .hold }
            if path.contains("lost") { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 3
        configuration.retry = .none
        configuration.timeout = 0.5
        let api = DataAPI(configuration: configuration, transport: stub)
        let total = 300
        let results = Recorder<String>(expecting: total)
        var handles: [FMRequest] = []
        for index in 0..<total {
            let layout = ["hold", "lost", "ok", "ok"][index % 4]
            let handle = api.perform(TestEndpoints.records(layout)) { results.record($0.testFailureCode ?? "0") }
            handles.append(handle)
        }
        for (index, handle) in handles.enumerated() where index % 8 == 0 { handle.cancel() }
        let codes = results.wait()
        #expect(codes.count == total)
        api.callbackQueue.sync {}
        #expect(results.values.count == total)
        #expect(api.pool.busyCounts == [0, 0, 0])
    }

    /// Finished calls are released: nothing keeps the endpoint (and so the call) alive.
    @Test func finishedCallsAreReleased() {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if (request.url?.path ?? "").contains("hold") { return .hold }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = 0.3
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: stub)
        let total = 2_000
        let results = Recorder<String>(expecting: total)
        var sentinels: [() -> Sentinel?] = []
        for index in 0..<total {
            let sentinel = Sentinel()
            weak let weakSentinel = sentinel
            sentinels.append({ weakSentinel })
            let hold = index % 10 == 0
            var endpoint = TestEndpoints.records(hold ? "hold" : "ok")
            let decode = endpoint.decode
            endpoint.decode = { response in withExtendedLifetime(sentinel) {}; return try decode(response) }
            let handle = api.perform(endpoint) { results.record($0.testFailureCode ?? "0") }
            if index % 7 == 0 { handle.cancel() }
        }
        results.wait()
        api.callbackQueue.sync {}
        #expect(sentinels.filter { $0() != nil }.count == 0)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: a server that answers 952 to every call for a while (restarted, or a balancer sending calls to a node
/// that does not know the session) causes no login storm: a login is opened only for a session the pool does not have
/// — one per slot at first, then one per token the server rejected — so the logins never outnumber the pool's size
/// plus the 952 answers, however many calls queue. Each call completes exactly once: with its value once the server
/// knows its session again, or with the 952 of its one replay. Then the calls go on with one session, and the wall
/// clock set back or forward by hours meanwhile changes none of it.
@Suite("Logins never outnumber the server's rejections")
struct LoginsNeverOutnumberTheServersRejectionsTests {
    @Test(arguments: [(1, 0.0), (3, 0.0), (3, -86_400.0), (3, 7_200.0)])
    func aServerAnswering952ForAWhile(pool: Int, jump: TimeInterval) {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = TestBound.seconds
        configuration.sessionPoolSize = pool
        let rejections = Locked(0)
        let logins = Locked(0)
        let clock = TestClock()
        let h = Harness(configuration: configuration, clock: clock) { request in
            if isLogin(request) {
                let n = logins.withLock { count -> Int in count += 1; return count }
                return .json(200, Bodies.login("tok-\(n)"))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            // The first 40 data requests are rejected, whatever token they carry.
            let rejected = rejections.withLock { count -> Bool in
                guard count < 40 else { return false }
                count += 1
                return true
            }
            return rejected ? .json(401, Bodies.expired) : .json(200, Bodies.value("ok"))
        }
        let calls = 120
        let counts = Locked([Int](repeating: 0, count: calls))
        let outcomes = Recorder<String>(expecting: calls)
        for index in 0..<calls {
            if index == calls / 2 { clock.advance(jump) }
            h.api.perform(TestEndpoints.records()) { result in
                counts.withLock { $0[index] += 1 }
                switch result {
                case .success(let value): outcomes.record(value)
                case .failure(let error): outcomes.record(error.code)
                }
            }
        }
        let ends = outcomes.wait()
        h.drain()
        #expect(counts.value.allSatisfy { $0 == 1 }, "completions: \(Set(counts.value))")
        #expect(Set(ends).isSubset(of: ["ok", "952"]), "\(Set(ends))")
        #expect(ends.filter { $0 == "ok" }.count >= calls - 40)
        #expect(logins.value <= pool + 40, "\(logins.value) logins for 40 rejections")
        // The rejections are over: the next calls use the session they have, no login.
        let before = logins.value
        for _ in 0..<5 {
            let next = Recorder<Result<String, FMError>>()
            h.api.perform(TestEndpoints.records()) { next.record($0) }
            #expect(next.wait().first?.testValue == "ok")
        }
        #expect(logins.value == before)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The replay after a lost session under real threads: a stored token the server has forgotten (952), calls
/// made at once on one session, a transport that answers inside `send` — so a login opened for the calls
/// waiting often ends before the replay queues again. Every call must end with its value; none may wait out
/// its deadline (before the fix, a replay could wait for a session opened later than the one opened for it).
@Suite("Session stage: the replay under real threads")
struct SessionReplayStressTests {
    /// Answers in `send`, on the caller's thread: logins with a new token, the stale token with 952, the rest
    /// with a value.
    final class InstantTransport: WholeBodyTransport, @unchecked Sendable {
        private let logins = Locked(0)
        let stale: String
        /// Answers on a global queue instead of in `send`.
        let async: Bool

        init(stale: String, async: Bool) {
            self.stale = stale
            self.async = async
        }

        func send(_ request: URLRequest, completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void) -> CancellableTask {
            let task = StubTask(completion: completion)
            let body: String
            var status = 200
            if isLogin(request) {
                let number = logins.withLock { count -> Int in
                    count += 1
                    return count
                }
                body = Bodies.login(String(format: "%052d", number))
            } else if request.header("Authorization") == "Bearer " + stale {
                (status, body) = (401, Bodies.expired)
            } else {
                body = Bodies.value("v")
            }
            guard let url = request.url,
                  let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1",
                                                 headerFields: ["Content-Type": "application/json"])
            else {
                task.complete(.failure(URLError(.badURL)))
                return task
            }
            if async {
                DispatchQueue.global().async { task.complete(.success((response, Data(body.utf8)))) }
            } else {
                task.complete(.success((response, Data(body.utf8))))
            }
            return task
        }
    }

    /// How many times the scenario runs: enough to catch the lost wake-up, which struck about one iteration in
    /// a few hundred with answers from another queue (and none answered in `send`), every time.
    static let iterations = 5_000

    @Test(arguments: [(1, false), (1, true), (2, true)])
    func callsMadeAtOnceAroundA952AllEndWithTheirValue(poolSize: Int, answersLater: Bool) {
        let stale = "stale-token-0000"
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.sessionPoolSize = poolSize
        // A bound, not a measure: a call left waiting ends with -1004 instead of hanging the suite.
        configuration.timeout = 120
        var wrong: [String] = []
        for iteration in 0..<Self.iterations {
            let api = DataAPI(configuration: configuration, transport: InstantTransport(stale: stale, async: answersLater),
                              tokenStore: FMMemoryTokenStore(FMStoredToken(token: stale, expiry: .distantFuture)))
            let results = Recorder<String>(expecting: 5)
            for _ in 0..<5 {
                api.perform(TestEndpoints.records()) { results.record($0.testValue ?? $0.testFailureCode ?? "?") }
            }
            let outcomes = results.wait()
            if outcomes.count != 5 || !outcomes.allSatisfy({ $0 == "v" }) { wrong.append("iteration \(iteration): \(outcomes)") }
            if !wrong.isEmpty { break }
        }
        #expect(wrong.isEmpty, "\(wrong)")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: a host that answered this client before and then refuses connections is ridden out for
/// ``Reachability/window`` (5 minutes) of outage, timed on the elapsed clock (the one a session's idle time is measured
/// on: it counts a sleep and no wall-clock step). A wall clock set forward a day during a restart does not make a
/// one-second outage look a day long (on main the read was not retried: "has not answered for more than 5 minutes").
@Suite("An outage is timed on the elapsed clock")
struct AnOutageIsTimedOnTheElapsedClockTests {
    /// Answers, then refuses twice (the wall clock stepping a day forward, one second passing, as the second refusal
    /// goes out), then answers again.
    final class Restart: @unchecked Sendable {
        private let lock = NSLock()
        private var reads = 0
        let wall: TestClock
        let elapsed: TestElapsedClock
        init(wall: TestClock, elapsed: TestElapsedClock) { (self.wall, self.elapsed) = (wall, elapsed) }

        func handle(_ request: URLRequest) -> StubAnswer? {
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            let read = lock.withLock { reads += 1; return reads }
            switch read {
            case 2:
                return .failure(.cannotConnectToHost)
            case 3:
                wall.advance(86_400)
                elapsed.advance(1)
                return .failure(.cannotConnectToHost)
            default:
                return .json(200, Bodies.value("ok"))
            }
        }
    }

    @Test func aWallClockSetForwardDoesNotEndTheRideOut() throws {
        let wall = TestClock()
        let elapsed = TestElapsedClock()
        let restart = Restart(wall: wall, elapsed: elapsed)
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = TestBound.seconds
        let h = Harness(configuration: configuration, clock: wall, elapsed: elapsed) { restart.handle($0) }
        h.api.retryJitter.withLock { $0 = { $0.lowerBound } }
        let first = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { first.record($0) }
        #expect(first.wait().first?.testValue == "ok")

        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { second.record($0) }
        let result = try #require(second.wait().first)
        #expect(result.testValue == "ok", "\(String(describing: result.testError))")
        #expect(h.stub.count("GET", "/records") == 4)
    }
}

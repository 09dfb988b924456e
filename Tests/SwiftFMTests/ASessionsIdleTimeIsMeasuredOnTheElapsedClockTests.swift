import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: FileMaker closes a session 15 minutes after its last use on the server's clock. The client judges a
/// token it holds in memory on its elapsed clock (counts a sleep, no wall-clock step: `CLOCK_BOOTTIME` on Linux,
/// `CLOCK_MONOTONIC` on Darwin), never on the wall clock: a wall clock set back a day does not keep a token the server
/// has closed (the call after 15 idle minutes logs in first, no 952), and a wall clock set forward a day does not drop a
/// token the server still holds (no login, no session left open on the server). The token store still holds a wall-clock
/// expiry (shared with other processes and later launches); a token taken from the store is judged by that expiry at
/// that moment, and from then on by the elapsed clock.
@Suite("A session's idle time is measured on the elapsed clock")
struct ASessionsIdleTimeIsMeasuredOnTheElapsedClockTests {
    private static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// A FileMaker Server on the elapsed clock: a token unused for 15 minutes is closed (952).
    final class Server: @unchecked Sendable {
        private let lock = NSLock()
        private let elapsed: TestElapsedClock
        private var logins = 0
        private var lastUse: [String: TimeInterval] = [:]
        private var rejected = 0
        private var logouts = 0

        init(elapsed: TestElapsedClock, open: [String] = []) {
            self.elapsed = elapsed
            for token in open { lastUse[token] = elapsed.now }
        }

        var rejections: Int { lock.withLock { rejected } }
        var loggedOut: Int { lock.withLock { logouts } }

        func handle(_ request: URLRequest) -> StubAnswer? {
            let now = elapsed.now
            return lock.withLock { () -> StubAnswer in
                if isLogin(request) {
                    logins += 1
                    let token = "tok-\(logins)"
                    lastUse[token] = now
                    return .json(200, Bodies.login(token))
                }
                if request.httpMethod == "DELETE" {
                    logouts += 1
                    return .json(200, Bodies.ok)
                }
                let token = String(request.value(forHTTPHeaderField: "Authorization")?.dropFirst("Bearer ".count) ?? "")
                guard let used = lastUse[token], now - used <= 900 else {
                    lastUse[token] = nil
                    rejected += 1
                    return .json(401, Bodies.expired)
                }
                lastUse[token] = now
                return .json(200, Bodies.value("ok"))
            }
        }
    }

    private func harness(_ server: Server, wall: TestClock, elapsed: TestElapsedClock, store: FMTokenStore = FMMemoryTokenStore()) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = TestBound.seconds
        return Harness(configuration: configuration, store: store, clock: wall, elapsed: elapsed) { server.handle($0) }
    }

    private func call(_ h: Harness, sourceLocation: SourceLocation = #_sourceLocation) {
        let recorder = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { recorder.record($0) }
        #expect(recorder.wait(sourceLocation: sourceLocation).first?.testValue == "ok", sourceLocation: sourceLocation)
    }

    private func bearers(_ h: Harness) -> [String?] {
        h.stub.requests.filter { !isLogin($0) && $0.httpMethod == "GET" }.map { $0.header("Authorization") }
    }

    /// The wall clock set back a day, then 15 minutes and a second pass on the elapsed clock: the server has closed the
    /// session, and the next call logs in first (on main it sent the closed token, got 952, logged in and replayed:
    /// one wasted request and a warning, for every session, for the whole day).
    @Test func aWallClockSetBackKeepsNoTokenTheServerClosed() throws {
        let wall = TestClock(Self.start)
        let elapsed = TestElapsedClock()
        let server = Server(elapsed: elapsed)
        let h = harness(server, wall: wall, elapsed: elapsed)
        call(h)
        wall.advance(-86_400)
        elapsed.advance(901)
        call(h)
        #expect(server.rejections == 0, "the closed session's token was sent")
        #expect(h.stub.count("POST", "/sessions") == 2)
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-2"])
        #expect(!h.logs.values.contains { $0.message.contains("rejected") })
    }

    /// The wall clock set forward a day while a minute passes on the elapsed clock: the token the server still holds is
    /// used, no login (on main it was dropped without a logout: a second session, the first one holding a licence slot on
    /// the server until its own timeout). The store is told the expiry on the new wall clock.
    @Test func aWallClockSetForwardDropsNoTokenTheServerHolds() throws {
        let wall = TestClock(Self.start)
        let elapsed = TestElapsedClock()
        let server = Server(elapsed: elapsed)
        let h = harness(server, wall: wall, elapsed: elapsed)
        call(h)
        wall.advance(86_400)
        elapsed.advance(60)
        call(h)
        #expect(h.stub.count("POST", "/sessions") == 1, "a token the server still holds was dropped")
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-1"])
        #expect(h.api.isActiveToken())
        #expect(h.store.load() == FMStoredToken(token: "tok-1", expiry: Self.start.addingTimeInterval(86_400 + 900)))
    }

    /// A token in the store when the client starts is judged by the store's wall-clock expiry then (here a minute left),
    /// and from then on by the elapsed clock: the wall clock set back a day does not stretch that minute (on main the
    /// token looked valid for a day and was sent to a server that had closed it).
    @Test func aStoredTokenHasWhatItsExpiryLeftOnTheElapsedClock() throws {
        let wall = TestClock(Self.start)
        let elapsed = TestElapsedClock()
        let server = Server(elapsed: elapsed, open: [])
        let store = FMMemoryTokenStore(FMStoredToken(token: "stored", expiry: Self.start.addingTimeInterval(60)))
        let h = harness(server, wall: wall, elapsed: elapsed, store: store)
        #expect(h.api.isActiveToken())
        wall.advance(-86_400)
        elapsed.advance(61)
        #expect(!h.api.isActiveToken(), "a token with a minute left was still held after 61 s")
        call(h)
        #expect(server.rejections == 0, "the stored token was sent after its expiry")
        #expect(bearers(h) == ["Bearer tok-1"])
    }

    /// Both clocks move together (a machine that slept 16 minutes, or a test's wall clock alone): the token is past its
    /// 15 minutes on either, and the next call logs in first, as always.
    @Test func aSleepOfSixteenMinutesLogsInFirst() throws {
        let wall = TestClock(Self.start)
        let elapsed = TestElapsedClock()
        let server = Server(elapsed: elapsed)
        let h = harness(server, wall: wall, elapsed: elapsed)
        call(h)
        wall.advance(960)
        elapsed.advance(960)
        call(h)
        #expect(server.rejections == 0)
        #expect(bearers(h) == ["Bearer tok-1", "Bearer tok-2"])
    }
}

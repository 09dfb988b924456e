import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The contract: a session the client opened but no pool slot holds any more (a token replaced by an explicit login or
/// `refreshToken`, a login that ended after a logout) is remembered so the shutdown logs it out. That memory is bounded
/// by a count, not only by age: a daemon that logs in explicitly before every call, for weeks, or whose wall clock went
/// back (so no entry ever looks older than a session lifetime), keeps at most ``SessionPool/maxLetGo`` of them — the
/// most recent — and its shutdown sends at most that many logouts beside its own sessions'. Older ones are left to the
/// server, which closes a session 15 minutes after its last use.
@Suite("Sessions let go for the shutdown are bounded")
struct SessionsLetGoForTheShutdownAreBoundedTests {
    private static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// Ten thousand sessions let go within one session lifetime, then as many with the clock going back a second each
    /// time: the pool remembers at most the bound, the most recent ones (on main: every one, 20,000 tokens, which the
    /// shutdown then logged out one request each).
    @Test func thePoolRemembersAtMostTheBoundTheMostRecentFirst() {
        let pool = SessionPool(size: 1, stored: nil, now: Self.start)
        for index in 0..<10_000 {
            pool.letGo("kept-\(index)", now: Self.start)
        }
        for index in 0..<10_000 {
            pool.letGo("back-\(index)", now: Self.start.addingTimeInterval(-Double(index)))
        }
        let remembered = pool.resetAll().tokens
        #expect(remembered.count <= SessionPool.maxLetGo, "\(remembered.count) sessions remembered")
        #expect(remembered.last == "back-9999")
        #expect(Set(remembered).count == remembered.count)
    }

    /// Through a client: explicit logins past the bound, each replacing the last one's token, then a shutdown. It logs
    /// out the bound's worth of replaced sessions and the current one, not every session ever replaced.
    @Test func theShutdownLogsOutAtMostTheBoundOfReplacedSessions() {
        let server = SessionTests.Server()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = TestBound.seconds
        let h = Harness(configuration: configuration, clock: TestClock(Self.start)) { server.handle($0) }
        let logins = SessionPool.maxLetGo + 40
        for _ in 0..<logins {
            let done = Recorder<String?>()
            h.api.login { token, _ in done.record(token) }
            #expect(done.wait().first??.hasPrefix("tok-") == true)
        }
        let shutDown = Recorder<Void>()
        h.api.shutdown { shutDown.record(()) }
        shutDown.wait()
        let logouts = h.stub.requests.filter { $0.httpMethod == "DELETE" }.compactMap { $0.url?.lastPathComponent }
        #expect(logouts.count <= SessionPool.maxLetGo + 1, "\(logouts.count) logouts at shutdown")
        // The current session and the most recently replaced one are among them.
        #expect(logouts.contains("tok-\(logins)") && logouts.contains("tok-\(logins - 1)"))
    }
}

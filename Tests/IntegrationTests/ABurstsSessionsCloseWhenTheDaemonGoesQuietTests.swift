import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// The contract: a pool grown for a burst shrinks back to one session `sessionIdleTimeout` after the burst even
// when no call follows (a daemon that goes quiet): every extra session is logged out (a `closed` pool event, reason
// "idle", and a logout on the server); the first session stays (an idle daemon holds one, which FileMaker closes
// after its own 15 idle minutes) and serves the next call. On main the extra sessions were closed only when a
// later call took or gave back a session, so a daemon quiet after a burst held them all until FileMaker expired them.

/// Counts pool events and lets a test wait for a number of idle closes.
final class IdleCloses: FMMetricsObserver, @unchecked Sendable {
    private let condition = NSCondition()
    private var openedCount = 0
    private var idleClosed = 0

    func callFinished(_ call: FMCallMetrics) {}
    func poolEvent(_ event: FMPoolEvent) {
        condition.lock()
        defer { condition.unlock() }
        if event.kind == .opened { openedCount += 1 }
        if event.kind == .closed && event.reason == "idle" { idleClosed += 1; condition.broadcast() }
    }
    var opened: Int { condition.lock(); defer { condition.unlock() }; return openedCount }
    var closed: Int { condition.lock(); defer { condition.unlock() }; return idleClosed }

    /// Waits (blocking, off the cooperative pool) until `count` sessions were closed for idleness, or `seconds` pass.
    func waitForIdleCloses(_ count: Int, seconds: TimeInterval) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let limit = Date().addingTimeInterval(seconds)
                self.condition.lock()
                while self.idleClosed < count && self.condition.wait(until: limit) {}
                let reached = self.idleClosed >= count
                self.condition.unlock()
                continuation.resume(returning: reached)
            }
        }
    }
}

@Suite("A burst's sessions close when the daemon goes quiet")
struct ABurstsSessionsCloseWhenTheDaemonGoesQuietTests {
    @Test func theExtraSessionsAreLoggedOutWithoutAnotherCall() async throws {
        let emulator = Emulator()
        emulator.serviceTime = 0.2   // the burst's calls overlap, so the pool grows
        let url = try emulator.start()
        defer { emulator.stop() }
        let events = IdleCloses()
        var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        configuration.sessionPoolSize = 4
        configuration.sessionIdleTimeout = 1
        configuration.timeout = 120
        configuration.metrics = events
        let api = DataAPI(configuration: configuration)

        let codes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask { await callback(api) { api.getRecords(layout: "Artists", limit: 1, completion: $0) }.1 }
            }
            var codes: [String] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes == Array(repeating: "0", count: 8))
        let opened = events.opened
        try #require(opened > 1, "the burst opened one session: nothing to close")

        // No call from here on: the pool closes the extra sessions on its own.
        let closedAll = await events.waitForIdleCloses(opened - 1, seconds: 60)
        #expect(closedAll, "\(events.closed) of \(opened - 1) extra sessions closed with no call after the burst")
        #expect(events.closed == opened - 1, "the first session was closed too")

        // The first session still serves, without a login.
        let logins = emulator.loginCount
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        #expect(emulator.loginCount == logins)
        await api.shutdown()
        #expect(emulator.activeSessionCount == 0)
    }
}

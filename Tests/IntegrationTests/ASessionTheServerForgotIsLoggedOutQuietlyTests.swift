import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// The contract: the logouts SwiftFM sends on its own (a shutdown's, an idle session's) reach their goal when the server
// answers 952 (it no longer knows the session: a restart, its own expiry): no `warning` or `error` line, no failure
// counted in the shutdown's line. A daemon shut down after a server restart logged a warning for every session the
// server had forgotten. An explicit `logout` a caller asks for still reports FileMaker's 952 to that caller.

@Suite("A session the server forgot is logged out quietly")
struct ASessionTheServerForgotIsLoggedOutQuietlyTests {
    @Test func aShutdownAfterAServerRestartLogsNoWarning() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let lines = KeptLines()
        let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin"),
                          logger: { lines.keep($0) })
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.expireAllTokens()   // the server forgets the session (as a restart does)
        await api.shutdown()

        let loud = lines.all.filter { $0.level >= .warning }
        #expect(loud.isEmpty, "\(loud.map(\.description))")
        #expect(lines.all.contains { $0.message.contains("shut down: 1 session(s) logged out") })
        #expect(emulator.requestLog.contains { $0.method == "DELETE" && $0.decodedPath.contains("/sessions/") })
    }

    @Test func anExplicitLogoutStillReportsTheCode() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin"))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.expireAllTokens()
        let (ok, code) = await callback(api) { (done: @escaping @Sendable (Bool?, String) -> Void) in
            api.logout { ok, code in done(ok, code) }
        }
        #expect(ok == false && code == "952")
        await api.shutdown()
    }
}

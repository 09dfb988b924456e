import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// A session pool larger than the server's session cap still serves every call, on the sessions the server allowed.

@Suite("A session pool against a server's session cap")
struct ServerSessionCapTests {
    /// A pool of 4 against a server that allows 2 sessions: every call completes "0" (the refused extra
    /// sessions fall back to the open ones) and the pool stops asking for sessions the server refuses.
    @Test func aPoolLargerThanTheServersSessionCapStillServesEveryCall() async throws {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        emulator.maxSessions = 2
        emulator.serializesSessions = true
        emulator.serviceTime = 0.01
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.sessionPoolSize = 4
        configuration.timeout = 600   // 40 calls queue for two serialized sessions: a loaded machine only slows them down
        let api = DataAPI(configuration: configuration)
        let codes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<40 {
                group.addTask { await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }.1 }
            }
            var codes: [String] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes.count == 40)
        #expect(codes.allSatisfy { $0 == "0" })
        // Two sessions opened; each extra one asked for at most once (then the pool knows the cap).
        let logins = emulator.requestLog.filter { $0.method == "POST" && $0.decodedPath.hasSuffix("/sessions") }
        #expect(logins.filter { $0.status == 200 }.count == 2)
        #expect(logins.filter { $0.status == 500 }.count <= 2)
        await api.shutdown()
        #expect(emulator.activeSessionCount == 0)
    }
}

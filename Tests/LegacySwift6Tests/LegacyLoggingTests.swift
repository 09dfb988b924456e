import Foundation
import Testing

/// A SwiftFM 2.x call that fails returns `nil`/`false` as 2.x did, and now also says why, at
/// warning, through `DataAPI.legacyLogger` (a wrong password was silent).
@Suite(.serialized) struct LegacyLoggingTests {
    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [FMLogEvent] = []
        func append(_ event: FMLogEvent) { lock.lock(); stored.append(event); lock.unlock() }
        var events: [FMLogEvent] { lock.lock(); defer { lock.unlock() }; return stored }
    }

    @Test func aFailing2xCallLogsAWarning() async throws {
        let server = try LegacyServer(.hostAndDatabase)
        server.defaults.set(Data("admin:wrong".utf8).base64EncodedString(), forKey: "fm-auth")
        let lines = Lines()
        DataAPI.legacyLogger = { lines.append($0) }
        defer { DataAPI.legacyLogger = nil }
        await DataAPI.withLegacyDefaults(server.defaults) {
            #expect(await SwiftFM.newSession() == nil)
            #expect(await SwiftFM.createRecord(layout: "Artists", payload: nil, token: "not-a-token") == nil)
        }
        let warnings = lines.events.filter { $0.level == .warning && $0.message.hasPrefix("SwiftFM 2.x") }.map(\.message)
        #expect(warnings.contains { $0.contains("newSession() failed") && $0.contains("212") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("createRecord(layout:payload:token:) failed") && $0.contains("952") }, "\(warnings)")
    }
}

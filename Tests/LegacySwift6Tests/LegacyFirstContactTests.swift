import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// First contact on the 2018 static surface (`DataAPI.getRecords(token:layout:limit:completion:)`, `fm-db-path`):
/// nothing listening fails at the first refusal; a server that answered is ridden out through a restart.
@Suite struct LegacyFirstContactTests {
    /// Counts the back-offs a legacy service draws (its random source: no call waits), and runs `atDraw`
    /// at the n-th one.
    final class Draws: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        private var action: (Int, @Sendable () -> Void)?
        var drawn: Int { lock.withLock { count } }
        func reset(at n: Int = .max, _ action: @escaping @Sendable () -> Void = {}) { lock.withLock { count = 0; self.action = (n, action) } }
        func draw(_ range: ClosedRange<Double>) -> Double {
            let due = lock.withLock { () -> (@Sendable () -> Void)? in
                count += 1
                return action.flatMap { $0.0 == count ? $0.1 : nil }
            }
            due?()
            return range.lowerBound
        }
    }

    @Test func nothingListeningFailsAtOnceOnThe2018Surface() throws {
        let suite = "SwiftFM.LegacyFirstContact.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set("http://127.0.0.1:1/fmi/data/v1/databases/Legacy", forKey: "fm-db-path")
        let service = LegacyState.shared.service(for: LegacyTarget(server: try #require(URL(string: "http://127.0.0.1:1")), version: .v1, database: "Legacy"))
        #expect(service.configuration.retry == .standard && service.configuration.timeout == 30)
        let draws = Draws()
        service.retryJitter.withLock { $0 = { draws.draw($0) } }
        let result = DataAPI.withLegacyDefaults(defaults) {
            wait { done in DataAPI.getRecords(token: "t", layout: "Artists", limit: 1) { records, code in done((records.count, code, FMError.current)) } }
        }
        let (count, code, error) = try #require(result)
        #expect(count == 0 && code == FMError.ClientCode.transport)
        #expect(error?.message.contains("127.0.0.1:1") == true && error?.message.contains("connection refused") == true, "\(String(describing: error))")
        #expect(draws.drawn == 0, "first contact is not retried")
    }

    @Test func aServerThatAnsweredIsRiddenOutOnThe2018Surface() throws {
        let server = try LegacyServer(.dbPath)
        let port = try #require(server.url.port.map(UInt16.init))
        let target = LegacyTarget(server: server.url, version: .v1, database: LegacySchema.database)
        let service = LegacyState.shared.service(for: target)
        let draws = Draws()
        service.retryJitter.withLock { $0 = { draws.draw($0) } }
        let emulator = server.emulator
        try server.run {
            let token = try server.login()
            let before = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done((names(records), code)) } }
            #expect(before?.1 == "0")
            // Refused until the third back-off, then a new server (which forgot the session: FileMaker's 952).
            let restartFailure = Locked<String?>(nil)
            emulator.stop()
            draws.reset(at: 3) {
                do { try emulator.start(port: port) } catch { restartFailure.withLock { $0 = "\(error)" } }
            }
            let after = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done(code) } }
            #expect(restartFailure.value == nil)
            #expect(draws.drawn == 3)
            #expect(after == "952", "the read reached the restarted server: \(String(describing: after))")
        }
    }
}

import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// Reads ride out a server restart under the default retry policy, over a real socket: the emulator is
/// stopped (connections refused, every session forgotten) and started again on the same port at an event the
/// test controls — the n-th back-off the client draws (its random source, so no call waits) — not wall time.
@Suite("Restart ride-out against the emulator")
struct RestartRideOutTests {
    /// Stops the emulator; starts it again on its port at the `upAfter`-th back-off.
    final class Restarter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        private var startFailure: String?
        let emulator: Emulator
        let port: UInt16
        let upAfter: Int

        init(_ emulator: Emulator, port: UInt16, upAfter: Int) {
            self.emulator = emulator
            self.port = port
            self.upAfter = upAfter
        }

        var draws: Int { lock.withLock { count } }
        var failure: String? { lock.withLock { startFailure } }

        func stop() {
            lock.withLock { count = 0 }
            emulator.stop()
        }

        func draw(_ range: ClosedRange<Double>) -> Double {
            let n = lock.withLock { count += 1; return count }
            if n == upAfter {
                do { try emulator.start(port: port) } catch { lock.withLock { startFailure = "\(error)" } }
            }
            return range.lowerBound
        }
    }

    @Test(arguments: ["default", "urlsession"])
    func readsRideOutARestartThroughCallbacksAndAsyncAndWritesAreNotRetried(_ transport: String) async throws {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        #expect(configuration.retry == .standard)
        let api = transport == "default"
            ? DataAPI(configuration: configuration)
            : DataAPI(configuration: configuration, transport: FMURLSessionTransport(idleTimeout: 30, maxConnectionsPerHost: 8))
        let restarter = Restarter(emulator, port: port, upAfter: 5)
        api.retryJitter.withLock { $0 = { restarter.draw($0) } }
        let (_, before) = await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }
        #expect(before == "0")

        // Callback surface: refused until the fifth back-off, then a new server that forgot the session.
        restarter.stop()
        let (found, code) = await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }
        #expect(code == "0" && found?.records.count == 1)
        #expect(restarter.draws == 5 && restarter.failure == nil)

        // Async surface, and a find.
        restarter.stop()
        let page = try await api.getRecords(layout: "Bands", limit: 1)
        #expect(page.records.count == 1 && restarter.draws == 5)
        restarter.stop()
        let matches = try await api.find(layout: "Bands", request: FMFindRequest(queries: [FMQuery(["name": "*"])]))
        #expect(!matches.records.isEmpty && restarter.draws == 5)

        // A write is sent once: refused, reported, never retried.
        restarter.stop()
        let (reference, writeCode) = await callback(api) { api.createRecord(layout: "Bands", fieldData: ["name": "Restarted"], completion: $0) }
        #expect(reference == nil && writeCode == FMError.ClientCode.transport)
        #expect(restarter.draws == 0)
    }
}

import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// The DataAPI.swift call sites ride out a restart of the web server or proxy in front of FileMaker (502/503
/// while the sessions survive) under the default policy, and their writes are not retried.
@Suite struct LegacyRestartTests {
    /// Counts the back-offs the legacy service draws (its random source: no call waits).
    final class Draws: @unchecked Sendable {
        private let lock = NSLock()
        private var ranges: [ClosedRange<Double>] = []
        var all: [ClosedRange<Double>] { lock.withLock { ranges } }
        func reset() { lock.withLock { ranges = [] } }
        func draw(_ range: ClosedRange<Double>) -> Double {
            lock.withLock { ranges.append(range) }
            return range.lowerBound
        }
    }

    @Test func legacyReadsRideOutA503AndWritesAreNotRetried() throws {
        let server = try LegacyServer(.dbPath)
        let draws = Draws()
        // The service the 2019 calls of this server go through (fm-db-path …/fmi/data/v1/databases/Legacy).
        let target = LegacyTarget(server: server.url, version: .v1, database: LegacySchema.database)
        let service = LegacyState.shared.service(for: target)
        #expect(service.configuration.retry == .standard)
        service.retryJitter.withLock { $0 = { draws.draw($0) } }
        let unavailable = EmulatorFault.status(503, body: "<html>Service Unavailable</html>", contentType: "text/html")
        try server.run {
            let token = try server.login()
            // Five 503s, more than the 3 attempts the default used to allow: the sixth request answers.
            server.emulator.inject(unavailable, count: 5, matching: "records")
            let read = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done((names(records), code)) } }
            #expect(read?.0 == ["Brian"] && read?.1 == "0")
            #expect(server.requests("GET", "/layouts/Artists/records").count == 6)
            #expect(draws.all == [0...0.25, 0...0.5, 0...1, 0...2, 0...2])
            // findRequest too.
            draws.reset()
            server.emulator.inject(unavailable, count: 4, matching: "_find")
            let find = wait { done in
                DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Geoff"]]]) { records, code in done((names(records), code)) }
            }
            #expect(find?.0 == ["Geoff"] && find?.1 == "0")
            #expect(draws.all.count == 4)
            // A write meets one 503: reported at once, sent once.
            draws.reset()
            server.emulator.inject(unavailable, count: 1, matching: "records")
            let before = server.requests("POST", "/layouts/Artists/records").count
            let create = wait { done in DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Kim"]]) { id, code in done((id, code)) } }
            #expect(create?.0 == nil && create?.1 == FMError.ClientCode.notJSON)
            #expect(server.requests("POST", "/layouts/Artists/records").count == before + 1)
            #expect(draws.all.isEmpty)
        }
    }
}

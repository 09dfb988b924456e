import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

/// Retries through the legacy surfaces: the 2019 class functions and SwiftFM 2.x use the same retry policy
/// (`.standard`) as the new API.
@Suite("Bounds through the legacy surfaces")
struct LegacyBoundsTests {
    static let proxy503 = EmulatorFault.status(503, body: "<html><body>503</html>", contentType: "text/html")

    @Test func a503TwiceThen200OnA2019ReadCompletesAfterThreeRequests() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            server.emulator.inject(Self.proxy503, count: 2, matching: "/records")
            let result = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 20) { records, code in done((records?.count, code)) }
            }
            #expect(result?.1 == "0" && result?.0 == 3)
            #expect(server.requests("GET", "/records").count == 3)
        }
    }

    @Test func a2019CreateAnswered503IsSentOnce() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            server.emulator.inject(Self.proxy503, count: 1, matching: "/records")
            let result = wait { done in
                DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "New"]]) { id, code in done((id, code)) }
            }
            #expect(result?.0 == nil && result?.1 == "-1006")
            #expect(server.requests("POST", "/records").count == 1)
            #expect(server.emulator.recordCount(inTable: "Artists") == 3)
        }
    }

    @Test func aResetBeforeAnyAnswerIsRetriedForA2019Read() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            server.emulator.inject(.resetConnection, count: 1, matching: "/records")
            let read = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 20) { records, code in done((records?.count, code)) }
            }
            #expect(read?.1 == "0" && read?.0 == 3)
            #expect(server.requests("GET", "/records").count == 2)
        }
    }

    @Test func fileMaker812IsRetriedForA2019Read() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            server.emulator.inject(.fileMakerError(code: "812", status: 500), count: 1, matching: "/records")
            let read = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 20) { records, code in done((records?.count, code)) }
            }
            #expect(read?.1 == "0" && read?.0 == 3)
            #expect(server.requests("GET", "/records").count == 2)
        }
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Issue 18, against the emulator: a host written without a scheme (https) fails at once and names the
/// scheme to write; the id `createRecord` gives edits, reads and deletes the record.
@Suite("First contact, client against the emulator")
struct FirstContactIntegrationTests {
    /// `DataAPI(host: "127.0.0.1:PORT")` means https; the emulator speaks plain HTTP and answers the TLS
    /// ClientHello with a 400. The call fails with -1003 (not a -1004 after the deadline), once (no retry),
    /// and its message says to write `http://127.0.0.1:PORT`.
    @Test func aHostWithoutTheSchemeFailsAtOnceAndNamesIt() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let address = try #require(url.host).appending(":\(try #require(url.port))")
        let lines = LineSink()
        let configuration = FMConfiguration(host: address, database: "Music", username: "admin", password: "admin", timeout: 600)
        let api = DataAPI(configuration: configuration, logger: { lines.append("\($0)") })

        let (found, code) = await callback(api) { (done: @escaping @Sendable (FMFoundSet?, String) -> Void) in
            api.getRecords(layout: "Artists", limit: 1) { found, code in done(found, code) }
        }
        #expect(found == nil && code == FMError.ClientCode.transport)
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            Issue.record("a TLS handshake with a plain-HTTP server succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("http://\(address)"), "\(error)")
            #expect(String(describing: error).hasPrefix("FMError -1003: Wrong scheme:"))
        }
        #expect(!lines.lines.contains { $0.contains("retry") }, "a wrong scheme is not retried: \(lines.lines)")
        #expect(emulator.loginCount == 0)
    }

    /// The README's chain: create, then edit, read, delete with the `recordId` create gave (a `String`).
    @Test func createThenEditWithTheIdItGave() async throws {
        try await withClient { api, emulator in
            let (ref, code) = await callback(api) { (done: @escaping @Sendable (FMRecordReference?, String) -> Void) in
                api.createRecord(layout: "Bands", fieldData: ["name": "Chain"]) { ref, code in done(ref, code) }
            }
            let created = try #require(ref)
            #expect(code == "0")
            let (edit, editCode) = await callback(api) { (done: @escaping @Sendable (FMEditResult?, String) -> Void) in
                api.editRecord(layout: "Bands", recordId: created.recordId, fieldData: ["name": "Chained"], modId: created.modId) { result, code in
                    done(result, code)
                }
            }
            #expect(editCode == "0" && edit?.modId != created.modId)

            let again = try await api.getRecord(layout: "Bands", recordId: created.recordId)
            #expect((again.records.first?["fieldData"] as? [String: Any])?["name"] as? String == "Chained")
            try await api.editRecord(layout: "Bands", recordId: created.recordId, fieldData: ["name": "Chain 3"])
            try await api.deleteRecord(layout: "Bands", recordId: created.recordId)
            await #expect(throws: FMError.self) { try await api.getRecord(layout: "Bands", recordId: created.recordId) }
            _ = emulator
        }
    }
}

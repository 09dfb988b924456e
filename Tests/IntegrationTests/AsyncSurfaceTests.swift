import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Every endpoint through the async overlay, with the real URLSession against the emulator.
@Suite("Async surface against the emulator")
struct AsyncSurfaceTests {
    struct Band: Decodable, Equatable {
        let name: String
        let city: String
    }

    @Test func sessionsAndMetadata() async throws {
        try await withClient { api, _ in
            let token = try await api.login()
            #expect(token.count == 52)
            #expect(try await api.validateSession())
            #expect(try await api.productInfo().name == "FileMaker Data API Engine")
            #expect(try await api.databases().map(\.name) == ["Integration"])
            #expect(try await api.layouts().contains { $0.name == "Bands" })
            #expect(try await api.layoutMetadata(layout: "Bands").fieldMetaData.contains { $0.name == "photo" && $0.result == "container" })
            #expect(try await api.scripts().contains { $0.name == "Echo" })
            try await api.logout()
            #expect(!api.isActiveToken())
        }
    }

    @Test func recordsTypedAndRaw() async throws {
        try await withClient { api, _ in
            let ref = try await api.createRecord(layout: "Bands", fieldData: ["name": "Async Band", "city": "Houston"])
            let id = try #require(Int(ref.recordId))
            let one = try await api.getRecord(layout: "Bands", recordId: id)
            #expect(try one.decode(Band.self).map(\.fieldData) == [Band(name: "Async Band", city: "Houston")])
            let typed = try await api.getRecords(as: Band.self, layout: "Bands", sort: [FMSort("name")])
            #expect(typed.records.map(\.fieldData.name).first == "Async Band")
            let edit = try await api.editRecord(layout: "Bands", recordId: id, fieldData: ["city": "Austin"], modId: ref.modId)
            #expect(edit.modId == "1")
            let dup = try await api.duplicateRecord(layout: "Bands", recordId: id)
            #expect(dup.recordId != ref.recordId)
            _ = try await api.deleteRecord(layout: "Bands", recordId: id)
            await #expect(throws: FMError.self) { try await api.getRecord(layout: "Bands", recordId: id) }
            do {
                _ = try await api.getRecord(layout: "Bands", recordId: id)
            } catch let error as FMError {
                #expect(error.code == "101" && error.httpStatus == 500)
            }
        }
    }

    @Test func findScriptGlobalsContainers() async throws {
        try await withClient { api, _ in
            let found = try await api.find(layout: "Bands", request: FMFindRequest(queries: [FMQuery(["city": "Austin"])], sort: [FMSort("name")]))
            #expect(try found.decode(Band.self).map(\.fieldData.name) == ["David", "John Doe"])
            let none = try await api.find(layout: "Bands", request: FMFindRequest(queries: [FMQuery(["name": "==Nobody"])]))
            #expect(none.records.isEmpty)
            #expect(try await api.runScript(layout: "Bands", script: "Echo", parameter: "hi").result == "hi")
            try await api.setGlobals(["Bands::g_motto": "quiet"])
            let bytes = Data("%PDF-1.4 tiny".utf8)
            _ = try await api.uploadContainer(layout: "Bands", recordId: 2, field: "photo", data: bytes, fileName: "t.pdf")
            let record = try await api.getRecord(layout: "Bands", recordId: 2)
            let photo = (record.records.first?["fieldData"] as? [String: Any])?["photo"] as? String
            let url = try #require(photo.flatMap { URL(string: $0) })
            #expect(try await api.downloadContainer(url: url) == bytes)
        }
    }

    @Test func taskCancellationCancelsTheRequest() async throws {
        // An hour's delay and deadline: the cancel comes once this test's task resumes, which a loaded pool may
        // delay for minutes (with 30 s the answer, or the deadline, could come first).
        try await withClient(timeout: 3600) { api, emulator in
            _ = try await api.login()
            let arrivals = LogWatch()
            emulator.onRequest = { arrivals.arrived($0) }
            emulator.inject(.delay(3600), count: 1, matching: "records")
            let task = Task { try await api.getRecords(layout: "Bands") }
            // Cancel once the request is known to be at the server (its arrival is reported before the delay),
            // waiting for that event instead of spinning on the pool with yields.
            await arrivals.wait(for: "/records")
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("a cancelled request returned a value")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.cancelled)
            }
        }
    }
}

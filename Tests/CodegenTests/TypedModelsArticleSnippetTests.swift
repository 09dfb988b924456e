import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The TypedModels article's snippets (`Sources/SwiftFM/SwiftFM.docc/TypedModels.md`), compiled and run against
/// the demo solution with the generated `Artists`, so the article cannot drift from the API.
@Suite("TypedModels article")
struct TypedModelsArticleSnippetTests {
    @Test func readingSnippet() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            // TypedModels.md, "Reading" (print replaced by collecting)
            var lines: [String] = []
            let artists = try await api.getRecords(as: Artists.self)
            for record in artists.records {
                lines.append("\(record.fieldData.name ?? "") \(record.fieldData.albums.map(\.title))")
            }
            let found = try await api.find(as: Artists.self, request: FMFindRequest(["city": "Dallas"]))
            for try await page in api.pages(as: Artists.self, pageSize: 500) { _ = page.records }
            let one = try await api.record(as: Artists.self, recordId: 1)          // one record, not a found set
            lines.append("\(one.fieldData.name ?? "") \(one.recordId) \(one.modId)")
            let set = try await api.getRecord(as: Artists.self, recordId: 1)       // the found set, with dataInfo
            // end of snippet
            #expect(lines.first?.hasPrefix("Brian Eno [") == true && lines.count == artists.records.count + 1)
            #expect(found.records.allSatisfy { $0.fieldData.city == "Dallas" })
            #expect(one.fieldData.name == "Brian Eno" && one.recordId == "1")
            #expect(one.fieldData.albums.map(\.title) == ["Music for Airports", "Another Green World"])
            #expect(set.records.count == 1 && set.first == one)
        }
    }

    @Test func writingSnippet() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            // TypedModels.md, "Writing"
            let created = try await api.createRecord(Artists(name: "Nina Simone", city: "Dallas"))
            try await api.editRecord(Artists(rating: 5), recordId: created.recordId)   // the String id createRecord gave
            let nina = try await api.record(as: Artists.self, recordId: created.recordId)
            // end of snippet
            #expect(nina.fieldData.name == "Nina Simone" && nina.fieldData.city == "Dallas" && nina.fieldData.rating == 5)
        }
    }

    @Test func oneRecordIsMissingOrIsThatRecord() async throws {
        try await withSolution(Solution.all[0]) { api, _ in
            await #expect(throws: FMError.self) { try await api.record(as: Artists.self, recordId: 999_999) }
            do {
                _ = try await api.record(as: Artists.self, recordId: 999_999)
            } catch let error as FMError {
                #expect(error.code == "101")
            }
            let (missing, missingCode) = await withCheckedContinuation { continuation in
                api.record(as: Artists.self, recordId: 999_999) { continuation.resume(returning: ($0, $1)) }
            }
            #expect(missing == nil && missingCode == "101")
            let (one, code) = await withCheckedContinuation { continuation in
                api.record(as: Artists.self, recordId: "2") { continuation.resume(returning: ($0, $1)) }
            }
            #expect(code == "0" && one?.recordId == "2" && one?.fieldData.name != nil)
            let (bad, badCode) = await withCheckedContinuation { continuation in
                api.record(as: Artists.self, recordId: "x") { continuation.resume(returning: ($0, $1)) }
            }
            #expect(bad == nil && badCode == "-1002")
        }
    }
}

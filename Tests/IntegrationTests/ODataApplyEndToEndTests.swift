import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// `$apply` end to end: `FMODataApply` built by the client, answered by the in-process emulator (the demo
/// solution), checked against the same aggregation computed here over a plain read.
@Suite struct ODataApplyEndToEndTests {
    private func withDemo<T>(_ body: (FMOData) async throws -> T) async throws -> T {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        configuration.timeout = 60
        return try await body(FMOData(configuration: configuration))
    }

    struct AlbumGroup: Decodable, Equatable {
        var artist_id: Double
        var albums: Double
        var latest: Double
        var total: Double
    }

    @Test("groupby with aggregates agrees with the same computation over a plain read (raw and typed)")
    func groupByAgrees() async throws {
        try await withDemo { odata in
            let all = try await odata.records(from: "Albums")
            var expected: [Double: (titles: Set<String>, latest: Double, total: Double)] = [:]
            for row in all.rows {
                guard let artist = (row["artist_id"] as? NSNumber)?.doubleValue, let year = (row["year"] as? NSNumber)?.doubleValue,
                      let title = row["title"] as? String else { continue }
                var entry = expected[artist] ?? ([], -.infinity, 0)
                entry.titles.insert(title)
                entry.latest = max(entry.latest, year)
                entry.total += year
                expected[artist] = entry
            }
            let apply = FMODataApply.groupBy(["artist_id"], [.countDistinct("title", as: "albums"), .max("year", as: "latest"),
                                                              .sum("year", as: "total")])
            let query = FMODataQuery(apply: apply, orderBy: [.ascending("artist_id")])
            let typed = try await odata.records(as: AlbumGroup.self, from: "Albums", query: query)
            #expect(typed.rows == expected.keys.sorted().map { key in
                AlbumGroup(artist_id: key, albums: Double(expected[key]?.titles.count ?? 0), latest: expected[key]?.latest ?? 0,
                           total: expected[key]?.total ?? 0)
            })
            let raw = try await odata.records(from: "Albums", query: query)
            #expect(raw.rows.count == expected.count)
            #expect(raw.rows.allSatisfy { Set($0.keys) == ["artist_id", "albums", "latest", "total"] })
        }
    }

    @Test("a hostile literal inside $apply's filter stays a literal; filters then aggregate; $count on groups")
    func escapedFilterAndCount() async throws {
        try await withDemo { odata in
            let hostile = try await odata.records(from: "Albums", query: FMODataQuery(
                apply: .filter(.eq("title", "x') or (1 eq 1) or ('")).then(.aggregate(.countDistinct("title", as: "n")))))
            #expect((hostile.rows.first?["n"] as? NSNumber)?.intValue == 0)
            let seventies = try await odata.records(from: "Albums", query: FMODataQuery(
                apply: .filter(.lt("year", 1980) && .startsWith("title", "Live")).then(.aggregate(.min("title", as: "first")))))
            #expect(seventies.rows.first?["first"] as? String == "Live at the Old Quarter")
            let counted = try await odata.records(from: "Albums", query: FMODataQuery(apply: .groupBy(["artist_id"]), top: 1, count: true))
            #expect(counted.count == 4)
            #expect(counted.rows.count == 1)
        }
    }

    @Test("what the builder refuses is never sent; what the server refuses comes back with its code (callback and async)")
    func refusals() async throws {
        try await withDemo { odata in
            let (page, code): (FMODataPage?, String) = await withCheckedContinuation { continuation in
                odata.records(from: "Albums", query: FMODataQuery(apply: .groupBy([]))) { page, code in
                    continuation.resume(returning: (page, code))
                }
            }
            #expect(page == nil && code == FMError.ClientCode.invalidArgument)
            do {
                _ = try await odata.records(from: "Albums", query: FMODataQuery(apply: .raw("compute(year add 1 as next)")))
                Issue.record("compute was accepted")
            } catch let error as FMError {
                #expect(error.code == "-1003" && error.httpStatus == 400)
            }
            do {
                _ = try await odata.records(from: "Albums", query: FMODataQuery(apply: .aggregate(.sum("nope", as: "s"))))
                Issue.record("an unknown field was accepted")
            } catch let error as FMError {
                #expect(error.code == "8309")
            }
        }
    }
}

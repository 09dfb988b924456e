import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

/// Occurrences, relationships, sorted portals and scripts with steps through the SwiftFM client,
/// against the League demo solution (Tests/Fixtures/league-schema.json).
@Suite struct RelationshipIntegrationTests {
    static let leagueURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/league-schema.json")

    func withLeague<T>(_ body: (DataAPI, Emulator) async throws -> T) async throws -> T {
        let emulator = try Emulator(schemaFile: Self.leagueURL)
        return try await Emulator.withRunning(emulator) { emulator in
            let url = try #require(emulator.baseURL)
            let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "League", username: "admin", password: "admin"))
            return try await body(api, emulator)
        }
    }

    func rows(_ record: [String: Any]?, _ portal: String) -> [[String: Any]] {
        (record?["portalData"] as? [String: Any])?[portal] as? [[String: Any]] ?? []
    }

    func fields(_ record: [String: Any]?) -> [String: Any] { record?["fieldData"] as? [String: Any] ?? [:] }

    @Test func relatedFieldsAndSortedPortalsReadAndWrite() async throws {
        try await withLeague { api, emulator in
            let team = try await api.getRecord(layout: "Teams", recordId: 1).first
            #expect(fields(team)["Team_city::population"] as? Int == 961855)
            #expect(rows(team, "roster").map { $0["Players::name"] as? String } == ["Abe", "Bo", "Cara"])
            #expect(rows(team, "roster").map { $0["Player_city::population"] as? Int } == [961855, 961855, 961855])
            #expect(rows(team, "all games").map { $0["All_games::points"] as? Int } == [102, 88])
            let meta = try await api.layoutMetadata(layout: "Teams")
            #expect(meta.portalMetaData["roster"]?.map(\.name) == ["Players::name", "Players::score", "Players::nicknames", "Player_city::population"])

            // A related field on the layout, a portal row edit, a new portal row and a write two hops from a row.
            let edit = try await api.editRecord(layout: "Teams", recordId: 1, fieldData: ["Team_city::population": 1_000_000],
                                                portalData: ["roster": [["recordId": "3", "Players::score": 70],
                                                                        ["Players::name": "Ann", "Players::score": 5],
                                                                        ["recordId": "1", "Player_city::population": 999]]])
            #expect(edit.newPortalRecordInfo.first?.tableName == "Players")
            #expect(emulator.records(inTable: "Cities").first?["population"] as? Int == 999)
            let again = try await api.getRecord(layout: "Teams", recordId: 1).first
            #expect(rows(again, "roster").map { $0["Players::name"] as? String } == ["Abe", "Ann", "Bo", "Cara"])
            #expect(rows(again, "roster").first { $0["Players::name"] as? String == "Bo" }?["Players::score"] as? Int == 70)

            // A global drives a ≤ relationship.
            _ = try await api.setGlobals(["Teams::g_min_score": 20])
            let top = try await api.getRecord(layout: "Teams", recordId: 1).first
            #expect(rows(top, "top").map { $0["Players_top::name"] as? String } == ["Abe", "Bo"])

            // A find on a field two hops away on the layout.
            let found = try await api.find(layout: "Players", request: FMFindRequest(queries: [FMQuery(["Player_city::population": "999"])]))
            #expect(found.count == 4)
        }
    }

    @Test func scriptsWithStepsThroughTheClient() async throws {
        try await withLeague { api, emulator in
            let output = try await api.runScript(layout: "Players", script: "Output with param", parameter: "from Swift")
            #expect(output == FMScriptResult(result: "Output with param from Swift", error: "0"))
            let add = try await api.runScript(layout: "Players", script: "AddToScore", parameter: "8")
            #expect(add.result == "Cara now has 20")
            let nobody = try await api.runScript(layout: "Players", script: "Find Nobody")
            #expect(nobody == FMScriptResult(result: "found 0", error: "401"))
            // prerequest, presort and after scripts on a find, each acting on the data.
            let request = FMFindRequest(queries: [FMQuery(["score": ">20"])],
                                        scripts: FMScriptOptions(script: FMScriptCall("New Player", parameter: "Zed"),
                                                                 prerequest: FMScriptCall("Bonus All"),
                                                                 presort: FMScriptCall("Count High Scores", parameter: "25")))
            let found = try await api.find(layout: "Players", request: request)
            #expect(found.scripts.prerequest?.result == "4")
            #expect(found.scripts.presort?.result == "1")
            #expect(found.scripts.script?.result == "5")
            #expect(found.count == 3)
            #expect(emulator.records(inTable: "Players").map { $0["score"] as? Int } == [21, 31, 8, 22, nil])
            // An after script on a record read edits that record before the answer is written.
            let read = try await api.getRecord(layout: "Players", recordId: 2,
                                               options: FMReadOptions(scripts: FMScriptOptions(script: FMScriptCall("AddToScore", parameter: "1"))))
            #expect(fields(read.first)["score"] as? Int == 32)
            #expect(read.scripts.script?.result == "Abe now has 32")
        }
    }

    /// Every League script not run above, through the client: records deleted, sorted, duplicated; layouts
    /// switched; other scripts performed; variables, loops, If/Else and Set Error.
    @Test func everyOtherStepThroughTheClient() async throws {
        try await withLeague { api, emulator in
            func run(_ layout: String, _ script: String, _ parameter: String? = nil) async throws -> FMScriptResult {
                try await api.runScript(layout: layout, script: script, parameter: parameter)
            }
            let retire = try await run("Players", "Retire Last")
            #expect(retire == FMScriptResult(result: "3", error: "0"))
            #expect(emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe", "Bo"])
            let clone = try await run("Players", "Clone Current")
            #expect(clone == FMScriptResult(result: "5", error: "0"))
            #expect(emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe", "Bo", "Cara"])
            let report = try await run("Teams", "Team Report")
            #expect(report == FMScriptResult(result: "Output with param Austin Armadillos: 4 players, city population 961855", error: "0"))
            let missing = try await run("Teams", "Require Parameter")
            #expect(missing == FMScriptResult(result: "missing parameter", error: "958"))
            let given = try await run("Teams", "Require Parameter", "go")
            #expect(given == FMScriptResult(result: "ok GO", error: "0"))
            let counted = try await run("Teams", "Count To", "3")
            #expect(counted == FMScriptResult(result: "counted to 3", error: "0"))
            let rename = try await run("Teams", "Rename City", "5")
            #expect(rename.error == "0")
            #expect(emulator.records(inTable: "Cities").first?["population"] as? Int == 5)
            let echo = try await run("Teams", "Legacy Echo", "x")
            #expect(echo.result == "x")
        }
    }

    /// A sorted portal read in chunks through the client: the window applies to the sorted rows.
    @Test func chunkedReadsOfASortedPortalThroughTheClient() async throws {
        try await withLeague { api, _ in
            var names: [String] = []
            for offset in [1, 3] {
                let options = FMReadOptions(portals: [FMPortalRange("roster", offset: offset, limit: 2)])
                let team = try await api.getRecord(layout: "Teams", recordId: 1, options: options).records.first
                names += rows(team, "roster").compactMap { $0["Players::name"] as? String }
            }
            #expect(names == ["Abe", "Bo", "Cara"])
        }
    }

    /// FileMaker's rules for deletes and writes through relationships, through the client.
    @Test func deletesAndCreationThroughRelationshipsThroughTheClient() async throws {
        try await withLeague { api, emulator in
            // deleteRelated names a row of an occurrence portal; a record that is not one of its rows is 101.
            _ = try await api.editRecord(layout: "Teams", recordId: 1, fieldData: [:], deleteRelated: ["roster.3"])
            #expect(emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe", "Dee"])
            await #expect(throws: FMError.self) {
                _ = try await api.editRecord(layout: "Teams", recordId: 1, fieldData: [:], deleteRelated: ["roster.4"])
            }
            #expect(emulator.recordCount(inTable: "Players") == 3)
            // A related field written with no related record: created when the relationship allows it, else 101.
            _ = try await api.editRecord(layout: "Teams", recordId: 3, fieldData: ["Team_city::population": 12])
            #expect(emulator.records(inTable: "Cities").last?["name"] as? String == "Nowhere")
            do {
                _ = try await api.createRecord(layout: "Players", fieldData: ["team_id": 99, "Player_team::name": "Ghosts"])
                Issue.record("a related write with no related record and no creation must fail")
            } catch let e as FMError {
                #expect(e.code == "101")
            }
            #expect(emulator.recordCount(inTable: "Players") == 3)
            // cascadeDelete: deleting a team deletes its players.
            _ = try await api.deleteRecord(layout: "Teams", recordId: 2)
            #expect(emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe"])
            // Occurrences in the answer: a portal's portalDataInfo names its occurrence.
            let team = try await api.getRecord(layout: "Teams", recordId: 1)
            let info = team.records.first?["portalDataInfo"] as? [[String: Any]]
            #expect(info?.compactMap { $0["table"] as? String } == ["Players", "Players_top", "All_games"])
        }
    }

    /// Every match predicate (`=` with a multi-line key, `≠`, `<`, `≤`, `>`, `≥` with two clauses ANDed, `×` sorted
    /// descending) through the client.
    @Test func everyPredicateThroughTheClient() async throws {
        let schema = #"""
        {"database":"P","tables":{"A":{"fields":{"k":"text","n":"number"}},"B":{"fields":{"k":"text","n":"number","label":"text"}}},
         "occurrences":{"B_eq":"B","B_ne":"B","B_lt":"B","B_le":"B","B_gt":"B","B_ge":"B","B_all":"B"},
         "relationships":[
           {"left":"A","right":"B_eq","match":["k = k"]},{"left":"A","right":"B_ne","match":["k ≠ k"]},
           {"left":"A","right":"B_lt","match":["n < n"]},{"left":"A","right":"B_le","match":["n <= n"]},
           {"left":"A","right":"B_gt","match":["n > n"]},{"left":"A","right":"B_ge","match":["n >= n", "k = k"]},
           {"left":"A","right":"B_all","match":["k x k"]}],
         "layouts":{"A":{"table":"A","fields":["k","n"],"portals":{
           "eq":{"table":"B_eq","fields":["label"]},"ne":{"table":"B_ne","fields":["label"]},"lt":{"table":"B_lt","fields":["label"]},
           "le":{"table":"B_le","fields":["label"]},"gt":{"table":"B_gt","fields":["label"]},"ge":{"table":"B_ge","fields":["label"]},
           "all":{"table":"B_all","fields":["label"],"sort":[{"field":"label","order":"descend"}]}}}},
         "records":{"A":[{"k":"red\rblue","n":2}],
                    "B":[{"k":"red","n":1,"label":"r1"},{"k":"blue","n":2,"label":"b2"},{"k":"green","n":3,"label":"g3"},{"label":"empty"}]}}
        """#
        try await Emulator.withRunning(Emulator(schemaJSON: Data(schema.utf8))) { emulator in
            let url = try #require(emulator.baseURL)
            let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "P", username: "admin", password: "admin"))
            let record = try await api.getRecord(layout: "A", recordId: 1).records.first
            func labels(_ portal: String) -> [String] { rows(record, portal).compactMap { $0["B_\(portal)::label"] as? String } }
            #expect(labels("eq") == ["r1", "b2"])
            #expect(labels("ne") == ["r1", "b2", "g3"])
            #expect(labels("lt") == ["g3"])
            #expect(labels("le") == ["b2", "g3"])
            #expect(labels("gt") == ["r1"])
            #expect(labels("ge") == ["r1", "b2"])
            #expect(labels("all") == ["r1", "g3", "empty", "b2"])
        }
    }
}

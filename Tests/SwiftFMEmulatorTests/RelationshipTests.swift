import Foundation
import Testing
@testable import SwiftFMEmulator

/// The League demo solution (Tests/Fixtures/league-schema.json): occurrences, relationships, sorted portals,
/// related fields through one and two hops, and scripts with steps.
let leagueSchemaURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/league-schema.json")

func leagueHarness(via: Via = .handler) throws -> Harness {
    let h = try Harness(emulator: Emulator(schemaFile: leagueSchemaURL), db: "League", via: via)
    try h.login()
    return h
}

func names(_ rows: JSON?, _ key: String) -> [String] {
    (rows?.arrayValue ?? []).map { $0[key]?.scalarText ?? "" }
}

@Suite struct RelationshipTests {
    @Test(arguments: Via.allCases) func relatedFieldsPortalsAndSort(via: Via) throws {
        let h = try leagueHarness(via: via)
        let team = h.send("GET", "\(h.base)/layouts/Teams/records/1", contentType: nil)
        #expect(team.code == "0")
        let record = try #require(team.data.first)
        let fd = record["fieldData"]
        #expect(fd?.objectPairs?.map(\.0) == ["id", "name", "city", "g_min_score", "Team_city::population", "Team_city::zips", "Team_city::zips(2)"])
        #expect(fd?["Team_city::population"] == .number(961855))
        #expect(fd?["Team_city::zips(2)"]?.stringValue == "78702")
        // The portal's own sort (name ascending) replaces the relationship's (score descending).
        let roster = record["portalData"]?["roster"]
        #expect(names(roster, "Players::name") == ["Abe", "Bo", "Cara"])
        #expect(roster?.arrayValue?.first?.objectPairs?.map(\.0) == ["recordId", "Players::name", "Players::score", "Players::nicknames(1)",
                                                                     "Players::nicknames(2)", "Players::nicknames(3)",
                                                                     "Player_city::population", "modId"])
        // Two hops from the portal's occurrence: Players → Player_team → Player_city.
        #expect(names(roster, "Player_city::population") == ["961855", "961855", "961855"])
        // A global on the left of a ≤ clause: empty global → no rows; set it → rows whose score ≥ it.
        #expect(record["portalData"]?["top"]?.arrayValue?.isEmpty == true)
        // Cartesian (×), sorted by the relationship: points descending.
        #expect(names(record["portalData"]?["all games"], "All_games::venue") == ["Fair Park", "Moody Center"])
        let info = record["portalDataInfo"]?.arrayValue ?? []
        #expect(info.map { $0["table"]?.stringValue ?? "" } == ["Players", "Players_top", "All_games"])
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Teams::g_min_score":10}}"#).code == "0")
        let top = h.send("GET", "\(h.base)/layouts/Teams/records/1", contentType: nil).data.first?["portalData"]?["top"]
        #expect(names(top, "Players_top::name") == ["Cara", "Abe"])

        let player = h.send("GET", "\(h.base)/layouts/Players/records/4", contentType: nil).data.first?["fieldData"]
        #expect(player?["Player_team::name"]?.stringValue == "Dallas Dingos")
        #expect(player?["Player_city::population"] == .number(1304379))

        let meta = h.send("GET", "\(h.base)/layouts/Teams", contentType: nil).response
        #expect(meta["fieldMetaData"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                == ["id", "name", "city", "g_min_score", "Team_city::population", "Team_city::zips"])
        #expect(meta["portalMetaData"]?["roster"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                == ["Players::name", "Players::score", "Players::nicknames", "Player_city::population"])
    }

    @Test(arguments: Via.allCases) func writesThroughRelationships(via: Via) throws {
        let h = try leagueHarness(via: via)
        // A related field on the layout edits the first related record.
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"{"fieldData":{"Team_city::population":1000000,"Team_city::zips(2)":"78799"}}"#).code == "0")
        #expect(h.emulator.records(inTable: "Cities").first?["population"] as? Int == 1000000)
        #expect(h.emulator.records(inTable: "Cities").first?["zips(2)"] as? String == "78799")
        // No related record and the relationship allows creation: created, match field set from the parent.
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/3", body: #"{"fieldData":{"Team_city::population":5}}"#).code == "0")
        #expect(h.emulator.records(inTable: "Cities").last?["name"] as? String == "Nowhere")
        #expect(h.emulator.records(inTable: "Cities").last?["population"] as? Int == 5)
        // No related record and no creation: 101, and nothing changed.
        let orphan = h.send("POST", "\(h.base)/layouts/Players/records", body: #"{"fieldData":{"team_id":99,"Player_team::name":"Ghosts"}}"#)
        #expect(orphan.code == "101")
        #expect(h.emulator.recordCount(inTable: "Players") == 4)
        // Portal rows: edit one by recordId, create one (match field from the parent), write two hops away.
        let edit = h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"""
        {"fieldData":{},"portalData":{"roster":[{"recordId":"2","Players::score":31},{"Players::name":"Eve","Players::score":1},
                                               {"recordId":"1","Player_city::population":7}]}}
        """#)
        #expect(edit.code == "0")
        #expect(edit.response["newPortalRecordInfo"]?.arrayValue?.first?["tableName"]?.stringValue == "Players")
        let players = h.emulator.records(inTable: "Players")
        #expect(players.map { $0["name"] as? String } == ["Cara", "Abe", "Bo", "Dee", "Eve"])
        #expect(players[1]["score"] as? Int == 31)
        #expect(players[4]["team_id"] as? Int == 1)
        #expect(h.emulator.records(inTable: "Cities").first?["population"] as? Int == 7)
        // A portal whose relationship does not allow creation refuses new rows.
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"{"fieldData":{},"portalData":{"top":[{"Players_top::name":"X"}]}}"#).code == "101")
        // Finds on related fields, one hop and through a portal.
        let byCity = h.send("POST", "\(h.base)/layouts/Teams/_find", body: #"{"query":[{"Team_city::population":">1000000"}]}"#)
        #expect(names(.array(byCity.data.map { $0["fieldData"] ?? .null }), "name") == ["Dallas Dingos"])
        let byPlayer = h.send("POST", "\(h.base)/layouts/Teams/_find", body: #"{"query":[{"Players::name":"Dee"}]}"#)
        #expect(byPlayer.data.first?["recordId"]?.stringValue == "2")
        // Deleting a team deletes its players (the relationship's "delete related records" on the Players side).
        #expect(h.send("DELETE", "\(h.base)/layouts/Teams/records/2", contentType: nil).code == "0")
        #expect(h.emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe", "Bo", "Eve"])
        #expect(h.emulator.recordCount(inTable: "Cities") == 3)
    }

    @Test(arguments: Via.allCases) func deleteRelatedThroughAnOccurrencePortal(via: Via) throws {
        let h = try leagueHarness(via: via)
        // A row of the sorted roster portal, named by portal or by occurrence; a record not in it is 101.
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"{"fieldData":{"deleteRelated":"roster.3"}}"#).code == "0")
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"{"fieldData":{"deleteRelated":["Players.2"]}}"#).code == "0")
        #expect(h.send("PATCH", "\(h.base)/layouts/Teams/records/1", body: #"{"fieldData":{"deleteRelated":"roster.4"}}"#).code == "101")
        #expect(h.emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Dee"])
        // dataInfo names the layout's occurrence.
        let read = h.send("GET", "\(h.base)/layouts/Teams/records/1", contentType: nil)
        #expect(read.response["dataInfo"]?["table"]?.stringValue == "Teams")
        #expect(names(read.data.first?["portalData"]?["roster"], "Players::name") == ["Cara"])
    }

    @Test(arguments: Via.allCases) func chunkedReadsOfASortedPortal(via: Via) throws {
        // A client reading a portal in chunks sees the sorted order: the sort applies before the window.
        let h = try leagueHarness(via: via)
        var seen: [String] = []
        var counts: [String] = []
        for offset in [1, 3] {
            let answer = h.send("GET", "\(h.base)/layouts/Teams/records/1?portal=%5B%22roster%22%5D&_offset.roster=\(offset)&_limit.roster=2",
                                contentType: nil)
            let record = answer.data.first
            seen += names(record?["portalData"]?["roster"], "Players::name")
            let info = record?["portalDataInfo"]?.arrayValue?.first
            counts.append("\(info?["foundCount"]?.scalarText ?? "")/\(info?["returnedCount"]?.scalarText ?? "")")
        }
        #expect(seen == ["Abe", "Bo", "Cara"])
        #expect(counts == ["3/2", "3/1"])
        // In a find too (offset.<portal> / limit.<portal> in the body), and for the relationship's own sort.
        let found = h.send("POST", "\(h.base)/layouts/Teams/_find", body: #"""
        {"query":[{"id":"1"}],"portal":["roster","all games"],"offset.roster":2,"limit.roster":1,"limit.all games":1}
        """#).data.first
        #expect(names(found?["portalData"]?["roster"], "Players::name") == ["Bo"])
        #expect(names(found?["portalData"]?["all games"], "All_games::venue") == ["Fair Park"])
    }

    @Test func everyPredicateAndMultilineKeys() throws {
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
        let h = try Harness(schemaJSON: schema, db: "P")
        try h.login()
        let portals = h.send("GET", "\(h.base)/layouts/A/records/1", contentType: nil).data.first?["portalData"]
        func labels(_ p: String) -> [String] { names(portals?[p], "B_\(p)::label") }
        #expect(labels("eq") == ["r1", "b2"])          // a multi-line key matches each of its lines
        #expect(labels("ne") == ["r1", "b2", "g3"])    // the whole multi-line key differs from each; empty never matches
        #expect(labels("lt") == ["g3"])                // A::n < B::n
        #expect(labels("le") == ["b2", "g3"])
        #expect(labels("gt") == ["r1"])
        #expect(labels("ge") == ["r1", "b2"])          // two clauses, ANDed
        #expect(labels("all") == ["r1", "g3", "empty", "b2"])   // cartesian, sorted descending
    }

    @Test func schemaErrorsNameTheProblem() throws {
        func load(_ text: String) -> String {
            do { _ = try EmulatorSchema(jsonData: Data(text.utf8)); return "" } catch { return "\(error)" }
        }
        let base = #"{"database":"D","tables":{"A":{"fields":{"id":"number"}},"B":{"fields":{"a_id":"number"}}},"#
        #expect(load(base + #""occurrences":{"B2":"Nope"}}"#).contains("unknown table Nope"))
        #expect(load(base + #""relationships":[{"left":"A","right":"B","match":["id ~ a_id"]}]}"#).contains("OP"))
        #expect(load(base + #""relationships":[{"left":"A","right":"B","match":{"id":"zz"}}]}"#).contains("no match field zz"))
        #expect(load(base + #""occurrences":{"B2":"B"},"relationships":[{"left":"A","right":"B","match":{"id":"a_id"}},{"left":"A","right":"B2","match":{"id":"a_id"}},{"left":"B","right":"B2","match":{"a_id":"a_id"}}]}"#).contains("cycle"))
        #expect(load(base + #""layouts":{"L":{"table":"A","fields":["B::a_id"]}}}"#).contains("related field B::a_id"))
        #expect(load(base + #""layouts":{"L":{"table":"A","portals":{"p":{"table":"B"}}}}}"#).contains("no relationships from A to B"))
        #expect(load(base + #""scripts":{"S":{"steps":[{"step":"Send Mail"}]}}}"#).contains("unknown script step \"Send Mail\""))
        #expect(load(base + #""scripts":{"S":{"steps":[{"step":"Exit Script","result":"1 +"}]}}}"#).contains("scripts.S.steps[0].result"))
        #expect(load(base + #""scripts":{"S":{"steps":[{"step":"Go to Layout","layout":"Nope"}]}}}"#).contains("unknown layout Nope"))
        // The pre-occurrence form still loads and a portal with match fields needs no relationship.
        #expect(load(base + #""layouts":{"L":{"table":"A","portals":{"p":{"table":"B","match":{"id":"a_id"}}}}}}"#) == "")
    }
}

@Suite struct ScriptStepTests {
    func run(_ h: Harness, _ layout: String, _ script: String, _ param: String? = nil) -> Answer {
        let encoded = script.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? script
        let query = param.map { "?script.param=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" } ?? ""
        return h.send("GET", "\(h.base)/layouts/\(layout)/script/\(encoded)\(query)", contentType: nil)
    }

    @Test(arguments: Via.allCases) func stepsChangeRecordsAndComputeResults(via: Via) throws {
        let h = try leagueHarness(via: via)
        #expect(run(h, "Players", "Output with param", "abc").response["scriptResult"]?.stringValue == "Output with param abc")
        // E18 runs on the layout's found set (all records), current record the first: Cara.
        let add = run(h, "Players", "AddToScore", "5")
        #expect(add.response["scriptResult"]?.stringValue == "Cara now has 17")
        #expect(add.response["scriptError"]?.stringValue == "0")
        #expect(h.emulator.records(inTable: "Players").first?["score"] as? Int == 17)
        #expect(run(h, "Players", "New Player", "Flo").response["scriptResult"]?.stringValue == "5")
        let flo = h.emulator.records(inTable: "Players").last
        #expect(flo?["name"] as? String == "Flo")
        #expect(flo?["team_id"] as? Int == 1)
        #expect(flo?["nicknames(2)"] as? String == "rookie")
        #expect(run(h, "Players", "Bonus All").response["scriptResult"]?.stringValue == "5")
        #expect(h.emulator.records(inTable: "Players").compactMap { $0["score"] as? Int } == [18, 31, 8, 22, 1])
        #expect(run(h, "Players", "Count High Scores", "20").response["scriptResult"]?.stringValue == "2")
        let nobody = run(h, "Players", "Find Nobody")
        #expect(nobody.response == .object([("scriptResult", .string("found 0")), ("scriptError", .string("401"))]))
        #expect(run(h, "Players", "Retire Last").response["scriptResult"]?.stringValue == "4")
        #expect(h.emulator.records(inTable: "Players").map { $0["name"] as? String } == ["Cara", "Abe", "Bo", "Dee"])
        let missing = run(h, "Teams", "Require Parameter")
        #expect(missing.response == .object([("scriptResult", .string("missing parameter")), ("scriptError", .string("958"))]))
        #expect(run(h, "Teams", "Require Parameter", "go").response["scriptResult"]?.stringValue == "ok GO")
        #expect(run(h, "Teams", "Count To", "5").response["scriptResult"]?.stringValue == "counted to 5")
        #expect(run(h, "Teams", "Team Report").response["scriptResult"]?.stringValue
                == "Output with param Austin Armadillos: 3 players, city population 961855")
        #expect(run(h, "Teams", "Rename City", "42").response["scriptError"]?.stringValue == "0")
        #expect(h.emulator.records(inTable: "Cities").first?["population"] as? Int == 42)
        #expect(run(h, "Teams", "Legacy Echo", "still").response["scriptResult"]?.stringValue == "still")
    }

    @Test(arguments: Via.allCases) func stepsAsPrerequestPresortAndAfterScripts(via: Via) throws {
        let h = try leagueHarness(via: via)
        // after: the requested record is the current one; the answer shows what the script wrote.
        let get = h.send("GET", "\(h.base)/layouts/Players/records/2?script=AddToScore&script.param=3", contentType: nil)
        #expect(get.response["scriptResult"]?.stringValue == "Abe now has 33")
        #expect(get.data.first?["fieldData"]?["score"] == .number(33))
        // prerequest on a find runs before it (the whole table, first record current); presort sees the found set.
        let find = h.send("POST", "\(h.base)/layouts/Players/_find", body: #"""
        {"query":[{"score":">20"}],"script.prerequest":"AddToScore","script.prerequest.param":"100",
         "script.presort":"Count High Scores","script.presort.param":"50","script":"Output with param","script.param":"done"}
        """#)
        #expect(find.response["scriptResult.prerequest"]?.stringValue == "Cara now has 112")
        #expect(find.response["scriptResult.presort"]?.stringValue == "1")
        #expect(find.response["scriptResult"]?.stringValue == "Output with param done")
        #expect(find.response["dataInfo"]?["foundCount"] == .number(3))
        // A duplicate made by an after script on create.
        let create = h.send("POST", "\(h.base)/layouts/Players/records", body: #"{"fieldData":{"name":"Gil"},"script":"Clone Current"}"#)
        #expect(create.response["recordId"]?.stringValue == "5")
        #expect(create.response["scriptResult"]?.stringValue == "6")
        #expect(h.emulator.records(inTable: "Players").suffix(2).map { $0["name"] as? String } == ["Gil", "Gil"])
    }

    @Test func runawayLoopsStopAndClosuresStillWin() throws {
        let schema = #"{"database":"D","tables":{"A":{"fields":{"n":"number"}}},"layouts":{"A":{"table":"A"}},"scripts":{"Spin":{"steps":[{"step":"Loop","steps":[{"step":"Set Variable","name":"$x","value":"1"}]}]}}}"#
        let h = try Harness(schemaJSON: schema, db: "D")
        try h.login()
        let spin = h.send("GET", "\(h.base)/layouts/A/script/Spin", contentType: nil)
        #expect(spin.response == .object([("scriptError", .string("1"))]))
        h.emulator.registerScript("Spin") { _ in .result("closure") }
        #expect(h.send("GET", "\(h.base)/layouts/A/script/Spin", contentType: nil).response["scriptResult"]?.stringValue == "closure")
    }
}

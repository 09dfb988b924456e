import FMCapture
import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

/// `fm-emulator capture`: copy a running emulator into a schema file, load it, compare answers.
@Suite struct CaptureTests {
    static let leagueURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/league-schema.json")

    func client(_ url: URL, _ database: String) -> DataAPI {
        DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: database, username: "admin", password: "admin"))
    }

    /// Records as JSON objects with their key order dropped, for comparing two answers.
    func records(_ set: FMFoundSet) -> NSArray { set.records as NSArray }

    @Test func demoRoundTripAnswersTheSame() async throws {
        try await Emulator.withRunning(Emulator()) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Music", username: "admin",
                                                                    password: "admin", records: 20))
            #expect(result.skipped == [])
            #expect(result.notes.contains { $0.contains("Artists::id = Albums::artist_id") })
            #expect(result.notes.contains { $0.contains("4 script(s) captured by name only") })
            let copy = try Emulator(schemaJSON: result.schemaJSON)
            try await Emulator.withRunning(copy) { copy in
                let a = client(url, "Music"), b = client(try #require(copy.baseURL), "Music")
                let layoutsA = try await a.layouts(), layoutsB = try await b.layouts()
                #expect(layoutsA == layoutsB)
                #expect(try await a.scripts() == b.scripts())
                var names: [String] = []
                func walk(_ entries: [FMLayoutEntry]) { for e in entries { if e.isFolder { walk(e.children) } else { names.append(e.name) } } }
                walk(layoutsA)
                #expect(names.count == 4)
                for name in names {
                    let ma = try await a.layoutMetadata(layout: name), mb = try await b.layoutMetadata(layout: name)
                    #expect(ma == mb, "layout metadata of \(name)")
                    #expect(ma.valueLists == mb.valueLists)
                    let ra = try await a.getRecords(layout: name, limit: 20), rb = try await b.getRecords(layout: name, limit: 20)
                    #expect(records(ra).isEqual(records(rb)), "records of \(name)")
                    #expect(ra.dataInfo == rb.dataInfo)
                }
                // Scripts are stubs: they run, end with error 0 and no result.
                let stub = try await b.runScript(layout: "Artists", script: "Echo", parameter: "x")
                #expect(stub.result == nil)
            }
        }
    }

    @Test func partialCaptureIsWrittenWithWhatWasSkipped() async throws {
        let league = try Emulator(schemaFile: Self.leagueURL)
        try await Emulator.withRunning(league) { league in
            let url = try #require(league.baseURL)
            // One layout fails: the rest is still captured and the failure is listed.
            league.inject(.fileMakerError(code: "105", status: 500, message: "Layout is missing"), matching: "/layouts/Games")
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "League", username: "admin",
                                                                    password: "admin", records: 10))
            #expect(result.skipped.contains { $0.hasPrefix("layout Games: metadata failed (FileMaker 105") })
            let copy = try Emulator(schemaJSON: result.schemaJSON)
            #expect(copy.records(inTable: "Players").count == 4)
            #expect(copy.records(inTable: "Cities").first?["population"] as? Int == 961855)
        }
    }

    @Test func badCredentialsAndUnreachableServersAreReported() async throws {
        try await Emulator.withRunning(Emulator()) { emulator in
            let url = try #require(emulator.baseURL)
            do {
                _ = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Music", username: "admin", password: "wrong"))
                Issue.record("a refused login must throw")
            } catch let e as CaptureError {
                #expect(e.kind == .badCredentials)
            }
        }
        do {
            _ = try await SchemaCapture.run(CaptureOptions(host: "http://127.0.0.1:1", database: "Music", username: "admin",
                                                           password: "admin", timeout: 5))
            Issue.record("an unreachable server must throw")
        } catch let e as CaptureError {
            #expect(e.kind == .unreachable)
        }
    }

    @Test func repeatingFieldsSeenOnlyInPortalRowsKeepEveryRepetition() async throws {
        // Kids has no layout of its own: its records are seen only as portal rows, whose repeating fields are
        // sent as `Kids::names(1)`, `Kids::names(2)`.
        let schema = #"""
        {"database":"Rep","tables":{"Parents":{"fields":{"id":"number"}},
                                    "Kids":{"fields":{"parent_id":"number","names":{"type":"text","repetitions":2}}}},
         "layouts":{"Parents":{"table":"Parents","fields":["id"],
                               "portals":{"kids":{"table":"Kids","match":{"id":"parent_id"},"fields":["parent_id","names"]}}}},
         "records":{"Parents":[{"id":1},{"id":2}],
                    "Kids":[{"parent_id":1,"names":"a","names(2)":"b"},{"parent_id":2,"names":"c"},{"parent_id":1,"names(2)":"d"}]}}
        """#
        try await Emulator.withRunning(Emulator(schemaJSON: Data(schema.utf8))) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Rep", username: "admin",
                                                                    password: "admin", records: 10))
            #expect(result.skipped == [])
            let copy = try Emulator(schemaJSON: result.schemaJSON)
            #expect(copy.records(inTable: "Kids").map { $0["names"] as? String } == ["a", "c", ""])
            #expect(copy.records(inTable: "Kids").map { $0["names(2)"] as? String } == ["b", "", "d"])
            try await Emulator.withRunning(copy) { copy in
                let a = client(url, "Rep"), b = client(try #require(copy.baseURL), "Rep")
                let ra = try await a.getRecords(layout: "Parents"), rb = try await b.getRecords(layout: "Parents")
                #expect(records(ra).isEqual(records(rb)))
                #expect(try await a.layoutMetadata(layout: "Parents") == b.layoutMetadata(layout: "Parents"))
            }
        }
    }

    /// The League demo captured with records: relationships the Data API does not show (related fields on a
    /// layout, fields two hops from a portal, a cartesian portal, a portal filtered by an empty global) become
    /// snapshot relationships over the captured records, and portal row order is kept by an inferred sort, so the
    /// copy answers the same layout list, script list, layout metadata and records for every layout.
    @Test func leagueRoundTripAnswersTheSame() async throws {
        try await Emulator.withRunning(Emulator(schemaFile: Self.leagueURL)) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "League", username: "admin",
                                                                    password: "admin", records: 20))
            #expect(result.skipped == [])
            #expect(result.notes.contains { $0.contains("layout Teams, portal roster") && $0.contains("sorted by name") })
            #expect(result.notes.contains { $0.contains("Players") && $0.contains("Player_city") && $0.contains("snapshot") })
            try await Emulator.withRunning(Emulator(schemaJSON: result.schemaJSON)) { copy in
                // One related record per distinct value set seen; a team whose city fields were empty gets none.
                #expect(copy.records(inTable: "Team_city").map { $0["population"] as? Int } == [961855, 1304379])
                #expect(copy.records(inTable: "Player_city").count == 2)
                let a = client(url, "League"), b = client(try #require(copy.baseURL), "League")
                let layoutsA = try await a.layouts(), layoutsB = try await b.layouts()
                #expect(layoutsA == layoutsB)
                let scriptsA = try await a.scripts(), scriptsB = try await b.scripts()
                #expect(scriptsA == scriptsB)
                for name in ["Teams", "Players", "Cities", "Games"] {
                    let ma = try await a.layoutMetadata(layout: name), mb = try await b.layoutMetadata(layout: name)
                    #expect(ma == mb, "layout metadata of \(name)")
                    let ra = try await a.getRecords(layout: name, limit: 20), rb = try await b.getRecords(layout: name, limit: 20)
                    #expect(records(ra).isEqual(records(rb)), "records of \(name)")
                    #expect(ra.dataInfo == rb.dataInfo)
                }
            }
            // Without records nothing shows the relationships: those items are skipped, and the copy still loads.
            let bare = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "League", username: "admin",
                                                                  password: "admin"))
            #expect(bare.skipped.contains { $0.contains("Player_city::population") })
            #expect(bare.skipped.contains { $0.contains("portal all games") })
            _ = try Emulator(schemaJSON: bare.schemaJSON)
        }
    }

    /// A portal sorted by its relationship (year descending) keeps its row order in the copy; one in creation
    /// order gets no sort.
    @Test func portalRowOrderIsKept() async throws {
        let schema = #"""
        {"database":"Sorted","tables":{"Bands":{"fields":{"id":"number"}},"Gigs":{"fields":{"band_id":"number","year":"number","venue":"text"}}},
         "occurrences":{"Gigs_all":"Gigs"},
         "relationships":[{"left":"Bands","right":"Gigs","match":{"id":"band_id"},"sort":[{"field":"year","order":"descend"}]},
                          {"left":"Bands","right":"Gigs_all","match":{"id":"band_id"}}],
         "layouts":{"Bands":{"table":"Bands","fields":["id"],"portals":{"gigs":{"table":"Gigs","fields":["band_id","venue","year"]},
                                                                       "plain":{"table":"Gigs_all","fields":["band_id","venue"]}}}},
         "records":{"Bands":[{"id":1},{"id":2}],
                    "Gigs":[{"band_id":1,"year":2019,"venue":"A"},{"band_id":1,"year":2023,"venue":"B"},{"band_id":2,"year":2020,"venue":"C"},
                            {"band_id":1,"year":2021,"venue":"D"},{"band_id":2,"year":2022,"venue":"E"}]}}
        """#
        try await Emulator.withRunning(Emulator(schemaJSON: Data(schema.utf8))) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Sorted", username: "admin",
                                                                    password: "admin", records: 10))
            #expect(result.skipped == [])
            #expect(result.notes.contains("layout Bands, portal gigs: rows sorted by year descending (inferred from the row order seen)"))
            #expect(!result.notes.contains { $0.contains("portal plain: rows sorted") })
            try await Emulator.withRunning(Emulator(schemaJSON: result.schemaJSON)) { copy in
                let a = client(url, "Sorted"), b = client(try #require(copy.baseURL), "Sorted")
                let ra = try await a.getRecords(layout: "Bands"), rb = try await b.getRecords(layout: "Bands")
                #expect(records(ra).isEqual(records(rb)))
                let venues = ((rb.records.first?["portalData"] as? [String: Any])?["gigs"] as? [[String: Any]] ?? []).map { $0["Gigs::venue"] as? String }
                #expect(venues == ["B", "D", "A"])
            }
        }
    }

    /// A layout whose table is empty answers 401 to a range read: that is no records, not a failure.
    @Test func anEmptyLayoutIsNotSkipped() async throws {
        let schema = #"""
        {"database":"Empty","tables":{"A":{"fields":{"n":"number"}},"B":{"fields":{"t":"text"}}},
         "layouts":{"A":{"table":"A"},"B":{"table":"B"}},"records":{"A":[{"n":1}]}}
        """#
        try await Emulator.withRunning(Emulator(schemaJSON: Data(schema.utf8))) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Empty", username: "admin",
                                                                    password: "admin", records: 5))
            #expect(result.skipped == [])
            try await Emulator.withRunning(Emulator(schemaJSON: result.schemaJSON)) { copy in
                let a = client(url, "Empty"), b = client(try #require(copy.baseURL), "Empty")
                let ma = try await a.layoutMetadata(layout: "B"), mb = try await b.layoutMetadata(layout: "B")
                #expect(ma == mb)
                // The copy's B is empty too (an empty table reads as an empty found set, no longer a throw).
                #expect(try await b.getRecords(layout: "B").records.isEmpty)
                #expect(copy.records(inTable: "A").count == 1)
            }
        }
    }

    /// A field's validation options survive the copy: metadata that says "numeric only" (`numeric`) becomes
    /// `numericOnly` in the schema, so the copy reports it and refuses text in that number field as the original does.
    @Test func validationOptionsAreCopied() async throws {
        let schema = #"""
        {"database":"Checks","tables":{"Items":{"fields":{"strict":{"type":"number","numericOnly":true},"loose":"number",
          "required":{"type":"text","notEmpty":true,"maxCharacters":12}}}},
         "layouts":{"Items":{"table":"Items","fields":["strict","loose","required"]}},"records":{"Items":[{"strict":1,"required":"a"}]}}
        """#
        try await Emulator.withRunning(Emulator(schemaJSON: Data(schema.utf8))) { original in
            let url = try #require(original.baseURL)
            let result = try await SchemaCapture.run(CaptureOptions(host: url.absoluteString, database: "Checks", username: "admin",
                                                                    password: "admin", records: 5))
            #expect(result.skipped == [])
            try await Emulator.withRunning(Emulator(schemaJSON: result.schemaJSON)) { copy in
                let a = client(url, "Checks"), b = client(try #require(copy.baseURL), "Checks")
                let ma = try await a.layoutMetadata(layout: "Items"), mb = try await b.layoutMetadata(layout: "Items")
                #expect(ma.fieldMetaData.first { $0.name == "strict" }?.numeric == true)
                #expect(ma == mb)
                for api in [a, b] {
                    let code = await withCheckedContinuation { done in
                        api.createRecord(layout: "Items", fieldData: ["strict": "abc", "required": "b"]) { _, code in done.resume(returning: code) }
                    }
                    #expect(code == "502")
                }
            }
        }
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

// Schema files: the demo schema loads and serves Music, errors are clear, a schema loads from disk or from code,
// and concurrent requests, a start without a server and a start after a stop are safe.

@Suite struct SchemaTests {
    @Test func demoSchemaLoadsAndIsValid() throws {
        let schema = try EmulatorSchema.loadDemo()
        #expect(schema.database == "Music")
        try schema.validate()
        #expect(schema.layouts.contains { $0.name == "Album Detail / Print" })
        #expect(schema.layoutFolders.contains { $0.name == "Reports" })
        #expect(Set(schema.scripts.map(\.name)).isSuperset(of: ["Echo", "Fail", "Count Artists"]))
        let artists = try #require(schema.tables.first { $0.name == "Artists" })
        #expect(artists.fields.contains { $0.type == .container })
        #expect(artists.fields.contains { $0.global })
        #expect(artists.fields.contains { $0.repetitions > 1 })
        #expect(schema.layouts.first { $0.name == "Artists" }?.portals.first?.name == "albums")
        #expect(!(schema.layouts.first { $0.name == "Artists" }?.valueLists.isEmpty ?? true))
        // The embedded copy used by `Emulator()` is the resource file, byte for byte (bar the final newline).
        let url = try #require(Bundle.module.url(forResource: "demo-schema", withExtension: "json"))
        let fileText = try String(contentsOf: url, encoding: .utf8)
        #expect(fileText.trimmingCharacters(in: .newlines) == EmulatorSchema.demoSchemaText.trimmingCharacters(in: .newlines))
        #expect(EmulatorSchema.demo.layouts.count == schema.layouts.count)
        // Every seed record is accepted.
        _ = try Emulator(schemaJSON: try Data(contentsOf: try #require(Bundle.module.url(forResource: "demo-schema", withExtension: "json"))))
    }

    @Test func demoEmulatorServesMusic() throws {
        let emulator = Emulator()
        #expect(emulator.database == "Music")
        let h = try Harness(emulator: emulator, db: "Music")
        try h.login()
        let layouts = h.send("GET", "\(h.base)/layouts", contentType: nil)
        let reports = layouts.response["layouts"]?.arrayValue?.first { $0["name"]?.stringValue == "Reports" }
        #expect(reports?["isFolder"] == .bool(true))
        #expect(reports?["folderLayoutNames"]?.arrayValue?.first?["name"]?.stringValue == "Album Detail / Print")
        let odd = h.send("GET", "\(h.base)/layouts/\(percentEncoded("Album Detail / Print"))/records?_limit=2", contentType: nil)
        #expect(odd.status == 200)
        #expect(odd.data.count == 2)
        let brian = h.send("GET", "\(h.base)/layouts/Artists/records/1", contentType: nil)
        let record = try #require(brian.data.first)
        #expect(record["fieldData"]?["tags(2)"]?.stringValue == "producer")
        #expect(record["portalData"]?["albums"]?.arrayValue?.count == 2)
        #expect(record["portalData"]?["albums"]?.arrayValue?.first?["Albums::title"]?.stringValue == "Music for Airports")
        let count = h.send("GET", "\(h.base)/layouts/Albums/script/Count%20Artists", contentType: nil)
        #expect(count.response["scriptResult"]?.stringValue == "5")
        #expect(h.loginRequest(user: "admin", password: "nope").code == "212")
    }

    @Test func schemaErrorsAreClear() {
        func error(_ json: String) -> String {
            do {
                _ = try Emulator(schemaJSON: Data(json.utf8))
                return "no error"
            } catch let e as EmulatorSchemaError {
                return e.message
            } catch {
                return "\(error)"
            }
        }
        #expect(error("not json").contains("invalid JSON"))
        #expect(error("[]").contains("top level"))
        #expect(error(#"{"tables":{}}"#).contains("\"database\""))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"blob"}}}}"#).contains("unknown type \"blob\""))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"L":{"table":"X"}}}"#).contains("unknown table X"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"L":{"table":"T","fields":["b"]}}}"#).contains("no field b"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"F":{"folder":true,"layouts":["Z"]}}}"#).contains("unknown layout Z"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"records":{"T":[{"b":"1"}]}}"#).contains("no field b"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"date"}}},"records":{"T":[{"a":"31/31/2020"}]}}"#).contains("seed record"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"layouts":{"L":{"table":"T","portals":{"p":{"table":"T","match":{"x":"a"}}}}}}"#).contains("no match field x"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"scripts":{"S":{"layout":"Nope"}}}"#).contains("unknown layout Nope"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"limits":{"maxSessions":0}}"#).contains("maxSessions"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":{"type":"text","repetitions":0}}}}}"#).contains("repetitions"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}},"limits":{"maxSessions":1e400}}"#).contains("maxSessions"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":{"type":"text","maxCharacters":1e300}}}}}"#).contains("maxCharacters"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":{"type":"number","autoEnter":"serial","serialStart":1.5}}}}}"#).contains("serialStart"))
        #expect(error(#"{"database":"D","tables":{"T":{"fields":{"a":"text"}}}}"#) == "no error")
    }

    @Test func schemaFileFromDisk() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("emu-schema-\(UUID().uuidString).json")
        try Data(contactsSchemaJSON.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let emulator = try Emulator(schemaFile: url)
        #expect(emulator.database == "Contacts")
        #expect(emulator.recordCount(inTable: "Contacts") == 4)
        #expect(throws: EmulatorSchemaError.self) { try Emulator(schemaFile: url.appendingPathExtension("missing")) }
    }

    @Test func schemaInCode() throws {
        let schema = EmulatorSchema(
            database: "Code",
            tables: [.init("People", fields: [.init("id", .number, autoEnter: .serial(start: 100)), .init("name", .text, unique: true),
                                              .init("nick", .text, maxCharacters: 3), .init("made", .date, autoEnter: .creationDate)])],
            layouts: [.init("People", table: "People", fields: ["id", "name", "nick", "made"])],
            records: ["People": [["name": "Ann"]]])
        let fixed = Date(timeIntervalSince1970: 1_700_000_000) // 11/14/2023
        let emulator = Emulator(schema: schema, now: { fixed })
        let h = try Harness(emulator: emulator, db: "Code")
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/People/records/1", contentType: nil)
        #expect(a.data.first?["fieldData"]?["id"] == .number(100))
        #expect(a.data.first?["fieldData"]?["made"]?.stringValue == "11/14/2023")
        #expect(h.send("POST", "\(h.base)/layouts/People/records", body: #"{"fieldData":{"name":"ann"}}"#).code == "504")
        #expect(h.send("POST", "\(h.base)/layouts/People/records", body: #"{"fieldData":{"name":"Bo","nick":"abcd"}}"#).code == "511")
        let ok = h.send("POST", "\(h.base)/layouts/People/records", body: #"{"fieldData":{"name":"Bo","nick":"abc"}}"#)
        #expect(ok.response["recordId"]?.stringValue == "2")
        // Invalid seed records are skipped by the non-throwing initialiser.
        var bad = schema
        bad.records = ["People": [["made": "nonsense"]]]
        #expect(Emulator(schema: bad).recordCount(inTable: "People") == 0)
    }

    @Test func concurrentRequestsAreSafe() async throws {
        let h = try Harness()
        let token = try h.login()
        let emulator = h.emulator
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<8 {
                group.addTask {
                    for j in 0..<25 {
                        let body = Data(#"{"fieldData":{"name":"c\#(i)-\#(j)"}}"#.utf8)
                        _ = emulator.handler.handle(HTTPRequest(method: "POST", target: "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records",
                                                                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: body))
                        _ = emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/databases/Contacts/layouts/Slim/records?_limit=5",
                                                                headers: [("Authorization", "Bearer \(token)")]))
                    }
                }
            }
        }
        #expect(emulator.recordCount(inTable: "Contacts") == 204)
        let ids = emulator.records(inTable: "Contacts").compactMap { $0["recordId"] as? String }
        #expect(Set(ids).count == 204)
        #expect(emulator.requestLog.count == 401)
    }

    @Test func startWithoutServerOrAfterStopIsSafe() {
        let emulator = Emulator()
        emulator.stop()
        emulator.stop()
        #expect(emulator.baseURL == nil)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// Pins the exact bytes the emulator writes for records (the record writer was rewritten for
/// speed and must stay byte-identical): every field type, repetitions, globals, related layout fields,
/// portals with ranges, `dateformats`, JSON escapes and number formatting.
@Suite struct RecordWriterPinTests {
    static let schema = #"""
    {
      "database": "Pin",
      "accounts": [ { "username": "admin", "password": "admin" } ],
      "tables": {
        "People": { "fields": {
          "id": { "type": "number", "autoEnter": "serial" }, "name": "text", "score": "number", "born": "date",
          "seen": "timestamp", "alarm": "time", "photo": "container", "tags": { "type": "text", "repetitions": 3 },
          "g": { "type": "text", "global": true }, "hidden": "text" } },
        "Pets": { "fields": { "owner": "number", "pname": "text", "weight": "number" } }
      },
      "layouts": {
        "People": { "table": "People",
          "fields": ["id", "name", "score", "born", "seen", "alarm", "photo", "tags", "g", "Pets::pname", "Pets::weight"],
          "portals": { "pets": { "table": "Pets", "match": { "id": "owner" }, "fields": ["pname", "weight"] } } }
      },
      "records": {
        "People": [
          { "name": "Ann \"A\" \\ B\n\t\u0001 é 😀", "score": "3.25", "born": "03/04/1975", "seen": "12/31/2023 23:59:58",
            "alarm": "07:05:09", "tags": "red", "tags(3)": "blue", "hidden": "x" },
          { "name": "", "score": "-0.0000125", "born": "" },
          { "name": "Big", "score": "123456789012", "seen": "01/02/2003 04:05:06" },
          { "name": "Frac", "score": "1e21" },
          { "name": "Neg", "score": "-7" },
          { "name": "Small", "score": "0.1" }
        ],
        "Pets": [
          { "owner": 1, "pname": "Rex", "weight": "12.5" },
          { "owner": 1, "pname": "Tom", "weight": "4" },
          { "owner": 1, "pname": "Kit", "weight": "" },
          { "owner": 3, "pname": "Solo", "weight": "0.000001" }
        ]
      }
    }
    """#

    func harness() throws -> Harness {
        let h = try Harness(schemaJSON: Self.schema, db: "Pin")
        try h.login()
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"People::g":"glob"}}"#).status == 200)
        let stored = upload(h, path: "\(h.base)/layouts/People/records/1/containers/photo", part: "upload", filename: "a.png", data: Data([1, 2, 3]))
        #expect(stored.status == 200)
        return h
    }

    /// The container key is random: replace it with a fixed one before comparing.
    func stable(_ body: Data) -> String {
        let text = String(decoding: body, as: UTF8.self)
        return text.replacingOccurrences(of: #"MainDB/[0-9A-F]{64}"#, with: "MainDB/KEY", options: .regularExpression)
    }

    @Test func rangeWithPortalRangeAndDefaultDates() throws {
        let h = try harness()
        let a = h.send("GET", "\(h.base)/layouts/People/records?_limit=6&_offset.pets=2&_limit.pets=5", contentType: nil)
        #expect(stable(a.body) == Self.range)
    }

    @Test func findSortedWithISODates() throws {
        let h = try harness()
        let a = h.send("POST", "\(h.base)/layouts/People/_find",
                       body: #"{"query":[{"name":"*"},{"score":">0"}],"sort":[{"fieldName":"score","sortOrder":"descend"}],"dateformats":2,"portal":["pets"],"limit.pets":1}"#)
        #expect(stable(a.body) == Self.find)
    }

    @Test func oneRecordV1() throws {
        let h = try harness()
        let a = h.send("GET", "/fmi/data/v1/databases/Pin/layouts/People/records/2", contentType: nil)
        #expect(stable(a.body) == Self.one)
    }

    static let range = #"""
{"response":{"dataInfo":{"database":"Pin","layout":"People","table":"People","totalRecordCount":6,"foundCount":6,"returnedCount":6},"data":[{"fieldData":{"id":1,"name":"Ann \"A\" \\ B\n\t\u0001 é 😀","score":3.25,"born":"03/04/1975","seen":"12/31/2023 23:59:58","alarm":"07:05:09","photo":"http://127.0.0.1:3000/Streaming_SSL/MainDB/KEY.png?RCType=EmbeddedRCFileProcessor","tags":"red","tags(2)":"","tags(3)":"blue","g":"glob","Pets::pname":"Rex","Pets::weight":12.5},"portalData":{"pets":[{"recordId":"2","Pets::pname":"Tom","Pets::weight":4,"modId":"0"},{"recordId":"3","Pets::pname":"Kit","Pets::weight":"","modId":"0"}]},"recordId":"1","modId":"1","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":3,"returnedCount":2}]},{"fieldData":{"id":2,"name":"","score":-0.0000125,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"2","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]},{"fieldData":{"id":3,"name":"Big","score":123456789012,"born":"","seen":"01/02/2003 04:05:06","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"Solo","Pets::weight":0.000001},"portalData":{"pets":[]},"recordId":"3","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":1,"returnedCount":0}]},{"fieldData":{"id":4,"name":"Frac","score":1000000000000000000000,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"4","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]},{"fieldData":{"id":5,"name":"Neg","score":-7,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"5","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]},{"fieldData":{"id":6,"name":"Small","score":0.1,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"6","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]}]},"messages":[{"code":"0","message":"OK"}]}
"""#
    static let find = #"""
{"response":{"dataInfo":{"database":"Pin","layout":"People","table":"People","totalRecordCount":6,"foundCount":5,"returnedCount":5},"data":[{"fieldData":{"id":4,"name":"Frac","score":1000000000000000000000,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"4","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]},{"fieldData":{"id":3,"name":"Big","score":123456789012,"born":"","seen":"2003-01-02T04:05:06","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"Solo","Pets::weight":0.000001},"portalData":{"pets":[{"recordId":"4","Pets::pname":"Solo","Pets::weight":0.000001,"modId":"0"}]},"recordId":"3","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":1,"returnedCount":1}]},{"fieldData":{"id":1,"name":"Ann \"A\" \\ B\n\t\u0001 é 😀","score":3.25,"born":"1975-03-04","seen":"2023-12-31T23:59:58","alarm":"07:05:09","photo":"http://127.0.0.1:3000/Streaming_SSL/MainDB/KEY.png?RCType=EmbeddedRCFileProcessor","tags":"red","tags(2)":"","tags(3)":"blue","g":"glob","Pets::pname":"Rex","Pets::weight":12.5},"portalData":{"pets":[{"recordId":"1","Pets::pname":"Rex","Pets::weight":12.5,"modId":"0"}]},"recordId":"1","modId":"1","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":3,"returnedCount":1}]},{"fieldData":{"id":6,"name":"Small","score":0.1,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"6","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]},{"fieldData":{"id":5,"name":"Neg","score":-7,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"5","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]}]},"messages":[{"code":"0","message":"OK"}]}
"""#
    static let one = #"""
{"response":{"dataInfo":{"database":"Pin","layout":"People","table":"People","totalRecordCount":6,"foundCount":1,"returnedCount":1},"data":[{"fieldData":{"id":2,"name":"","score":-0.0000125,"born":"","seen":"","alarm":"","photo":"","tags":"","tags(2)":"","tags(3)":"","g":"glob","Pets::pname":"","Pets::weight":""},"portalData":{"pets":[]},"recordId":"2","modId":"0","portalDataInfo":[{"portalObjectName":"pets","database":"Pin","table":"Pets","foundCount":0,"returnedCount":0}]}]},"messages":[{"code":"0","message":"OK"}]}
"""#
}

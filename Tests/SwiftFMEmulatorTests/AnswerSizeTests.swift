import Foundation
import Testing
@testable import SwiftFMEmulator

/// What the emulator answers is held to ``Emulator/maxAnswerBytes``: an answer that would pass it is refused
/// (HTTP 500, FileMaker's 953) instead of being built. Before, a few records asked for gigabytes: ten records
/// (five on each side of a relationship every record matches) and one `GET` with eight nested `$expand`s
/// built a 345 MB answer (761 MB resident, 30 s); 2,000 records and a cross-product portal (`_limit.cs=100`)
/// 212 MB from 4 MB of data (`_limit.cs=2000`: 4.2 GB); a `$batch` of 1,000 reads holds 1,000 answers. These
/// tests lower the cap rather than build such answers.
@Suite struct AnswerSizeTests {
    /// `P` and `C`, every record related to every other (`k` is `a` everywhere) by an `=` relationship (an
    /// OData navigation both ways) and seen through a portal `cs` on layout `P`; each text `t` is 1,000 bytes.
    static func schema(records: Int) -> String {
        let row = #"{ "k": "a", "t": "\#(String(repeating: "x", count: 1_000))" }"#
        let rows = Array(repeating: row, count: records).joined(separator: ",")
        return #"""
        {
          "database": "Boom",
          "accounts": [ { "username": "admin", "password": "admin" } ],
          "tables": {
            "P": { "fields": { "id": { "type": "number", "autoEnter": "serial" }, "k": "text", "t": "text", "photo": "container" } },
            "C": { "fields": { "id": { "type": "number", "autoEnter": "serial" }, "k": "text", "t": "text" } }
          },
          "relationships": [ { "left": "P", "right": "C", "match": { "k": "k" } } ],
          "layouts": {
            "P": { "table": "P", "fields": ["id", "k", "t"], "portals": { "cs": { "table": "C", "fields": ["id", "t"] } } },
            "C": { "table": "C", "fields": ["id", "k", "t"] }
          },
          "records": { "P": [\#(rows)], "C": [\#(rows)] }
        }
        """#
    }

    static let nested = "$expand=C($expand=P($expand=C($expand=P($expand=C($expand=P)))))"
    static let nestedFromC = "$expand=P($expand=C($expand=P($expand=C($expand=P($expand=C)))))"

    @Test func aNestedExpandPastTheCapIsRefusedWith953() throws {
        let c = try ODataClient(schemaJSON: Self.schema(records: 5), via: .handler)
        c.emulator.maxAnswerBytes = 1 << 20
        // 5 × 5 × … rows: 5⁷ = 78,125 rows, 13.8 MB without the cap (main answered 200 with all of it).
        let refused = c.send("GET", "/Boom/P?\(Self.nested)")
        #expect(refused.status == 500)
        #expect(refused.odataCode == "953")
        #expect(refused.odataMessage == "Exceeded limit on data the FileMaker Data API and OData can transmit (*)")
        #expect(refused.body.count < 1_000)
        // The same read of a single entity, and through a navigation, are refused too.
        #expect(c.send("GET", "/Boom/P(1)?\(Self.nested)").odataCode == "953")
        #expect(c.send("GET", "/Boom/P(1)/C?\(Self.nestedFromC)").odataCode == "953")
        // Under the cap the answer is whole.
        let two = c.send("GET", "/Boom/P?$expand=C($expand=P)")
        #expect(two.status == 200)
        #expect(two.rows.count == 5)
        #expect(two.rows.first?["C"]?.arrayValue?.first?["P"]?.arrayValue?.count == 5)
        #expect(two.body.count > 125_000 && two.body.count < 1 << 20)
        // An expansion's error is still written in its place (ODATA.md §3.5), not as a refusal.
        #expect(c.send("GET", "/Boom/P?$expand=C($filter=nope%20eq%201)").status == 200)
    }

    @Test func aFoundSetPastTheCapIsRefusedWith953() throws {
        let h = try Harness(schemaJSON: Self.schema(records: 20), db: "Boom")
        try h.login()
        h.emulator.maxAnswerBytes = 100_000
        // 20 records × 20 portal rows of 1 KB: 400 KB.
        let portal = h.send("GET", "\(h.base)/layouts/P/records?_limit.cs=20")
        #expect(portal.status == 500)
        #expect(portal.code == "953")
        #expect(portal.message == "Exceeded limit on data the FileMaker Data API and OData can transmit (*)")
        #expect(portal.body.count < 1_000)
        // A find writes through the same page writer.
        let find = h.send("POST", "\(h.base)/layouts/P/_find", body: #"{"query":[{"k":"a"}],"limit.cs":"20"}"#)
        #expect(find.code == "953")
        // One portal row each: 40 KB, answered.
        let small = h.send("GET", "\(h.base)/layouts/P/records?_limit.cs=1")
        #expect(small.status == 200)
        #expect(small.data.count == 20)
        // A layout without portals (the flat plan): 20 KB, refused under a 10 KB cap.
        h.emulator.maxAnswerBytes = 10_000
        #expect(h.send("GET", "\(h.base)/layouts/C/records").code == "953")
        #expect(h.send("GET", "\(h.base)/layouts/C/records?_limit=5").status == 200)
    }

    /// The parts' statuses of a multipart answer, change sets flattened.
    func statuses(_ a: Answer) -> [Int] {
        a.text.components(separatedBy: "\r\n").compactMap { line -> Int? in
            guard line.hasPrefix("HTTP/1.1 ") else { return nil }
            return Int(line.dropFirst(9).prefix(3))
        }
    }

    func batch(_ c: ODataClient, _ parts: [String], prefer: String? = nil) -> Answer {
        let body = parts.map { "--b1\r\nContent-Type: application/http\r\n\r\n\($0)\r\n" }.joined() + "--b1--\r\n"
        var headers: [(name: String, value: String)] = []
        if let prefer { headers.append(("Prefer", prefer)) }
        return c.send("POST", "/Boom/$batch", body: body, headers: headers, contentType: "multipart/mixed; boundary=b1")
    }

    @Test(arguments: [false, true]) func aBatchIsHeldToTheCapAsAWhole(continueOnError: Bool) throws {
        let c = try ODataClient(schemaJSON: Self.schema(records: 20), via: .handler)
        let read = "GET C HTTP/1.1\r\n"
        let one = c.send("GET", "/Boom/C")
        #expect(one.status == 200)
        let size = one.body.count
        #expect(size > 20_000)
        c.emulator.maxAnswerBytes = 5 * size + size / 2
        let prefer = continueOnError ? "odata.continue-on-error" : nil
        let answer = batch(c, Array(repeating: read, count: 1_000), prefer: prefer)
        #expect(answer.status == 200)
        // Five reads fit; the sixth answers 953 and ends the batch, with or without continue-on-error.
        #expect(statuses(answer) == [200, 200, 200, 200, 200, 500])
        #expect(answer.text.contains(#""code":"953""#))
        #expect(answer.text.hasSuffix("--\r\n"))
        #expect(answer.body.count <= c.emulator.maxAnswerBytes)
        // A cap between two reads and one: the second read's own limit is what the first left.
        c.emulator.maxAnswerBytes = size + size / 2
        #expect(statuses(batch(c, [read, read])) == [200, 500])
    }

    @Test func aBatchOfContainerValuesIsHeldToTheCap() throws {
        let c = try ODataClient(schemaJSON: Self.schema(records: 1), via: .handler)
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 7, count: 100_000)
        let stored = c.sendData("PATCH", "/Boom/P(1)/photo", body: png, headers: [("Content-Type", "image/png")])
        #expect(stored.status == 204 || stored.status == 200, "\(stored.text.prefix(200))")
        #expect(c.send("GET", "/Boom/P(1)/photo/$value").body == png)
        c.emulator.maxAnswerBytes = 350_000
        // Each `$value` is the container's bytes; three fit, the fourth is refused.
        let answer = batch(c, Array(repeating: "GET P(1)/photo/$value HTTP/1.1\r\n", count: 1_000))
        #expect(statuses(answer) == [200, 200, 200, 500])
        #expect(answer.body.count <= 350_000)
    }

    @Test func aChangeSetWhoseAnswersPassTheCapIsRolledBack() throws {
        let c = try ODataClient(schemaJSON: Self.schema(records: 1), via: .handler)
        let create = "POST C HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"k\":\"b\",\"t\":\"\(String(repeating: "y", count: 10_000))\"}"
        let changeset = (0..<10).map { _ in "--cs1\r\nContent-Type: application/http\r\n\r\n\(create)\r\n" }.joined() + "--cs1--\r\n"
        let body = "--b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n\(changeset)--b1--\r\n"
        c.emulator.maxAnswerBytes = 50_000
        let answer = c.send("POST", "/Boom/$batch", body: body, contentType: "multipart/mixed; boundary=b1")
        #expect(statuses(answer) == [500])
        #expect(answer.text.contains(#""code":"953""#))
        // All or nothing: none of the ten records stays.
        #expect(c.send("GET", "/Boom/C?$filter=k%20eq%20'b'&$count=true").json?["@odata.count"]?.numberText == "0")
        c.emulator.maxAnswerBytes = 1 << 20
        #expect(statuses(c.send("POST", "/Boom/$batch", body: body, contentType: "multipart/mixed; boundary=b1")) == Array(repeating: 201, count: 10))
    }

    @Test("The cap is a control API setting: read, set, and refused when not a whole number from 1")
    func theCapIsAControlSetting() throws {
        let c = try ControlledEmulator()
        #expect(try c.control("GET", "/v1/settings").json["maxAnswerBytes"] as? Int == 256 << 20)
        let set = try c.control("PATCH", "/v1/settings", #"{"maxAnswerBytes":1000}"#)
        #expect(set.status == 200)
        #expect(set.json["maxAnswerBytes"] as? Int == 1_000)
        #expect(c.emulator.maxAnswerBytes == 1_000)
        let token = try c.data.token()
        // Four contacts, with their notes, are more than 1,000 bytes; one is less.
        let refused = try c.data.send("GET", "\(c.data.base)/layouts/Contacts/records", token: token)
        #expect(refused.status == 500)
        #expect(refused.code == "953")
        #expect(try c.data.send("GET", "\(c.data.base)/layouts/Contacts/records?_limit=1", token: token).code == "0")
        for bad in [#"{"maxAnswerBytes":0}"#, #"{"maxAnswerBytes":-1}"#, #"{"maxAnswerBytes":2.5}"#, #"{"maxAnswerBytes":"5"}"#] {
            let r = try c.control("PATCH", "/v1/settings", bad)
            #expect(r.status == 400, "\(bad)")
            #expect((r.json["error"] as? String)?.contains("maxAnswerBytes") == true, "\(bad)")
        }
        #expect(c.emulator.maxAnswerBytes == 1_000)
    }

    @Test func aRefusedAnswerIsLoggedAsRefused() throws {
        let h = try Harness(schemaJSON: Self.schema(records: 20), db: "Boom")
        try h.login()
        let lines = LockedLines()
        h.emulator.onRequest = { lines.append($0) }
        h.emulator.maxAnswerBytes = 10_000
        #expect(h.send("GET", "\(h.base)/layouts/C/records").code == "953")
        #expect(h.send("GET", "\(h.base)/layouts/C/records?_limit=1").status == 200)
        let log = h.emulator.requestLog.suffix(2).map(\.status)
        // On main (before the cap) no answer was refused after it was logged; here the log says what the client got.
        #expect(log == [500, 200])
        #expect(lines.all.suffix(2).map { $0.hasSuffix("→ 500 (code 953)") } == [true, false])
    }
}

/// Lines a hook receives, from any thread.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

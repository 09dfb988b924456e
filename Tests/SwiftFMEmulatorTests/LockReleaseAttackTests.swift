import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// What a request does after the emulator's state lock is released (a find matching on a snapshot, a `$batch` part
/// by part, an OData `$filter` on a snapshot) answers as it would under the lock, whatever other clients do meanwhile
/// (attack12).
@Suite struct LockReleaseAttackTests {
    /// A two-digit year in a find's criterion is read relative to the emulator's clock, as it is when the record is
    /// written, also when the find matches after the lock is released (with or without scripts). Before, the matching
    /// read it relative to the machine's clock: in 2015, `2/3/46` is stored as 1946, and a find for it looked for 2046
    /// and answered 401.
    @Test(arguments: ["", #","script":"Echo","script.param":"x""#, #","script.prerequest":"Echo""#])
    func aFindReadsTwoDigitYearsOnTheEmulatorsClock(scripts: String) throws {
        let h = try Harness(emulator: contactsEmulator(clockIn: 2015), db: "Contacts")
        try h.login()
        let created = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"Y","date":"2/3/46"}}"#)
        #expect(created.status == 200)
        let id = try #require(created.response["recordId"]?.stringValue)
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil).data.first?["fieldData"]?["date"]?.stringValue == "02/03/1946")
        let found = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"date":"2/3/46"}]"# + scripts + "}")
        #expect(found.status == 200, "\(String(decoding: found.body, as: UTF8.self))")
        #expect(found.data.compactMap { $0["recordId"]?.stringValue } == [id])
        // A range too.
        let range = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"date":"1/1/46...12/31/46"}]"# + scripts + "}")
        #expect(range.data.compactMap { $0["recordId"]?.stringValue } == [id])
    }

    /// Sends a `$batch` (boundary `b1`, LF lines made CRLF).
    func batch(_ c: ODataClient, _ body: String) -> Answer {
        c.send("POST", "/Shop/$batch", body: body.replacingOccurrences(of: "\n", with: "\r\n"), contentType: "multipart/mixed; boundary=b1")
    }

    /// A change set is all or nothing for schema changes too: one whose last request fails leaves no table created
    /// and no field added. Before, the tables were rolled back but not the schema they are rebuilt from: after a
    /// reset the table and the field rolled back were there.
    @Test func aChangeSetRolledBackLeavesNoSchemaChange() throws {
        let c = try ODataClient()
        let metadata = c.send("GET", "/Shop/$metadata").text
        let body = """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        POST FileMaker_Tables HTTP/1.1
        Content-Type: application/json

        {"tableName":"Company","fields":[{"name":"Company ID","type":"int","primary":true},{"name":"Name","type":"varchar(20)"}]}
        --cs1
        Content-Type: application/http

        PATCH FileMaker_Tables/Customers HTTP/1.1
        Content-Type: application/json

        {"fields":[{"name":"Extra","type":"varchar(20)"}]}
        --cs1
        Content-Type: application/http

        POST Company HTTP/1.1
        Content-Type: application/json

        {"Company ID":1,"Name":"Acme"}
        --cs1
        Content-Type: application/http

        POST Customers HTTP/1.1
        Content-Type: application/json

        {"code":"ALFKI","name":"Twice"}
        --cs1--
        --b1--
        """
        let a = batch(c, body)
        #expect(a.status == 200, "\(a.text)")
        #expect(a.text.contains("HTTP/1.1 400") || a.text.contains("HTTP/1.1 409") || a.text.contains("HTTP/1.1 500"), "\(a.text)")
        #expect(!a.text.contains("HTTP/1.1 201"), "\(a.text)")
        // Nothing of the change set is left: the schema is as it was.
        #expect(c.send("GET", "/Shop/FileMaker_Tables").rows.compactMap { $0["TableName"]?.stringValue } == ["Customers", "Orders"])
        #expect(c.send("GET", "/Shop/$metadata").text == metadata)
        #expect(c.send("GET", "/Shop/Company").status == 404)
        #expect(c.send("GET", "/Shop/Customers?$select=Extra").status == 400)
        // Nor after a reset, which rebuilds the records from the schema.
        c.emulator.reset()
        #expect(c.send("GET", "/Shop/FileMaker_Tables").rows.compactMap { $0["TableName"]?.stringValue } == ["Customers", "Orders"])
        #expect(c.send("GET", "/Shop/$metadata").text == metadata)
        #expect(c.send("GET", "/Shop/Company").status == 404)
        // The same changes alone succeed.
        #expect(c.send("POST", "/Shop/FileMaker_Tables", body: #"{"tableName":"Company","fields":[{"name":"Company ID","type":"int","primary":true},{"name":"Name","type":"varchar(20)"}]}"#).status == 200)
        #expect(c.send("PATCH", "/Shop/FileMaker_Tables/Customers", body: #"{"fields":[{"name":"Extra","type":"varchar(20)"}]}"#).status == 200)
        #expect(c.send("POST", "/Shop/Company", body: #"{"Company ID":1,"Name":"Acme"}"#).status == 201)
    }

    // MARK: Many clients at once

    static let basic = "Basic " + Data("admin:admin".utf8).base64EncodedString()

    static func odata(_ handler: any HTTPHandler, _ method: String, _ path: String, body: String? = nil,
                      contentType: String = "application/json") -> Answer {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", basic),
                                                        ("Prefer", "odata.continue-on-error")]
        if body != nil { headers.append(("Content-Type", contentType)) }
        let r = handler.handle(HTTPRequest(method: method, target: "/fmi/odata/v4/Shop" + path, headers: headers, body: Data((body ?? "").utf8)))
        return Answer(r)
    }

    static func dataAPI(_ handler: any HTTPHandler, _ method: String, _ path: String, token: String, body: String,
                        basic useBasic: Bool = false) -> Answer {
        let headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", useBasic ? basic : "Bearer \(token)"),
                                                        ("Content-Type", "application/json")]
        let r = handler.handle(HTTPRequest(method: method, target: "/fmi/data/vLatest/databases/Shop" + path, headers: headers,
                                           body: Data(body.utf8)))
        return Answer(r)
    }

    /// A change set inserting two orders of `tag` (and, when `failing`, a customer that exists between them: the change
    /// set fails),
    /// then a read of `tag`'s orders with their count.
    static func pairBatch(tag: String, failing: Bool) -> String {
        func insert(_ total: Int) -> String {
            "--cs1\nContent-Type: application/http\n\nPOST Orders HTTP/1.1\nContent-Type: application/json\n\n{\"customer_code\":\"\(tag)\",\"total\":\(total)}\n"
        }
        let fail = failing ? "--cs1\nContent-Type: application/http\n\nPOST Customers HTTP/1.1\nContent-Type: application/json\n\n{\"code\":\"ALFKI\"}\n" : ""
        let body = "--b1\nContent-Type: multipart/mixed; boundary=cs1\n\n" + insert(1) + fail + insert(2) + "--cs1--\n"
            + "--b1\nContent-Type: application/http\n\nGET Orders?$filter=customer_code%20eq%20'\(tag)'&$count=true HTTP/1.1\n\n\n--b1--\n"
        return body.replacingOccurrences(of: "\n", with: "\r\n")
    }

    /// The orders' `customer_code`s of a JSON answer's rows (OData `value` or Data API `data`), counted by tag.
    static func tally(_ codes: [String]) -> [String: Int] {
        codes.reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }

    /// Threads insert orders two at a time in change sets (some failing, which insert nothing), read them back in
    /// the same batch and alone with `$filter` and `$count`, find them with scripts through the Data API, while
    /// another thread resets the emulator and creates and drops a table. Every answer is one state: a change set is
    /// seen whole or not at all (each tag's count is even), a count agrees with its rows, a found set with its
    /// `foundCount`, and a find returns only records that match it.
    @Test func manyClientsSeeOneStateInEveryAnswer() throws {
        let c = try ODataClient()
        let emulator = c.emulator
        let handler = emulator.handler
        let token = Locked(try c.harness.login())
        let problems = LockedLines()
        let threads = 4, rounds = 40
        DispatchQueue.concurrentPerform(iterations: threads + 1) { thread in
            var rng = SplitMix64(seed: UInt64(77 + thread))
            if thread == threads {
                // The disturber: resets, and a table created and dropped, read in a batch in between.
                for round in 0..<rounds {
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: emulator.reset()
                    case 1:
                        _ = Self.odata(handler, "POST", "/FileMaker_Tables", body: #"{"tableName":"Tmp","fields":[{"name":"k","type":"int","primary":true}]}"#)
                        _ = Self.odata(handler, "POST", "/Tmp", body: #"{"k":\#(round)}"#)
                    default:
                        _ = Self.odata(handler, "DELETE", "/FileMaker_Tables/Tmp")
                    }
                }
                return
            }
            for round in 0..<rounds {
                let tag = "T\(thread)-\(round % 3)"
                switch Int.random(in: 0..<4, using: &rng) {
                case 0, 1:
                    let failing = Bool.random(using: &rng)
                    let a = Self.odata(handler, "POST", "/$batch", body: Self.pairBatch(tag: tag, failing: failing), contentType: "multipart/mixed; boundary=b1")
                    guard a.status == 200 else { problems.append("batch \(a.status)"); continue }
                    // The read part: its count agrees with its rows, all of `tag`, an even number of them.
                    guard let json = a.text.components(separatedBy: "\r\n").last(where: { $0.hasPrefix("{") }),
                          let read = try? JSON.parse(Data(json.utf8)) else { problems.append("batch read missing: \(a.text.prefix(300))"); continue }
                    let codes = read["value"]?.arrayValue?.compactMap { $0["customer_code"]?.stringValue } ?? []
                    let count = read["@odata.count"]?.scalarText.flatMap { Int($0) }
                    if count != codes.count { problems.append("batch read count \(String(describing: count)) rows \(codes.count)") }
                    if codes.contains(where: { $0 != tag }) { problems.append("batch read of \(tag) has \(codes)") }
                    if codes.count % 2 != 0 { problems.append("batch read of \(tag): \(codes.count) rows (a change set seen in part)") }
                case 2:
                    let a = Self.odata(handler, "GET", "/Orders?$filter=startswith(customer_code,'T')&$count=true&$orderby=customer_code")
                    guard a.status == 200 else { problems.append("read \(a.status) \(a.text.prefix(200))"); continue }
                    let codes = a.rows.compactMap { $0["customer_code"]?.stringValue }
                    let count = a.json?["@odata.count"]?.scalarText.flatMap { Int($0) }
                    if count != codes.count { problems.append("read count \(String(describing: count)) rows \(codes.count)") }
                    for (t, n) in Self.tally(codes) where n % 2 != 0 { problems.append("read: \(t) has \(n) rows (a change set seen in part)") }
                    let counted = Self.odata(handler, "GET", "/Orders/$count?$filter=customer_code%20eq%20'\(tag)'")
                    if counted.status == 200, let n = Int(counted.text), n % 2 != 0 { problems.append("$count of \(tag): \(n)") }
                default:
                    let find = #"{"query":[{"customer_code":"==\#(tag)"}],"script":"Echo","script.param":"x","limit":10000}"#
                    var a = Self.dataAPI(handler, "POST", "/layouts/Orders/_find", token: token.withLock { $0 }, body: find)
                    if a.code == "952" {
                        // A reset closed the session: log in again.
                        let login = Self.dataAPI(handler, "POST", "/sessions", token: "", body: "{}", basic: true)
                        guard let fresh = login.response["token"]?.stringValue else { continue }
                        token.withLock { $0 = fresh }
                        a = Self.dataAPI(handler, "POST", "/layouts/Orders/_find", token: fresh, body: find)
                    }
                    // No records, or another reset meanwhile.
                    if a.status == 500 && a.code == "401" || a.code == "952" { continue }
                    guard a.status == 200 else { problems.append("find \(a.status) \(a.text.prefix(200))"); continue }
                    let codes = a.data.compactMap { $0["fieldData"]?["customer_code"]?.stringValue }
                    let found = a.response["dataInfo"]?["foundCount"]?.scalarText.flatMap { Int($0) }
                    let returned = a.response["dataInfo"]?["returnedCount"]?.scalarText.flatMap { Int($0) }
                    if found != codes.count || returned != codes.count {
                        problems.append("find foundCount \(String(describing: found)) returnedCount \(String(describing: returned)) rows \(codes.count)")
                    }
                    if codes.contains(where: { $0 != tag }) { problems.append("find of \(tag) returned \(codes)") }
                    if codes.count % 2 != 0 { problems.append("find of \(tag): \(codes.count) records (a change set seen in part)") }
                }
            }
        }
        #expect(problems.all.isEmpty, "\(problems.all.prefix(20))")
        // Quiet again: the emulator answers, and every tag's orders are whole pairs.
        let a = c.send("GET", "/Shop/Orders?$filter=startswith(customer_code,'T')&$count=true")
        #expect(a.status == 200)
        for (t, n) in Self.tally(a.rows.compactMap { $0["customer_code"]?.stringValue }) { #expect(n % 2 == 0, "\(t): \(n)") }
    }

    // MARK: Between a scripted find's phases

    /// A find with scripts whose records are all gone by the time its scripts run (a reset meanwhile) finds nothing,
    /// even when new records took their ids. Before, it answered the new records, which do not match it: a find for
    /// `==T1` returned two `T2` orders.
    @Test func aScriptedFindAcrossAResetReturnsNoOtherRecords() throws {
        let c = try ODataClient()
        let token = try c.harness.login()
        for total in [1, 2] {
            #expect(c.harness.send("POST", "\(c.harness.base)/layouts/Orders/records", body: #"{"fieldData":{"customer_code":"T1","total":\#(total)}}"#).status == 200)
        }
        let find = HTTPRequest(method: "POST", target: "\(c.harness.base)/layouts/Orders/_find",
                               headers: [("Host", "127.0.0.1:3000"), ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                               body: Data(#"{"query":[{"customer_code":"==T1"}],"script":"Echo","script.param":"x"}"#.utf8))
        let answer = Answer(try #require(whileMatching(find, in: c.emulator) {
            // Meanwhile: a reset (T1's orders are gone), and two new orders, which take their ids.
            c.emulator.reset()
            for total in [3, 4] {
                #expect(c.send("POST", "/Shop/Orders", body: #"{"customer_code":"T2","total":\#(total)}"#).status == 201)
            }
        }))
        let codes = answer.data.compactMap { $0["fieldData"]?["customer_code"]?.stringValue }
        #expect(!codes.contains("T2"), "a find for ==T1 answered \(codes)")
        #expect(answer.status == 500 && answer.code == "401", "\(answer.text)")
    }

    // MARK: Between a batch's parts

    /// A table dropped between a batch's parts (while the first one's rows are written): the parts after it answer
    /// 404, as they would alone, and the first one's rows are those of its snapshot.
    @Test func aTableDroppedBetweenABatchsParts() throws {
        let c = try ODataClient()
        #expect(c.send("POST", "/Shop/FileMaker_Tables", body: #"{"tableName":"Tmp","fields":[{"name":"k","type":"int","primary":true},{"name":"v","type":"varchar(9)"}]}"#).status == 200)
        for k in 1...3 { #expect(c.send("POST", "/Shop/Tmp", body: #"{"k":\#(k),"v":"x"}"#).status == 201) }
        let drop = HTTPRequest(method: "DELETE", target: "/fmi/odata/v4/Shop/FileMaker_Tables/Tmp",
                               headers: [("Host", "127.0.0.1:3000"), ("Authorization", Self.basic)])
        let body = """
        --b1
        Content-Type: application/http

        GET Tmp?$filter=v%20eq%20'x'&$count=true HTTP/1.1


        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        PATCH Tmp(1) HTTP/1.1
        Content-Type: application/json

        {"v":"y"}
        --cs1--
        --b1
        Content-Type: application/http

        GET Tmp/$count HTTP/1.1


        --b1--
        """
        let (a, other, wrote) = c.answering(drop, at: \.odataWillFilter) {
            c.send("POST", "/Shop/$batch", body: body.replacingOccurrences(of: "\n", with: "\r\n"),
                   headers: [("Prefer", "odata.continue-on-error")], contentType: "multipart/mixed; boundary=b1")
        }
        #expect(wrote)
        #expect(other?.status == 204, "the table was not dropped while the batch ran")
        #expect(a.status == 200)
        let statuses = a.text.components(separatedBy: "\r\n").compactMap { $0.hasPrefix("HTTP/1.1 ") ? Int($0.dropFirst(9).prefix(3)) : nil }
        #expect(statuses == [200, 404, 404], "\(a.text)")
        #expect(a.text.contains(#""@odata.count":3"#), "\(a.text)")
        #expect(c.send("GET", "/Shop/Tmp").status == 404)
    }
}

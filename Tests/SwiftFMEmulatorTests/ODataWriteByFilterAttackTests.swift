import Foundation
import Testing
@testable import SwiftFMEmulator

/// An OData `PATCH` or `DELETE` by `$filter` (checked under the state lock, matched on a snapshot outside it, written
/// under it again) keeps the contract of a write that filters and writes in one step:
/// - it leaves nothing behind that no record holds (a container's bytes sent to no record are dropped, on the fast path
///   and when it is answered again under the lock);
/// - it notes its changes once, with the records it wrote, whichever path wrote them (one webhook operation per kind
///   of change, the rows as written), and the request log holds one entry with the status the client got;
/// - ``EmulatorState/dataVersion`` moves on every change a match could see (either API's writes, a reset) and never on
///   a read or a refused write (either would make the write match again under the lock).
@Suite struct ODataWriteByFilterAttackTests {
    /// A 1×1 PNG's first bytes, base64: a container body.
    static let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"

    func blobCount(_ c: ODataClient) -> Int { c.emulator.core.state.withLock { $0.blobs.count } }
    func version(_ c: ODataClient) -> Int { c.emulator.core.state.withLock { $0.dataVersion } }

    // MARK: Nothing left behind

    /// A container sent by a write by `$filter` that writes no record (nothing matches, or its match went meanwhile and
    /// it is answered again under the lock) is not kept: before, its bytes stayed until the emulator stopped, one copy
    /// per request.
    @Test(arguments: [false, true])
    func aContainerWrittenToNoRecordIsNotKept(matchGoesMeanwhile: Bool) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let before = blobCount(c)
        let body = #"{"photo":"\#(Self.png)"}"#
        let answer: Answer
        if matchGoesMeanwhile {
            let deleted = Locked<Int?>(nil)
            let (a, ran, _) = c.whileMatching({ c.send("PATCH", "/Shop/Customers?$filter=code%20eq%20'NUL'", body: body) }) {
                let r = handler.handle(ODataClient.otherClient("DELETE", "/Customers('NUL')"))
                deleted.withLock { $0 = r.status }
            }
            #expect(ran, "the delete did not run while the write matched")
            #expect(deleted.withLock { $0 } == 204)
            answer = a
        } else {
            answer = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Nowhere'", body: body)
        }
        #expect(answer.status == 204 && answer.header("fmodata.affected_rows") == "0", "\(answer.text)")
        #expect(blobCount(c) == before, "the container's bytes were kept with no record holding them")
        // A write that does reach records keeps one copy, held by them.
        let written = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: body)
        #expect(written.status == 204 && written.header("fmodata.affected_rows") == (matchGoesMeanwhile ? "1" : "2"), "\(written.text)")
        #expect(blobCount(c) == before + 1)
        #expect(c.send("GET", "/Shop/Customers('ALFKI')/photo/$value").body.count > 0)
    }

    // MARK: Notes, webhooks and the log: once, as written

    /// Counts the `$filter` matches while `write` runs; `meanwhile` (if any) runs on another thread while the first
    /// match runs. The answer, whether `meanwhile` ran then, and the number of matches (2: answered again under the lock).
    func counting(_ c: ODataClient, _ write: () -> Answer, meanwhile: (@Sendable () -> Void)?) -> (answer: Answer, ran: Bool, matches: Int) {
        let matches = Locked(0)
        guard let meanwhile else {
            c.emulator.core.state.withLock { $0.odataWillFilter = { matches.withLock { $0 += 1 } } }
            defer { c.emulator.core.state.withLock { $0.odataWillFilter = nil } }
            let answer = write()
            return (answer, true, matches.withLock { $0 })
        }
        let raced = c.whileMatching(write, meanwhile: meanwhile)
        return (raced.answer, raced.ranMeanwhile, raced.matches)
    }

    /// One webhook operation per write by `$filter`, with the rows as written, whether the write is made with the ids
    /// matched on the snapshot or answered again under the lock (a write to another table meanwhile).
    @Test(arguments: ["PATCH", "DELETE"], [false, true])
    func aWriteByFilterNotifiesOnceWithItsRows(method: String, changeMeanwhile: Bool) throws {
        let receiver = try WebhookReceiver()
        let c = try ODataClient()
        let handler = c.emulator.handler
        #expect(c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"\#(receiver.url)","tableName":"Customers","select":"code,score"}"#).status == 200)
        let serial = c.emulator.core.state.withLock { $0.odataWebhookSerial }
        let other = Locked<Int?>(nil)
        let change: @Sendable () -> Void = {
            let r = handler.handle(ODataClient.otherClient("POST", "/Orders", body: #"{"customer_code":"NUL","total":1}"#))
            other.withLock { $0 = r.status }
        }
        let meanwhile = changeMeanwhile ? change : nil
        let (write, ran, matches) = counting(c, {
            c.send(method, "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: method == "PATCH" ? #"{"score":9}"# : nil)
        }, meanwhile: meanwhile)
        #expect(ran, "the other write did not run while the write matched")
        if changeMeanwhile { #expect(other.withLock { $0 } == 201) }
        // Answered again under the lock only when something changed meanwhile.
        #expect(matches == (changeMeanwhile ? 2 : 1))
        #expect(write.status == 204 && write.header("fmodata.affected_rows") == "2", "\(write.text)")
        // One operation for the write (the Orders write is not watched).
        #expect(c.emulator.core.state.withLock { $0.odataWebhookSerial } == serial + 1)
        let delivered = try #require(receiver.next())
        let rows = (try? JSON.parse(delivered.body))?["value"]?.arrayValue ?? []
        #expect(rows.compactMap { $0["code"]?.stringValue } == ["ALFKI", "NUL"])
        #expect(rows.compactMap { $0["score"]?.numberText } == (method == "PATCH" ? ["9", "9"] : ["5", "1"]))
        let pending = c.emulator.core.state.withLock { s in s.odataWebhooks[1].map { $0.pending.map(\.operation) } ?? [] }
        #expect(pending.allSatisfy { $0 == (method == "PATCH" ? "UPDATE" : "DELETE") })
    }

    /// A write by `$filter` that fails when answered again under the lock (a record that matches meanwhile makes a
    /// `unique` field clash) writes nothing, notifies nothing, and is logged once with the status the client got.
    @Test func aWriteThatFailsWhenAnsweredAgainLeavesNoTrace() throws {
        let receiver = try WebhookReceiver()
        let c = try ODataClient()
        let handler = c.emulator.handler
        #expect(c.send("PATCH", "/Shop/Customers('NUL')", body: #"{"city":"Paris"}"#).status == 204)
        #expect(c.send("POST", "/Shop/Webhook.Add", body: #"{"webhook":"\#(receiver.url)","tableName":"Customers"}"#).status == 200)
        let serial = c.emulator.core.state.withLock { $0.odataWebhookSerial }
        let target = "/fmi/odata/v4/Shop/Customers?$filter=city%20eq%20'Berlin'"
        let moved = Locked<Int?>(nil)
        // Alone, ALFKI matches and takes the code; ZOE moving to Berlin meanwhile makes two records want it.
        let (write, ran, matches) = counting(c, { c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: #"{"code":"SAME"}"#) }) {
            let r = handler.handle(ODataClient.otherClient("PATCH", "/Customers('ZOE')", body: #"{"city":"Berlin"}"#))
            moved.withLock { $0 = r.status }
        }
        #expect(ran && moved.withLock { $0 } == 204)
        #expect(matches == 2)
        #expect(write.status == 400 && write.odataCode == "504", "\(write.text)")
        let logged = c.emulator.requestLog.filter { $0.target == target }
        #expect(logged.map(\.status) == [400])
        // The move was noted (one operation); the failed write nothing.
        #expect(c.emulator.core.state.withLock { $0.odataWebhookSerial } == serial + 1)
        let delivered = try #require(receiver.next())
        #expect((try? JSON.parse(delivered.body))?["value"]?.arrayValue?.compactMap { $0["code"]?.stringValue } == ["ZOE"])
        #expect(c.send("GET", "/Shop/Customers?$filter=code%20eq%20'SAME'").rows.isEmpty)
    }

    // MARK: The version

    /// Reads through either API (and the emulator's own accessors) leave ``EmulatorState/dataVersion`` alone: a write
    /// by `$filter` matching meanwhile writes the ids it matched, without matching again under the lock.
    @Test func readsDoNotMoveTheVersion() throws {
        let c = try ODataClient()
        let h = c.harness
        try h.login()
        let start = version(c)
        let batchOfReads = "--b\r\nContent-Type: application/http\r\n\r\nGET Customers?$filter=score%20gt%202&$expand=Orders HTTP/1.1\r\n\r\n--b--\r\n"
        let reads: [() -> Int] = [
            { c.send("GET", "/Shop/Customers?$filter=city%20eq%20'Berlin'&$expand=Orders&$count=true").status },
            { c.send("GET", "/Shop/Customers('ALFKI')/Orders").status },
            { c.send("GET", "/Shop/Orders?$apply=aggregate(total%20with%20sum%20as%20t)").status },
            { c.send("GET", "/Shop/$metadata").status },
            { c.send("GET", "/Shop/FileMaker_Tables").status },
            { c.send("GET", "/Shop/Webhook.GetAll").status },
            { c.send("POST", "/Shop/$batch", body: batchOfReads, contentType: "multipart/mixed; boundary=b").status },
            { c.send("POST", "/Shop/Script.Echo", body: #"{"scriptParameterValue":"x"}"#).status },
            { h.send("GET", "\(h.base)/layouts/Customers/records?_limit=10&script=Echo").status },
            { h.send("GET", "\(h.base)/layouts/Customers/records/1").status },
            { h.send("POST", "\(h.base)/layouts/Customers/_find", body: #"{"query":[{"city":"Berlin"}],"sort":[{"fieldName":"score"}]}"#).status },
            { h.send("GET", "\(h.base)/layouts/Customers/script/Echo?script.param=1").status },
            { h.send("GET", "\(h.base)/layouts/Customers").status },
            { h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Customers::g_note":"g"}}"#).status },
            { c.emulator.records(inTable: "Customers").count },
        ]
        for (i, read) in reads.enumerated() {
            let status = read()
            #expect(status == 200 || i == reads.count - 1, "read \(i): \(status)")
            #expect(version(c) == start, "read \(i) moved the version")
        }
    }

    /// Every change a match could see moves the version: writes through the Data API (create, edit, duplicate, delete,
    /// a container upload, a script's write), through OData, and a reset.
    @Test func everyChangeMovesTheVersion() throws {
        let c = try ODataClient()
        let h = c.harness
        try h.login()
        let upload = "--x\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n--x--\r\n"
        let changes: [(String, () -> Int)] = [
            ("create", { h.send("POST", "\(h.base)/layouts/Customers/records", body: #"{"fieldData":{"code":"NEW","city":"Berlin"}}"#).status }),
            ("edit", { h.send("PATCH", "\(h.base)/layouts/Customers/records/1", body: #"{"fieldData":{"city":"Rome"}}"#).status }),
            ("duplicate", { h.send("POST", "\(h.base)/layouts/Orders/records/1", body: "{}").status }),
            ("delete", { h.send("DELETE", "\(h.base)/layouts/Orders/records/2").status }),
            ("upload", { h.send("POST", "\(h.base)/layouts/Customers/records/2/containers/photo", body: upload,
                                contentType: "multipart/form-data; boundary=x").status }),
            ("odata", { c.send("PATCH", "/Shop/Customers('ZOE')", body: #"{"score":1}"#).status == 204 ? 200 : 0 }),
            ("addRecord", { ((try? c.emulator.addRecord(toTable: "Orders", ["total": "3"])) != nil) ? 200 : 0 }),
            ("reset", { c.emulator.reset(); return 200 }),
        ]
        for (name, change) in changes {
            let before = version(c)
            #expect(change() == 200, "\(name)")
            #expect(version(c) != before, "\(name) did not move the version")
        }
    }

    /// A write refused, by either API, changes no record, so it leaves the version where it was: a write by `$filter`
    /// matching meanwhile need not match again under the lock.
    @Test func refusedWritesDoNotMoveTheVersion() throws {
        let c = try ODataClient()
        let h = c.harness
        try h.login()
        let failingChangeSet = "--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n"
            + "--cs\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\nPATCH Customers('ZOE') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"score\":5}\r\n"
            + "--cs\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\nPATCH Customers('ZOE') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"nope\":1}\r\n"
            + "--cs--\r\n--b--\r\n"
        let refusals: [(String, () -> Int)] = [
            ("odata create, unknown field", { c.send("POST", "/Shop/Customers", body: #"{"code":"X1","nope":1}"#).status }),
            ("odata update, unknown field", { c.send("PATCH", "/Shop/Customers('ZOE')", body: #"{"nope":1}"#).status }),
            ("odata update by filter, unknown field", { c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: #"{"nope":1}"#).status }),
            ("odata change set, second step refused", { c.send("POST", "/Shop/$batch", body: failingChangeSet, contentType: "multipart/mixed; boundary=b").status }),
            ("data api create, unknown field", { h.send("POST", "\(h.base)/layouts/Customers/records", body: #"{"fieldData":{"nope":"x"}}"#).status }),
            ("data api edit, no such record", { h.send("PATCH", "\(h.base)/layouts/Customers/records/999999", body: #"{"fieldData":{"city":"Rome"}}"#).status }),
        ]
        for (name, refusal) in refusals {
            let before = version(c)
            let status = refusal()
            #expect(version(c) == before, "\(name) (HTTP \(status)) moved the version")
        }
        #expect(c.send("GET", "/Shop/Customers('ZOE')?$select=score").rows.first?["score"] as? Int != 5, "the refused change set wrote")
    }

    // MARK: Many writers at once

    /// Writers by `$filter` racing each other: every write is all or nothing at one moment, so a `PATCH` counts every
    /// Berlin record and stamps each once (their modIds grow by the number of writes), and the `DELETE`s together count
    /// each record once.
    @Test func manyWritersAtOnceStayAtomic() throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        for i in 0..<40 {
            #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"B\#(i)","city":"Berlin","score":0}"#).status == 201)
        }
        let berlin = c.send("GET", "/Shop/Customers?$filter=city%20eq%20'Berlin'&$select=code").rows.count
        #expect(berlin == 42)
        let modIds = { c.emulator.records(inTable: "Customers").filter { ($0["city"] as? String) == "Berlin" }.map { $0["modId"] as? String ?? "" } }
        let before = modIds().compactMap { Int($0) }
        let writers = 8
        let counts = Locked<[String]>([])
        let group = DispatchGroup()
        for w in 0..<writers {
            group.enter()
            DispatchQueue.global().async {
                let r = handler.handle(ODataClient.otherClient("PATCH", "/Customers?$filter=city%20eq%20'Berlin'", body: #"{"score":\#(w)}"#))
                counts.withLock { $0.append("\(r.status) \(Answer(r).header("fmodata.affected_rows") ?? "-")") }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 300) == .success, "the writers did not all end")
        #expect(counts.withLock { $0 } == Array(repeating: "204 42", count: writers))
        #expect(modIds().compactMap { Int($0) } == before.map { $0 + writers })
        let scores = Set(c.send("GET", "/Shop/Customers?$filter=city%20eq%20'Berlin'&$select=score").rows.compactMap { $0["score"]?.numberText })
        #expect(scores.count == 1, "\(scores)")

        let deleted = Locked<[Int]>([])
        for _ in 0..<writers {
            group.enter()
            DispatchQueue.global().async {
                let r = handler.handle(ODataClient.otherClient("DELETE", "/Customers?$filter=city%20eq%20'Berlin'"))
                deleted.withLock { $0.append(r.status == 204 ? Int(Answer(r).header("fmodata.affected_rows") ?? "") ?? -1 : -1) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 300) == .success, "the writers did not all end")
        #expect(deleted.withLock { $0.reduce(0, +) } == 42, "\(deleted.withLock { $0 })")
        #expect(c.send("GET", "/Shop/Customers?$select=code").rows.count == 2)
    }

    // MARK: A match that cannot be evaluated

    /// A `substring` length past the end (the largest integer) reads to the end of the text, in a write's match as in a
    /// read's: before, `start + length` overflowed and the emulator's process trapped, outside the lock on the fast path.
    @Test(arguments: ["GET", "PATCH", "DELETE"])
    func aSubstringToTheLargestLengthReadsToTheEnd(method: String) throws {
        let c = try ODataClient()
        let filter = "substring(name,1,9223372036854775807)%20eq%20'lfreds'"
        let answer = c.send(method, "/Shop/Customers?$filter=" + filter + (method == "GET" ? "&$select=code" : ""),
                            body: method == "PATCH" ? #"{"score":9}"# : nil)
        if method == "GET" {
            #expect(answer.status == 200 && answer.rows.compactMap { $0["code"]?.stringValue } == ["ALFKI"], "\(answer.text)")
        } else {
            #expect(answer.status == 204 && answer.header("fmodata.affected_rows") == "1", "\(answer.text)")
        }
    }

    // MARK: The Data API meanwhile, and $batch

    /// A Data API edit meanwhile is a change the write sees: a match moved away is left alone and not counted.
    @Test(arguments: ["PATCH", "DELETE"])
    func aDataAPIEditMeanwhileIsSeen(method: String) throws {
        let c = try ODataClient()
        let h = c.harness
        try h.login()
        let handler = c.emulator.handler
        let edit = HTTPRequest(method: "PATCH", target: "\(h.base)/layouts/Customers/records/4",
                               headers: [("Host", "127.0.0.1:3000"), ("Authorization", "Bearer \(h.token)"), ("Content-Type", "application/json")],
                               body: Data(#"{"fieldData":{"city":"Paris"}}"#.utf8))
        let edited = Locked<Int?>(nil)
        let (write, ran, _) = c.whileMatching({
            c.send(method, "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: method == "PATCH" ? #"{"score":9}"# : nil)
        }) {
            let r = handler.handle(edit)
            edited.withLock { $0 = r.status }
        }
        #expect(ran && edited.withLock { $0 } == 200)
        #expect(write.status == 204 && write.header("fmodata.affected_rows") == "1", "\(write.text)")
        let nul = c.send("GET", "/Shop/Customers('NUL')?$select=city,score")
        #expect(nul.json?["city"]?.stringValue == "Paris" && nul.json?["score"]?.numberText == "1", "\(nul.text)")
    }

    /// In a `$batch`, a write by `$filter` outside a change set answered again (a change meanwhile) is committed on its
    /// own and counts what it wrote; a failing part after it ends the batch without undoing it; a change set after it
    /// sees its writes.
    @Test func aBatchsWriteByFilterAnsweredAgainThenAFailingPart() throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let move = c.moveNULToParis()
        let moved = Locked<Int?>(nil)
        let body = """
        --b1
        Content-Type: application/http

        PATCH Customers?$filter=city%20eq%20'Berlin' HTTP/1.1
        Content-Type: application/json

        {"score":9}
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        DELETE Customers?$filter=score%20eq%209 HTTP/1.1

        --cs1--
        --b1
        Content-Type: application/http

        PATCH Customers('NOPE') HTTP/1.1
        Content-Type: application/json

        {"score":1}
        --b1
        Content-Type: application/http

        DELETE Customers?$filter=city%20eq%20'Paris' HTTP/1.1

        --b1--

        """.replacingOccurrences(of: "\n", with: "\r\n")
        let (answer, ran, _) = c.whileMatching({ c.send("POST", "/Shop/$batch", body: body, contentType: "multipart/mixed; boundary=b1") }) {
            let r = handler.handle(move)
            moved.withLock { $0 = r.status }
        }
        #expect(ran && moved.withLock { $0 } == 204)
        #expect(answer.status == 200)
        let counts = answer.text.components(separatedBy: "fmodata.affected_rows: ").dropFirst().map { $0.prefix { $0.isNumber } }
        #expect(counts == ["1", "1"], "\(answer.text)")
        #expect(answer.text.contains("HTTP/1.1 404"), "\(answer.text)")
        // ALFKI was written then deleted by the change set; the part after the failure did not run (ZOE, NUL in Paris).
        let codes = c.send("GET", "/Shop/Customers?$select=code").rows.compactMap { $0["code"]?.stringValue }
        #expect(codes == ["OBR", "ZOE", "NUL"])
    }
}


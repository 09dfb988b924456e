import Foundation
import Testing
@testable import SwiftFMEmulator

/// An OData `PATCH` or `DELETE` addressed by `$filter` is parsed and checked under the emulator's state lock, matches on
/// a snapshot after the lock is released (other clients are answered meanwhile), and takes the lock again to write.
/// Its answer is the one the write would have given evaluated atomically when it writes (FileMaker evaluates the
/// filter and writes in one step): a record deleted or changed meanwhile, a record that matches meanwhile, a reset, a
/// field or table dropped meanwhile are all seen. Before, the matching ran under the lock and held every other client.
@Suite struct ODataWriteByFilterOutsideLockTests {
    /// Sends `request` through `handler` and returns its status (another client, while a write matches).
    static func send(_ handler: any HTTPHandler, _ request: HTTPRequest, into status: Locked<Int?>) {
        let r = handler.handle(request)
        status.withLock { $0 = r.status }
    }

    /// The Berlin write: `PATCH` sets `score` to 9, `DELETE` removes the records.
    func writeBerlin(_ c: ODataClient, _ method: String) -> Answer {
        c.send(method, "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: method == "PATCH" ? #"{"score":9}"# : nil)
    }

    /// The customers' codes (in creation order) with their scores.
    func scores(_ c: ODataClient) -> [String: String] {
        var out: [String: String] = [:]
        for row in c.send("GET", "/Shop/Customers?$select=code,score").rows {
            if let code = row["code"]?.stringValue { out[code] = row["score"]?.numberText ?? "null" }
        }
        return out
    }

    // MARK: Other clients

    @Test(arguments: ["PATCH", "DELETE"])
    func otherClientsAreAnsweredWhileAWriteByFilterMatches(method: String) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let read = Locked<Int?>(nil)
        let (write, ran, matches) = c.whileMatching({ writeBerlin(c, method) }) {
            Self.send(handler, ODataClient.otherClient("GET", "/Customers('ZOE')"), into: read)
        }
        #expect(ran, "no other client was answered while the write matched")
        // A read meanwhile changes nothing: the write does not match again under the lock.
        #expect(matches == 1)
        #expect(read.withLock { $0 } == 200)
        #expect(write.status == 204, "\(write.text)")
        #expect(write.header("fmodata.affected_rows") == "2")
        if method == "PATCH" {
            #expect(scores(c) == ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9"])
        } else {
            #expect(scores(c) == ["OBR": "3.5", "ZOE": "4"])
        }
    }

    // MARK: Races between the match and the write

    /// A record the snapshot matched that is deleted meanwhile is neither written nor counted.
    @Test(arguments: ["PATCH", "DELETE"])
    func aMatchedRecordDeletedMeanwhileIsNotCounted(method: String) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let deleted = Locked<Int?>(nil)
        let (write, ran, _) = c.whileMatching({ writeBerlin(c, method) }) {
            Self.send(handler, ODataClient.otherClient("DELETE", "/Customers('NUL')"), into: deleted)
        }
        #expect(ran, "no other client was answered while the write matched")
        #expect(deleted.withLock { $0 } == 204)
        #expect(write.status == 204, "\(write.text)")
        #expect(write.header("fmodata.affected_rows") == "1")
        #expect(scores(c) == (method == "PATCH" ? ["ALFKI": "9", "OBR": "3.5", "ZOE": "4"] : ["OBR": "3.5", "ZOE": "4"]))
    }

    /// A record the snapshot matched that is changed meanwhile so it no longer matches is left alone.
    @Test(arguments: ["PATCH", "DELETE"])
    func aRecordThatNoLongerMatchesIsLeftAlone(method: String) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let moved = Locked<Int?>(nil)
        let move = c.moveNULToParis()
        let (write, ran, _) = c.whileMatching({ writeBerlin(c, method) }) {
            Self.send(handler, move, into: moved)
        }
        #expect(ran, "no other client was answered while the write matched")
        #expect(moved.withLock { $0 } == 204)
        #expect(write.status == 204, "\(write.text)")
        #expect(write.header("fmodata.affected_rows") == "1")
        #expect(scores(c) == (method == "PATCH" ? ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "1"] : ["OBR": "3.5", "ZOE": "4", "NUL": "1"]))
        #expect(c.send("GET", "/Shop/Customers('NUL')/city").json?["value"]?.stringValue == "Paris")
    }

    /// A record created or changed meanwhile so that it matches is written too.
    @Test(arguments: ["PATCH", "DELETE"], [true, false])
    func aRecordThatMatchesMeanwhileIsWrittenToo(method: String, created: Bool) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let status = Locked<Int?>(nil)
        let other = created ? ODataClient.otherClient("POST", "/Customers", body: #"{"code":"NEW","city":"Berlin","score":2}"#)
                            : ODataClient.otherClient("PATCH", "/Customers('ZOE')", body: #"{"city":"Berlin"}"#)
        let (write, ran, _) = c.whileMatching({ writeBerlin(c, method) }) {
            Self.send(handler, other, into: status)
        }
        #expect(ran, "no other client was answered while the write matched")
        #expect(status.withLock { $0 } == (created ? 201 : 204))
        #expect(write.status == 204, "\(write.text)")
        #expect(write.header("fmodata.affected_rows") == "3")
        let expected: [String: String]
        switch (method, created) {
        case ("PATCH", true): expected = ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9", "NEW": "9"]
        case ("PATCH", false): expected = ["ALFKI": "9", "OBR": "3.5", "ZOE": "9", "NUL": "9"]
        case (_, true): expected = ["OBR": "3.5", "ZOE": "4"]
        default: expected = ["OBR": "3.5"]
        }
        #expect(scores(c) == expected)
    }

    /// A reset meanwhile: the write writes the records after it (the ids it matched may name other records now).
    @Test(arguments: ["PATCH", "DELETE"])
    func aResetMeanwhileWritesTheRecordsAfterIt(method: String) throws {
        let c = try ODataClient()
        let emulator = c.emulator
        // Before: NUL in Paris, a new Berlin customer (the fifth record): the snapshot matches ALFKI and NEW.
        #expect(c.send("PATCH", "/Shop/Customers('NUL')", body: #"{"city":"Paris"}"#).status == 204)
        #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"NEW","city":"Berlin","score":2}"#).status == 201)
        let (write, ran, _) = c.whileMatching({ writeBerlin(c, method) }) { emulator.reset() }
        #expect(ran, "the reset did not run while the write matched")
        // After the reset, ALFKI and NUL are in Berlin (the seed), NEW is gone.
        #expect(write.status == 204, "\(write.text)")
        #expect(write.header("fmodata.affected_rows") == "2")
        #expect(scores(c) == (method == "PATCH" ? ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9"] : ["OBR": "3.5", "ZOE": "4"]))
    }

    /// What is dropped meanwhile from a table made through OData (`Tmp`: `k`, `v`, `w`): the filter's field, the body's
    /// field, the table.
    enum Dropped: String, CaseIterable {
        case filterField = "/FileMaker_Tables/Tmp/v"
        case bodyField = "/FileMaker_Tables/Tmp/w"
        case table = "/FileMaker_Tables/Tmp"
    }

    /// A field or table dropped meanwhile: the write answers what it would answer sent now, and changes nothing.
    @Test(arguments: Dropped.allCases, ["PATCH", "DELETE"])
    func aSchemaChangeMeanwhileIsTheAtomicAnswer(dropped: Dropped, method: String) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        #expect(c.send("POST", "/Shop/FileMaker_Tables", body: #"{"tableName":"Tmp","fields":[{"name":"k","type":"int","primary":true},{"name":"v","type":"varchar(9)"},{"name":"w","type":"varchar(9)"}]}"#).status == 200)
        #expect(c.send("POST", "/Shop/Tmp", body: #"{"k":1,"v":"a","w":"x"}"#).status == 201)
        #expect(c.send("POST", "/Shop/Tmp", body: #"{"k":2,"v":"b","w":"x"}"#).status == 201)
        let path = "/Shop/Tmp?$filter=v%20eq%20'a'"
        let body = method == "PATCH" ? #"{"w":"z"}"# : nil
        let status = Locked<Int?>(nil)
        let (write, ran, _) = c.whileMatching({ c.send(method, path, body: body) }) {
            Self.send(handler, ODataClient.otherClient("DELETE", dropped.rawValue), into: status)
        }
        #expect(ran, "no other client was answered while the write matched")
        #expect(status.withLock { $0 } == 204)
        // The atomic answer: the same write sent now.
        let now = c.send(method, path, body: body)
        #expect(write.status == now.status)
        #expect(write.text == now.text)
        switch (dropped, method) {
        case (.table, _):
            #expect(write.status == 404 && write.odataCode == "-1020", "\(write.text)")
        case (.filterField, _), (.bodyField, "PATCH"):
            #expect(write.status == 400 && write.odataCode == "8309", "\(write.text)")
        default:
            // Deleting by `v` after `w` went: the record matching is deleted.
            #expect(write.status == 204 && write.header("fmodata.affected_rows") == "1", "\(write.text)")
        }
        if dropped != .table {
            let rows = c.send("GET", "/Shop/Tmp?$orderby=k").rows
            let deleted = dropped == .bodyField && method == "DELETE"
            #expect(rows.compactMap { $0["k"]?.numberText } == (deleted ? ["2"] : ["1", "2"]))
            if dropped == .filterField {
                #expect(rows.compactMap { $0["w"]?.stringValue } == ["x", "x"])
            }
        }
    }

    /// Nothing that changes another table meanwhile changes the answer.
    @Test func aWriteToAnotherTableMeanwhileChangesNothing() throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let status = Locked<Int?>(nil)
        let (write, ran, _) = c.whileMatching({ writeBerlin(c, "PATCH") }) {
            Self.send(handler, ODataClient.otherClient("POST", "/Orders", body: #"{"customer_code":"NUL","total":1}"#), into: status)
        }
        #expect(ran, "no other client was answered while the write matched")
        #expect(status.withLock { $0 } == 201)
        #expect(write.status == 204 && write.header("fmodata.affected_rows") == "2", "\(write.text)")
        #expect(scores(c) == ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9"])
    }

    // MARK: Refused before matching

    /// A malformed write is refused at once, before any record is matched, with the answer it always had.
    @Test func aMalformedWriteIsRefusedBeforeMatching() throws {
        let c = try ODataClient()
        let matched = Locked(false)
        c.emulator.core.state.withLock { $0.odataWillFilter = { matched.withLock { $0 = true } } }
        let berlin = "/Shop/Customers?$filter=city%20eq%20'Berlin'"
        let cases: [(String, String, String?, Int, String)] = [
            ("PATCH", "/Shop/Customers?$filter=city%20eq", #"{"score":9}"#, 400,
             #"{"error":{"code":"-1002","message":"Error: syntax error in URL at: 'end of $filter'"}}"#),
            ("DELETE", "/Shop/Customers?$filter=nofield%20eq%201", nil, 400,
             #"{"error":{"code":"8309","message":"The field named 'nofield' does not exist in a specified table (9)"}}"#),
            ("PATCH", berlin, "[1,2]", 400, #"{"error":{"code":"-1002","message":"Error: the request body is not a JSON object"}}"#),
            ("PATCH", berlin, #"{"nope":1}"#, 400,
             #"{"error":{"code":"8309","message":"The field named 'nope' does not exist in a specified table (9)"}}"#),
            ("PATCH", berlin, #"{"g_note":"g"}"#, 400, #"{"error":{"code":"201","message":"Field cannot be modified (field 'g_note')"}}"#),
            ("PATCH", berlin, #"{"joined":"01/02/2024"}"#, 400, ""),
            ("PATCH", berlin, #"{"photo":"%%%"}"#, 400,
             #"{"error":{"code":"-1002","message":"Error: container field 'photo' needs base64 data"}}"#),
            ("DELETE", "/Shop/Customers", nil, 400,
             #"{"error":{"code":"-1010","message":"The entity key or $filter must be specified in the URL"}}"#),
        ]
        for (method, path, body, status, text) in cases {
            let a = c.send(method, path, body: body)
            #expect(a.status == status, "\(method) \(path) \(body ?? ""): \(a.text)")
            if !text.isEmpty { #expect(a.text == text) } else { #expect(a.odataCode == "500", "\(a.text)") }
        }
        #expect(!matched.withLock { $0 }, "a malformed write matched records before it was refused")
        #expect(scores(c) == ["ALFKI": "5", "OBR": "3.5", "ZOE": "4", "NUL": "1"])
        c.emulator.core.state.withLock { $0.odataWillFilter = nil }
    }

    /// A failure found as the write writes (a `unique` field given one value for two records) is its answer, as before,
    /// and nothing is written.
    @Test func aFailureWhileWritingIsTheAnswer() throws {
        let c = try ODataClient()
        let bad = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: #"{"code":"SAME","score":9}"#)
        #expect(bad.status == 400 && bad.odataCode == "504", "\(bad.text)")
        // The request log tells the client's answer.
        #expect(c.emulator.requestLog.last?.status == 400)
        #expect(scores(c) == ["ALFKI": "5", "OBR": "3.5", "ZOE": "4", "NUL": "1"])
    }

    /// A write answered through a fault (which routes the request whole, under the lock) still writes its matches.
    @Test(arguments: ["PATCH", "DELETE"])
    func aWriteByFilterUnderAFaultStillWrites(method: String) throws {
        let c = try ODataClient()
        c.emulator.inject(.delay(0), matching: "Customers")
        let write = writeBerlin(c, method)
        #expect(write.status == 204 && write.header("fmodata.affected_rows") == "2", "\(write.text)")
        #expect(scores(c) == (method == "PATCH" ? ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9"] : ["OBR": "3.5", "ZOE": "4"]))
    }

    // MARK: $batch

    /// A `$batch`'s write by `$filter` outside a change set matches outside the lock too, and answers what it wrote.
    @Test func aBatchsWriteByFilterMatchesOutsideTheLock() throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let moved = Locked<Int?>(nil)
        let move = c.moveNULToParis()
        let body = """
        --b1
        Content-Type: application/http

        PATCH Customers?$filter=city%20eq%20'Berlin' HTTP/1.1
        Content-Type: application/json

        {"score":9}
        --b1--

        """
        let (answer, ran, _) = c.whileMatching({ batch(c, body) }) { Self.send(handler, move, into: moved) }
        #expect(ran, "no other client was answered while the batch's write matched")
        #expect(moved.withLock { $0 } == 204)
        #expect(answer.status == 200)
        #expect(answer.text.contains("HTTP/1.1 204 No Content\r\nfmodata.affected_rows: 1\r\n"), "\(answer.text)")
        #expect(scores(c) == ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "1"])
    }

    /// Sends a `$batch` (boundary `b1`, LF lines made CRLF).
    func batch(_ c: ODataClient, _ body: String) -> Answer {
        c.send("POST", "/Shop/$batch", body: body.replacingOccurrences(of: "\n", with: "\r\n"), contentType: "multipart/mixed; boundary=b1")
    }

    /// Inside a change set, a write by `$filter` sees the set's writes before it and is rolled back with the set.
    @Test(arguments: [false, true])
    func aChangeSetsWriteByFilterIsAllOrNothing(failing: Bool) throws {
        let c = try ODataClient()
        let last = failing ? """
        --cs1
        Content-Type: application/http

        PATCH Customers('NOPE') HTTP/1.1
        Content-Type: application/json

        {"score":1}

        """ : ""
        let body = """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        POST Customers HTTP/1.1
        Content-Type: application/json

        {"code":"NEW","city":"Berlin","score":2}
        --cs1
        Content-Type: application/http

        PATCH Customers?$filter=city%20eq%20'Berlin' HTTP/1.1
        Content-Type: application/json

        {"score":9}

        \(last)--cs1--
        --b1--

        """
        let answer = batch(c, body)
        #expect(answer.status == 200)
        if failing {
            #expect(answer.text.contains("HTTP/1.1 404"), "\(answer.text)")
            #expect(scores(c) == ["ALFKI": "5", "OBR": "3.5", "ZOE": "4", "NUL": "1"])
        } else {
            #expect(answer.text.contains("fmodata.affected_rows: 3"), "\(answer.text)")
            #expect(scores(c) == ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9", "NEW": "9"])
        }
    }

    /// A change set's write by `$filter` matches and writes in the set's one hold of the lock: a client that asks while
    /// it matches is answered after the set.
    @Test func aChangeSetsWriteByFilterIsNotInterleaved() throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let moved = Locked<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let move = c.moveNULToParis()
        let armed = Locked(true)
        c.emulator.core.state.withLock {
            $0.odataWillFilter = {
                guard armed.withLock({ let was = $0; $0 = false; return was }) else { return }
                DispatchQueue.global().async {
                    Self.send(handler, move, into: moved)
                    done.signal()
                }
            }
        }
        defer { c.emulator.core.state.withLock { $0.odataWillFilter = nil } }
        let answer = batch(c, """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        PATCH Customers?$filter=city%20eq%20'Berlin' HTTP/1.1
        Content-Type: application/json

        {"score":9}

        --cs1--
        --b1--

        """)
        #expect(done.wait(timeout: .now() + 300) == .success, "the other client was never answered")
        #expect(moved.withLock { $0 } == 204)
        #expect(!armed.withLock { $0 }, "the change set never matched")
        #expect(answer.text.contains("fmodata.affected_rows: 2"), "\(answer.text)")
        #expect(scores(c) == ["ALFKI": "9", "OBR": "3.5", "ZOE": "4", "NUL": "9"])
    }
}

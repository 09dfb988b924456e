import Foundation
import Testing
import TestSupport
@testable import SwiftFM

// A hostile or broken OData server's `$batch` answers: every operation gets exactly one result, in its own place,
// with a clear code; nothing crashes, hangs or shifts an answer onto another operation.

@Suite("FMOData $batch answers from a hostile server")
struct ODataHostileBatchTests {
    typealias Response = Endpoint<[FMODataBatchResult]>.Response

    static func response(_ lines: [String], boundary: String? = "b") -> Response {
        var headers: [String: String] = [:]
        if let boundary { headers["Content-Type"] = "multipart/mixed; boundary=\(boundary)" }
        return Response(status: 200, headers: headers, body: Data(lines.joined(separator: "\r\n").utf8))
    }

    static func reads(_ sets: String...) -> FMODataBatch {
        var batch = FMODataBatch()
        for set in sets { batch.read(from: set) }
        return batch
    }

    static func ok(_ body: String) -> [String] {
        ["--b", "Content-Type: application/http", "", "HTTP/1.1 200 OK", "Content-Type: application/json", "", body]
    }

    @Test("a part without a readable status line keeps its place: -1007 for it, the next answer stays with the next operation")
    func unreadablePartKeepsItsPlace() throws {
        let garbage = ["--b", "Content-Type: application/http", "", "this is not an HTTP answer"]
        let results = try ODataBatchWire.results(Self.reads("A", "B"), response: Self.response(garbage + Self.ok(#"{"value":[{"b":1}]}"#) + ["--b--"]))
        #expect(results.map(\.status) == [0, 200])
        #expect(results.map(\.code) == [FMError.ClientCode.malformedResponse, "0"])
        #expect(results[0].body == nil)
        #expect((results[1].body?["value"] as? [Any])?.count == 1)
    }

    @Test("an empty part keeps its place too; status lines out of 100...999 are unreadable, not statuses")
    func emptyPartAndOddStatuses() throws {
        let lines = ["--b", "--b", "Content-Type: application/http", "", "HTTP/1.1 0 Zero", "",
                     "--b", "Content-Type: application/http", "", "HTTP/1.1 -404 Minus", "",
                     "--b", "Content-Type: application/http", "", "HTTP/1.1 999 Odd", "", #"{"error":{"code":"42","message":"odd"}}"#]
            + Self.ok("{}") + ["--b--"]
        let results = try ODataBatchWire.results(Self.reads("A", "B", "C", "D", "E"), response: Self.response(lines))
        #expect(results.map(\.status) == [0, 0, 0, 999, 200])
        #expect(results.map(\.code) == [FMError.ClientCode.malformedResponse, FMError.ClientCode.malformedResponse,
                                        FMError.ClientCode.malformedResponse, "42", "0"])
    }

    @Test("a change set whose first answer is unreadable: its changes keep their own answers, not the second one's error")
    func unreadableChangeInChangeset() throws {
        var batch = FMODataBatch()
        batch.changeset([.create(in: "A", fields: ["x": 1]), .delete(in: "A", key: 2)])
        let lines = ["--b", "Content-Type: multipart/mixed; boundary=cs", "",
                     "--cs", "Content-Type: application/http", "", "garbage",
                     "--cs", "Content-Type: application/http", "", "HTTP/1.1 404 Not Found", "", #"{"error":{"code":"101","message":"gone"}}"#,
                     "--cs--", "--b--"]
        let results = try ODataBatchWire.results(batch, response: Self.response(lines))
        #expect(results.map(\.status) == [0, 404])
        #expect(results.map(\.code) == [FMError.ClientCode.malformedResponse, "101"])
    }

    @Test("a part that starts with its status line (no MIME headers) is read")
    func partWithoutMimeHeaders() throws {
        let lines = ["--b", "HTTP/1.1 200 OK", "Content-Type: application/json", "", #"{"value":[]}"#] + Self.ok(#"{"value":[{"b":1}]}"#) + ["--b--"]
        let results = try ODataBatchWire.results(Self.reads("A", "B"), response: Self.response(lines))
        #expect(results.map(\.status) == [200, 200])
        #expect((results[0].body?["value"] as? [Any])?.count == 0)
        #expect((results[1].body?["value"] as? [Any])?.count == 1)
    }

    /// The properties every answer must keep, whatever the bytes: one result per operation, each with a clear code.
    static func check(_ batch: FMODataBatch, _ response: Response, _ context: @autoclosure () -> String) {
        do {
            let results = try ODataBatchWire.results(batch, response: response)
            #expect(results.count == batch.operationCount, "\(context())")
            for result in results {
                if result.status == 0 {
                    #expect([FMError.ClientCode.emptyResult, FMError.ClientCode.malformedResponse].contains(result.code), "\(context())")
                } else if (200...299).contains(result.status) {
                    // A success, or a success whose body is not a JSON object.
                    #expect(result.code == "0" || (result.code == FMError.ClientCode.malformedResponse && result.body == nil), "\(context())")
                } else {
                    #expect((100...999).contains(result.status) && !result.code.isEmpty && result.code != "0", "\(context())")
                }
            }
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse, "\(context())")
        }
    }

    @Test("seeded fuzz: token soups of boundaries, CRLF/LF, nested multipart, parameters, status lines and bodies")
    func fuzz() {
        var rng = SplitMix64(seed: 0xBA7C4)
        let tokens = ["--b", "--b--", "--cs", "--cs--", "--", "\r\n", "\n", "\r", "", " ", "--b ", "--bb", "\r\n\r\n",
                      "Content-Type: application/http", "Content-Type: multipart/mixed; boundary=cs", "Content-Type: multipart/mixed; boundary=\"cs\"",
                      "Content-Type: multipart/mixed", "Content-Type: multipart/mixed; boundary=", "Content-Type: multipart/mixed; boundary=b",
                      "Content-ID: 1", "Content-Transfer-Encoding: binary", "HTTP/1.1 200 OK", "HTTP/1.1 201", "HTTP/1.1 204 No Content",
                      "HTTP/1.1 400 Bad", "HTTP/1.1 999", "HTTP/1.1 0", "HTTP/1.1 -1", "HTTP/1.1 99999999999999999999999", "HTTP/1.1",
                      "HTTP/", "HTTP/1.1 200\u{0}", "Location: x", ":", "a:b", #"{"value":[]}"#, #"{"error":{"code":"8309","message":"m"}}"#,
                      #"{"error":{"code":0}}"#, "{", "[1,2]", "null", "<m:code>7</m:code>", "ä", "\u{FEFF}", "\u{301}"]
        let types = ["multipart/mixed; boundary=b", "multipart/mixed; boundary=\"b\"", "multipart/mixed", "multipart/mixed; boundary=",
                     "text/plain", "multipart/mixed; charset=x; boundary=b; boundary=c"]
        for iteration in 0..<1500 {
            var batch = FMODataBatch()
            for _ in 0..<(1 + rng.below(3)) {
                if rng.chance(50) {
                    batch.read(from: "A")
                } else {
                    batch.changeset((0..<(1 + rng.below(3))).map { _ in .delete(in: "A", key: 1) })
                }
            }
            var text = ""
            for _ in 0..<rng.below(60) {
                text += tokens[rng.below(tokens.count)]
                if rng.chance(70) { text += rng.chance(80) ? "\r\n" : "\n" }
            }
            var headers: [String: String] = [:]
            if rng.chance(85) { headers[rng.chance(50) ? "Content-Type" : "content-type"] = types[rng.below(types.count)] }
            let response = Response(status: 200, headers: headers, body: Data(text.utf8))
            Self.check(batch, response, "iteration \(iteration): \(text.debugDescription)")
        }
    }

    @Test("a many-MB answer of tiny parts (8 MB, 135 000 parts): each operation gets its own answer, the extra parts are not read")
    func manyTinyParts() throws {
        let part = "--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}\r\n"
        let count = 8 * 1024 * 1024 / part.utf8.count
        var body = Data()
        body.reserveCapacity(count * part.utf8.count + 8)
        let bytes = Data(part.utf8)
        for _ in 0..<count { body.append(bytes) }
        body.append(Data("--b--\r\n".utf8))
        let results = try ODataBatchWire.results(Self.reads("A", "B"), response: Response(status: 200, headers: ["Content-Type": "multipart/mixed; boundary=b"], body: body))
        #expect(results.map(\.status) == [200, 200])
        // Only the parts a batch needs are cut out; all of them otherwise.
        let two = ODataBatchWire.split(body, boundary: "b", limit: 2)
        #expect(two.count == 2 && two.allSatisfy { $0 == Data(part.utf8).dropFirst(5).dropLast(2) })
        #expect(ODataBatchWire.split(body, boundary: "b").count == count)
    }

    @Test("through the pipeline: a broken answer completes the batch exactly once, each operation in its place")
    func throughThePipeline() {
        let lines = ["--b", "Content-Type: application/http", "", "HTTP/1.1 banana"] + Self.ok("{}") + ["--b--"]
        let setup = ODataHarness { _ in .body(200, Data(lines.joined(separator: "\r\n").utf8), contentType: "multipart/mixed; boundary=b") }
        let (results, code) = setup.run { $0.batch(Self.reads("A", "B", "C"), completion: $1) }
        #expect(code == "0")
        #expect(results?.map(\.status) == [0, 200, 0])
        #expect(results?.map(\.code) == [FMError.ClientCode.malformedResponse, "0", FMError.ClientCode.emptyResult])
    }

    @Test("a 2xx answer whose body is not a JSON object, or not UTF-8, is -1007 (its status kept), not a success without a body")
    func successBodyThatIsNotJSON() throws {
        let lines = Self.ok("not json") + Self.ok("[1,2]") + Self.ok("{}") + ["--b", "Content-Type: application/http", "", "HTTP/1.1 204 No Content", "", ""]
        var body = Data(lines.joined(separator: "\r\n").utf8)
        body.append(Data("\r\n".utf8))
        body.append(Data(Self.ok("").joined(separator: "\r\n").utf8))
        body.append(Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]))   // {"a":"\xFF"}: not UTF-8
        body.append(Data("\r\n--b--\r\n".utf8))
        let results = try ODataBatchWire.results(Self.reads("A", "B", "C", "D", "E"),
                                                 response: Response(status: 200, headers: ["Content-Type": "multipart/mixed; boundary=b"], body: body))
        #expect(results.map(\.status) == [200, 200, 200, 204, 200])
        #expect(results.map(\.code) == [FMError.ClientCode.malformedResponse, FMError.ClientCode.malformedResponse, "0", "0",
                                        FMError.ClientCode.malformedResponse])
        #expect(results[2].body?.isEmpty == true && results[3].body == nil && results[4].body == nil)
    }

    @Test("values with CR, LF and boundaries cannot break out of their sub-request line (names with them are refused)")
    func valuesStayInTheirLine() throws {
        let evil = "EVIL\r\n--batch_x\r\nContent-Type: application/http\r\n\r\nDELETE /x HTTP/1.1\n"
        var batch = FMODataBatch()
        batch.read(from: evil, query: FMODataQuery(filter: .raw(evil) || .eq("f", .string(evil)), top: 1))
        batch.read(from: "A", key: .string(evil))
        batch.changeset([.create(in: evil, fields: [evil: evil]), .update(in: "A", key: .string(evil), fields: ["f": evil]), .delete(in: evil, key: 1)])
        var named = FMODataBatch()
        named.read(from: "A", query: FMODataQuery(select: [evil]))
        #expect(throws: FMError.self) { try ODataBatchWire.body(named, prefix: "/", boundary: "b").get() }
        let body = try ODataBatchWire.body(batch, prefix: "/fmi/odata/v4/Contacts/", boundary: "batch_b").get()
        let lines = String(decoding: body, as: UTF8.self).components(separatedBy: "\r\n")
        let carrying = lines.filter { $0.contains("EVIL") }
        #expect(carrying.count == 7, "\(carrying)")
        for line in carrying {
            #expect(["GET /", "POST /", "PATCH /", "DELETE /", "{"].contains { line.hasPrefix($0) }, "\(line.debugDescription)")
            #expect(!line.contains("\r") && !line.contains("\n") || line.hasPrefix("{"), "\(line.debugDescription)")
        }
        // Exactly the delimiters this batch writes: two reads, one change set of three.
        #expect(lines.filter { $0.hasPrefix("--batch_b") }.count == 4)
        #expect(lines.filter { $0 == "DELETE /x HTTP/1.1" }.isEmpty)
    }

    @Test("a change set answered with an inner boundary the outer one is a prefix of: the framing is ambiguous, the batch is -1007")
    func innerBoundaryStartingWithTheOuter() {
        var batch = FMODataBatch()
        batch.changeset([.create(in: "A", fields: ["x": 1]), .create(in: "A", fields: ["x": 2])])
        batch.read(from: "A")
        for inner in ["b", "b2"] {
            let created = ["Content-Type: application/http", "", "HTTP/1.1 201 Created", "", #"{"x":1}"#]
            let lines = ["--b", "Content-Type: multipart/mixed; boundary=\(inner)", "", "--\(inner)"] + created + ["--\(inner)"] + created
                + ["--\(inner)--"] + Self.ok(#"{"value":[]}"#) + ["--b--"]
            do throws(FMError) {
                let results = try ODataBatchWire.results(batch, response: Self.response(lines))
                Issue.record("inner boundary \(inner): read as \(results)")
            } catch {
                #expect(error.code == FMError.ClientCode.malformedResponse)
            }
        }
    }

    @Test("an answer whose headers run into its body (no blank line) is unreadable, not a success with the body lost")
    func headersRunningIntoTheBody() throws {
        let lines = ["--b", "Content-Type: application/http", "", "HTTP/1.1 200 OK", "Content-Type: application/json", #"{"value":[{"a":1}]}"#,
                     "--b", "Content-Type: application/http", "", "HTTP/1.1 201 Created", "Location: x", "[1]",
                     "--b", "Content-Type: application/http", "", "HTTP/1.1 204 No Content", "fmodata.affected_rows: 1"]
            + Self.ok(#"{"value":[]}"#) + ["--b--"]
        let results = try ODataBatchWire.results(Self.reads("A", "B", "C", "D"), response: Self.response(lines))
        #expect(results.map(\.status) == [0, 0, 204, 200])
        #expect(results.map(\.code) == [FMError.ClientCode.malformedResponse, FMError.ClientCode.malformedResponse, "0", "0"])
        #expect(results[2].headers["fmodata.affected_rows"] == "1")
    }
}

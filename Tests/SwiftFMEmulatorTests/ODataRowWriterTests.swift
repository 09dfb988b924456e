import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData rows are written as bytes by one renderer (``ODataRowWriter``): they must be exactly the bytes of the JSON
/// tree the reference renderer below builds (the emulator's renderer before it wrote bytes), for every kind of
/// column, value, key, annotation spelling and expansion, in a collection and as a single entity; the fast
/// percent-encoder must agree with Foundation's; and a read writes its rows after the state lock is released.
@Suite struct ODataRowWriterTests {
    @Test func rowsAreTheBytesOfTheTree() throws {
        let c = try ODataClient()
        let extra = [
            #"{"code":"Q'\"é x/y?#%&+","name":"tab\tline\nback\\slash \"quoted\" \u0001","city":"日本","score":-0.5,"#
                + #""joined":"2001-02-03","alarm":"23:59:59","seen":"2020-01-01T00:00:00Z"}"#,
            #"{"code":"plain","score":12345678901234567890.125,"name":""}"#,
        ]
        for body in extra {
            let answer = c.send("POST", "/Shop/Customers", body: body)
            #expect(answer.status == 201, "\(answer.text)")
        }
        let s = c.emulator.core.state.withLock { $0 }
        var compared = 0
        for setName in ["Customers", "Orders"] {
            let set = try #require(s.odataSet(setName))
            let table = try #require(s.table(set.table))
            let selects: [String?] = setName == "Customers"
                ? [nil, "code,name,g_note,ROWID,ROWMODID,photo,phones,seen,alarm,joined,score", "name,NAME,name", "ROWID"]
                : [nil, "total,customer_code,total", "ROWMODID"]
            let expands: [String?] = setName == "Customers"
                ? [nil, "Orders($select=total;$orderby=total desc)", "Orders($select=not_real),Orders"]
                : [nil, "Customers($select=name;$expand=Orders($select=total))"]
            for noMetadata in [false, true] {
                for prefixed in [false, true] {
                    for ieee754 in [false, true] {
                        for special in [false, true] {
                            var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000")]
                            if special { headers.append(("Prefer", "fmodata.include-specialcolumns")) }
                            var ctx = ODataContext(request: HTTPRequest(method: "GET", target: "/", headers: headers), now: Date())
                            ctx.origin = "http://127.0.0.1:3000"
                            ctx.dbSegment = "Shop"
                            ctx.noMetadata = noMetadata
                            ctx.prefixed = prefixed
                            ctx.ieee754 = ieee754
                            for select in selects {
                                for expandText in expands {
                                    let columns = try s.odataColumns(set, select: select, ctx: ctx)
                                    let expand = try s.odataExpansions(set, expandText)
                                    var tree: [UInt8] = []
                                    JSON.array(table.order.compactMap { id in
                                        table.records[id].map { ReferenceRows.row(s, set, record: $0, columns: columns, expand: expand, ctx: ctx, depth: 0) }
                                    }).write(into: &tree)
                                    let bytes = try ODataRowWriter(state: s, set: set, columns: columns, expand: expand, ctx: ctx, depth: 0)
                                        .writeArray(table.order[...], table: table)
                                    let label = "\(setName) select \(select ?? "-") expand \(expandText ?? "-") none \(noMetadata) 4.0 \(prefixed) ieee \(ieee754)"
                                    #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: tree, as: UTF8.self), "\(label)")
                                    // The same row as a single entity: `@context` first.
                                    let context = ctx.base + "/$metadata#" + ODataContext.encode(set.name) + "/$entity"
                                    for id in table.order {
                                        let record = try #require(table.records[id])
                                        guard case let .object(pairs) = ReferenceRows.row(s, set, record: record, columns: columns, expand: expand,
                                                                                          ctx: ctx, depth: 0) else { Issue.record("not an object"); continue }
                                        var entityTree: [UInt8] = []
                                        JSON.object([(ctx.annotation("context"), .string(context))] + pairs).write(into: &entityTree)
                                        let entity = try ODataRowWriter(state: s, set: set, columns: columns, expand: expand, ctx: ctx, depth: 0, context: context)
                                            .writeEntity(record)
                                        #expect(String(decoding: entity, as: UTF8.self) == String(decoding: entityTree, as: UTF8.self), "entity \(id) \(label)")
                                    }
                                    compared += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(compared == 16 * (4 * 3 + 3 * 2))
        // The rows really hold what the test means to compare: the escaped key, the texts, the expansion's error.
        let answer = c.send("GET", "/Shop/Customers?$select=code,name&$expand=Orders($select=not_real)")
        #expect(answer.status == 200)
        let tricky = try #require(answer.rows.first { $0["code"]?.stringValue == "Q'\"é x/y?#%&+" })
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~'()!*,;:@$=")
        let key = try #require("'Q''\"é x/y?#%&+'".addingPercentEncoding(withAllowedCharacters: allowed))
        #expect(key.contains("%22") && key.contains("%2F") && key.contains("%3F"))
        #expect(tricky["@id"]?.stringValue == c.harness.origin + "/fmi/odata/v4/Shop/Customers(" + key + ")")
        #expect(tricky["name"]?.stringValue == "tab\tline\nback\\slash \"quoted\" \u{1}")
        #expect(tricky["error"]?.arrayValue?.first?["error"]?["code"]?.stringValue == "8309")
    }

    @Test func percentEncodingAgreesWithFoundation() {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~'()!*,;:@$=")
        var samples = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        samples += ["", "Customers", "O'Brien & Sons", "a b/c?d#e%f+g", "Zoë Café", "日本", "ROWID=12", "x\u{7F}y", "'A','B'", "tab\there"]
        for sample in samples {
            #expect(ODataContext.encode(sample) == (sample.addingPercentEncoding(withAllowedCharacters: allowed) ?? sample), "\(sample.debugDescription)")
        }
    }
}

/// The reference renderer of the parity test: OData rows built as a JSON tree, each value through
/// ``EmulatorState/odataJSONValue(_:ieee754:)``, expansions rendered by this renderer too (the emulator's renderer
/// before rows were written as bytes).
enum ReferenceRows {
    /// One row: `@id`/`@editLink` (unless `odata.metadata=none`), the columns, then any expansions.
    static func row(_ s: EmulatorState, _ set: ODataSet, record: StoredRecord, columns: [ODataColumn], expand: [ODataExpansion],
                    ctx: ODataContext, depth: Int) -> JSON {
        var pairs: [(String, JSON)] = []
        if !ctx.noMetadata {
            let url = ctx.base + "/" + ODataContext.encode(set.name) + "(" + ODataContext.encode(s.odataKeyText(set, record: record)) + ")"
            pairs.append((ctx.annotation("id"), .string(url)))
            pairs.append((ctx.annotation("editLink"), .string(url)))
        }
        for column in columns {
            switch column {
            case let .field(f):
                let v = f.global ? FMValue.empty : record.value(f)
                pairs.append((f.name, s.odataJSONValue(v, ieee754: ctx.ieee754)))
            case .rowID: pairs.append(("ROWID", .number(Double(record.id))))
            case .rowModID: pairs.append(("ROWMODID", .number(Double(record.modId))))
            }
        }
        for e in expand {
            guard let target = s.odataSet(e.nav.name), let h = s.hop(e.nav.relationship, forward: e.nav.forward) else { continue }
            let related = s.follow(RelPath(hops: [h]), from: record, table: set.table, session: nil)
            do {
                pairs.append((e.nav.name, try rows(s, target, candidates: related.map(\.id), options: e.options, ctx: ctx, depth: depth + 1)))
            } catch let error as ODataError {
                // An error inside an expansion does not fail the request (ODATA.md §3.5).
                pairs.append(("error", .array([.object([("error", .object([("code", .string(error.code)),
                                                                            ("message", .string(error.message))]))])])))
            } catch {
                continue
            }
        }
        return .object(pairs)
    }

    /// The rows of an expansion: filtered, sorted, `$skip`/`$top` applied.
    static func rows(_ s: EmulatorState, _ set: ODataSet, candidates: [Int], options: [String: String], ctx: ODataContext,
                     depth: Int) throws -> JSON {
        guard depth <= 8 else { throw ODataError.syntax("$expand") }
        let read = try ODataReadOptions(options)
        let columns = try s.odataColumns(set, select: read.select, ctx: ctx)
        let expand = try s.odataExpansions(set, read.expand)
        guard let table = s.table(set.table) else { return .array([]) }
        let ids = EmulatorState.odataSorted(try s.odataFilteredIDs(set, filter: read.filter, candidates: candidates),
                                            keys: try s.odataSortKeys(set, orderby: read.orderby), table: table)
        let end = read.top.map { min(ids.count, read.skip + $0) } ?? ids.count
        let start = min(read.skip, end)
        return .array(ids[start..<end].compactMap { id in
            table.records[id].map { row(s, set, record: $0, columns: columns, expand: expand, ctx: ctx, depth: depth) }
        })
    }
}

/// A read's rows are written after the state lock is released: while the emulator is writing them, another
/// request takes the lock and completes, and the answer being written is the state the read saw.
@Suite struct ODataWriteOutsideLockTests {
    /// Sends `GET path`; while its rows are being written (``EmulatorState/odataWillWrite``), sends `other` from another
    /// thread and waits for its answer (bounded: when the rows are written under the lock, `other` cannot be
    /// answered until they are, and the wait ends without it). Expects `other` answered with `status` meanwhile and
    /// the read with 200; returns the read's answer.
    func whileWriting(_ c: ODataClient, _ path: String, other: HTTPRequest, answered status: Int) -> Answer {
        let (read, answered, wrote) = c.answering(other) { c.send("GET", path) }
        #expect(wrote, "the rows were never written")
        #expect(answered?.status == status, "\(other.method) \(other.target) was not answered while \(path) was written")
        #expect(read.status == 200)
        return read
    }

    func request(_ method: String, _ path: String, body: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"),
                                                        ("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString())]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method: method, target: "/fmi/odata/v4" + path, headers: headers, body: Data((body ?? "").utf8))
    }

    @Test func collectionRowsAreWrittenOutsideTheLock() throws {
        let c = try ODataClient()
        let read = whileWriting(c, "/Shop/Customers?$orderby=code&$select=code,name",
                                other: request("PATCH", "/Shop/Customers('ALFKI')", body: #"{"name":"Changed"}"#), answered: 204)
        // The page is the state the read saw: sorted, and the update that came after it is not in it.
        #expect(read.rows.compactMap { $0["code"]?.stringValue } == ["ALFKI", "NUL", "OBR", "ZOE"])
        #expect(read.rows.first?["name"]?.stringValue == "Alfreds")
        #expect(c.send("GET", "/Shop/Customers('ALFKI')").json?["name"]?.stringValue == "Changed")
    }

    @Test func entityIsWrittenOutsideTheLock() throws {
        let c = try ODataClient()
        let read = whileWriting(c, "/Shop/Customers('OBR')?$expand=Orders($select=total)", other: request("DELETE", "/Shop/Orders(3)"), answered: 204)
        #expect(read.json?["name"]?.stringValue == "O'Brien & Sons")
        #expect(read.json?["Orders"]?.arrayValue?.compactMap { $0["total"]?.numberText } == ["7"])
        #expect(c.send("GET", "/Shop/Customers('OBR')/Orders").rows.isEmpty)
    }

    @Test func navigationRowsAreWrittenOutsideTheLock() throws {
        let c = try ODataClient()
        let read = whileWriting(c, "/Shop/Customers('ALFKI')/Orders?$orderby=total%20desc&$count=true", other: request("GET", "/Shop/Orders/$count"),
                                answered: 200)
        #expect(read.json?["@odata.count"]?.numberText == "2")
        #expect(read.rows.compactMap { $0["total"]?.numberText } == ["25.5", "10"])
    }
}

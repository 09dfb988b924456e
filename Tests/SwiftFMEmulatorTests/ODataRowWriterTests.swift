import Foundation
import Testing
@testable import SwiftFMEmulator

/// Collection rows are written as bytes (``ODataRowWriter``): they must be exactly the bytes of the JSON tree
/// `odataRow` builds (single-record reads and creates still use it), for every kind of column, value, key,
/// annotation spelling and expansion; and the fast percent-encoder must agree with Foundation's.
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
                                        table.records[id].map { s.odataRow(set, record: $0, columns: columns, expand: expand, ctx: ctx, depth: 0) }
                                    }).write(into: &tree)
                                    let bytes = ODataRowWriter(state: s, set: set, columns: columns, expand: expand, ctx: ctx, depth: 0)
                                        .writeArray(table.order[...], table: table)
                                    #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: tree, as: UTF8.self),
                                            "\(setName) select \(select ?? "-") expand \(expandText ?? "-") none \(noMetadata) 4.0 \(prefixed) ieee \(ieee754)")
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

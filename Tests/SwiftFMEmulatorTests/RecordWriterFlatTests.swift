import Foundation
import Testing
@testable import SwiftFMEmulator

/// A found set on a layout without portals or related fields is written through ``RecordWriter``'s flat
/// plan; one record (`GET …/records/{id}`) through the general writer. Both must give the
/// same bytes for every record: globals first, last or alone, repetitions, missing values, escapes,
/// containers and both date formats.
@Suite struct RecordWriterFlatTests {
    static let layouts: [(String, String)] = [
        ("Flat", #"["g", "id", "name", "score", "born", "seen", "alarm", "photo", "tags", "hidden"]"#),
        ("GlobalLast", #"["tags", "name", "g"]"#),
        ("OnlyGlobal", #"["g"]"#),
        ("Empty", #"[]"#),
    ]

    func harness() throws -> Harness {
        let extra = Self.layouts.map { #""\#($0.0)": { "table": "People", "fields": \#($0.1) },"# }.joined(separator: "\n")
        let schema = RecordWriterPinTests.schema.replacingOccurrences(of: #""layouts": {"#, with: "\"layouts\": {\n" + extra)
        let h = try Harness(schemaJSON: schema, db: "Pin")
        try h.login()
        #expect(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"People::g":"glob \"q\""}}"#).status == 200)
        let stored = upload(h, path: "\(h.base)/layouts/People/records/1/containers/photo", part: "upload", filename: "a.png", data: Data([1, 2, 3]))
        #expect(stored.status == 200)
        return h
    }

    /// The text of the `data` array's items: between `"data":[` and the `]}` closing the response.
    func items(_ body: Data) -> String {
        let text = String(decoding: body, as: UTF8.self)
        guard let start = text.range(of: #""data":["#), let end = text.range(of: #"]},"messages""#, options: .backwards) else { return "" }
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test(arguments: ["0", "2"]) func foundSetMatchesOneRecordAtATime(dateformats: String) throws {
        let h = try harness()
        for (layout, _) in Self.layouts {
            let range = h.send("GET", "\(h.base)/layouts/\(layout)/records?_limit=10&dateformats=\(dateformats)", contentType: nil)
            #expect(range.status == 200)
            let singles = (1...6).map { id in
                items(h.send("GET", "\(h.base)/layouts/\(layout)/records/\(id)?dateformats=\(dateformats)", contentType: nil).body)
            }
            #expect(!singles.contains(""))
            #expect(items(range.body) == singles.joined(separator: ","), "layout \(layout)")
            guard layout == "Flat" else { continue }
            let found = h.send("POST", "\(h.base)/layouts/\(layout)/_find",
                               body: #"{"query":[{"id":"*"}],"dateformats":\#(dateformats)}"#)
            #expect(items(found.body) == singles.joined(separator: ","), "find on \(layout)")
        }
    }

    @Test func flatRecordBytes() throws {
        let h = try harness()
        let range = h.send("GET", "\(h.base)/layouts/GlobalLast/records?_limit=2", contentType: nil)
        #expect(items(range.body) == #"""
        {"fieldData":{"tags":"red","tags(2)":"","tags(3)":"blue","name":"Ann \"A\" \\ B\n\t\u0001 é 😀","g":"glob \"q\""},"portalData":{},"recordId":"1","modId":"1"},{"fieldData":{"tags":"","tags(2)":"","tags(3)":"","name":"","g":"glob \"q\""},"portalData":{},"recordId":"2","modId":"0"}
        """#)
    }

    static let keysSchema = #"""
    {
      "database": "Keys",
      "accounts": [ { "username": "admin", "password": "admin" } ],
      "tables": { "T": { "fields": { "a1b": "text", "a2b": "text", "a3b": "number", "Straße": "text", "naïve": "text",
                                       "zz": { "type": "text", "repetitions": 2 } } } },
      "layouts": {
        "All": { "table": "T", "fields": ["a1b", "a2b", "a3b", "Straße", "naïve", "zz"] },
        "Twice": { "table": "T", "fields": ["a2b", "zz", "a2b"] }
      },
      "records": { "T": [
        { "a1b": "x", "a2b": "y", "a3b": 5, "Straße": "s", "naïve": "n", "zz": "1", "zz(2)": "2" },
        { "a2b": "only" },
        { "naïve": "ν", "zz(2)": "second" }
      ] }
    }
    """#

    /// Keys that collide in the writer's cheap hash, non-ASCII field names, absent values and a field
    /// shown twice (no key table) give the same bytes as one record at a time.
    @Test func keysThatCollideOrAreNotASCII() throws {
        let h = try Harness(schemaJSON: Self.keysSchema, db: "Keys")
        try h.login()
        for layout in ["All", "Twice"] {
            let range = h.send("GET", "\(h.base)/layouts/\(layout)/records", contentType: nil)
            #expect(range.status == 200)
            let singles = (1...3).map { id in items(h.send("GET", "\(h.base)/layouts/\(layout)/records/\(id)", contentType: nil).body) }
            #expect(!singles.contains(""))
            #expect(items(range.body) == singles.joined(separator: ","), "layout \(layout)")
        }
        let all = h.send("GET", "\(h.base)/layouts/All/records?_limit=1", contentType: nil)
        #expect(items(all.body) == #"{"fieldData":{"a1b":"x","a2b":"y","a3b":5,"Straße":"s","naïve":"n","zz":"1","zz(2)":"2"},"portalData":{},"recordId":"1","modId":"0"}"#)
    }
}

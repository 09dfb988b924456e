import Foundation
import Testing
@testable import SwiftFMEmulator

/// JSON value conventions (WIRE.md §2).
@Suite struct JSONValueTests {
    /// §2: number fields come back as plain JSON numbers. FileMaker stores decimal text, so a large or
    /// tiny stored number must not come back in exponent notation (`1e+16`, `1e-05`), which strict
    /// integer decoders reject and which FileMaker never writes.
    @Test func numbersNeverUseExponentNotation() {
        let cases: [(Double, String)] = [
            (1e15, "1000000000000000"),
            (1e16, "10000000000000000"),
            (1234567890123456, "1234567890123456"),
            (-9007199254740992, "-9007199254740992"),
            (1.5e20, "150000000000000000000"),
            (1e-5, "0.00001"),
            (-1.5e-7, "-0.00000015"),
            (123456.789, "123456.789"),
            (0.1, "0.1"),
            (-0.0, "0"),
            (7, "7"),
        ]
        for (n, text) in cases {
            #expect(JSON.format(number: n) == text, "\(n)")
        }
    }

    @Test(arguments: Via.allCases) func largeAndTinyNumbersOverTheWire(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let big = try h.create(#"{"id":10000000000000000}"#)
        let tiny = try h.create(#"{"id":"0.00001"}"#)
        let bigBody = String(decoding: h.send("GET", "\(h.base)/layouts/Contacts/records/\(big)", contentType: nil).body, as: UTF8.self)
        let tinyBody = String(decoding: h.send("GET", "\(h.base)/layouts/Contacts/records/\(tiny)", contentType: nil).body, as: UTF8.self)
        #expect(bigBody.contains(#""id":10000000000000000,"#), "\(bigBody)")
        #expect(tinyBody.contains(#""id":0.00001,"#), "\(tinyBody)")
        // A JSON number written to a text field is stored as its plain decimal text.
        let named = try h.create(#"{"name":1e-7}"#)
        let record = h.send("GET", "\(h.base)/layouts/Contacts/records/\(named)", contentType: nil)
        #expect(record.data.first?["fieldData"]?["name"]?.stringValue == "0.0000001")
    }

    /// §2: text is stored as sent. A text value made only of spaces is not empty in FileMaker
    /// (`IsEmpty(" ")` is false) and must come back unchanged, not as `""`.
    @Test(arguments: Via.allCases) func spacesOnlyTextIsKept(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let id = try h.create(#"{"name":"   ","drink":"\t"}"#)
        let fields = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil).data.first?["fieldData"]
        #expect(fields?["name"]?.stringValue == "   ")
        #expect(fields?["drink"]?.stringValue == "\t")
        // Number and date fields still read blank input as empty.
        let blank = try h.create(#"{"id":"  ","date":" "}"#)
        let blankFields = h.send("GET", "\(h.base)/layouts/Contacts/records/\(blank)", contentType: nil).data.first?["fieldData"]
        #expect(blankFields?["id"]?.stringValue == "")
        #expect(blankFields?["date"]?.stringValue == "")
    }

    /// §2: `null` is rejected with 1708 anywhere in a record body, portal rows included; a `null`
    /// `recordId` or `modId` in a portal row must not be read as "no recordId" (which creates a row).
    @Test(arguments: Via.allCases) func nullInPortalRowsIs1708(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let before = h.emulator.recordCount(inTable: "Notes")
        for row in [#"{"recordId":null,"Notes::note":"x"}"#, #"{"recordId":"1","modId":null,"Notes::note":"x"}"#,
                    #"{"Notes::note":null}"#] {
            let a = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1", body: #"{"fieldData":{},"portalData":{"notes":[\#(row)]}}"#)
            #expect(a.code == "1708", "\(row)")
            #expect(a.message == "Parameter value is invalid")
            #expect(a.isEmptyResponse)
        }
        #expect(h.emulator.recordCount(inTable: "Notes") == before)
        #expect(h.emulator.records(inTable: "Notes").first?["note"] as? String == "first note")
    }

    /// §6.1/§9: `dateformats` says how date and timestamp values of the request are read; that covers
    /// the portal rows of the same request, not only `fieldData`.
    @Test(arguments: Via.allCases) func dateformatsAppliesToPortalRows(_ via: Via) throws {
        let schema = #"""
        {
          "database": "Shop",
          "tables": {
            "Orders": { "fields": { "id": { "type": "number", "autoEnter": "serial" }, "placed": "date" } },
            "Lines":  { "fields": { "order_id": "number", "due": "date", "at": "timestamp" } }
          },
          "layouts": {
            "Orders": { "table": "Orders", "fields": ["id", "placed"],
                        "portals": { "lines": { "table": "Lines", "match": { "id": "order_id" }, "fields": ["due", "at"] } } }
          },
          "records": { "Orders": [ { "placed": "01/02/2024" } ] }
        }
        """#
        let h = try Harness(schemaJSON: schema, db: "Shop", via: via)
        try h.login()
        let body = #"{"fieldData":{"placed":"2024-03-05"},"dateformats":2,"portalData":{"lines":[{"Lines::due":"2024-03-06","Lines::at":"2024-03-06T10:11:12"}]}}"#
        let edit = h.send("PATCH", "\(h.base)/layouts/Orders/records/1", body: body)
        #expect(edit.status == 200, "\(String(decoding: edit.body, as: UTF8.self))")
        let create = h.send("POST", "\(h.base)/layouts/Orders/records", body: body)
        #expect(create.status == 200, "\(String(decoding: create.body, as: UTF8.self))")
        let row = h.send("GET", "\(h.base)/layouts/Orders/records/1", contentType: nil).data.first?["portalData"]?["lines"]?.arrayValue?.first
        #expect(row?["Lines::due"]?.stringValue == "03/06/2024")
        #expect(row?["Lines::at"]?.stringValue == "03/06/2024 10:11:12")
    }
}

/// The JSON reader of request bodies (WIRE.md §2: request bodies are JSON).
@Suite struct JSONRequestBodyTests {
    /// RFC 8259 §6 number grammar: no leading zeros, digits on both sides of `.`, digits after `e`.
    /// The reader took `01`, `.5`, `1.`, `1e` and `-01` (a real server's JSON parser rejects them).
    @Test func numbersFollowTheJSONGrammar() {
        for bad in ["01", ".5", "1.", "1e", "1e+", "-01", "-", "1.e5", "--1", "1..2", "0x10", "1e5.5", "00"] {
            #expect((try? JSON.parse(Data(bad.utf8))) == nil, "\(bad)")
            #expect((try? JSON.parse(Data(#"{"a":\#(bad)}"#.utf8))) == nil, "\(bad)")
        }
        let good: [(String, Double)] = [("0", 0), ("-0", 0), ("10", 10), ("0.5", 0.5), ("-1.25e2", -125), ("1E+2", 100), ("2e-1", 0.2)]
        for (text, value) in good {
            #expect((try? JSON.parse(Data(text.utf8))) == .number(value), "\(text)")
        }
    }

    @Test(arguments: Via.allCases) func malformedNumberInABodyIs1708(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"id":01}}"#)
        #expect(a.code == "1708")
        #expect(h.emulator.recordCount(inTable: "Contacts") == 4)
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// The emulator fails where FileMaker Server fails (960 for unknown parameters) and keeps
/// values as FileMaker does (text in number fields, exact decimals, entry/prohibit modes, date
/// separators, repetitions in portal rows, `newPortalRecordInfo`). WIRE.md §17.
@Suite struct StrictnessTests {
    static let schema = #"""
    {
      "database": "Strict",
      "tables": {
        "Items": { "fields": {
          "id": { "type": "number", "autoEnter": "serial" },
          "name": { "type": "text", "notEmpty": true },
          "amount": "number",
          "strict": { "type": "number", "numericOnly": true },
          "code": { "type": "text", "prohibitModification": true, "autoEnter": { "value": "AUTO" } },
          "day": "date",
          "stamp": "timestamp"
        } },
        "Lines": { "fields": { "item_id": "number", "label": "text", "qty": "number", "sizes": { "type": "text", "repetitions": 3 } } }
      },
      "layouts": {
        "Items": {
          "table": "Items",
          "fields": ["id", "name", "amount", "strict", "code", "day", "stamp"],
          "portals": { "lines": { "table": "Lines", "match": { "id": "item_id" }, "fields": ["label", "qty", "sizes"] } }
        }
      },
      "scripts": { "Echo": { "returns": "parameter" } },
      "records": { "Items": [ { "name": "first", "amount": 1 } ], "Lines": [ { "item_id": 1, "label": "L", "sizes(2)": "M", "sizes(3)": "L" } ] }
    }
    """#

    private func harness(_ via: Via = .handler) throws -> Harness {
        let h = try Harness(schemaJSON: Self.schema, db: "Strict", via: via)
        try h.login()
        return h
    }

    @Test("Unknown body keys and query parameters are 400/960 naming all of them", arguments: Via.allCases)
    func unknownParameters(via: Via) throws {
        let h = try harness(via)
        let items = "\(h.base)/layouts/Items"
        // Create, edit, duplicate: misspelt or invented top-level keys.
        expect960(h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"x"},"date_formats":2,"foo":1}"#), "date_formats, foo")
        expect960(h.send("PATCH", "\(items)/records/1", body: #"{"fieldData":{},"fielddata":{"name":"y"}}"#), "fielddata")
        expect960(h.send("POST", "\(items)/records/1", body: #"{"script.parameter":"x"}"#), "script.parameter")
        // Find: the GET spelling of a portal window is unknown in a body.
        expect960(h.send("POST", "\(items)/_find", body: #"{"query":[{"name":"first"}],"_limit.lines":"1","_offset.lines":"1"}"#),
                  "_limit.lines, _offset.lines")
        expect960(h.send("POST", "\(items)/_find", body: #"{"query":[{"name":"first"}],"_limit":"1"}"#), "_limit")
        let findOK = h.send("POST", "\(items)/_find", body: #"{"query":[{"name":"first"}],"limit.lines":"1","offset.lines":"1"}"#)
        #expect(findOK.status == 200)
        // GET: the body spelling is unknown in a query.
        expect960(h.send("GET", "\(items)/records?limit.lines=1", contentType: nil), "limit.lines")
        expect960(h.send("GET", "\(items)/records?offset=1&limit=2", contentType: nil), "offset, limit")
        expect960(h.send("GET", "\(items)/records/1?_limit=1", contentType: nil), "_limit")
        #expect(h.send("GET", "\(items)/records?_limit.lines=1&_offset.lines=1&_limit=1", contentType: nil).status == 200)
        expect960(h.send("GET", "\(items)/script/Echo?script.param=a&param=b", contentType: nil), "param")
        expect960(h.send("DELETE", "\(items)/records/1?script.paramm=x", contentType: nil), "script.paramm")
        expect960(h.send("GET", "\(items)?recordid=1", contentType: nil), "recordid")
        expect960(h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{},"globals":{}}"#), "globals")
        expect960(h.loginRequest(db: "Strict", body: #"{"fmDataSources":[]}"#), "fmDataSources")
        // Options: an unknown option is 960, an unknown mode 1708.
        expect960(h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"x"},"options":{"entryMode":"script"}}"#), "options.entryMode")
        let badMode = h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"x"},"options":{"entrymode":"admin"}}"#)
        #expect(badMode.status == 400)
        #expect(badMode.code == "1708")
        // Nothing above changed a record.
        #expect(h.emulator.recordCount(inTable: "Items") == 1)
    }

    @Test func textInNumberFieldsIsStoredUnlessNumericOnly() throws {
        let h = try harness()
        let items = "\(h.base)/layouts/Items"
        let id = try h.create(#"{"name":"t","amount":"25abc"}"#, layout: "Items")
        let read = h.send("GET", "\(items)/records/\(id)", contentType: nil)
        #expect(read.data.first?["fieldData"]?["amount"] == .string("25abc"))
        // numericOnly: FileMaker's strict numeric type is 502; entrymode script skips it.
        let strict = h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"t","strict":"12x"}}"#)
        #expect(strict.status == 500)
        #expect(strict.code == "502")
        #expect(strict.message == "Number value does not meet validation entry options")
        let scripted = h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"t","strict":"12x"},"options":{"entrymode":"script"}}"#)
        #expect(scripted.status == 200)
        // Sorting reads the number in the text (25abc sorts as 25, after 1).
        let sorted = h.send("GET", "\(items)/records?_sort=%5B%7B%22fieldName%22%3A%22amount%22%2C%22sortOrder%22%3A%22descend%22%7D%5D",
                            contentType: nil)
        #expect(sorted.data.first?["fieldData"]?["amount"] == .string("25abc"))
    }

    /// Stored numbers are exact decimals, written digit for digit. (Numbers sent as JSON numbers
    /// are binary64, as FileMaker Server reads them, so exact digits are sent as strings here; see
    /// FileMakerBehaviourTests.jsonNumbersInRequestsAreBinary64.)
    @Test func numbersAreExactDecimals() throws {
        let h = try harness()
        let items = "\(h.base)/layouts/Items"
        let big = try h.create(#"{"name":"big","amount":"12345678901234567890"}"#, layout: "Items")
        let text = try h.create(#"{"name":"txt","amount":"123456789012345678901234567890.5"}"#, layout: "Items")
        let small = try h.create(#"{"name":"small","amount":"0.1000000000000000055"}"#, layout: "Items")
        let bigRead = h.send("GET", "\(items)/records/\(big)", contentType: nil)
        #expect(String(decoding: bigRead.body, as: UTF8.self).contains(#""amount":12345678901234567890"#))
        #expect(bigRead.data.first?["fieldData"]?["amount"]?.decimalText == "12345678901234567890")
        let textRead = h.send("GET", "\(items)/records/\(text)", contentType: nil)
        #expect(textRead.data.first?["fieldData"]?["amount"]?.decimalText == "123456789012345678901234567890.5")
        let smallRead = h.send("GET", "\(items)/records/\(small)", contentType: nil)
        #expect(smallRead.data.first?["fieldData"]?["amount"]?.decimalText == "0.1000000000000000055")
        // Finds and sorts compare exactly: these two differ only past the 17th digit.
        let other = try h.create(#"{"name":"big2","amount":"12345678901234567891"}"#, layout: "Items")
        let found = h.send("POST", "\(items)/_find", body: #"{"query":[{"amount":"12345678901234567891"}]}"#)
        #expect(found.data.compactMap { $0["recordId"]?.stringValue } == [other])
        let range = h.send("POST", "\(items)/_find",
                           body: #"{"query":[{"amount":">12345678901234567890"}],"sort":[{"fieldName":"amount","sortOrder":"ascend"}]}"#)
        #expect(range.data.compactMap { $0["recordId"]?.stringValue } == [other, text])
        // Plain numbers are written as before.
        #expect(h.send("GET", "\(items)/records/1", contentType: nil).data.first?["fieldData"]?["amount"] == .number(1))
    }

    @Test func entryAndProhibitModes() throws {
        let h = try harness()
        let items = "\(h.base)/layouts/Items"
        // notEmpty validation: user mode (default) refuses, script mode stores.
        #expect(h.send("POST", "\(items)/records", body: #"{"fieldData":{"amount":1}}"#).code == "509")
        #expect(h.send("POST", "\(items)/records", body: #"{"fieldData":{"amount":1},"options":{"entrymode":"user"}}"#).code == "509")
        let created = h.send("POST", "\(items)/records", body: #"{"fieldData":{"amount":1},"options":{"entrymode":"script"}}"#)
        #expect(created.status == 200)
        // Prohibit modification: 201 unless prohibitmode script.
        let denied = h.send("PATCH", "\(items)/records/1", body: #"{"fieldData":{"code":"X"}}"#)
        #expect(denied.status == 500)
        #expect(denied.code == "201")
        #expect(h.send("PATCH", "\(items)/records/1", body: #"{"fieldData":{"code":"X"},"options":{"entrymode":"script"}}"#).code == "201")
        #expect(h.send("PATCH", "\(items)/records/1", body: #"{"fieldData":{"code":"X"},"options":{"prohibitmode":"script"}}"#).code == "0")
        #expect(h.send("GET", "\(items)/records/1", contentType: nil).data.first?["fieldData"]?["code"] == .string("X"))
        // A request's mode does not leak into the next one.
        #expect(h.send("POST", "\(items)/records", body: #"{"fieldData":{"amount":1}}"#).code == "509")
    }

    @Test func dateSeparatorsAreAnyNonLetter() throws {
        let h = try harness()
        let items = "\(h.base)/layouts/Items"
        for (input, expected) in [("04.11.2017", "04/11/2017"), ("04-11-2017", "04/11/2017"), ("4 11 2017", "04/11/2017"), ("12/1/2020", "12/01/2020")] {
            let id = try h.create(#"{"name":"d","day":"\#(input)"}"#, layout: "Items")
            #expect(h.send("GET", "\(items)/records/\(id)", contentType: nil).data.first?["fieldData"]?["day"] == .string(expected), "\(input)")
        }
        let stamp = try h.create(#"{"name":"s","stamp":"04.11.2017 13:14:15"}"#, layout: "Items")
        #expect(h.send("GET", "\(items)/records/\(stamp)", contentType: nil).data.first?["fieldData"]?["stamp"] == .string("04/11/2017 13:14:15"))
        let iso = h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"i","day":"2017.11.04"},"dateformats":2}"#)
        #expect(iso.status == 200)
        for bad in ["04:11:2017", "04+11+2017", "04a11a2017", "04..11.2017"] {
            let a = h.send("POST", "\(items)/records", body: #"{"fieldData":{"name":"b","day":"\#(bad)"}}"#)
            #expect(a.code == "500", "\(bad)")
        }
        let found = h.send("POST", "\(items)/_find", body: #"{"query":[{"day":"04-11-2017"}]}"#)
        #expect(found.data.count == 3)
    }

    @Test func portalRowsReadRepetitionsAndReportNewRowsPerField() throws {
        let h = try harness()
        let items = "\(h.base)/layouts/Items"
        let row = try #require(h.send("GET", "\(items)/records/1", contentType: nil).data.first?["portalData"]?["lines"]?.arrayValue?.first)
        let keys = (row.objectPairs ?? []).map(\.0)
        #expect(keys == ["recordId", "Lines::label", "Lines::qty", "Lines::sizes(1)", "Lines::sizes(2)", "Lines::sizes(3)", "modId"])
        #expect(row["Lines::sizes(2)"] == .string("M"))
        // Writing a repetition through a portal row.
        let edit = h.send("PATCH", "\(items)/records/1",
                          body: #"{"fieldData":{},"portalData":{"lines":[{"Lines::label":"A","Lines::sizes(3)":"XL","Lines::qty":2},{"lines::label":"B"}]}}"#)
        #expect(edit.status == 200)
        let info = try #require(edit.response["newPortalRecordInfo"]?.arrayValue)
        // One entry per field written in each new row, in request order, with the field's occurrence.
        #expect(info.count == 4)
        #expect(info.compactMap { $0["recordId"]?.stringValue } == ["2", "2", "2", "3"])
        #expect(info.allSatisfy { $0["tableName"] == .string("Lines") && $0["modId"] == .string("0") })
        let rows = h.send("GET", "\(items)/records/1", contentType: nil).data.first?["portalData"]?["lines"]?.arrayValue ?? []
        #expect(rows.count == 3)
        #expect(rows.dropFirst().first?["Lines::sizes(3)"] == .string("XL"))
        // Editing an existing row adds no entry.
        let again = h.send("PATCH", "\(items)/records/1", body: #"{"fieldData":{},"portalData":{"lines":[{"recordId":"1","Lines::label":"L2"}]}}"#)
        #expect(again.response["newPortalRecordInfo"] == nil)
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Typed records on real FileMaker data: empty fields, numbers as text, dates of every `dateformats`,
/// repetitions and portal rows, through the same typed calls as before.
@Suite("Typed decoding of FileMaker values")
struct FileMakerDecodingTests {
    static let ok = #""messages":[{"code":"0","message":"OK"}]"#

    static func body(_ fieldData: String, recordId: String = "7", portal: String = "{}") -> String {
        #"{"response":{"dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1},"data":[{"fieldData":\#(fieldData),"portalData":\#(portal),"recordId":"\#(recordId)","modId":"1"}]},\#(ok)}"#
    }

    static func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second))!
    }

    struct Product: Decodable, Equatable {
        var name: String?
        var price: Double?
        var stock: Int?
        var active: Bool?
        var added: Date?
        var note: String?
    }

    @Test func emptyFieldsAreNilForOptionalsThatCannotHoldThem() throws {
        let json = Self.body(#"{"name":"","price":"","stock":"","active":"","added":"","note":"x"}"#)
        let set = try decoded(Endpoints.getRecords(as: Product.self, layout: "L"), json)
        #expect(set.records[0].fieldData == Product(name: "", price: nil, stock: nil, active: nil, added: nil, note: "x"))
        // The same through find(as:) and the raw found set's decode.
        #expect(try decoded(Endpoints.find(as: Product.self, layout: "L", request: FMFindRequest(["a": "1"])), json).records.count == 1)
        let raw = try decoded(Endpoints.getRecords(layout: "L"), json)
        #expect(try raw.decode(Product.self)[0].fieldData.price == nil)
    }

    @Test func nonOptionalEmptyFieldFailsNamingRecordAndField() {
        struct Strict: Decodable { var price: Double }
        do {
            _ = try decoded(Endpoints.getRecords(as: Strict.self, layout: "L"), Self.body(#"{"price":""}"#, recordId: "42"))
            Issue.record("expected a throw")
        } catch let error as FMError {
            #expect(error.code == "-1007")
            #expect(error.message.contains("record 42") && error.message.contains("price"), "\(error.message)")
        } catch {
            Issue.record("not an FMError: \(error)")
        }
    }

    @Test func numbersSentAsText() throws {
        let set = try decoded(Endpoints.getRecords(as: Product.self, layout: "L"),
                              Self.body(#"{"price":" 3.5 ","stock":"42","active":"1"}"#))
        #expect(set.records[0].fieldData.price == 3.5 && set.records[0].fieldData.stock == 42 && set.records[0].fieldData.active == true)
        struct Exact: Decodable { var big: Int64; var amount: Decimal; var ratio: Float }
        let exact = try decoded(Endpoints.getRecords(as: Exact.self, layout: "L"),
                                Self.body(#"{"big":9007199254740993,"amount":"12.345","ratio":0.5}"#))
        #expect(exact.records[0].fieldData.big == 9_007_199_254_740_993)
        #expect(exact.records[0].fieldData.amount == Decimal(string: "12.345"))
        struct Bad: Decodable { var stock: Int }
        #expect(decodeError(Endpoints.getRecords(as: Bad.self, layout: "L"), Self.body(#"{"stock":"12abc"}"#)) == "-1007")
        #expect(decodeError(Endpoints.getRecords(as: Bad.self, layout: "L"), Self.body(#"{"stock":2.5}"#)) == "-1007")
    }

    struct Stamp: Decodable { var when: Date }

    @Test(arguments: [
        // dateformats 0 (and the server default) and 1 (read as US): MM/dd/yyyy
        ("03/14/1975", utc(1975, 3, 14)),
        ("3/4/1975", utc(1975, 3, 4)),
        ("03/14/1975 13:45:30", utc(1975, 3, 14, 13, 45, 30)),
        ("03/14/1975 1:45:30 PM", utc(1975, 3, 14, 13, 45, 30)),
        ("03/14/1975 12:05:00 AM", utc(1975, 3, 14, 0, 5, 0)),
        // dateformats 2: ISO
        ("1975-03-14", utc(1975, 3, 14)),
        ("1975-03-14T13:45:30", utc(1975, 3, 14, 13, 45, 30)),
        ("1975-03-14 13:45:30", utc(1975, 3, 14, 13, 45, 30)),
        // times alone: that time on 1970-01-01
        ("13:45:30", utc(1970, 1, 1, 13, 45, 30)),
        ("09:15", utc(1970, 1, 1, 9, 15, 0)),
        ("2024-02-29", utc(2024, 2, 29)),
    ])
    func datesOfEveryFormat(text: String, expected: Date) throws {
        let set = try decoded(Endpoints.getRecords(as: Stamp.self, layout: "L"), Self.body(#"{"when":"\#(text)"}"#))
        #expect(set.records[0].fieldData.when == expected)
    }

    @Test func fractionalSecondsAndTimeZones() throws {
        let set = try decoded(Endpoints.getRecords(as: Stamp.self, layout: "L"), Self.body(#"{"when":"01/01/2020 00:00:00.250"}"#))
        #expect(abs(set.records[0].fieldData.when.timeIntervalSince(Self.utc(2020, 1, 1)) - 0.25) < 0.0001)
        // A zone with daylight saving time: 07/01 is UTC-4 in New York, 01/15 is UTC-5.
        let newYork = try #require(TimeZone(identifier: "America/New_York"))
        let summer = try decoded(Endpoints.getRecords(as: Stamp.self, layout: "L", options: FMReadOptions(timeZone: newYork)),
                                 Self.body(#"{"when":"07/01/2021 12:00:00"}"#))
        #expect(summer.records[0].fieldData.when == Self.utc(2021, 7, 1, 16))
        let winter = try decoded(Endpoints.find(as: Stamp.self, layout: "L", request: FMFindRequest(queries: [FMQuery(["a": "1"])], timeZone: newYork)),
                                 Self.body(#"{"when":"01/15/2021 12:00:00"}"#))
        #expect(winter.records[0].fieldData.when == Self.utc(2021, 1, 15, 17))
    }

    @Test(arguments: ["13/01/2020", "02/30/2021", "2021-02-29", "hello", "03/14/1975 25:00:00 PM", "12:61", "03/14/1975x"])
    func notADate(text: String) {
        #expect(decodeError(Endpoints.getRecords(as: Stamp.self, layout: "L"), Self.body(#"{"when":"\#(text)"}"#)) == "-1007")
    }

    @Test func repetitions() throws {
        struct Contact: Decodable {
            var phone: [String]
            var score: [Int?]
            var second: String
            var first: String
            enum CodingKeys: String, CodingKey {
                case phone, score
                case second = "phone(2)"
                case first = "phone(1)"
            }
        }
        let json = Self.body(#"{"phone":"555-1","phone(2)":"555-2","phone(3)":"","score":1,"score(2)":"","score(3)":"7"}"#)
        let contact = try decoded(Endpoints.getRecords(as: Contact.self, layout: "L"), json).records[0].fieldData
        #expect(contact.phone == ["555-1", "555-2"], "trailing empty repetitions are left out")
        #expect(contact.score == [1, nil, 7])
        #expect(contact.second == "555-2" && contact.first == "555-1")
        // A field that is not repeated reads as one repetition.
        struct One: Decodable { var tags: [String] }
        #expect(try decoded(Endpoints.getRecords(as: One.self, layout: "L"), Self.body(#"{"tags":"a"}"#)).records[0].fieldData.tags == ["a"])
    }

    @Test func portalRows() throws {
        struct Row: Decodable, Equatable {
            var recordId: String
            var amount: Double?
            var due: Date?
            var codes: [String]
            enum CodingKeys: String, CodingKey {
                case recordId
                case amount = "Lines::amount"
                case due = "Lines::due"
                case codes = "Lines::code"
            }
        }
        let portal = #"{"lines":[{"recordId":"1","modId":"0","Lines::amount":"","Lines::due":"2021-05-06","Lines::code(1)":"A","Lines::code(2)":"B"},{"recordId":"2","modId":"0","Lines::amount":"12.5","Lines::due":"","Lines::code(1)":""}]}"#
        let set = try decoded(Endpoints.getRecords(as: Product.self, layout: "L"), Self.body(#"{"name":"x"}"#, portal: portal))
        let rows = try #require(set.records[0].portalData["lines"])
        let decodedRows = try rows.map { try $0.decode(Row.self) }
        #expect(decodedRows == [Row(recordId: "1", amount: nil, due: Self.utc(2021, 5, 6), codes: ["A", "B"]),
                                Row(recordId: "2", amount: 12.5, due: nil, codes: [])])
        struct Strict: Decodable { var amount: Double; enum CodingKeys: String, CodingKey { case amount = "Lines::amount" } }
        do {
            _ = try rows[0].decode(Strict.self)
            Issue.record("expected a throw")
        } catch let error as FMError {
            #expect(error.code == "-1007" && error.message.contains("Lines::amount"))
        }
    }

    @Test func nestedTypesAndEnums() throws {
        enum Status: String, Decodable { case open, closed }
        struct Ticket: Decodable { var status: Status?; var state: Status; var meta: [String: Int]? }
        let ticket = try decoded(Endpoints.getRecords(as: Ticket.self, layout: "L"),
                                 Self.body(#"{"status":"","state":"open","meta":{"a":"1","b":2}}"#)).records[0].fieldData
        #expect(ticket.status == nil && ticket.state == .open && ticket.meta == ["a": 1, "b": 2])
    }
}

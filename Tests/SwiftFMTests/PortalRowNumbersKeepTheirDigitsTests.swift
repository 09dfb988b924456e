import Foundation
import Testing
@testable import SwiftFM

// The contract: a typed portal row (`FMPortalRow.decode`, `FMPortals.decode` in a layout record's `fillPortals`) reads
// its numbers with the rules `fieldData` is read with: every digit the server sent. A related record's id beyond 2^53
// (FileMaker number fields hold up to 400 digits; `Get(UUIDNumber)` keys have about 40) decodes into `Int64`,
// `UInt64` and `Decimal` as sent, never rounded through `Double` to a neighbour's id.

@Suite("Portal row numbers keep their digits")
struct PortalRowNumbersKeepTheirDigitsTests {
    struct Child: Decodable, Equatable {
        var id: Int64
        var big: Decimal
        var price: Double
        enum CodingKeys: String, CodingKey {
            case id = "kids::id", big = "kids::uuid", price = "kids::price"
        }
    }

    struct Parent: Decodable { var name: String }

    static let body = #"""
    {"response":{"data":[{"fieldData":{"name":"p","id":9007199254740993},"portalData":{"kids":[
      {"recordId":"1","modId":"1","kids::id":9007199254740993,"kids::uuid":123456789012345678901234567891,
       "kids::price":0.1}]},"recordId":"1","modId":"1"}],
     "dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1}},
     "messages":[{"code":"0","message":"OK"}]}
    """#

    /// Before the fix the row's `kids::id` 9007199254740993 decoded as 9007199254740992 (another record's id) and the
    /// 30-digit `kids::uuid` as a rounded `Decimal`, without a word; `fieldData` read both exactly.
    @Test func aTypedPortalRowReadsEveryDigit() throws {
        let set = try FMTypedFoundSet<Parent>(responseBody: Data(Self.body.utf8))
        let row = try #require(set.first?.portalData["kids"]?.first)
        let child = try row.decode(Child.self)
        #expect(child.id == 9_007_199_254_740_993)
        #expect(child.big == Decimal(string: "123456789012345678901234567891"))
        #expect(child.price == 0.1)
        let portals = FMPortals(rows: set.first?.portalData ?? [:])
        #expect(try portals.decode("kids", as: Child.self) == [child])
    }

    /// Over the wire, through a typed read.
    @Test func aTypedReadsPortalRowReadsEveryDigit() async throws {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, Self.body) }
        let set = try await h.api.getRecords(as: Parent.self, layout: "L")
        let child = try #require(set.first?.portalData["kids"]?.first).decode(Child.self)
        #expect(child.id == 9_007_199_254_740_993)
    }

    /// Guard: rows made in code (numbers as `Double`) still decode, and rows equal by their values are equal.
    @Test func rowsMadeInCodeStillDecode() throws {
        let row = FMPortalRow(recordId: "1", modId: "1", fields: ["kids::id": .number(7), "kids::uuid": .number(8), "kids::price": .number(0.5)])
        #expect(try row.decode(Child.self) == Child(id: 7, big: 8, price: 0.5))
        let set = try FMTypedFoundSet<Parent>(responseBody: Data(Self.body.utf8))
        let parsed = try #require(set.first?.portalData["kids"]?.first)
        let same = FMPortalRow(recordId: parsed.recordId, modId: parsed.modId, fields: parsed.fields)
        #expect(same == parsed)
        #expect(same.hashValue == parsed.hashValue)
    }

    /// Guard: a field the caller changed reads its new value, never the characters the answer had.
    @Test func aChangedFieldReadsItsNewValue() throws {
        let set = try FMTypedFoundSet<Parent>(responseBody: Data(Self.body.utf8))
        var row = try #require(set.first?.portalData["kids"]?.first)
        row.fields["kids::id"] = .number(5)
        #expect(try row.decode(Child.self).id == 5)
    }

    /// Guard: a key sent twice reads its last value, a number or not.
    @Test func aKeySentTwiceReadsItsLastValue() throws {
        let twice = Self.body.replacingOccurrences(of: #""kids::id":9007199254740993,"#,
                                                   with: #""kids::id":9007199254740993,"kids::id":"12345678901234567","#)
        #expect(twice != Self.body)
        let set = try FMTypedFoundSet<Parent>(responseBody: Data(twice.utf8))
        let row = try #require(set.first?.portalData["kids"]?.first)
        #expect(row.fields["kids::id"] == .string("12345678901234567"))
        #expect(try row.decode(Child.self).id == 12_345_678_901_234_567)
    }
}

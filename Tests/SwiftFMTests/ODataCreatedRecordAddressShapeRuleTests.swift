// Contract: the record FMOData.createRecord answers carries the new record's address as the server wrote it, and only an
// address: `@odata.id` and `@odata.editLink` are strings, taken from whichever spelling (`@odata.id` or 4.01's `@id`)
// holds a string; a value that is not a string (null, a number, an object) is no address and is left out, never passed
// on in the address's key nor hiding the other spelling's string. Nothing is followed: a link to another host is text.
import Foundation
import Testing
@testable import SwiftFM

@Suite struct ODataCreatedRecordAddressShapeRuleTests {
    private let address = "https://fm.example.com/fmi/odata/v4/Music/Artists(12)"

    @Test func aNullInOneSpellingDoesNotHideTheOtherSpellingsAddress() {
        let record = ODataEnvelope.createdRecord(["@odata.id": NSNull(), "@id": address,
                                                  "@odata.editLink": NSNull(), "@editLink": address, "name": "Odetta"])
        #expect(record["@odata.id"] as? String == address)
        #expect(record["@odata.editLink"] as? String == address)
        #expect(record["name"] as? String == "Odetta")
    }

    @Test func anAnnotationThatIsNotAStringIsNoAddress() {
        let record = ODataEnvelope.createdRecord(["@odata.id": 12, "@odata.editLink": ["href": address], "name": "Odetta"])
        #expect(record["@odata.id"] == nil)
        #expect(record["@odata.editLink"] == nil)
        #expect(record["name"] as? String == "Odetta")
    }

    @Test func theFourZeroSpellingWinsWhenBothAreStrings() {
        let other = "https://elsewhere.example.net/Artists(99)"
        let record = ODataEnvelope.createdRecord(["@odata.id": address, "@id": other, "@odata.context": "x", "@etag": "W/1"])
        #expect(record["@odata.id"] as? String == address)
        #expect(record.keys.sorted() == ["@odata.id"])
    }

    @Test func aLinkToAnotherHostIsKeptAsTextOnly() {
        let other = "https://elsewhere.example.net/Artists(99)"
        let record = ODataEnvelope.createdRecord(["@id": other])
        #expect(record["@odata.id"] as? String == other)
    }
}

import Foundation
import Testing
@testable import SwiftFM

// Held (a guard of the typed repetition rule against a hostile answer): only `name(n)` with n in plain ASCII decimal,
// without a leading zero, from 2 to FileMaker's 32,000, is a repetition; anything else that looks like one — `name(0)`,
// `name(-1)`, `name(01)`, a number past `Int`, other scripts' digits, spaces — is another field and moves no place. An
// escaped key is read as its text. A repetition sent twice keeps its last value.

@Suite("Repeating fields: hostile keys")
struct RepeatingFieldHostileKeysTests {
    struct Contact: Decodable, Equatable {
        var phone: [String]
    }

    static func phones(_ fieldData: String) throws -> [String] {
        try decoded(Endpoints.getRecords(as: Contact.self, layout: "L"), RepeatingFieldGapsKeepTheirPlacesTests.body(fieldData))
            .records[0].fieldData.phone
    }

    @Test(arguments: ["phone(0)", "phone(-1)", "phone(01)", "phone(99999999999999999999)", "phone(1234567890)",
                      "phone(\u{0663})", "phone(\u{FF13})", "phone( 3)", "phone(3 )", "phone(32001)", "phone()", "phone(3",
                      "phone3)", "Phone(3)", "phone(+3)", "phone(3.0)"])
    func aKeyThatIsNotARepetitionMovesNoPlace(_ key: String) throws {
        let quoted = String(decoding: try JSONSerialization.data(withJSONObject: [key], options: []), as: UTF8.self).dropFirst().dropLast()
        #expect(try Self.phones(#"{"phone":"1",\#(quoted):"x"}"#) == ["1"], "\(key)")
    }

    @Test func anEscapedKeyIsReadAsItsText() throws {
        #expect(try Self.phones(#"{"phone":"1","phone\u00283\u0029":"3"}"#) == ["1", "", "3"])
        #expect(try Self.phones(#"{"phone":"1","phone(2)":"a","phone\u00282)":"b"}"#) == ["1", "b"])
    }

    @Test func theLargestRepetitionIsAPlace() throws {
        let phones = try Self.phones(#"{"phone(32000)":"last"}"#)
        #expect(phones.count == 32_000 && phones.last == "last" && phones.dropLast().allSatisfy(\.isEmpty))
    }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

/// Review findings on error texts (WIRE.md §12) and schema-file errors (SCHEMA.md).
@Suite struct ReviewFindingsErrorsTests {
    /// §12 lists these codes with FileMaker's texts; an injected fault without a message must use them,
    /// not "Unknown error".
    @Test func everyListedCodeHasItsText() throws {
        let h = try Harness()
        let expected: [(String, String)] = [
            ("202", "Field access is denied"),
            ("402", "Selected field is not a match field for a lookup"),
            ("505", "Value in field is not an existing value in the file"),
            ("506", "Value in field is not listed in the value list"),
            ("507", "Value in field failed calculation test of validation entry option"),
            ("508", "Invalid value entered in Find mode"),
            ("510", "Related value is empty or unavailable"),
            ("954", "Unsupported XML grammar (*)"),
            ("955", "No database name (*)"),
            ("957", "Conflicting commands (*)"),
            ("959", "Custom Web Publishing technology is disabled"),
            ("3", "Command is unavailable"),
        ]
        for (code, text) in expected {
            h.emulator.inject(.fileMakerError(code: code))
            let a = h.send("GET", "/fmi/data/vLatest/productInfo", bearer: false, contentType: nil)
            #expect(a.code == code)
            #expect(a.message?.hasPrefix(text) == true, "\(code): \(a.message ?? "nil")")
        }
    }
}

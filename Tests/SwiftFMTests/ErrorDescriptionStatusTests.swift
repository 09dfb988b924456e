// Contract: an FMError's one-line description names the HTTP status once. It is appended as "(HTTP n)" unless the
// message already says "HTTP n" (the client's hints for a container URL's 404, a host given with a path, another web
// server), so a printed error never reads "… (HTTP 404): … (HTTP 404)". "HTTP n" followed by another digit, of any
// script, is another number ("HTTP 4040", "HTTP 404٠"), so the status is still added; at the message's very end,
// negative or huge, the status is named once.
import Foundation
import Testing
@testable import SwiftFM

@Suite struct ErrorDescriptionStatusTests {
    static func occurrences(of needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test func aMessageThatNamesTheStatusIsNotFollowedByItAgain() {
        let error = FMError(code: "-1006", message: "The container was not found at fms.example.com:443 (HTTP 404): its URL may have expired",
                            httpStatus: 404)
        #expect(Self.occurrences(of: "HTTP 404", in: error.description) == 1, "\(error.description)")
        #expect(error.description == "FMError -1006: The container was not found at fms.example.com:443 (HTTP 404): its URL may have expired")
    }

    @Test func aMessageWithoutTheStatusGetsIt() {
        #expect(FMError(code: "105", message: "Layout is missing", httpStatus: 500).description == "FMError 105: Layout is missing (HTTP 500)")
        // Another status in the message is not this answer's: the answer's is still added.
        #expect(FMError(code: "-1007", message: "HTTP 200 with FileMaker code 401", httpStatus: 500).description
                == "FMError -1007: HTTP 200 with FileMaker code 401 (HTTP 500)")
        // "HTTP 4040" is not "HTTP 404".
        #expect(FMError(code: "-1006", message: "HTTP 4040 seen", httpStatus: 404).description == "FMError -1006: HTTP 4040 seen (HTTP 404)")
    }

    @Test func aStatusFollowedByADigitOfAnotherScriptIsNotNamed() {
        // ARABIC-INDIC DIGIT ZERO and FULLWIDTH DIGIT ZERO: "HTTP 404٠" reads as HTTP 4040, not as this answer's 404.
        for digit in ["\u{0660}", "\u{FF10}"] {
            let error = FMError(code: "-1006", message: "a proxy said HTTP 404\(digit)", httpStatus: 404)
            #expect(error.description.hasSuffix("(HTTP 404)"), "\(error.description)")
        }
    }

    @Test func aStatusAtTheEndNegativeOrHugeIsNamedOnce() {
        for status in [404, -1, Int.max, Int.min] {
            let named = FMError(code: "-1006", message: "the answer was HTTP \(status)", httpStatus: status)
            #expect(Self.occurrences(of: "HTTP \(status)", in: named.description) == 1, "\(named.description)")
            let unnamed = FMError(code: "-1006", message: "no status here", httpStatus: status)
            #expect(unnamed.description.hasSuffix("(HTTP \(status))"), "\(unnamed.description)")
        }
        // "HTTP -1" inside "HTTP -12" is not -1.
        #expect(FMError(code: "-1006", message: "HTTP -12", httpStatus: -1).description.hasSuffix("(HTTP -1)"))
    }
}

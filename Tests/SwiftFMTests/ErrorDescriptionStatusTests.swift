// Contract: an FMError's one-line description names the HTTP status once. It is appended as "(HTTP n)" unless the
// message already says "HTTP n" (the client's hints for a container URL's 404, a host given with a path, another web
// server), so a printed error never reads "… (HTTP 404): … (HTTP 404)".
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
}

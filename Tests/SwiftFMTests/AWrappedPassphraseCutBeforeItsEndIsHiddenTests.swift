import Foundation
import Testing
@testable import SwiftFM

/// Contract: the start of a secret just before a `…` (``Redaction/scrubCut(_:secrets:shown:)``: where a limit cut a
/// server's text) is hidden also when the secret is a passphrase wrapped at one of its spaces, as the whole passphrase
/// wrapped there is (``Redaction/scrub(_:secrets:shown:)``): a server that wraps an echoed passphrase at a word and pads
/// it to the limit must not leave all of it but its tail in the text.
@Suite("A wrapped passphrase cut before its end is hidden")
struct AWrappedPassphraseCutBeforeItsEndIsHiddenTests {
    static let p = Redaction.placeholder

    /// Failed before: each came back as it was (`pw correct\r\nhorse bat…`).
    @Test(arguments: ["correct\r\nhorse bat", "correct horse\nbat", "correct \r\n horse bat", "correct\u{FFFD}\u{FFFD}horse\\nbat"])
    func aPassphrasesWrappedStartIsHidden(wrapped: String) {
        #expect(Redaction.scrubCut("pw \(wrapped)…", secrets: ["correct horse battery"]) == "pw \(Self.p)…")
        // As FileMaker's message comes: made printable, cut at the limit.
        let cut = FMError.serverText("pw \(wrapped)tery", limit: ("pw " + wrapped).unicodeScalars.count)
        #expect(Redaction.scrubCut(cut, secrets: ["correct horse battery"]) == "pw \(Self.p)…", "\(cut.debugDescription)")
    }

    /// Held: ordinary wrapped text before a cut is left, and so is a passphrase's start without a space where it has one.
    @Test func ordinaryTextBeforeACutIsLeft() {
        for text in ["correcthorse bat…", "correct\r\nhorsebat…", "incorrect\r\nhorses…"] {
            #expect(Redaction.scrubCut(text, secrets: ["correct horse battery"]) == text, "\(text.debugDescription)")
        }
    }
}

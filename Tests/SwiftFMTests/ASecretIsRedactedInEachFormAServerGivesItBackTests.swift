import Foundation
import Testing
@testable import SwiftFM

/// Contract: a secret is redacted in each form a server's text gives it back in, wrapped over lines or not, cut or
/// not: as it is; in Unicode's other normalisation form (`é` as one character, or as `e` and a combining accent: the
/// plain search compares them as equal, so the wrapped search must too); and as ``FMError/serverText(_:limit:)`` prints
/// a password with a tab or a line break of its own (each as U+FFFD), the form every FileMaker message is logged in.
@Suite("A secret is redacted in each form a server gives it back")
struct ASecretIsRedactedInEachFormAServerGivesItBackTests {
    static let p = Redaction.placeholder
    static let composed = "caf\u{E9}-1234"
    static let decomposed = "cafe\u{301}-1234"

    /// Failed before: the other normalisation form, wrapped, came back as it was (`cafe\u{301}\r\n-1234`).
    @Test func aSecretInTheOtherNormalisationFormWrappedIsRedacted() {
        #expect(Redaction.scrub("pw cafe\u{301}\r\n-1234 ok", secrets: [Self.composed]) == "pw \(Self.p) ok")
        #expect(Redaction.scrub("pw caf\u{E9}\r\n-1234 ok", secrets: [Self.decomposed]) == "pw \(Self.p) ok")
        #expect(Redaction.scrubCut("pw cafe\u{301}\r\n-12…", secrets: [Self.composed]) == "pw \(Self.p)…")
        // As it was: either form, not wrapped.
        #expect(Redaction.scrub("pw cafe\u{301}-1234 ok", secrets: [Self.composed]) == "pw \(Self.p) ok")
        #expect(Redaction.scrub("pw caf\u{E9}-1234 ok", secrets: [Self.composed]) == "pw \(Self.p) ok")
    }

    /// Failed before: `wrong pass�word1 given` and `pw pass�w…`: a password with a tab, in a server's message.
    @Test func aSecretWithATabInAServersMessageIsRedacted() {
        let secret = "pass\tword1"
        #expect(Redaction.scrub(FMError.serverText("wrong \(secret) given"), secrets: [secret]) == "wrong \(Self.p) given")
        #expect(Redaction.scrubCut(FMError.serverText("pw \(secret)", limit: 9), secrets: [secret]) == "pw \(Self.p)…")
        #expect(Redaction.scrub("wrong \(secret) given", secrets: [secret]) == "wrong \(Self.p) given")
    }

    /// Held: text that is not the secret in any form is left.
    @Test func otherTextIsLeft() {
        for text in ["pw cafe-1234", "pw caf\u{E9}\r\n1234", "pass word1", "pass\u{FFFD}\u{FFFD}word1"] {
            #expect(Redaction.scrub(text, secrets: [Self.composed, "pass\tword1"]) == text, "\(text.debugDescription)")
        }
    }
}

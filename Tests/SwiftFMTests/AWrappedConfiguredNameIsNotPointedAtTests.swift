import Foundation
import Testing
@testable import SwiftFM

/// Contract: the shown-names rule (``Redaction/scrub(_:secrets:shown:)``: a secret inside the configured host or database
/// name is left there, not pointed at) holds for a configured name a server wraps over lines, as the secret itself is
/// found wrapped: `fms.ac\r\nme.com`, whose password is `acme`, is the host wrapped, and hiding `ac\r\nme` there would say
/// which part of the known host the password is. The same for a name wrapped at one of its spaces (`My Sales\r\nDB`),
/// and for the start of a name a cut left before a `…` (`fms.ac\r\nm…`). Wherever else the text holds the secret,
/// wrapped or not, it is hidden.
@Suite("A wrapped configured name is not pointed at")
struct AWrappedConfiguredNameIsNotPointedAtTests {
    static let p = Redaction.placeholder

    /// Failed before: `cannot reach fms.<redacted>.com` (and `fms.<redacted>\u{FFFD}...`) for the host wrapped at its password.
    @Test(arguments: ["fms.ac\r\nme.com", "fms.ac\n me.com", "fms.ac\\r\\nme.com", "fms.ac\u{FFFD}\u{FFFD}me.com", "fms.\r\nacme\r\n.com"])
    func aSecretInsideAWrappedHostIsLeft(host: String) {
        let text = "cannot reach \(host) today"
        #expect(Redaction.scrub(text, secrets: ["acme"], shown: ["fms.acme.com", "Sales"]) == text)
        #expect(Redaction.scrubCut(text, secrets: ["acme"], shown: ["fms.acme.com", "Sales"]) == text)
    }

    /// Failed before: `db My <redacted>\r\nDB`: the database name wrapped at a space.
    @Test func aSecretInsideADatabaseNameWrappedAtASpaceIsLeft() {
        let text = "db My Sales\r\nDB is closed"
        #expect(Redaction.scrub(text, secrets: ["Sales"], shown: ["fms.acme.com", "My Sales DB"]) == text)
    }

    /// Failed before: `fms.<redacted>…`: the start of the host, wrapped, cut before its end.
    @Test func aSecretInsideAWrappedHostCutThereIsLeft() {
        let shown = ["fms.acme.com", "Sales"]
        #expect(Redaction.scrubCut("cannot reach fms.ac\r\nm…", secrets: ["acme"], shown: shown) == "cannot reach fms.ac\r\nm…")
        #expect(Redaction.scrubCut("cannot reach fms.ac\r\nme.c…", secrets: ["acme"], shown: shown) == "cannot reach fms.ac\r\nme.c…")
        #expect(Redaction.scrub("cannot reach fms.ac\r\nme.c…", secrets: ["acme"], shown: shown) == "cannot reach fms.ac\r\nme.c…")
    }

    /// Held: the secret elsewhere in the same text is hidden, wrapped or not, and a text that is only the secret's start
    /// before a cut still hides it.
    @Test func theSecretElsewhereIsHidden() {
        let shown = ["fms.acme.com", "Sales"]
        #expect(Redaction.scrub("pw ac\r\nme; fms.ac\r\nme.com", secrets: ["acme"], shown: shown) == "pw \(Self.p); fms.ac\r\nme.com")
        #expect(Redaction.scrub("pw acme; fms.ac\r\nme.com", secrets: ["acme"], shown: shown) == "pw \(Self.p); fms.ac\r\nme.com")
        #expect(Redaction.scrubCut("pw a\r\ncm…", secrets: ["acme"], shown: ["acme.com"]) == "pw \(Self.p)…")
        #expect(Redaction.scrubCut("fms.acmx.a\r\ncm…", secrets: ["acme"], shown: shown) == "fms.acmx.\(Self.p)…")
    }
}

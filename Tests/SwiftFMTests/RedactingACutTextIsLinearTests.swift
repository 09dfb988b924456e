import Foundation
import Testing
@testable import SwiftFM

/// Contract: redacting a text a limit may have cut (``Redaction/scrubCut(_:secrets:)``: also the start of a secret just
/// before a `…`) costs one pass over the text per secret, not one search per length of each secret. Every failed
/// call's message goes through it with every known secret, among them the last Claris ID tokens sent (over a thousand
/// characters each), so its cost must not grow with the square of a secret's length. Bounded here by a wait on the
/// result that only a cost of that square's order misses (a long secret, a long text).
@Suite("Redacting a cut text is linear")
struct RedactingACutTextIsLinearTests {
    /// `count` characters cycling through ten letters.
    static func letters(_ count: Int) -> String {
        let alphabet = Array("abcdefghij")
        return String((0..<count).map { alphabet[$0 % alphabet.count] })
    }

    /// Failed before: still running after the bound (one search of the whole text for each of 40,000 lengths).
    @Test func aLongSecretCutInALongTextIsRedactedWithinTheBound() {
        let secret = "Y" + Self.letters(39_999)
        let text = String(repeating: "x", count: 70_000) + String(secret.prefix(30_000)) + "…"
        let done = DispatchSemaphore(value: 0)
        let result = Locked<String?>(nil)
        Thread {
            result.withLock { $0 = Redaction.scrubCut(text, secrets: [secret]) }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 60) == .success, "scrubCut still running after 60 s")
        #expect(result.withLock { $0 } == String(repeating: "x", count: 70_000) + Redaction.placeholder + "…")
    }

    /// Held: the start of a secret before a `…` is hidden from 3 characters on, the longest start over all secrets,
    /// and not when it is shorter or not just before the `…`.
    @Test func theStartOfASecretBeforeACutIsHidden() {
        let p = Redaction.placeholder
        #expect(Redaction.scrubCut("answer: tok-12…", secrets: ["tok-1234"]) == "answer: \(p)…")
        #expect(Redaction.scrubCut("answer: to…", secrets: ["tok-1234"]) == "answer: to…")
        #expect(Redaction.scrubCut("answer: tok…", secrets: ["tok-1234"]) == "answer: \(p)…")
        #expect(Redaction.scrubCut("tok-12 x…", secrets: ["tok-1234"]) == "tok-12 x…")
        #expect(Redaction.scrubCut("a tok-1234 b tok-1…", secrets: ["tok-1234"]) == "a \(p) b \(p)…")
        #expect(Redaction.scrubCut("aaaab…", secrets: ["aab-secret", "aaaab-other"]) == "\(p)…")
        #expect(Redaction.scrubCut("xaab…", secrets: ["aab-secret", "aaaab-other"]) == "x\(p)…")
        #expect(Redaction.scrubCut("no cut here", secrets: ["tok-1234"]) == "no cut here")
    }
}

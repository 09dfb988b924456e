import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Contract: a known secret that a server (or a proxy) echoes wrapped over lines is redacted whole, as it is unwrapped.
/// A wrap is a line break (CR, LF, CRLF, VT, FF, NEL, U+2028, U+2029, or the U+FFFD that ``FMError/serverText(_:limit:)``
/// makes of each) or its escaped form (`\n`, `\r`, as JSON and Swift write it inside a quoted string), with any spaces
/// and tabs around it (HTTP header folding: CRLF then a space or a tab). Such a wrap inside a secret is redacted with
/// it (a column wrap, header folding), and so is one that stands for a space of the secret (a passphrase wrapped at a
/// word); a cut secret wrapped before its `…` too. Ordinary text is left: spaces alone are no wrap, and text that is not
/// the secret once unwrapped is not redacted. The cost stays one pass over the text per secret.
@Suite("A secret split by a line break is redacted")
struct ASecretSplitByALineBreakIsRedactedTests {
    static let p = Redaction.placeholder

    /// Failed before: each came back as it was (`Bearer abc123\r\n def456`).
    @Test(arguments: [
        "abc123\r\n def456", "abc123\r\n\tdef456", "abc123\ndef456", "abc123\rdef456", "abc\n123\ndef\n456",
        "abc123 \r\n  def456", "abc123\u{2028}def456", "abc123\u{85}def456", "abc123\u{FFFD}\u{FFFD} def456",
        #"abc123\r\n def456"#, #"abc123\ndef456"#,
    ])
    func aWrappedTokenIsRedactedWhole(wrapped: String) {
        let text = "Authorization: Bearer \(wrapped) (echoed)"
        #expect(Redaction.scrub(text, secrets: ["abc123def456"]) == "Authorization: Bearer \(Self.p) (echoed)")
    }

    /// Failed before: a server's message wrapped over lines kept the secret once made printable (`abc123��def456`).
    @Test func aServersTextMadePrintableIsRedacted() {
        let text = FMError.serverText("wrong token abc123\r\ndef456 given")
        #expect(Redaction.scrubCut(text, secrets: ["abc123def456"]) == "wrong token \(Self.p) given")
    }

    /// Failed before: a passphrase wrapped at one of its spaces was shown.
    @Test(arguments: ["correct horse\nbattery", "correct\n horse battery", "correct horse \r\nbattery", "correct horse\u{FFFD}battery"])
    func aPassphraseWrappedAtASpaceIsRedacted(wrapped: String) {
        #expect(Redaction.scrub("pw \(wrapped) ok", secrets: ["correct horse battery"]) == "pw \(Self.p) ok")
    }

    /// Failed before: the start of a secret wrapped before the cut was shown (`abc1\r\n23…`).
    @Test func aWrappedSecretCutBeforeItsEndIsHidden() {
        #expect(Redaction.scrubCut("echo abc1\r\n 23…", secrets: ["abc123def456"]) == "echo \(Self.p)…")
        #expect(Redaction.scrubCut("echo ab\r\nc…", secrets: ["abc123def456"]) == "echo \(Self.p)…")
    }

    /// Held: ordinary text is not redacted, wrapped or not.
    @Test func ordinaryTextIsLeft() {
        let secrets = ["abc123def456", "correct horse battery"]
        for text in ["abc123 def456", "abc123\r\nxdef456", "abc123\n\n-def456", "abc12\n3dx", "correct horsebattery",
                     "correct  horse battery", "abc123\\\\ndef456", "line one\r\nline two\u{FFFD}\u{FFFD}", "\\n\\r\n\u{FFFD} \t"] {
            #expect(Redaction.scrub(text, secrets: secrets) == text, "\(text.debugDescription)")
            #expect(Redaction.scrubCut(text + "…", secrets: secrets) == text + "…", "\(text.debugDescription)")
        }
        // A secret that holds a line break itself is matched as it is.
        #expect(Redaction.scrub("a new\nline-pw b", secrets: ["new\nline-pw"]) == "a \(Self.p) b")
        #expect(Redaction.scrub("a newline-pw b", secrets: ["new\nline-pw"]) == "a newline-pw b")
    }

    /// Failed before: a FileMaker message that echoed the password wrapped (a CRLF and a tab, as JSON escapes them) showed it
    /// in the error the call completed with and in the client's lines.
    @Test func aClientsErrorAndLinesHideAWrappedEcho() {
        let stub = StubTransport { request in
            guard request.url?.path.hasSuffix("/sessions") == true else { return .json(200, Bodies.value("ok")) }
            return .json(401, #"{"messages":[{"code":"212","message":"Invalid password hunter2\r\n\t-secret; try again"}],"response":{}}"#)
        }
        let configuration = FMConfiguration(host: "https://fms.example.com", database: "Sales", username: "admin", password: "hunter2-secret")
        let lines = Locked<[FMLogEvent]>([])
        let api = DataAPI(configuration: configuration, transport: stub, logger: { event in lines.withLock { $0.append(event) } })
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        guard case .failure(let error)? = call.wait().first else { Issue.record("the call did not fail"); return }
        let everything = ([error.message, error.underlying ?? "", error.description] + lines.value.flatMap { [$0.message] + Array($0.metadata.values) })
            .joined(separator: "\n")
        #expect(everything.contains("Invalid password \(Self.p); try again"), "\(everything)")
        #expect(!everything.contains("hunter2"), "\(everything)")
        #expect(!everything.contains("-secret"), "\(everything)")
    }

    /// Failed before: not redacted (the wrapped secret was left whole in the result). Bounded here by a wait on the result
    /// that only a cost of the square's order misses: a long secret wrapped every 76 characters in a long text of wraps.
    @Test func aLongWrappedSecretInALongTextIsRedactedWithinTheBound() {
        let alphabet = Array("abcdefghij")
        let secret = "Y" + String((0..<39_999).map { alphabet[$0 % alphabet.count] })
        var wrapped = ""
        for (index, character) in secret.enumerated() {
            if index > 0, index % 76 == 0 { wrapped += "\r\n " }
            wrapped.append(character)
        }
        let noise = String(repeating: "ab\r\n", count: 20_000)
        let text = noise + wrapped + "…" + noise + String(wrapped.prefix(30_000)) + "…"
        let done = DispatchSemaphore(value: 0)
        let result = Locked<String?>(nil)
        Thread {
            result.withLock { $0 = Redaction.scrubCut(text, secrets: [secret]) }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 60) == .success, "scrubCut still running after 60 s")
        #expect(result.withLock { $0 } == noise + Self.p + "…" + noise + Self.p + "…")
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Contract: a known secret is redacted from a log line (its message and its metadata) also as Swift's string
/// escaping writes it (`"pa\"ss"`: the form of `String.debugDescription`, the form swift-log gives a string inside a
/// metadata `.array` or `.dictionary`, which `Logger.fmLogMetadataProvider` renders as text): a password with a quote,
/// a backslash or a control character in it is not shown escaped either.
@Suite("A secret is redacted as Swift escapes it")
struct ASecretIsRedactedAsSwiftEscapesItTests {
    static let secrets = [#"pa"ss-word"#, #"back\slash-pw"#, "tab\tpw-x", "new\nline-pw"]

    static func escaped(_ secret: String) -> String { String(secret.debugDescription.dropFirst().dropLast()) }

    /// Failed before: the escaped forms were shown as they were (`pa\"ss-word`).
    @Test(arguments: secrets)
    func anEscapedSecretIsRedacted(secret: String) {
        let lines = Recorder<FMLogEvent>(expecting: 1)
        let logger = Logger(handler: { lines.record($0) }, secrets: { [secret] })
        let rendered = "[\(secret.debugDescription), \"other\"]"
        logger.log(.error, "echo \(Self.escaped(secret)) and \(secret)", metadata: ["ctx": rendered])
        let line = lines.wait().first
        #expect(line?.message == "echo \(Redaction.placeholder) and \(Redaction.placeholder)", "\(String(describing: line))")
        #expect(line?.metadata["ctx"] == "[\"\(Redaction.placeholder)\", \"other\"]", "\(String(describing: line?.metadata))")
    }

    /// Held: a secret that Swift writes as it is needs no second form.
    @Test func aPlainSecretIsRedactedOnce() {
        #expect(Redaction.scrub("a hunter2-pw b", secrets: ["hunter2-pw"]) == "a \(Redaction.placeholder) b")
    }
}

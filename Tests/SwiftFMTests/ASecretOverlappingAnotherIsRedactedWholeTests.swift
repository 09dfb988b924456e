import Foundation
import Testing
@testable import SwiftFM

/// Contract: every character of a text that belongs to an occurrence of a known secret is redacted, whatever the other
/// secrets are and in whatever order they are known. A secret that begins another (a token and a longer token that
/// starts with it, a password that is the start of the Basic value's password), that ends inside another, or that
/// overlaps itself (`abab` in `ababab`) leaves no part of either in a log line or an error: each run of text covered
/// by occurrences of secrets is one `<redacted>`.
@Suite("A secret overlapping another is redacted whole")
struct ASecretOverlappingAnotherIsRedactedWholeTests {
    static let p = Redaction.placeholder

    /// Failed before: with the shorter secret first, the longer one's tail was shown (`<redacted>-efgh-5678`).
    @Test func aSecretThatBeginsAnotherLeavesNoTail() {
        let shortFirst = Redaction.scrub("token abcd-1234-efgh-5678 end", secrets: ["abcd-1234", "abcd-1234-efgh-5678"])
        #expect(shortFirst == "token \(Self.p) end")
        let longFirst = Redaction.scrub("token abcd-1234-efgh-5678 end", secrets: ["abcd-1234-efgh-5678", "abcd-1234"])
        #expect(longFirst == "token \(Self.p) end")
    }

    /// Failed before: the second secret's end was shown (`<redacted>-def2`), and the first one's start when the order
    /// was the other way round.
    @Test func secretsThatOverlapAreRedactedAsOneRun() {
        for secrets in [["xyz-abc1", "abc1-def2"], ["abc1-def2", "xyz-abc1"]] {
            #expect(Redaction.scrub("a xyz-abc1-def2 b", secrets: secrets) == "a \(Self.p) b", "\(secrets)")
        }
    }

    /// Failed before: `ababab` showed as `<redacted>ab`.
    @Test func aSecretThatOverlapsItselfLeavesNothing() {
        #expect(Redaction.scrub("x ababab y", secrets: ["abab"]) == "x \(Self.p) y")
    }

    /// Failed before: the secret's escaped form and a plain secret that overlap it were cut one by the other.
    @Test func anEscapedFormAndAnotherSecretOverlapping() {
        let quoted = #"pa"ss-word"#
        let text = #"echo pa\"ss-word-tail"#
        #expect(Redaction.scrub(text, secrets: [quoted, #"word-tail"#]) == "echo \(Self.p)")
    }

    /// Held: a log line through the client's logger, the sent token known after a shorter one that begins it.
    @Test func aLogLineHidesBothTokens() {
        let lines = Recorder<FMLogEvent>(expecting: 1)
        let logger = Logger(handler: { lines.record($0) }, secrets: { ["tok-1234"] })
        logger.remember("tok-1234-rest-of-a-longer-token")
        logger.log(.error, "echo tok-1234-rest-of-a-longer-token", metadata: ["k": "tok-1234-rest-of-a-longer-token!"])
        let line = lines.wait().first
        #expect(line?.message == "echo \(Self.p)")
        #expect(line?.metadata["k"] == "\(Self.p)!")
    }

    /// Held: disjoint secrets and text with none keep every other character.
    @Test func disjointSecretsKeepTheRest() {
        #expect(Redaction.scrub("a s3cret-1 b s3cret-2 c", secrets: ["s3cret-1", "s3cret-2"]) == "a \(Self.p) b \(Self.p) c")
        #expect(Redaction.scrub("nothing here", secrets: ["s3cret-1"]) == "nothing here")
        #expect(Redaction.scrub("abc", secrets: ["abc"]) == "abc")
    }
}

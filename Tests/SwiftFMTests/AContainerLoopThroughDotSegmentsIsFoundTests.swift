import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: container redirect URLs are compared with their paths' dot segments removed (RFC 3986 §5.2.4, part
// of the normal form of §6.2.2.3), a percent-encoded dot (`%2E`, `%2e`) counting as a dot (§6.2.2.2): a server that
// spells one URL `/a/./b` and `/a/x/../b` on alternate turns is in a redirect loop (`-1014`,
// `FMError.ClientCode.containerURLExpired`), not a chain of new URLs ended by the redirect bound (`-1007`). Only the
// path is folded: a query's `./` and `../`, a segment `...` or `.b`, and an escaped slash (`..%2F`) tell URLs apart as
// before. Folding costs one pass over the path, however many segments it has.
@Suite("A container redirect loop through dot segments is found")
struct AContainerLoopThroughDotSegmentsIsFoundTests {
    static let start = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor")!

    /// The start URL as turn `n` spells it: dot segments of a new number each turn, `./` and `x/../` on alternate turns,
    /// so that no spelling ever comes back (only the URL they all spell does).
    static func spelling(_ n: Int) -> String {
        let dots = n % 2 == 0 ? String(repeating: "./", count: n) : String(repeating: "x/../", count: n)
        return "https://fms.example.com/Streaming_SSL/\(dots)MainDB/ABC.png?RCType=EmbeddedRCFileProcessor"
    }

    /// Failed before: -1007 "too many redirects downloading a container" in both cases, after following a new spelling
    /// on each turn to the redirect bound (`/a/./b` and `/a/x/../b` were URLs of their own, none of them the start).
    @Test(arguments: [false, true])
    func aLoopSpelledWithNewDotSegmentsEachTurnIsAnExpiredURL(newCookieEachTurn: Bool) throws {
        let turns = Locked(0)
        let harness = Harness { _ in
            let n = turns.withLock { $0 += 1; return $0 }
            let next = Self.spelling(n)
            return newCookieEachTurn ? .json(302, "", headers: ["Location": next, "Set-Cookie": "X-FMS-Session-Key=k\(n); Path=/"])
                : .json(302, "", headers: ["Location": next])
        }
        let recorder = Recorder<(Data?, String, FMError?)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code, FMError.current)) }
        let value = try #require(recorder.wait().first)
        #expect(value.0 == nil)
        StaleContainerURLSaysItExpiredTests.expectExpired(value.1, value.2?.message)
        if !newCookieEachTurn { #expect(harness.stub.requests.count == 1, "the first redirect already leads back") }
        #expect(harness.stub.requests.count <= Endpoints.maxContainerRedirects + 1)
    }

    /// Failed before: each pair had two comparable forms (the dots kept as written).
    @Test(arguments: [
        ("https://h.example.com/a/./b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/x/../b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/./b", "https://h.example.com/a/x/../b"),
        ("https://h.example.com/a/%2E/b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/x/%2e%2E/b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/x/.%2e/b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/b/..", "https://h.example.com/a/"),
        ("https://h.example.com/a/b/.", "https://h.example.com/a/b/"),
        ("https://h.example.com/../a", "https://h.example.com/a"),
        ("https://h.example.com/./../../a/", "https://h.example.com/a/"),
        ("https://h.example.com/..", "https://h.example.com/"),
        ("https://h.example.com/.", "https://h.example.com/"),
        ("https://h.example.com/a//../b", "https://h.example.com/a/b"),
        ("https://H.example.com:443/a/./%7Eb?q=1", "https://h.example.com/a/~b?q=1"),
    ])
    func dotSegmentsAreFolded(_ first: String, _ second: String) throws {
        let (a, b) = (try #require(URL(string: first)), try #require(URL(string: second)))
        #expect(a.comparableForm == b.comparableForm, "\(first) \(second)")
    }

    /// Held: what is not a dot segment, and the query, still tell URLs apart.
    @Test(arguments: [
        ("https://h.example.com/a?x=./b", "https://h.example.com/a?x=b"),
        ("https://h.example.com/a?x=/../b", "https://h.example.com/a?x=/b"),
        ("https://h.example.com/a/.../b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/.b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/b..", "https://h.example.com/a/"),
        ("https://h.example.com/x/..%2Fb", "https://h.example.com/b"),
        ("https://h.example.com/x/%2F../b", "https://h.example.com/x/b"),
        ("https://h.example.com/a//b", "https://h.example.com/a/b"),
        ("https://h.example.com/a/b/", "https://h.example.com/a/b"),
    ])
    func whatIsNotADotSegmentStillTellsURLsApart(_ first: String, _ second: String) throws {
        let (a, b) = (try #require(URL(string: first)), try #require(URL(string: second)))
        #expect(a.comparableForm != b.comparableForm, "\(first) \(second)")
    }

    /// Held by the fold's one pass: a path of 100 000 segments climbed back out of by 100 000 `..`, and one of 300 000
    /// `.`, are put in their form (a fold that rescanned the path for each segment would not end within the suite).
    @Test func hugeDotPathsAreFoldedInOnePass() throws {
        let climbed = try #require(URL(string: "https://h.example.com/" + String(repeating: "a/", count: 100_000)
                                                + String(repeating: "../", count: 100_000) + "b"))
        #expect(climbed.comparableForm == "https://h.example.com/b")
        let dots = try #require(URL(string: "https://h.example.com/" + String(repeating: "%2E/", count: 300_000) + "c"))
        #expect(dots.comparableForm == "https://h.example.com/c")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: a container download's redirect loop (an expired streaming URL: `-1014`,
// `FMError.ClientCode.containerURLExpired`) is found by where the redirect leads, not by how the server spells it:
// URLs are compared in RFC 3986's normal form (`URL.comparableForm`): the scheme and host in any case, the scheme's
// default port written or not, a percent-encoded unreserved character (`%7E`, `%7e`, `%41`) or the character itself,
// the hex of any other escape in either case, an empty path or `/`, with or without a fragment. Everything else
// tells URLs apart (the path's case, another port, an escaped reserved character such as `%2F`, the query), and a
// chain of redirects that never comes back is still `-1007` "too many redirects".

@Suite("A container redirect loop is found however its URL is spelled")
struct AContainerLoopIsFoundHoweverItsURLIsSpelledTests {
    static let start = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/~ABC.png?RCType=EmbeddedRCFileProcessor")!

    /// The start URL, spelled another way on each turn (no two turns alike, so the spelling never repeats).
    static let spellings = [
        "https://FMS.example.com/Streaming_SSL/MainDB/~ABC.png?RCType=EmbeddedRCFileProcessor",
        "https://fms.example.com:443/Streaming_SSL/MainDB/~ABC.png?RCType=EmbeddedRCFileProcessor",
        "https://fms.example.com/Streaming_SSL/MainDB/%7EABC.png?RCType=EmbeddedRCFileProcessor",
        "HTTPS://fms.example.com/Streaming_SSL/MainDB/%7eABC.png?RCType=EmbeddedRCFileProcessor",
        "https://fms.EXAMPLE.com:443/Streaming_SSL/MainDB/%7E%41BC.png?RCType=EmbeddedRCFileProcessor",
        "https://Fms.Example.Com/Streaming_SSL/MainDB/~ABC.png?RCType=Embedded%52CFileProcessor#top",
        "https://fms.example.COM:443/Streaming_SSL/MainDB/%7e%41%42C.png?RCType=EmbeddedRCFileProcessor",
    ].map { URL(string: $0)! }

    enum Turn: String, CaseIterable, CustomTestStringConvertible {
        /// Each redirect leads back to the URL asked for, spelled anew, with no cookie.
        case noCookie
        /// The same, with a new streaming cookie on every turn (nothing is the same twice but the URL).
        case newCookieEachTurn
        var testDescription: String { rawValue }
    }

    static func harness(_ turn: Turn) -> Harness {
        let turns = Locked(0)
        return Harness { _ in
            let n = turns.withLock { $0 += 1; return $0 }
            let next = spellings[(n - 1) % spellings.count].absoluteString
            switch turn {
            case .noCookie: return .json(302, "", headers: ["Location": next])
            case .newCookieEachTurn: return .json(302, "", headers: ["Location": next, "Set-Cookie": "X-FMS-Session-Key=k\(n); Path=/"])
            }
        }
    }

    /// Failed before: -1007 "too many redirects downloading a container", after following every respelling.
    @Test(arguments: Turn.allCases)
    func aLoopSpelledAnewEachTurnIsAnExpiredURL(_ turn: Turn) throws {
        let harness = Self.harness(turn)
        let recorder = Recorder<(Data?, String, FMError?)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code, FMError.current)) }
        let value = try #require(recorder.wait().first)
        #expect(value.0 == nil)
        StaleContainerURLSaysItExpiredTests.expectExpired(value.1, value.2?.message)
        if turn == .noCookie { #expect(harness.stub.requests.count == 1, "the first redirect already leads back") }
        #expect(harness.stub.requests.count <= Endpoints.maxContainerRedirects + 1)
    }

    /// Failed before: -1007, thrown by the async surface.
    @Test func theAsyncSurfaceThrowsTheExpiredURL() async {
        let harness = Self.harness(.noCookie)
        do {
            _ = try await harness.api.downloadContainer(url: Self.start)
            Issue.record("an expired URL downloaded")
        } catch {
            let error = error as? FMError
            StaleContainerURLSaysItExpiredTests.expectExpired(error?.code, error?.message)
        }
    }

    /// The spellings of one URL have one comparable form.
    @Test func theSpellingsOfOneURLCompareEqual() {
        let form = Self.start.comparableForm
        for spelling in Self.spellings {
            #expect(spelling.comparableForm == form, "\(spelling.absoluteString)")
        }
        #expect(URL(string: "http://Example.com")!.comparableForm == URL(string: "http://example.com:80/")!.comparableForm)
        #expect(URL(string: "https://[::1]:443/a%2fb")!.comparableForm == URL(string: "https://[::1]/a%2Fb")!.comparableForm)
    }

    /// Held: what tells URLs apart still does.
    @Test(arguments: [
        ("https://fms.example.com/a", "https://fms.example.com/A"),             // the path's case
        ("https://fms.example.com/a", "https://fms.example.com:8443/a"),        // another port
        ("https://fms.example.com/a", "http://fms.example.com/a"),              // another scheme
        ("http://fms.example.com:443/a", "http://fms.example.com/a"),           // 443 is not http's default
        ("https://fms.example.com/a/b", "https://fms.example.com/a%2Fb"),       // an escaped reserved character
        ("https://fms.example.com/a?x=1", "https://fms.example.com/a?x=2"),     // the query
        ("https://fms.example.com/a?x=1", "https://fms.example.com/a"),
        ("https://other.example.com/a", "https://fms.example.com/a"),           // another host
    ])
    func differentURLsCompareDifferent(_ first: String, _ second: String) throws {
        let (a, b) = (try #require(URL(string: first)), try #require(URL(string: second)))
        #expect(a.comparableForm != b.comparableForm, "\(first) \(second)")
    }

    /// Held: a chain of redirects to URLs that differ only in what tells URLs apart never comes back: -1007.
    @Test func aChainOfDifferentURLsIsStillTooManyRedirects() throws {
        let harness = Harness { request in
            let n = Int(request.url?.lastPathComponent.dropFirst("hop".count) ?? "") ?? 0
            // The same host spelled anew on each hop, a new path each time.
            let host = n % 2 == 0 ? "FMS.example.com:443" : "fms.example.com"
            return .json(302, "", headers: ["Location": "https://\(host)/Streaming_SSL/MainDB/hop\(n + 1)"])
        }
        let recorder = Recorder<(Data?, String, FMError?)>()
        harness.api.downloadContainer(url: URL(string: "https://fms.example.com/Streaming_SSL/MainDB/hop0")!) { data, code in
            recorder.record((data, code, FMError.current))
        }
        let value = try #require(recorder.wait().first)
        #expect(value.1 == FMError.ClientCode.malformedResponse, "\(value.1)")
        #expect(value.2?.message.contains("too many redirects") == true)
    }
}

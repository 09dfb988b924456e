import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contracts tested here:
// * Where a connection goes (`URL.connectionOrigin`) is one answer per URL, whoever asks: an `OriginPrefix` that a
//   URL's text begins with gives that URL's own `connectionOrigin`, the curl engine's origin of a URL does not depend
//   on which URLs it saw before (nor on other threads asking at the same time), and the first-contact table keys a
//   URL the same whether or not its host is the configured one. The origin is the host and port of the URL's text
//   (`absoluteString`), the text a transport connects to, also for a URL made relative to a base.
// * The curl transport's per-host connection limit holds per host with two hosts' requests interleaved: one host's
//   held connections never make the other's requests wait, and never let more than the limit run for the one host.
// * A found set's script results are those of the `scriptResult*`/`scriptError*` keys as JSON decodes them (escaped
//   or not), the same read raw (`FMFoundSet`) and typed (`FMTypedFoundSet`).
// * An answer's declared length read from header fields is never a number the whitespace-trimming reader before
//   did not read, and never one the body's reservation goes past the cap for.

/// A URL whose text names a host its parse does not: `..//b.com/y` against the authority-less `http:/x/` has the
/// text `http://b.com/y` (what a transport is handed), while `URL.host` of the relative URL is `nil`.
enum OddURLs {
    static let base = URL(string: "http:/x/")!
    static let relative = URL(string: "..//b.com/y", relativeTo: base)!
    static let relativeWithPort = URL(string: "..//b.com:81/y", relativeTo: base)!
}

@Suite("Attacked: the origin of a URL read from its text")
struct OriginOfURLTextTests {
    @Test func theOddURLsTextNamesAHost() {
        #expect(OddURLs.relative.absoluteString == "http://b.com/y")
        #expect(OddURLs.relativeWithPort.absoluteString == "http://b.com:81/y")
    }

    /// A prefix's origin is the origin of every URL whose text begins with it, a relative one too.
    @Test func aPrefixsOriginIsTheRelativeURLsOwn() throws {
        for (known, odd) in [("http://b.com/x", OddURLs.relative), ("http://b.com:81/x", OddURLs.relativeWithPort)] {
            let url = try #require(URL(string: known))
            let prefix = try #require(OriginPrefix(url))
            #expect(prefix.origin(of: odd) == odd.connectionOrigin, "\(odd.absoluteString)")
        }
        #expect(OddURLs.relative.connectionOrigin == "b.com:80")
        #expect(OddURLs.relativeWithPort.connectionOrigin == "b.com:81")
        #expect(OddURLs.relativeWithPort.connectionPort == 81)
    }

    /// The curl engine's key for one URL does not depend on the URL it was asked about before.
    @Test func theCurlEnginesOriginOfAURLDoesNotDependOnTheLastOne() throws {
        #if os(Linux)
        let transport = FMCurlTransport(maxConnectionsPerHost: 2)
        let engine = try #require(transport.engine)
        let fresh = engine.origin(of: OddURLs.relative)
        _ = engine.origin(of: try #require(URL(string: "http://b.com/x")))
        let afterB = engine.origin(of: OddURLs.relative)
        #expect(fresh == afterB)
        #expect(afterB == OddURLs.relative.connectionOrigin ?? "")
        #endif
    }

    /// The first-contact table keys the odd URL the same with the configured host `b.com` as without one.
    @Test func theFirstContactKeyDoesNotDependOnTheConfiguredHost() throws {
        let home = try #require(URLComponents(string: "http://b.com/fmi/data/vLatest"))
        let atHome = Reachability(now: { Date() }, home: home)
        let elsewhere = Reachability(now: { Date() }, home: nil)
        atHome.answered(OddURLs.relative)
        elsewhere.answered(OddURLs.relative)
        let plain = try #require(URL(string: "http://b.com/x"))
        #expect(atHome.standing(plain) == elsewhere.standing(plain))
    }

    #if os(Linux)
    /// The curl transport connects to the text of the URL: a request to the odd URL holds a connection to its host,
    /// so it is counted under that host's limit (the key the engine queues it by is the host's). A guard: a
    /// `URLRequest` makes its URL absolute, so this held before the fix too.
    @Test func aRelativeURLsRequestCountsForItsHost() async throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        let server = HostileServer { head, _ in head.contains("/held") ? .silent : .answer(ok) }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        let authority = server.url.dropFirst("http://".count)
        let odd = try #require(URL(string: "..//\(authority)/held", relativeTo: OddURLs.base))
        #expect(odd.absoluteString == server.url + "/held")

        let held = PendingExchange(transport, odd)
        #expect(await server.waitForHeads(1))
        #expect(server.heads.first?.hasPrefix("GET /held ") == true)
        let waiting = PendingExchange(transport, server.url + "/waiting")
        let heldKey = (held.task as? CurlTransfer)?.origin
        let waitingKey = (waiting.task as? CurlTransfer)?.origin
        #expect(heldKey != nil && heldKey == waitingKey, "one host, two keys of its connection limit: \(String(describing: heldKey)), \(String(describing: waitingKey))")
        held.task.cancel()
        #expect(await held.end()?.code == .cancelled)
        #expect(await waiting.end() == nil)
        #expect(server.count("/waiting") == 1)
    }
    #endif
}


@Suite("Attacked: origins read from a URL's text")
struct OriginOfURLTextGuardTests {
    /// Generated URLs of tricky authorities (userinfo, `@`, escapes, IPv6 and zones, empty and zero-led ports, `?`
    /// and `#` before the first `/`): every URL whose text begins with one's prefix has that prefix's origin.
    @Test func everyURLSharingAPrefixHasItsOrigin() {
        let pieces = ["a", "B", ".", ":", "@", "/", "?", "#", "%", "%2F", "%40", "%3A", "%25", "[", "]", "::1", "80", "0", "\\", "ü",
                      "u:p@", "[::1]", "[fe80::1%25e]", ";", "=", "&", "~", "!", "$", "'", "(", "*", ",", "-", "_", "//", "..", "%00", "+"]
        let schemes = ["http://", "https://", "HTTP://", "x+y://", "http:/", "h://"]
        var state: UInt64 = 22
        func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        var checked = 0
        var wrong: [String] = []
        for _ in 0..<20_000 {
            var text = schemes[next(schemes.count)]
            for _ in 0..<next(10) { text += pieces[next(pieces.count)] }
            guard let url = URL(string: text), let prefix = OriginPrefix(url) else { continue }
            #expect(prefix.origin == url.connectionOrigin)
            let head = String(decoding: prefix.prefix, as: UTF8.self)
            for tail in ["", "x", "x/y?z#w", "@evil/", ":99/", "%2F", "/..//b/"] {
                guard let other = URL(string: head + tail), let found = prefix.origin(of: other) else { continue }
                checked += 1
                if found != other.connectionOrigin { wrong.append("\(url.absoluteString) / \(other.absoluteString)") }
            }
        }
        #expect(checked > 1_000)
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }

    /// Many threads asking the engine about URLs of different hosts (its one remembered prefix changes under them)
    /// each get their own URL's origin.
    @Test func theCurlEnginesOriginIsRightUnderConcurrency() throws {
        #if os(Linux)
        let transport = FMCurlTransport(maxConnectionsPerHost: 2)
        let engine = try #require(transport.engine)
        let texts = ["http://a.example/x", "https://a.example/x", "http://A.example:80/y", "http://a.example:8080/x",
                     "https://a.example.:443/x", "http://u:p@a.example/x", "http://a.example%2F@b.example/x", "http://[::1]:8080/x",
                     "http://[fe80::1%25eth0]/x", "http://bücher.example/x", "http://%41.example/x", "http://a.example:0080/x",
                     "http://a.example:/x", "http://a.example?q=/x", "http://a.example%3A99/x", "http://" + String(repeating: "h", count: 4000) + "/x"]
        let urls = texts.compactMap(URL.init(string:)) + [
            URL(string: "y/z", relativeTo: URL(string: "http://c.example:81/base/")!)!,
            URL(string: "//d.example/z", relativeTo: URL(string: "https://c.example/")!)!,
        ]
        #expect(urls.count == texts.count + 2)
        let expected = urls.map { $0.connectionOrigin ?? "" }
        let wrong = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<2_000 {
                let index = (round * 7 + thread * 3) % urls.count
                let found = engine.origin(of: urls[index])
                if found != expected[index] { wrong.withLock { $0.append("\(urls[index].absoluteString): \(found)") } }
            }
        }
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
        #endif
    }
}

#if os(Linux)
/// The per-host limit (one connection each) with the requests of two hosts interleaved.
@Suite("Attacked: the per-host limit with two hosts")
struct PerHostLimitTwoHostsTests {
    @Test func eachHostHasItsOwnLimit() async throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        let a = HostileServer { head, _ in head.contains("/held") ? .silent : .answer(ok) }
        let b = HostileServer { head, _ in head.contains("/held") ? .silent : .answer(ok) }
        defer { a.stop(); b.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        // Two ports of 127.0.0.1: two origins.
        let aURL = a.url, bURL = b.url

        // A's one connection is held; B's is not counted with it: B's held request reaches B.
        let heldA = PendingExchange(transport, aURL + "/held/a")
        #expect(await a.waitForHeads(1))
        let heldB = PendingExchange(transport, bURL + "/held/b")
        #expect(await b.waitForHeads(1))
        // Interleaved: each waits behind its own host's held request.
        let waitA1 = PendingExchange(transport, aURL + "/w/a1")
        let waitB1 = PendingExchange(transport, bURL + "/w/b1")
        let waitA2 = PendingExchange(transport, aURL + "/w/a2")
        let waitB2 = PendingExchange(transport, bURL + "/w/b2")

        // B frees its connection: B's waiters run, one after the other; A's still wait.
        heldB.task.cancel()
        #expect(await heldB.end()?.code == .cancelled)
        #expect(await waitB1.end() == nil)
        #expect(await waitB2.end() == nil)
        #expect(b.count("/w/b") == 2)
        #expect(a.count("/w/a") == 0, "A's waiters ran while A's one connection was held: \(a.heads)")
        #expect(waitA1.ends == 0 && waitA2.ends == 0)

        heldA.task.cancel()
        #expect(await heldA.end()?.code == .cancelled)
        #expect(await waitA1.end() == nil)
        #expect(await waitA2.end() == nil)
        #expect(a.heads.count == 3 && b.heads.count == 3)
        #expect(a.heads.map { $0.contains("/w/a1") } == [false, true, false], "A's waiters out of order: \(a.heads)")
    }
}
#endif

@Suite("Attacked: script keys, raw and typed")
struct ScriptKeyRawTypedTests {
    struct Row: Decodable, Equatable { let name: String? }

    static let record = #"{"fieldData":{"name":"n"},"portalData":{},"recordId":"1","modId":"0"}"#
    static let ok = #""messages":[{"code":"0","message":"OK"}]"#

    /// The script keys as Foundation's JSON decoder reads them, looked up as the library does.
    static func expected(_ members: String) throws -> FMScriptResults {
        let body = Data(#"{"response":{\#(members)}}"#.utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let response = try #require(object["response"] as? [String: Any])
        func read(_ suffix: String) -> FMScriptResult? {
            let result = response["scriptResult" + suffix].flatMap { $0 is NSNull ? nil : $0 }.map { "\($0)" }
            let error = response["scriptError" + suffix].flatMap { $0 is NSNull ? nil : $0 }.map { "\($0)" }
            guard result != nil || error != nil else { return nil }
            return FMScriptResult(result: result, error: error ?? "0")
        }
        return FMScriptResults(script: read(""), prerequest: read(".prerequest"), presort: read(".presort"))
    }

    @Test(arguments: [
        #""\u0073criptResult":"7""#, #""script\u0052esult":"7""#, #""\u0073\u0063\u0072\u0069\u0070\u0074Error":"5""#,
        #""scriptResult\u002Epresort":"p""#, #""a":1,"\u0073criptError.prerequest":"3""#, #""scriptResult":null,"scriptError":null"#,
        #""scriptResult":"a","scriptError":"0","scriptResult.presort":"b""#, #""scriptResult":"","scriptError":"0""#,
        #""Script Result":"x","scriptresult":"y","SCRIPTRESULT":"z""#, #""\u017FcriptResult":"long s""#,
        #""scripte\u0301":"x","scriptResult.prerequest":"é""#, #""\u200BscriptResult":"zw""#,
    ])
    func aScriptKeyIsReadAsJSONDecodesIt(members: String) throws {
        let body = Data(#"{"response":{"data":[\#(Self.record)],\#(members)},\#(Self.ok)}"#.utf8)
        let expected = try Self.expected(members)
        #expect(try FMFoundSet(responseBody: body).scripts == expected, "\(members)")
        #expect(try FMTypedFoundSet<Row>(responseBody: body).scripts == expected, "\(members)")
    }

    /// A script key named twice: raw and typed take the same one.
    @Test(arguments: [#""scriptResult":"a","scriptResult":"b""#, #""scriptError":"1","\u0073criptError":"2""#,
                      #""scriptResult":"a","data":[],"scriptResult":"b""#])
    func aScriptKeyNamedTwiceIsReadTheSameRawAndTyped(members: String) throws {
        let body = Data(#"{"response":{"data":[\#(Self.record)],\#(members)},\#(Self.ok)}"#.utf8)
        let raw = try FMFoundSet(responseBody: body).scripts
        let typed = try FMTypedFoundSet<Row>(responseBody: body).scripts
        #expect(raw == typed, "\(members)")
    }

    /// A script error that is not a FileMaker code fails raw and typed alike, once a key begins with "script".
    @Test(arguments: [#""scriptError":"x""#, #""scriptError":true"#, #""scriptError.presort":{}"#, #""scriptError":[1]"#])
    func aScriptErrorThatIsNoCodeFailsBothWays(members: String) {
        let body = Data(#"{"response":{"data":[\#(Self.record)],\#(members)},\#(Self.ok)}"#.utf8)
        #expect(throws: FMError.self) { try FMFoundSet(responseBody: body) }
        #expect(throws: FMError.self) { try FMTypedFoundSet<Row>(responseBody: body) }
    }
}

@Suite("Attacked: a declared length read from header fields")
struct DeclaredLengthFieldsTests {
    /// The reader before: the value trimmed of Unicode whitespace (`CharacterSet.whitespaces`).
    static func before(_ length: String, _ coding: String?) -> Int64 {
        guard let length = Int64(length.trimmingCharacters(in: .whitespaces)), length >= 0 else { return -1 }
        if let coding = coding?.trimmingCharacters(in: .whitespaces), !coding.isEmpty,
           coding.caseInsensitiveCompare("identity") != .orderedSame { return -1 }
        return length
    }

    static let lengths = ["12", " 12", "12\t", "+12", "012", "-0", "-1", "12\u{A0}", "\u{3000}12", "1 2", "12,12", "12\r", "\u{FEFF}12",
                          "９", "9223372036854775807", "9223372036854775808", "", " ", "0x10", "1e3", "\t+0\t"]
    static let codings: [String?] = [nil, "", " ", "identity", " IDENTITY\t", "gzip", "\u{A0}", "identity\u{A0}", "identity, gzip", "br "]

    /// Whatever the fields, the length read now is the one read before or unknown (-1): never another number.
    @Test func aDeclaredLengthIsTheOneReadBeforeOrUnknown() {
        for length in Self.lengths {
            for coding in Self.codings {
                var fields = ["Content-Length": length]
                if let coding { fields["content-encoding"] = coding }
                let now = AnswerHead(status: 200, fields: fields).expectedContentLength
                let old = Self.before(length, coding)
                #expect(now == old || now == -1, "\(Array(length.unicodeScalars)) \(coding.map { Array($0.unicodeScalars) } ?? [])")
                // A value read now is digits only (with a sign) once spaces and tabs are gone.
                if now >= 0 { #expect(old == now) }
            }
        }
    }
}

/// A container download from a URL relative to an authority-less base (its text `https://fms.example.com/…`): the
/// streaming cookie goes back on a redirect within the host of that text, as for the same URL written absolute.
@Suite("Attacked: a container download from a relative URL")
struct RelativeContainerCookieTests {
    @Test(arguments: [false, true])
    func cookiesGoBackToTheSameOrigin(relative: Bool) throws {
        let text = "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor"
        let start = relative
            ? try #require(URL(string: "..//fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor",
                               relativeTo: URL(string: "https:/x/")))
            : try #require(URL(string: text))
        #expect(start.absoluteString == text)
        let harness = Harness { request in
            guard let url = request.url?.absoluteString else { return nil }
            if url.contains("second") { return .body(200, Data([2]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": "https://fms.example.com/second", "Set-Cookie": "X-FMS-Session-Key=k1; Path=/"])
        }
        let recorder = Recorder<(Data?, String)>()
        harness.api.downloadContainer(url: start) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first?.1 == "0")
        #expect(harness.stub.requests.last?.url?.absoluteString == "https://fms.example.com/second")
        #expect(harness.stub.requests.last?.header("Cookie") == "X-FMS-Session-Key=k1")
    }
}

extension ScriptKeyRawTypedTests {
    /// A script key whose value is not text: raw and typed read the same (or fail alike).
    @Test(arguments: [#""scriptResult":7"#, #""scriptResult":1.10"#, #""scriptResult":1e2"#, #""scriptResult":12345678901234567890"#,
                      #""scriptResult":-0"#, #""scriptResult":0.1"#, #""scriptResult":true"#, #""scriptResult":{}"#, #""scriptResult":[1]"#,
                      #""scriptError":7"#, #""scriptError":-0"#, #""scriptError":1.0"#, #""scriptError":"007""#, #""scriptError":1e1"#,
                      #""scriptResult":"\ud83d\ude00""#, #""scriptResult":"a\u0000b""#, #""scriptResult":123456789012345678901234567890.5"#])
    func aScriptValueThatIsNoTextIsReadAlikeRawAndTyped(members: String) {
        let body = Data(#"{"response":{"data":[\#(Self.record)],\#(members)},\#(Self.ok)}"#.utf8)
        let raw = Result { try FMFoundSet(responseBody: body).scripts }
        let typed = Result { try FMTypedFoundSet<Row>(responseBody: body).scripts }
        switch (raw, typed) {
        case (.success(let r), .success(let t)): #expect(r == t, "\(members): \(r) / \(t)")
        case (.failure, .failure): break
        default: Issue.record("\(members): raw \(raw), typed \(typed)")
        }
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract under attack (review19's first-contact hints, attack18's legacy fixes, the URL cap):
// * a hint is made of the server's words only through `FMError.serverText` (printable, bounded), and never
//   carries a URL's user info or query (a redirect's `Location` echoes the request's query, which may carry a
//   script parameter; a server may put credentials in it);
// * a hint names the right setting: an `http://` host with a path prefix (a reverse proxy) that redirects to
//   `https://` (or whose TLS-only port closes a plain request) is told to keep the prefix; an IPv6 host is
//   written in brackets once; "No FileMaker Data API" (wrong port, wrong path) is said on first contact only,
//   not to a call after the Data API answered this client there;
// * a refused login is hinted once, also after a replayed call (952) logs in again and after fresh Claris ID
//   credentials are refused too; neither the error nor the log line of a failed login carries an echoed
//   password, base64 credentials (`FMCredentials.encoded`, `refreshToken(encodedCredentials:)`) included;
// * no URL over `RequestBuilder.maxURLBytes` is sent, a container's absolute URL included (libcurl refuses a
//   head over 1 MiB as "out of memory", read as a connection failure);
// * legacy services whose `configureLegacyCalls` adjustment differs in TLS options or proxy never share a
//   transport, and each service's transport honours its own TLS options;
// * a cancelled SwiftFM 2.x `newSession()` returns the token it stored, or nil and stores none; a thousand 2.x
//   calls, half cancelled, each end once.
@Suite("Today's attack: hints, the URL cap, legacy cancellation and transports")
struct TodayAttackTests {
    static let plain = FMConfiguration(host: "http://fms.example.com", database: "Music", username: "admin", password: "s3cret-pass")

    static func redirect(_ location: String, configuration: FMConfiguration = plain) async throws -> FMError {
        let h = Harness(configuration: configuration) { _ in .json(301, "<html>Moved</html>", headers: ["Location": location]) }
        return try await FirstContactHintTests.failure(of: h.api)
    }

    // MARK: Redirect hints

    /// Failed before the fix: a host behind a reverse proxy at `http://proxy/filemaker` that redirects to
    /// `https://proxy/filemaker/fmi/data/…` was told to "write the host as https://fms.example.com", dropping the
    /// prefix (the calls then went to the proxy's root, a 404).
    @Test func aRedirectFromAHostWithAPathKeepsThePrefix() async throws {
        var configuration = Self.plain
        configuration.host = "http://fms.example.com/filemaker"
        let h = Harness(configuration: configuration) { request in
            .json(301, "<html>Moved</html>", headers: ["Location": "https://fms.example.com" + (request.url?.path ?? "/")])
        }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error.message.hasPrefix("Wrong scheme: fms.example.com:80 redirects to https://fms.example.com/filemaker/fmi/data/"), "\(error)")
        #expect(error.message.hasSuffix("write the host as https://fms.example.com/filemaker"), "\(error)")
        // A redirect to another prefix names that one; one that keeps no Data API path names the host only.
        let moved = Harness(configuration: configuration) { request in
            let path = (request.url?.path ?? "/").replacingOccurrences(of: "/filemaker/", with: "/fms/")
            return .json(301, "<html>Moved</html>", headers: ["Location": "https://fms.example.com:8443" + path])
        }
        #expect(try await FirstContactHintTests.failure(of: moved.api).message.hasSuffix("write the host as https://fms.example.com:8443/fms"))
        let home = try await Self.redirect("https://fms.example.com/", configuration: configuration)
        #expect(home.message.hasSuffix("write the host as https://fms.example.com"), "\(home)")
    }

    /// Failed before the fix: the hint quoted the `Location` as sent, its user info and query included (FileMaker
    /// Server's port-80 redirect echoes the request's query: a script parameter, here `hunter2`).
    @Test func aRedirectHintCarriesNoUserInfoOrQuery() async throws {
        let error = try await Self.redirect("https://admin:hunter2@fms.example.com/fmi/data/vLatest/databases/Music/layouts/L/records?script.param=hunter2")
        #expect(error.message.hasPrefix("Wrong scheme: fms.example.com:80 redirects to https://fms.example.com/fmi/data/"), "\(error)")
        #expect(!error.message.contains("hunter2") && !error.message.contains("admin:"), "\(error)")
        #expect(!error.message.contains("script.param"), "\(error)")
        #expect(error.message.hasSuffix("write the host as https://fms.example.com"), "\(error)")
    }

    /// Failed before the fix: a plain request to a TLS-only port of a host with a path prefix was told to "write the
    /// host as https://fms.example.com:443", dropping the prefix.
    @Test func aClosedPlainRequestUnderAPathKeepsThePrefix() async throws {
        var configuration = Self.plain
        configuration.host = "http://fms.example.com:443/filemaker/"
        let h = Harness(configuration: configuration) { _ in .failure(.networkConnectionLost) }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error.message.hasSuffix("; if that port speaks HTTPS, write the host as https://fms.example.com:443/filemaker"), "\(error)")
    }

    /// Failed before the fix: a call after FileMaker answered this client on that very host (its login), answered 404 with a page
    /// (Apache's for an encoded slash in a layout name, a proxy rule), was told "No FileMaker Data API at
    /// fms.example.com:443 … check the host and port": FileMaker had just answered the login there.
    @Test func aCallAfterTheDataAPIAnsweredIsNotToldThereIsNone() async throws {
        let h = Harness { request in
            request.url?.path.hasSuffix("/sessions") == true ? .json(200, Bodies.login())
                : .body(404, Data("<html>Not Found</html>".utf8), contentType: "text/html")
        }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error == FMError.notJSON(status: 404), "\(error)")
        // First contact (no session yet: the login itself) still gets the hint.
        let first = Harness { _ in .body(404, Data("<html>Not Found</html>".utf8), contentType: "text/html") }
        #expect(try await FirstContactHintTests.failure(of: first.api).message.hasPrefix("No FileMaker Data API at fms.example.com:443"))
    }

    /// Failed before the fix: under a host configured with a path (a reverse proxy's `/filemaker`), a call made with
    /// the session the login opened through that path (the Data API answered there), answered 404 with a page, was told to "give the host only".
    @Test func aCallAfterTheDataAPIAnsweredUnderAPathIsNotToldToDropIt() async throws {
        var configuration = Self.plain
        configuration.host = "https://fms.example.com/filemaker"
        let h = Harness(configuration: configuration) { request in
            request.url?.path.hasSuffix("/sessions") == true ? .json(200, Bodies.login())
                : .body(404, Data("<html>Not Found</html>".utf8), contentType: "text/html")
        }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error == FMError.notJSON(status: 404), "\(error)")
        // The login itself, answered so, still gets the path hint; so does a call with a token stored by an earlier run
        // (no answer from the Data API yet: FirstContactRuleTests.aHostWithAPathAnswering404SaysToGiveTheHostOnly).
        let first = Harness(configuration: configuration) { _ in .body(404, Data("<html>Not Found</html>".utf8), contentType: "text/html") }
        #expect(try await FirstContactHintTests.failure(of: first.api).message.contains("give the host only"))
    }

    /// Guard: a `Location` of 100 KB, one with control characters (raw or percent-encoded), or one that is not a
    /// URL gives a short, printable message; an IPv6 host is written in brackets once.
    @Test func aRedirectHintIsShortPrintableAndBracketsIPv6Once() async throws {
        let long = try await Self.redirect("https://fms.example.com/" + String(repeating: "a", count: 100_000))
        #expect(long.message.hasPrefix("Wrong scheme:") && long.message.count < 700, "\(long.message.count)")
        for location in ["https://fms.example.com/\u{1B}[31m\r\nX-Forged: 1", "https://fms%0A%1Bexample.com/fmi/data/", "not a url", "https:\u{202E}//x",
                         String(repeating: "h", count: 100_000)] {
            let error = try await Self.redirect(location)
            #expect(error.message.count < 700, "\(error.message.count)")
            #expect(!error.message.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.isBidiControl }, "\(error)")
        }
        var v6 = Self.plain
        v6.host = "http://[::1]:8080"
        let error = try await Self.redirect("https://[::1]:8443/fmi/data/vLatest/databases/Music/sessions", configuration: v6)
        #expect(error.message.hasPrefix("Wrong scheme: [::1]:8080 redirects to https://[::1]:8443/fmi/data/"), "\(error)")
        #expect(error.message.hasSuffix("write the host as https://[::1]:8443"), "\(error)")
    }

    /// Guard: a container download's redirect is the container's, not the host's: never a scheme hint.
    @Test func aContainerRedirectIsNotHinted() async throws {
        let h = Harness(configuration: Self.plain) { request in
            request.url?.host == "fms.example.com" ? .json(301, "", headers: ["Location": "ftp://elsewhere.example.com/x"]) : nil
        }
        let done = Recorder<String>()
        h.api.downloadContainer(url: try #require(URL(string: "http://fms.example.com/Streaming/MainDB/1.png"))) { _, code in
            done.record(code + " " + (FMError.current?.message ?? ""))
        }
        let outcome = try #require(await done.value().first)
        #expect(!outcome.contains("Wrong scheme"), "\(outcome)")
    }

    // MARK: Refused logins

    /// Guard: a call replayed after 952 whose new login is refused gets the hint once; the log line of the failed
    /// login carries no password a server echoed in its message.
    @Test func aReplayedCallsRefusedLoginIsHintedOnceAndLogsNoSecret() async throws {
        let logins = Locked(0)
        let h = Harness { request in
            if request.url?.path.hasSuffix("/sessions") == true {
                let n = logins.withLock { $0 += 1; return $0 }
                return n == 1 ? .json(200, Bodies.login())
                    : .json(401, #"{"messages":[{"code":"212","message":"Invalid password s3cret-pass for admin"}],"response":{}}"#)
            }
            return .json(401, Bodies.expired)
        }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error.code == "212", "\(error)")
        #expect(error.message.components(separatedBy: "was refused").count == 2, "\(error)")
        #expect(!error.message.contains("s3cret-pass"), "\(error)")
        let lines = h.logs.values.map(\.message)
        #expect(lines.contains { $0.hasPrefix("login failed: 212") }, "\(lines)")
        #expect(!lines.joined().contains("s3cret-pass"), "\(lines)")
    }

    /// Guard: a Claris ID login refused twice (the second time with a fresh ID token) is hinted once.
    @Test func aLoginRefusedAgainWithFreshCredentialsIsHintedOnce() async throws {
        let provider = FMClarisIDTokenProvider { refresh, completion in completion(.success(refresh ? "id-token-2" : "id-token-1")) }
        let configuration = FMConfiguration(host: "fms.example.com", database: "Music", credentials: .clarisID(provider))
        let h = Harness(configuration: configuration) { _ in .json(401, Bodies.badLogin) }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error.code == "212", "\(error)")
        #expect(h.stub.requests.count == 2)
        #expect(error.message.components(separatedBy: "was refused").count == 2, "\(error)")
    }

    /// Failed before the fix: a refused login whose server echoed the password reached the caller's error and
    /// the error-level `login failed` line unscrubbed when the credentials were base64 (`FMCredentials.encoded`, the
    /// legacy `fm-auth` of `DataAPI()`) or passed to `refreshToken(encodedCredentials:)`: only the base64 value was
    /// a known secret, not the password inside it, and an explicit value not even that.
    @Test func aRefusedBase64LoginNeverShowsTheEchoedPassword() async throws {
        let echo = #"{"messages":[{"code":"212","message":"Invalid password pw-s3cret for admin (basic YWRtaW46cHctczNjcmV0)"}],"response":{}}"#
        let encoded = Data("admin:pw-s3cret".utf8).base64EncodedString()
        let configured = FMConfiguration(host: "fms.example.com", database: "Music", credentials: .encoded(encoded))
        let h = Harness(configuration: configured) { _ in .json(401, echo) }
        let error = try await FirstContactHintTests.failure(of: h.api)
        #expect(error.code == "212", "\(error)")
        #expect(!error.description.contains("pw-s3cret") && !error.description.contains(encoded), "\(error)")
        #expect(!h.logs.values.map(\.message).joined().contains("pw-s3cret"), "\(h.logs.values.map(\.message))")
        // An explicit base64 value, with other credentials configured.
        let other = Harness { _ in .json(401, echo) }
        let done = Recorder<String>()
        other.api.refreshToken(encodedCredentials: encoded) { _, _, code in done.record(code + " " + (FMError.current?.description ?? "")) }
        let outcome = try #require(await done.value().first)
        #expect(outcome.hasPrefix("212 ") && !outcome.contains("pw-s3cret") && !outcome.contains(encoded), "\(outcome)")
        #expect(!other.logs.values.map(\.message).joined().contains("pw-s3cret"), "\(other.logs.values.map(\.message))")
    }

    // MARK: The URL cap

    /// Failed before the fix: a container URL over 1,000,000 bytes (a query of megabytes) was sent (with libcurl: a
    /// head it refuses as "out of memory", read as a connection failure).
    @Test func aContainerURLOverTheCapIsMinus1002AndNotSent() async throws {
        let h = Harness(configuration: Self.plain) { _ in .body(200, Data("x".utf8), contentType: "image/png") }
        let long = try #require(URL(string: "http://fms.example.com/Streaming/MainDB/1.png?q=" + String(repeating: "a", count: RequestBuilder.maxURLBytes)))
        let done = Recorder<String>()
        h.api.downloadContainer(url: long) { _, code in done.record(code) }
        #expect(await done.value() == [FMError.ClientCode.invalidArgument])
        #expect(h.stub.requests.count == 0)
        // One just under the cap is sent.
        let fits = try #require(URL(string: "http://fms.example.com/Streaming/MainDB/1.png?q=" + String(repeating: "a", count: 500_000)))
        let sent = Recorder<String>()
        h.api.downloadContainer(url: fits) { _, code in sent.record(code) }
        #expect(await sent.value() == ["0"])
    }

    // MARK: Legacy transports

    /// Guard: services whose adjustment differs in TLS options or proxy get their own transports, each made with
    /// the service's own options (a transport without a service's CA would be refused, never used silently).
    @Test func legacyServicesWithOtherTLSOrProxyNeverShareATransport() throws {
        let state = LegacyState()
        state.adjust = { configuration in
            switch configuration.database {
            case "CA": configuration.tls.caCertificates = URL(fileURLWithPath: "/tmp/swiftfm-ca.pem")
            case "CA2": configuration.tls.caCertificates = URL(fileURLWithPath: "/tmp/swiftfm-ca.pem")
            case "Pin": configuration.tls.pinnedPublicKeys = ["sha256//AAAA"]
            case "Proxy": configuration.proxy = URL(string: "http://127.0.0.1:3128")
            case "Proxy2": configuration.proxy = URL(string: "http://127.0.0.1:3129")
            default: break
            }
        }
        let server = try #require(URL(string: "https://fms.example.com"))
        var seen: [ObjectIdentifier: String] = [:]
        for database in ["Plain", "CA", "Pin", "Proxy", "Proxy2"] {
            let service = state.service(for: LegacyTarget(server: server, version: .vLatest, database: database))
            let id = ObjectIdentifier(service.transport as AnyObject)
            #expect(seen[id] == nil, "\(database) shares \(seen[id] ?? "")'s transport")
            seen[id] = database
            #expect(refusal(of: service.transport, for: service.configuration) == nil, "\(database)")
        }
        let ca = state.service(for: LegacyTarget(server: server, version: .vLatest, database: "CA"))
        let ca2 = state.service(for: LegacyTarget(server: server, version: .vLatest, database: "CA2"))
        #expect(ca.transport as AnyObject === ca2.transport as AnyObject)
    }

    // MARK: SwiftFM 2.x cancellation

    /// Guard: `newSession()` cancelled at every point of its login (before it starts, while the login is in flight,
    /// after it completed) returns the token it stored in `fm-token` (with a future `fm-token-expiry`), or nil and
    /// leaves `fm-token` as it was: never a stored token the caller was not given.
    @Test func aCancelledNewSessionStoresWhatItReturnsOrNothing() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        defer { server.stop() }
        try await LegacyAttackTests.legacySetting(server) { defaults in
            let box = UncheckedBox(defaults)
            var outcomes: Set<String> = []
            for round in 0..<120 {
                defaults.removeObject(forKey: "fm-token")
                defaults.set(0, forKey: "fm-token-expiry")
                let task = Task { await DataAPI.withLegacyDefaults(box.value) { await SwiftFM.newSession() } }
                for _ in 0..<(round % 6) { await Task.yield() }
                if round % 7 != 6 { task.cancel() }
                let token = await task.value
                let stored = defaults.string(forKey: "fm-token")
                #expect(stored == token, "round \(round)")
                if token != nil {
                    #expect((defaults.object(forKey: "fm-token-expiry") as? Date).map { $0 > Date() } == true, "round \(round)")
                }
                outcomes.insert(token == nil ? "nil" : "token")
            }
            // The uncancelled rounds (every 7th) got their token.
            #expect(outcomes.contains("token"))
        }
    }

    /// Guard: a thousand SwiftFM 2.x calls at once, every other one cancelled (before it starts, in flight or after it
    /// ended, as the scheduler has it): each task ends with one result, and every call not cancelled succeeds.
    ///
    /// Each call's deadline is the hang bound (the test seam ``LegacyScope/timeout``), not the legacy
    /// calls' 30 s: the 500 calls not cancelled go through one transport and one test server at once, and on a loaded
    /// machine the last of them could pass 30 s and end `-1004` (false), which is not this test's subject.
    @Test func aThousandSwiftFM2CallsHalfCancelledEachEndOnce() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.ok) })
        defer { server.stop() }
        try await LegacyAttackTests.legacySetting(server) { defaults in
            let box = UncheckedBox(defaults)
            let results = await withTaskGroup(of: (Int, Bool).self) { group -> [Int: Bool] in
                var tasks: [Task<Bool, Never>] = []
                for index in 0..<1000 {
                    let task = Task {
                        await LegacyScope.$timeout.withValue(TestBound.seconds) {
                            await DataAPI.withLegacyDefaults(box.value) { await SwiftFM.validateSession(token: "tok-\(index)") }
                        }
                    }
                    tasks.append(task)
                    if index % 2 == 1 { task.cancel() }
                }
                for (index, task) in tasks.enumerated() { group.addTask { (index, await task.value) } }
                var results: [Int: Bool] = [:]
                for await (index, ok) in group { results[index] = ok }
                return results
            }
            #expect(results.count == 1000)
            let failed = results.filter { $0.key % 2 == 0 && !$0.value }.keys.sorted()
            #expect(failed.isEmpty, "\(failed)")
        }
    }

    /// Guard for the test seam the test above relies on: a legacy call started where ``LegacyScope/timeout`` is bound
    /// has that deadline, not its service's 30 s (here 1 s, against a server that never answers: the message names it).
    @Test func aLegacyCallTakesTheTestSeamsDeadline() async throws {
        let server = TestServer(respond: { _ in nil })
        defer { server.stop() }
        try await LegacyAttackTests.legacySetting(server) { defaults in
            let ended = Recorder<String>()
            LegacyScope.$timeout.withValue(1) {
                DataAPI.withLegacyDefaults(defaults) {
                    DataAPI.validateSession(token: "tok") { _, message in ended.record(message) }
                }
            }
            let message = await ended.value().first ?? "no completion"
            let seconds = message.range(of: #"timed out after [0-9.]+ s"#, options: .regularExpression)
                .flatMap { Double(message[$0].dropFirst("timed out after ".count).dropLast(2)) }
            #expect(seconds.map { $0 <= 1 } == true, "\(message)")
        }
    }
}

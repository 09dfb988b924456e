import Foundation
import Testing
@testable import SwiftFM

// The contract under attack (LEGACY.md, README "Porting"): through the legacy entry points — the `DataAPI`
// class functions of 2018–2020 and the SwiftFM 2.x `SwiftFM` API — bad caller input, odd values under the
// legacy UserDefaults keys and cancelled tasks never crash or hang SwiftFM, every completion runs exactly
// once, and the answer is the one LEGACY.md (with this package's documented fixes) promises:
// * a cancelled SwiftFM 2.x call ends at once, as the original's `URLSession` request did: `nil`/`false`, or
//   `-1005` thrown, and a cancelled `newSession()` writes no `fm-token` (it stored the token before);
// * `DataAPI.isActiveToken()` and `DataAPI().isActiveToken()` read `fm-token` alike: a value that cannot be
//   sent as a `Bearer` token is not active (the class function said `true`, and the 2019 pattern then failed
//   every call with it until the expiry);
// * a host or database path that names no server, a window below 1, a payload JSON cannot carry, empty or
//   control-character credentials: the client's code, once, and nothing is sent; a host with spaces around
//   it, a trailing slash or a capitalised scheme still reaches the server;
// * a layout or script parameter of megabytes is `-1002`, not a connection failure retried until the deadline;
// * a caller's payload nested thousands of levels deep is `-1002` (past 64 levels), not a stack overflow;
// * `DataAPI()` shared by many threads logs in once and shares that token with the class functions through
//   `fm-token`, also when a class `deleteToken` ends it underneath;
// * a secret (the token, the password) never reaches the completion's code, message or `FMError.current`;
// * `FMFileTokenStore` reads a missing, empty, truncated or corrupt file, a directory, a FIFO or a device as
//   "no token" without blocking; concurrent saves from two stores leave one whole file of mode 0600.

@Suite("Legacy attack: the drop-in layer")
struct LegacyAttackTests {
    /// Runs `body` with a fresh `UserDefaults` suite set up for `server` as the legacy surfaces read it.
    static func legacySetting<T>(_ server: TestServer, _ body: (UserDefaults) async throws -> T) async throws -> T {
        try await legacySetting(server, making: { UserDefaults(suiteName: $0) }, body)
    }

    /// ``legacySetting(_:_:)`` with defaults `make` makes for a suite name.
    static func legacySetting<T, Defaults: UserDefaults>(
        _ server: TestServer, making make: (String) -> Defaults?, _ body: (Defaults) async throws -> T
    ) async throws -> T {
        let suite = "SwiftFM.LegacyAttack.\(UUID().uuidString)"
        let defaults = try #require(make(suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(server.url, forKey: "fm-host")
        defaults.set("DB", forKey: "fm-db")
        defaults.set("\(server.url)/fmi/data/v1/databases/DB", forKey: "fm-db-path")
        defaults.set(basicValue("admin", "pw-s3cret"), forKey: "fm-auth")
        return try await body(defaults)
    }

    /// A server that, once a request arrived, cancels the task `cancelling` holds and then answers `body`. The cancel
    /// comes from the server's thread while the request is at the server: no task of the test has to be scheduled for
    /// it, so a loaded pool cannot delay it past the call's deadline (the legacy calls' default 30 s).
    static func cancellingServer(_ cancelling: CancelBox, answering body: String) -> TestServer {
        TestServer(respond: { _ in
            cancelling.cancel()
            return TestServer.json(body)
        })
    }

    /// Holds the cancel of a test's task; ``cancel()`` waits (bounded) until the test stored it.
    final class CancelBox: @unchecked Sendable {
        private let stored = DispatchSemaphore(value: 0)
        private let action = Locked<(@Sendable () -> Void)?>(nil)

        func set(_ cancel: @escaping @Sendable () -> Void) {
            action.withLock { $0 = cancel }
            stored.signal()
        }

        func cancel() {
            guard stored.wait(timeout: TestBound.deadline) == .success else { return }
            stored.signal()   // for a later request
            action.value?()
        }
    }

    // MARK: SwiftFM 2.x and task cancellation

    /// Failed before the fix: the login went on after the task was cancelled, returned the token and stored
    /// it in `fm-token` (the continuation ignored cancellation; a server that never answered held the task for
    /// the whole 30 s deadline).
    @Test func aCancelledNewSessionReturnsNilAndStoresNoToken() async throws {
        let cancelling = CancelBox()
        let server = Self.cancellingServer(cancelling, answering: Bodies.login())
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let box = UncheckedBox(defaults)
            let task = Task { await DataAPI.withLegacyDefaults(box.value) { await SwiftFM.newSession() } }
            cancelling.set { task.cancel() }   // by the server, once the login is there; then it answers
            #expect(await task.value == nil)
            #expect(server.heads.count == 1, "the login reached the server before the cancel")
            #expect(defaults.string(forKey: "fm-token") == nil)
            #expect(!DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
        }
    }

    /// Failed before the fix: a cancelled throwing fetch returned the records the server sent afterwards.
    @Test func aCancelledSwiftFM2FetchThrowsCancelled() async throws {
        let cancelling = CancelBox()
        let page = #"{"response":{"dataInfo":{"database":"DB","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1},"data":[{"fieldData":{},"portalData":{},"recordId":"1","modId":"0"}]},"messages":[{"code":"0","message":"OK"}]}"#
        let server = Self.cancellingServer(cancelling, answering: page)
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let box = UncheckedBox(defaults)
            let task = Task { () -> String in
                await DataAPI.withLegacyDefaults(box.value) {
                    do {
                        _ = try await SwiftFM.query(layout: "L", payload: ["query": [["name": "x"]]], token: Bodies.token)
                        return "0"
                    } catch {
                        return (error as? FMError)?.code ?? "\(error)"
                    }
                }
            }
            cancelling.set { task.cancel() }   // by the server, once the request is there; then it answers
            #expect(await task.value == FMError.ClientCode.cancelled)
            #expect(server.heads.count == 1, "the request reached the server before the cancel")
        }
    }

    /// A task cancelled before it calls SwiftFM 2.x: nothing is sent, the call ends as a cancelled one (`nil`,
    /// `false`) and `newSession()` stores nothing. Before the first fix the server's answer came back; after it,
    /// the call was started and then cancelled, which a fast server beat on a loaded CI machine (`setGlobals`
    /// returned `true`); `aTaskCancelledBeforeTheCallSendsNothing` shows that race deterministically.
    @Test func aTaskCancelledBeforeTheCallGetsNothing() async throws {
        let server = TestServer(respond: { head in
            TestServer.json(head.contains("/sessions ") ? Bodies.login() : Bodies.ok)
        })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let box = UncheckedBox(defaults)
            let task = Task { () -> (String?, Bool) in
                withUnsafeCurrentTask { $0?.cancel() }
                return await DataAPI.withLegacyDefaults(box.value) {
                    (await SwiftFM.newSession(), await SwiftFM.setGlobals(payload: ["globalFields": ["g": "1"]], token: Bodies.token))
                }
            }
            let (token, globals) = await task.value
            #expect(token == nil)
            #expect(!globals)
            #expect(defaults.string(forKey: "fm-token") == nil)
            #expect(server.heads.isEmpty)
        }
    }

    /// UserDefaults that, while armed, cancels the task that reads `fm-db`: a SwiftFM 2.x call reads it as it
    /// starts, after its check for a task cancelled already.
    final class CancellingDefaults: UserDefaults {
        let armed = Locked(true)
        override func string(forKey defaultName: String) -> String? {
            if defaultName == "fm-db", armed.withLock({ $0 }) { withUnsafeCurrentTask { $0?.cancel() } }
            return super.string(forKey: defaultName)
        }
    }

    /// Guard: a task cancelled while its SwiftFM 2.x call starts (after the check for a cancelled task, before the
    /// request goes out): nothing is sent and `newSession()` returns nil and stores nothing. Before the fix (attack20
    /// left it) the call made its handle inside its start, so the cancel reached it only once the request was handed
    /// to the transport; libcurl's cancel then came before the bytes left on every run here, so this held before
    /// too. The same gap shows deterministically on the `DataAPI` bridge
    /// (`CancelEdgeAttackTests.aTaskCancelledWhileItsCallStartsSendsNothing`, a transport that answers in `send`).
    @Test func aTaskCancelledWhileItsCallStartsSendsNothing() async throws {
        let server = TestServer(respond: { head in
            TestServer.json(head.contains("/sessions ") ? Bodies.login() : Canned.productInfo)
        })
        defer { server.stop() }
        try await Self.legacySetting(server, making: { CancellingDefaults(suiteName: $0) }) { defaults in
            let box = UncheckedBox(defaults)
            let token = await Task { await DataAPI.withLegacyDefaults(box.value) { await SwiftFM.newSession() } }.value
            #expect(token == nil)
            #expect(defaults.string(forKey: "fm-token") == nil)
            // A call afterwards, not cancelled, is the first request the server sees.
            defaults.armed.withLock { $0 = false }
            let info = await Task { await DataAPI.withLegacyDefaults(box.value) { await SwiftFM.getProductInfo() } }.value
            #expect(info != nil)
            #expect(server.heads.count == 1 && server.heads.first?.contains("/productInfo") == true, "\(server.heads)")
        }
    }

    /// Guard (held): an uncancelled SwiftFM 2.x login still stores its token (the cancel path changed nothing else).
    @Test func anUncancelledNewSessionStoresItsToken() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let token = await DataAPI.withLegacyDefaults(defaults) { await SwiftFM.newSession() }
            #expect(token == Bodies.token)
            #expect(defaults.string(forKey: "fm-token") == Bodies.token)
            #expect(DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
        }
    }

    // MARK: fm-token values that cannot be sent

    /// Failed before the fix (the class function said `true`): the class and instance `isActiveToken()` agree
    /// on a stored token that cannot be sent, so the 2019 pattern logs in again and replaces it.
    @Test(arguments: ["empty", "line break", "space", "non-ASCII", "5 KiB"])
    func anUnusableStoredTokenIsNotActive(kind: String) async throws {
        let stored = ["empty": "", "line break": "tok\nen", "space": "tok en", "non-ASCII": "tök"][kind]
            ?? String(repeating: "a", count: 5 * 1024)
        let server = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            defaults.set(stored, forKey: "fm-token")
            defaults.set(Date(timeIntervalSinceNow: 3600), forKey: "fm-token-expiry")
            try await DataAPI.withLegacyDefaults(defaults) {
                #expect(!DataAPI.isActiveToken())
                #expect(!DataAPI().isActiveToken())
                // The 2019 pattern: `switch isActiveToken() { case false: refreshToken(for: auth) … }`.
                let done = Recorder<String>()
                DataAPI.refreshToken(for: try #require(defaults.string(forKey: "fm-auth"))) { (_: String?, _: Date?, code: String) in
                    done.record(code)
                }
                #expect(await done.value() == ["0"])
                #expect(defaults.string(forKey: "fm-token") == Bodies.token)
                #expect(DataAPI.isActiveToken())
                #expect(DataAPI().isActiveToken())
            }
        }
    }

    /// Guard (held): values of the wrong type under the legacy keys read as absent or expired, never as a crash.
    @Test func wrongTypesUnderTheLegacyKeysAreNotActive() throws {
        let suite = "SwiftFM.LegacyAttack.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let cases: [(token: Any, expiry: Any)] = [
            (Data("tok".utf8), Date(timeIntervalSinceNow: 3600)),
            (Bodies.token, "2099-01-01"),
            (Bodies.token, 4_000_000_000),
            (Bodies.token, Data([1, 2, 3])),
            (Bodies.token, Date(timeIntervalSinceNow: -1)),
            ([Bodies.token], Date(timeIntervalSinceNow: 3600)),
        ]
        for (token, expiry) in cases {
            defaults.set(token, forKey: "fm-token")
            defaults.set(expiry, forKey: "fm-token-expiry")
            DataAPI.withLegacyDefaults(defaults) {
                #expect(!DataAPI.isActiveToken(), "\(token) \(expiry)")
                #expect(!DataAPI().isActiveToken(), "\(token) \(expiry)")
            }
        }
    }

    // MARK: One token shared by many threads and both surfaces

    /// A server that issues `tok-N` tokens, forgets one on `DELETE …/sessions/{token}`, answers a request with a
    /// token it does not know `952`, and every other request a one-record page.
    static func sessionServer() -> TestServer {
        let valid = Locked<(next: Int, tokens: Set<String>)>((0, []))
        let page = #"{"response":{"dataInfo":{"database":"DB","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1},"data":[{"fieldData":{},"portalData":{},"recordId":"1","modId":"0"}]},"messages":[{"code":"0","message":"OK"}]}"#
        return TestServer(respond: { head in
            let line = head.split(separator: "\r\n").first.map(String.init) ?? ""
            if line.hasPrefix("POST "), line.contains("/sessions ") {
                let token = valid.withLock { state -> String in
                    state.next += 1
                    state.tokens.insert("tok-\(state.next)")
                    return "tok-\(state.next)"
                }
                return TestServer.json(Bodies.login(token))
            }
            if line.hasPrefix("DELETE "), let range = line.range(of: "/sessions/") {
                let token = String(line[range.upperBound...].prefix { $0 != " " })
                _ = valid.withLock { $0.tokens.remove(token) }
                return TestServer.json(Bodies.ok)
            }
            let bearer = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("authorization: bearer ") }
                .map { String($0.dropFirst("authorization: bearer ".count)) } ?? ""
            guard valid.withLock({ $0.tokens.contains(bearer) }) else {
                return TestServer.json(Bodies.expired, status: "401 Unauthorized")
            }
            return TestServer.json(page)
        })
    }

    /// Guard (held): `DataAPI()` (2019, configured from the legacy keys) shared by 24 threads logs in once, writes
    /// that token to `fm-token`, where the class `isActiveToken()` sees it; a class `deleteToken` of it underneath
    /// the running client makes its next call log in once more and replay, and `fm-token` follows.
    @Test func oneTokenSharedByManyThreadsAndBothSurfaces() async throws {
        let server = Self.sessionServer()
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let api = DataAPI.withLegacyDefaults(defaults) { DataAPI() }
            /// `count` reads at once from as many threads: each one's `"records code"`.
            func readAtOnce(_ count: Int) async -> [String] {
                let done = Recorder<String>(expecting: count)
                DispatchQueue.concurrentPerform(iterations: count) { _ in
                    api.getRecords(layout: "L", limit: 1) { found, code in done.record("\(found?.records.count ?? -1) \(code)") }
                }
                return await done.value()
            }
            #expect(await readAtOnce(24) == Array(repeating: "1 0", count: 24))
            #expect(server.count("/sessions ") == 1)
            #expect(defaults.string(forKey: "fm-token") == "tok-1")
            #expect(DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
            #expect(api.currentToken == "tok-1")

            // The class surface logs the shared token out underneath the running client.
            let deleted = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) { DataAPI.deleteToken("tok-1") { code, _ in deleted.record(code) } }
            #expect(await deleted.value() == ["0"])
            #expect(!DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
            #expect(await readAtOnce(8) == Array(repeating: "1 0", count: 8))
            #expect(server.count("/sessions ") == 2)
            #expect(defaults.string(forKey: "fm-token") == "tok-2")
            #expect(DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
        }
    }

    /// Guard (held): the 2019 pattern run by 16 threads at once over one `fm-token` (`isActiveToken()`, else
    /// `refreshToken(for:)`, then a read with the token it got or found): every completion runs once with `"0"`,
    /// and `fm-token` ends as a token the server issued and still knows, which `isActiveToken()` reports active.
    @Test func the2019PatternFromManyThreadsSharesOneWorkingToken() async throws {
        let server = Self.sessionServer()
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let auth = try #require(defaults.string(forKey: "fm-auth"))
            let box = UncheckedBox(defaults)
            let done = Recorder<String>(expecting: 16)
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                DataAPI.withLegacyDefaults(box.value) {
                    func read(_ token: String) {
                        DataAPI.getRecords(token: token, layout: "L", offset: 1, limit: 1) { (records: [[String: Any]]?, code: String) in
                            done.record("\(records?.count ?? -1) \(code)")
                        }
                    }
                    if DataAPI.isActiveToken(), let token = box.value.string(forKey: "fm-token") {
                        read(token)
                    } else {
                        DataAPI.refreshToken(for: auth) { (token: String?, _: Date?, code: String) in
                            guard let token else { return done.record("login \(code)") }
                            read(token)
                        }
                    }
                }
            }
            #expect(await done.value() == Array(repeating: "1 0", count: 16))
            let logins = server.count("/sessions ")
            #expect((1...16).contains(logins))
            let stored = try #require(defaults.string(forKey: "fm-token"))
            #expect((1...logins).map { "tok-\($0)" }.contains(stored))
            #expect(DataAPI.withLegacyDefaults(defaults) { DataAPI.isActiveToken() })
        }
    }

    // MARK: The caller's adjustment of the legacy services

    /// Failed before the fix (hung: the hang guard fired): the legacy service was made under the legacy state's
    /// lock, and the caller's `configureLegacyCalls` closure ran there, so a closure that read `legacyDefaults` (or
    /// `legacyLogger`) waited for that lock for ever, and with it the first legacy call to each server. A fresh
    /// `LegacyState` stands for the process-wide one (whose closure the legacy test target owns).
    @Test func anAdjustmentThatReadsTheLegacySettingsDoesNotDeadlock() async throws {
        let state = LegacyState()
        let suite = "SwiftFM.LegacyAttack.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(7.5, forKey: "fm-timeout")
        state.defaults = defaults
        state.adjust = { configuration in
            // What `DataAPI.legacyDefaults` and `DataAPI.legacyLogger` read.
            if let timeout = state.defaults.object(forKey: "fm-timeout") as? Double { configuration.timeout = timeout }
            if state.logger != nil { configuration.timeout += 1 }
        }
        let target = LegacyTarget(server: try #require(URL(string: "http://127.0.0.1:9")), version: .vLatest, database: "DB")
        let made = Recorder<Double>()
        Thread { made.record(state.service(for: target).configuration.timeout) }.start()
        #expect(await made.value() == [7.5])
        // Made once, then reused.
        #expect(state.service(for: target) === state.service(for: target))
    }

    /// Failed before the fix (a transport, and with libcurl a thread, per service: 40 databases of one server took a
    /// process from 6 threads to 47, kept for ever): the legacy services share one transport per transport setting
    /// (timeout, connection limit, TLS, proxy), whatever the server or database; a service adjusted to other
    /// settings gets one of its own.
    @Test func theLegacyServicesShareOneTransportPerSetting() throws {
        let state = LegacyState()
        func transport(_ server: String, _ database: String?) -> AnyObject? {
            URL(string: server).map { state.service(for: LegacyTarget(server: $0, version: .vLatest, database: database)).transport as AnyObject }
        }
        let first = try #require(transport("http://127.0.0.1:9", "A"))
        var others = (0..<40).map { transport("http://127.0.0.1:9", "DB\($0)") }
        others += [transport("http://127.0.0.1:9", nil), transport("https://fms.example.com", "A")]
        #expect(others.allSatisfy { $0 === first })
        state.adjust = { configuration in
            if configuration.database == "Slow" { configuration.timeout = 120 }
        }
        #expect(transport("http://127.0.0.1:9", "Slow") !== first)
        #expect(transport("http://127.0.0.1:9", "Slow2") === first)
    }

    // MARK: Configuration and arguments a caller gets wrong

    /// A host the legacy keys cannot name a server by is `-1001` once, and nothing is sent. `"https://"` and
    /// `"http://"` failed before the fix: the trailing-slash trim ate the scheme's slashes and sent the login to a
    /// host named `https` (a DNS failure, `-1003`, after a lookup).
    @Test(arguments: ["", "   ", "my host", "http://[::1", "ftp://127.0.0.1", "https://", "http://", "https:///"])
    func aHostThatNamesNoServerIsMinus1001(host: String) async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            defaults.set(host, forKey: "fm-host")
            defaults.removeObject(forKey: "fm-db-path")
            let done = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.refreshToken(auth: basicValue("a", "b")) { token, code, _ in done.record("\(token ?? "nil") \(code)") }
            }
            #expect(await done.value() == ["nil \(FMError.ClientCode.invalidConfiguration)"])
            #expect(server.heads.isEmpty)
        }
    }

    /// Failed before the fix (the hints said `FMConfiguration.host` / `FMConfiguration.database`, settings a legacy
    /// caller never wrote): a legacy read's first-contact hint names the UserDefaults key its server came from
    /// (`fm-host`, or `fm-db-path`), and `DataAPI()`'s refused login names the key of its database.
    @Test(arguments: [("fm-host", "fm-host"), ("fm-db-path", "fm-db-path")])
    func theHintsNameTheLegacyKeys(source: String, named: String) async throws {
        let closed = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        closed.stop()
        try await Self.legacySetting(closed) { defaults in
            defaults.removeObject(forKey: source == "fm-host" ? "fm-db-path" : "fm-host")
            let done = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.getRecords(token: Bodies.token, layout: "L", offset: 1, limit: 1) { (_: [[String: Any]]?, code: String, message: String) in
                    done.record(code + " " + message)
                }
            }
            let said = try #require(await done.value().first)
            #expect(said.hasPrefix(FMError.ClientCode.transport), "\(said)")
            #expect(said.contains("check the host and port (\(named))"), "\(said)")
            #expect(!said.contains("FMConfiguration"), "\(said)")
        }
        let unknown = TestServer(respond: { _ in
            "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 62\r\n\r\n"
                + #"{"response":{},"messages":[{"code":"802","message":"Unable"}]}"#
        })
        defer { unknown.stop() }
        try await Self.legacySetting(unknown) { defaults in
            defaults.removeObject(forKey: source == "fm-host" ? "fm-db-path" : "fm-host")
            let api = DataAPI.withLegacyDefaults(defaults) { DataAPI() }
            do {
                _ = try await api.login()
                Issue.record("the login was not refused")
            } catch let error as FMError {
                let key = source == "fm-host" ? "fm-db" : "fm-db-path"
                #expect(error.code == "802" && error.message.contains("check \(key)"), "\(error)")
                #expect(!error.message.contains("FMConfiguration"), "\(error)")
            }
            await api.shutdown()
        }
    }

    /// Guard (held): spaces around the host, a trailing slash, a capitalised scheme reach the server.
    @Test(arguments: [" URL ", "URL/", "URL//", "\tURL\n", "HTTP://HOSTPORT"])
    func aHostWithHarmlessNoiseReachesTheServer(spelling: String) async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.login()) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let host = spelling.replacingOccurrences(of: "URL", with: server.url)
                .replacingOccurrences(of: "HOSTPORT", with: "127.0.0.1:\(server.port)")
            defaults.set(host, forKey: "fm-host")
            let done = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.refreshToken(auth: basicValue("a", "b")) { _, code, _ in done.record(code) }
            }
            #expect(await done.value() == ["0"])
            #expect(server.heads.first?.hasPrefix("POST /fmi/data/vLatest/databases/DB/sessions ") == true)
        }
    }

    /// Guard (held): a window below 1, a payload JSON cannot carry, an empty layout, empty or control-character
    /// credentials: the client's code, exactly once per call, and no request.
    @Test func argumentsThatCannotBeSentFailOnceWithoutARequest() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.ok) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let done = Recorder<String>(expecting: 10)
            let t = Bodies.token
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.getRecords(token: t, layout: "L", limit: 0) { (_: [[String: Any]]?, code: String) in done.record("limit0 " + code) }
                DataAPI.getRecords(token: t, layout: "L", offset: -1, limit: 5) { (_: [[String: Any]]?, code: String, _: String) in done.record("offset-1 " + code) }
                DataAPI.getRecords(token: t, layout: "L", offset: 1, limit: Int.min) { (_: [[String: Any]]?, code: String, _: String) in done.record("limitMin " + code) }
                DataAPI.findRequest(token: t, layout: "L", payload: ["query": [["born": Date()]]]) { (_: [[String: Any]]?, code: String, _: String) in done.record("date " + code) }
                DataAPI.findRequest(token: t, layout: "L", payload: ["query": [["rating": Double.nan]]]) { (_: [[String: Any]]?, code: String, _: String) in done.record("nan " + code) }
                DataAPI.findRequest(token: t, layout: "", payload: ["query": [["a": "b"]]]) { (_: [[String: Any]]?, code: String, _: String) in done.record("layout " + code) }
                DataAPI.setGlobalFields(token: t, payload: ["globalFields": "not a dictionary"]) { code, _ in done.record("globals " + code) }
                DataAPI.refreshToken(auth: "") { _, code, _ in done.record("authEmpty " + code) }
                DataAPI.refreshToken(auth: "dXNlcjpwYXNz\r\nX-Injected: 1") { _, code, _ in done.record("authCRLF " + code) }
                DataAPI.getRecords(token: "tok\r\nX-Injected: 1", layout: "L", offset: 1, limit: 5) { (_: [[String: Any]]?, code: String, _: String) in done.record("tokenCRLF " + code) }
            }
            let codes = await done.value()
            let bad = FMError.ClientCode.invalidArgument
            #expect(Set(codes) == [
                "limit0 \(bad)", "offset-1 \(bad)", "limitMin \(bad)", "date \(bad)", "nan \(bad)", "layout \(bad)",
                "globals \(bad)", "authEmpty \(FMError.ClientCode.invalidConfiguration)", "authCRLF \(bad)", "tokenCRLF \(bad)",
            ])
            #expect(codes.count == 10)
            #expect(server.heads.isEmpty)
        }
    }

    /// Failed before the fix (the test process died of a stack overflow, signal 11): a payload nested a few
    /// thousand levels deep overflowed the stack of the caller's thread in `JSONPayload.normalize`, which
    /// recursed once per level, and whose `as NSNumber` cast of a nested array bridged the whole tree first,
    /// recursively. It is now `-1002` past 64 levels (containers are cast first), and nothing is sent.
    @Test func aPayloadNestedThousandsDeepIsMinus1002NotAStackOverflow() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.ok) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            var nested: Any = "x"
            for _ in 0..<5_000 { nested = [nested] }
            var objects: Any = "x"
            for _ in 0..<5_000 { objects = ["a": objects] }
            let values = UncheckedBox((nested, objects, defaults))
            let done = Recorder<String>(expecting: 4)
            // A thread of the caller's own, with a 1 MiB stack (an app's secondary threads have 512 KiB).
            let thread = Thread {
                let (nested, objects, defaults) = values.value
                DataAPI.withLegacyDefaults(defaults) {
                    DataAPI.findRequest(token: Bodies.token, layout: "L", payload: ["query": [["a": nested]]]) {
                        (_: [[String: Any]]?, code: String, _: String) in done.record("find " + code)
                    }
                    DataAPI.createRecord(token: Bodies.token, layout: "L", payload: ["fieldData": ["a": objects]]) {
                        (_: String?, code: String, _: String) in done.record("create " + code)
                    }
                    DataAPI.editRecord(id: 1, token: Bodies.token, layout: "L", payload: ["fieldData": ["a": nested]], modId: nil) {
                        code, _ in done.record("edit " + code)
                    }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
            let query: String = await DataAPI.withLegacyDefaults(defaults) {
                do {
                    _ = try await SwiftFM.query(layout: "L", payload: ["query": [["a": values.value.0]]], token: Bodies.token)
                    return "0"
                } catch {
                    return (error as? FMError)?.code ?? "\(error)"
                }
            }
            done.record("query " + query)
            let bad = FMError.ClientCode.invalidArgument
            #expect(Set(await done.value()) == ["find \(bad)", "create \(bad)", "edit \(bad)", "query \(bad)"])
            #expect(server.heads.isEmpty)
        }
    }

    /// Guard (held): a payload nested as deep as a real one and more (10 levels) is sent.
    @Test func aPayloadNestedTenDeepIsSent() async throws {
        let server = TestServer(respond: { _ in TestServer.json(#"{"response":{"recordId":"7","modId":"0"},"messages":[{"code":"0","message":"OK"}]}"#) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            var nested: Any = "x"
            for _ in 0..<10 { nested = [nested] }
            let done = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.createRecord(token: Bodies.token, layout: "L", payload: ["fieldData": ["a": nested]]) {
                    (id: String?, code: String, _: String) in done.record("\(id ?? "nil") \(code)")
                }
            }
            #expect(await done.value() == ["7 0"])
            #expect(server.requests.first.map { String(decoding: $0.body, as: UTF8.self) } == #"{"fieldData":{"a":[[[[[[[[[["x"]]]]]]]]]]}}"#)
        }
    }

    /// Failed before the fix (`-1003`): a layout name or script parameter of megabytes made a URL libcurl refuses
    /// (curl 27 "out of memory" past a 1 MiB head, or a refused `CURLOPT_URL` past 8 MB read as "libcurl older
    /// than 7.80"), a connection failure, retried for the whole 30 s deadline when the server had answered before.
    /// It is now `-1002`, once, and nothing is sent.
    @Test func aURLOfMegabytesIsMinus1002AndNotSent() async throws {
        let server = TestServer(respond: { _ in TestServer.json(Bodies.ok) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let done = Recorder<String>(expecting: 2)
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.findRequest(token: Bodies.token, layout: String(repeating: "y", count: 1_500_000), payload: ["query": [["a": "b"]]]) {
                    (_: [[String: Any]]?, code: String, _: String) in done.record("find \(code) \(FMError.current?.message.hasPrefix("The request URL would be") == true)")
                }
                DataAPI.getRecords(token: Bodies.token, layout: String(repeating: "é", count: 200_000), offset: 1, limit: 1) {
                    (_: [[String: Any]]?, code: String, _: String) in done.record("range \(code) \(FMError.current?.message.hasPrefix("The request URL would be") == true)")
                }
            }
            let ran = await DataAPI.withLegacyDefaults(defaults) {
                await SwiftFM.executeScript(script: "S", parameter: String(repeating: "x", count: 9_000_000), layout: "L", token: Bodies.token)
            }
            #expect(!ran)
            #expect(Set(await done.value()) == ["find -1002 true", "range -1002 true"])
            #expect(server.heads.isEmpty)
        }
    }

    /// Guard (held): a long but sendable URL (a 20 KB script parameter) goes to the server as it is.
    @Test func aLongButSendableURLIsSent() async throws {
        let server = TestServer(respond: { _ in TestServer.json(#"{"response":{"scriptResult":"1","scriptError":"0"},"messages":[{"code":"0","message":"OK"}]}"#) })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let ran = await DataAPI.withLegacyDefaults(defaults) {
                await SwiftFM.executeScript(script: "S", parameter: String(repeating: "x", count: 20_000), layout: "L", token: Bodies.token)
            }
            #expect(ran)
            #expect(server.heads.first?.contains(String(repeating: "x", count: 20_000)) == true)
        }
    }

    /// Guard (held): a record id of 0, -1 or `Int.max` is sent as written (FileMaker answers), once.
    @Test(arguments: [0, -1, Int.max])
    func anyRecordIdIsSentAsWritten(id: Int) async throws {
        let server = TestServer(respond: { _ in
            TestServer.json(#"{"messages":[{"code":"101","message":"Record is missing"}],"response":{}}"#, status: "500 Internal Server Error")
        })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let done = Recorder<String>()
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.getRecord(id: id, token: Bodies.token, layout: "L") { record, code, _ in done.record("\(record == nil) \(code)") }
            }
            #expect(await done.value() == ["true 101"])
            #expect(server.heads.first?.contains("/layouts/L/records/\(id) ") == true)
        }
    }

    // MARK: Secrets

    /// Guard (held): a server that quotes the `Authorization` header back (a gateway's error page, a script) does
    /// not get the token or the password into the completion's message or `FMError.current`.
    @Test func anEchoedSecretNeverReachesALegacyCompletion() async throws {
        let server = TestServer(respond: { head in
            let authorization = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("authorization:") } ?? ""
            let decoded = authorization.split(separator: " ").last
                .flatMap { Data(base64Encoded: String($0)) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            let echo = "\(authorization) \(decoded)".replacingOccurrences(of: "\"", with: "'")
            return TestServer.json(#"{"messages":[{"code":"212","message":"denied: \#(echo)"}],"response":{}}"#, status: "401 Unauthorized")
        })
        defer { server.stop() }
        try await Self.legacySetting(server) { defaults in
            let secret = "pw-s3cret"
            let done = Recorder<String>(expecting: 3)
            DataAPI.withLegacyDefaults(defaults) {
                DataAPI.refreshToken(auth: basicValue("admin", secret)) { _, code, message in
                    done.record("\(code) \(message) \(FMError.current.map { "\($0) \(String(reflecting: $0))" } ?? "")")
                }
                DataAPI.getRecords(token: Bodies.token, layout: "L", offset: 1, limit: 5) { (_: [[String: Any]]?, code: String, message: String) in
                    done.record("\(code) \(message) \(FMError.current.map { "\($0) \(String(reflecting: $0))" } ?? "")")
                }
            }
            let fetched = await DataAPI.withLegacyDefaults(defaults) { await SwiftFM.newSession() }
            done.record("newSession \(fetched ?? "nil")")
            let texts = await done.value()
            #expect(texts.count == 3)
            for text in texts {
                #expect(!text.contains(secret), "\(text)")
                #expect(!text.contains(Bodies.token), "\(text)")
                #expect(!text.contains(basicValue("admin", secret)), "\(text)")
            }
            #expect(texts.contains { $0.contains("denied") })
        }
    }
}

@Suite("Legacy attack: the token file")
struct TokenFileAttackTests {
    static let token = FMStoredToken(token: Bodies.token, expiry: Date(timeIntervalSince1970: 1_900_000_000))


    /// Guard (held): a FIFO in the token file's place reads as no token without blocking (nor waiting for a
    /// writer), and a save replaces it with a regular file, which then reads back.
    @Test func aFIFOReadsAsNoTokenWithoutBlocking() async throws {
        try await Self.inDirectory { directory in
            let url = directory.appendingPathComponent("token.json")
            #expect(mkfifo(url.path, 0o600) == 0)
            let store = FMFileTokenStore(url: url)
            let loaded = Recorder<Bool>()
            Thread { loaded.record(store.load() == nil) }.start()
            let values = await loaded.value()
            if values.isEmpty {
                // Still blocked (a defect): open the FIFO for writing and close it, so the reader ends.
                let writer = open(url.path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            #expect(values == [true])
            store.save(Self.token)
            #expect(store.load() == Self.token)
        }
    }

    /// A fresh directory for one test; removed afterwards.
    static func inDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFM-TokenFile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    /// Guard (held): a symbolic link to a device (`/dev/zero`, which never ends) reads as no token at once, and a
    /// save replaces the link with a regular file of mode 0600.
    @Test func aSymlinkToADeviceReadsAsNoToken() async throws {
        try await Self.inDirectory { directory in
            let url = directory.appendingPathComponent("token.json")
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/zero")
            let store = FMFileTokenStore(url: url)
            #expect(store.load() == nil)
            store.save(Self.token)
            #expect(store.load() == Self.token)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) == nil)
            let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
        }
    }

    /// Guard (held): a missing, empty, truncated or corrupt file, a directory, or a symlink to a missing file read
    /// as no token; a symlink to a good file reads through; every save keeps mode 0600 and leaves no temporary file.
    @Test func odditiesReadAsNoTokenAndSavesStayPrivate() async throws {
        try await Self.inDirectory { directory in
            let url = directory.appendingPathComponent("token.json")
            let store = FMFileTokenStore(url: url)
            #expect(store.load() == nil)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .secondsSince1970
            let good = try encoder.encode(Self.token)
            for bad in [Data(), good.prefix(good.count / 2), Data("not json".utf8), Data([0xFF, 0xFE, 0x00]),
                        Data(#"{"token":42,"expiry":"soon"}"#.utf8), Data(#"[]"#.utf8)] {
                try bad.write(to: url)
                #expect(store.load() == nil)
            }
            try FileManager.default.removeItem(at: url)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            #expect(store.load() == nil)
            store.save(Self.token) // cannot replace a directory: fails quietly, leaves no temporary file
            try FileManager.default.removeItem(at: url)
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: directory.appendingPathComponent("missing").path)
            #expect(store.load() == nil)
            try FileManager.default.removeItem(at: url)
            let target = directory.appendingPathComponent("elsewhere.json")
            try good.write(to: target)
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target.path)
            #expect(store.load() == Self.token)
            try FileManager.default.removeItem(at: url)
            try FileManager.default.removeItem(at: target)
            // Two clients writing the same file: each write is whole, the file stays 0600, no temporary is left.
            let other = FMFileTokenStore(url: url)
            DispatchQueue.concurrentPerform(iterations: 40) { index in
                (index.isMultiple(of: 2) ? store : other)
                    .save(FMStoredToken(token: "t\(index)-" + Bodies.token, expiry: Self.token.expiry))
            }
            let loaded = try #require(store.load())
            #expect(loaded.token.hasSuffix("-" + Bodies.token))
            let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["token.json"])
            #expect(!store.description.contains(Bodies.token) && !String(reflecting: loaded).contains(Bodies.token))
        }
    }
}

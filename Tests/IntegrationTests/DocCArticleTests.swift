import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The code of the DocC articles (Sources/SwiftFM/SwiftFM.docc, Sources/SwiftFMEmulator/SwiftFMEmulator.docc),
/// compiled and run against the demo solution, so the articles cannot drift. Each test names its article;
/// `print` in an article is a captured value here, and the article's `// …` output comment is asserted.
@Suite("DocC articles")
struct DocCArticleTests {
    /// Runs `body` with an API on a fresh demo emulator; `host` is what the article writes as `http://127.0.0.1:3000`.
    func demo(_ body: (DataAPI, Emulator, String) async throws -> Void) async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let host = url.absoluteString
        // A deadline of minutes: a hook or a step of the test may wait for a busy cooperative pool.
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "admin", timeout: 600)
        try await body(DataAPI(configuration: configuration), emulator, host)
    }

    // MARK: GettingStarted.md

    @Test func gettingStartedCallbacks() async throws {
        try await demo { api, _, host in
            let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "admin")
            let lines = LineSink()
            let logged = DataAPI(configuration: configuration, logger: { event in lines.append("\(event)") })
            _ = try await logged.productInfo()
            #expect(!lines.lines.isEmpty)

            let (count, code) = await callback(api) { (done: @escaping @Sendable (Int?, String) -> Void) in
                api.getRecords(layout: "Artists", limit: 20) { found, code in
                    guard code == "0", let found else {
                        return done(nil, FMError.current?.description ?? code)
                    }
                    done(found.records.filter { $0["fieldData"] != nil }.count, code)
                }
            }
            #expect(code == "0" && count == 5)

            let (found, findCode) = await callback(api) { done in
                let request = FMFindRequest(queries: [FMQuery(["city": "Austin"])])
                api.find(layout: "Artists", request: request) { found, code in done(found, code) }
            }
            #expect(findCode == "0" && found?.records.count == 1)   // "0" 1
        }
    }

    @Test func gettingStartedAsync() async throws {
        struct Artist: Decodable { let name: String; let city: String; let rating: Double? }
        try await demo { api, _, _ in
            let found = try await api.find(layout: "Artists", request: FMFindRequest(queries: [FMQuery(["city": "Dallas"])]))
            let artists = try found.decode(Artist.self)           // [FMRecord<Artist>]
            let ref = try await api.createRecord(layout: "Artists", fieldData: ["name": "Brian", "city": "Austin"])
            #expect(artists.map(\.fieldData.name).sorted() == ["Kate Bush", "Pinkish Black"])
            #expect(!ref.recordId.isEmpty)
        }
    }

    @Test func gettingStartedPaging() async throws {
        try await demo { api, _, _ in
            var names: [String] = []
            for try await page in api.pages(layout: "Artists", pageSize: 2, sort: [FMSort("name")]) {
                names += page.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
            }
            #expect(names == ["Brian Eno", "Emmylou Harris", "Kate Bush", "Pinkish Black", "Townes Van Zandt"])
        }
    }

    @Test func gettingStartedScriptsContainersGlobals() async throws {
        try await demo { api, _, _ in
            let script = try await api.runScript(layout: "Artists", script: "Echo", parameter: "hello")
            #expect(script.result == "hello")   // hello

            _ = try await api.uploadContainer(layout: "Artists", recordId: 1, field: "headshot",
                                              data: Data("PNG bytes".utf8), fileName: "eno.png")
            let record = try await api.getRecord(layout: "Artists", recordId: 1)
            let url = (record.records.first?["fieldData"] as? [String: Any])?["headshot"] as? String
            let bytes = try await api.downloadContainer(url: try #require(URL(string: url ?? "")))
            #expect(bytes == Data("PNG bytes".utf8))

            try await api.setGlobals(["Artists::g_note": "set for this session"])
        }
    }

    // MARK: SessionsAndTokens.md

    @Test func sessionsManaged() async throws {
        try await demo { api, emulator, _ in
            let first = try await api.getRecords(layout: "Artists", limit: 1)   // logs in, then reads
            let again = try await api.getRecords(layout: "Artists", limit: 1)   // reuses the token
            #expect(api.isActiveToken() && first.records.count + again.records.count == 2)   // true 2
            #expect(emulator.loginCount == 1)
        }
    }

    @Test func sessionsExplicit() async throws {
        try await demo { api, _, _ in
            #expect(!api.isActiveToken())
            let (token, code) = await callback(api) { (done: @escaping @Sendable (String?, String) -> Void) in
                api.refreshToken { token, expiry, code in done(expiry == nil ? nil : token, code) }
            }
            #expect(code == "0" && token?.isEmpty == false)
            let (ok, logoutCode) = await callback(api) { (done: @escaping @Sendable (Bool?, String) -> Void) in
                api.logout { ok, code in done(ok, code) }
            }
            #expect(ok == true && logoutCode == "0" && !api.isActiveToken())
        }
    }

    @Test func sessionsNewSessionHook() async throws {
        try await demo { api, emulator, _ in
            api.onNewSession { session in
                try await session.api.setGlobals(["Artists::g_note": "set after every login"])
            }
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            emulator.expireAllTokens()   // the server forgets the session, and its globals with it
            let found = try await api.getRecords(layout: "Artists", limit: 1)
            let note = (found.records.first?["fieldData"] as? [String: Any])?["g_note"] as? String
            #expect(note == "set after every login" && emulator.loginCount == 2)
        }
    }

    @Test func sessionsFileTokenStore() async throws {
        try await demo { _, emulator, host in
            let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("music-\(UUID().uuidString).token")
            defer { try? FileManager.default.removeItem(at: file) }
            let store = FMFileTokenStore(url: file)
            let daemon = DataAPI(configuration: FMConfiguration(host: host, database: "Music",
                                                                username: "admin", password: "admin"),
                                 tokenStore: store)
            _ = try await daemon.getRecords(layout: "Artists", limit: 1)
            // A restarted process (a new DataAPI on the same file) reuses the session.
            let restarted = DataAPI(configuration: daemon.configuration, tokenStore: FMFileTokenStore(url: file))
            _ = try await restarted.getRecords(layout: "Artists", limit: 1)
            #expect(emulator.loginCount == 1)
        }
    }

    // MARK: ErrorsAndClientCodes.md

    @Test func errorsInCompletion() async throws {
        let api = DataAPI(host: "", database: "Music", username: "admin", password: "admin")
        let (message, code) = await callback(api) { (done: @escaping @Sendable (String?, String) -> Void) in
            api.productInfo { info, code in
                done(FMError.current?.message ?? "", code)
            }
        }
        #expect(code == "-1001" && message == "No host is configured")
    }

    @Test func errorsAsync() async throws {
        try await demo { api, _, _ in
            do {
                _ = try await api.getRecords(layout: "Nope")
                Issue.record("expected an error")
            } catch let error as FMError {
                #expect(error.code == "105" && error.message.hasPrefix("Layout is missing; no layout \"Nope\" in database Music: ")
                        && error.httpStatus == 500, "\(error.message)")
            }
        }
    }

    // MARK: LimitsAndRetries.md

    @Test func limitsConfiguration() async throws {
        try await demo { _, emulator, host in
            var configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "admin")
            configuration.timeout = 10
            configuration.maxResponseBytes = 64 * 1024 * 1024
            configuration.retry = FMRetryPolicy(maxAttempts: 4, initialDelay: 0.5, maxDelay: 5, retriesWrites: false)
            configuration.maxConcurrentRequests = 8
            let api = DataAPI(configuration: configuration)
            // A 503 once, then the answer: a read is retried (a Retry-After of 0 keeps the test fast).
            emulator.inject(.status(503, body: "busy", contentType: "text/plain", retryAfter: "0"), count: 1, matching: "/records")
            let found = try await api.getRecords(layout: "Artists", limit: 1)
            #expect(found.records.count == 1)
            #expect(emulator.requestLog.filter { $0.decodedPath.hasSuffix("/records") }.count == 2)
        }
    }

    /// The body of the article's SIGTERM handler (raising a signal in the test runner is not reliable: a
    /// signal source may not be registered yet when the signal comes), with a continuation for `exit(0)`.
    @Test func limitsShutdown() async throws {
        try await demo { api, emulator, _ in
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            #expect(emulator.activeSessionCount == 1)
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                api.shutdown(grace: 10) {
                    finished.resume()   // exit(0) in the article: every session is logged out
                }
            }
            #expect(emulator.activeSessionCount == 0)
            let (_, code) = await callback(api) { api.productInfo(completion: $0) }
            #expect(code == FMError.ClientCode.shuttingDown)
        }
    }

    // MARK: TestingWithTheEmulator.md (SwiftFMEmulator)

    @Test func emulatorInProcessFaultsScripts() async throws {
        let emulator = Emulator()                        // the demo solution: database Music, admin / admin
        let baseURL = try emulator.start()               // http://127.0.0.1:<free port>
        defer { emulator.stop() }

        let api = DataAPI(host: baseURL.absoluteString, database: emulator.database, username: "admin", password: "admin")
        let found = try await api.getRecords(layout: "Artists", limit: 2)
        #expect(found.records.count == 2 && emulator.loginCount == 1)   // 2 1

        emulator.inject(.fileMakerError(code: "952", status: 401), count: 1, matching: "/records")
        let again = try await api.getRecords(layout: "Artists", limit: 1)   // renewed and replayed
        #expect(again.records.count == 1 && emulator.loginCount == 2)      // 1 2

        emulator.registerScript("Shout") { call in .result((call.parameter ?? "").uppercased()) }
        let shouted = try await api.runScript(layout: "Artists", script: "Shout", parameter: "hello")
        #expect(shouted.result == "HELLO")   // HELLO
    }

    @Test func emulatorSchemaJSON() async throws {
        let schema = """
        { "database": "Shop",
          "accounts": [ { "username": "admin", "password": "admin" } ],
          "tables": { "Items": { "fields": { "name": "text", "price": "number" } } },
          "layouts": { "Items": { "table": "Items", "fields": ["name", "price"] } },
          "records": { "Items": [ { "name": "Pen", "price": 2 } ] } }
        """
        let shop = try Emulator(schemaJSON: Data(schema.utf8))
        try await Emulator.withRunning(shop) { emulator in
            let url = try #require(emulator.baseURL)
            let api = DataAPI(host: url.absoluteString, database: "Shop", username: "admin", password: "admin")
            let items = try await api.getRecords(layout: "Items")
            #expect(items.records.count == 1)
        }
    }
}

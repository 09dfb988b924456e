import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The README's quick tour, compiled and run against the demo solution, so the README cannot drift.
@Suite("README quick tour")
struct ReadmeTests {
    @Test func callbacksTour() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "admin")

        let (names, code) = await callback(api) { (done: @escaping @Sendable ([String]?, String) -> Void) in
            // README: api.getRecords(layout:limit:) { found, code in … }
            api.getRecords(layout: "Artists", limit: 20) { found, code in
                guard code == "0", let found else { return done(nil, code) }
                done(found.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }, code)
            }
        }
        #expect(code == "0" && names?.isEmpty == false)

        let (found, findCode) = await callback(api) { done in
            api.find(layout: "Artists", request: FMFindRequest(queries: [FMQuery(["city": "==Nowhere"])])) { found, code in
                done(found, code)   // "no records match" is code "401" with an empty found set
            }
        }
        #expect(findCode == "401" && found?.records.isEmpty == true)

        let (_, editCode) = await callback(api) { (done: @escaping @Sendable (FMEditResult?, String) -> Void) in
            let request = api.editRecord(layout: "Artists", recordId: 1, fieldData: ["city": "Dallas"], modId: "3") { result, code in
                done(result, code)   // "306" when someone else edited the record first
            }
            _ = request   // README: request.cancel() — here the answer is awaited instead
        }
        #expect(editCode == "306")
    }

    @Test func asyncTour() async throws {
        struct Artist: Decodable { let name: String; let city: String }
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "admin")

        let ref = try await api.createRecord(layout: "Artists", fieldData: ["name": "Brian", "city": "Austin"])
        let found = try await api.find(layout: "Artists", request: FMFindRequest(queries: [FMQuery(["city": "Austin"])]))
        let artists = try found.decode(Artist.self)
        #expect(artists.contains { $0.recordId == ref.recordId && $0.fieldData.name == "Brian" })
    }

    @Test func wholeErrorSnippet() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        let (line, code) = await callback(api) { (done: @escaping @Sendable (String?, String) -> Void) in
            api.getRecords(layout: "Missing Layout", limit: 20) { found, code in
                guard code == "0", let found else {
                    return done(FMError.current?.description ?? code, code)   // README: print("failed:", …)
                }
                done("\(found.records.count)", code)
            }
        }
        #expect(code == "105" && line == "FMError 105: Layout is missing; no layout \"Missing Layout\" in database Music: check the "
                + "layout's name (layouts() lists the ones this account can use) (HTTP 500)")
    }

    @Test func loggerSnippet() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let lines = LineSink()
        // README: DataAPI(configuration: config, logger: { event in print(event) })
        let config = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        let logged = DataAPI(configuration: config, logger: { event in lines.append("\(event)") })
        _ = try await logged.getRecords(layout: "Artists", limit: 1)
        let log = lines.lines
        #expect(log.contains { $0.hasPrefix("[debug] ← GET /fmi/data/vLatest/databases/Music/layouts/Artists/records") && $0.contains(" 200 ") })
        #expect(!log.joined().contains("admin:admin") && !log.joined().contains("YWRtaW46YWRtaW4="))
    }

    @Test func emulatorSnippet() async throws {
        let emulator = Emulator()
        let baseURL = try emulator.start()
        defer { emulator.stop() }
        emulator.inject(.fileMakerError(code: "952", status: 401), count: 1)
        let api = DataAPI(host: baseURL.absoluteString, database: emulator.database, username: "admin", password: "admin")
        // The injected fault answers the next request, whatever it is (productInfo needs no session).
        let (_, code) = await callback(api) { api.productInfo(completion: $0) }
        #expect(code == "952")
    }
}

/// Collects log lines from any queue.
final class LineSink: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); defer { lock.unlock() }; stored.append(line) }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }

    @Test func sessionsSnippet() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-readme-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: tokenFile) }
        // README: Sessions
        var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        configuration.sessionPoolSize = 4
        let api = DataAPI(configuration: configuration, tokenStore: FMFileTokenStore(url: tokenFile))
        api.onNewSession = { session, done in
            session.api.setGlobals(["Artists::g_note": "EU"]) { _, code in done(code == "0" ? nil : FMError(code: code, message: "globals")) }
        }
        let record = try await api.getRecord(layout: "Artists", recordId: 1)
        #expect((record.records.first?["fieldData"] as? [String: Any])?["g_note"] as? String == "EU")
        #expect(FileManager.default.fileExists(atPath: tokenFile.path))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            api.shutdown { done.resume() }   // README: api.shutdown { exit(0) }
        }
        #expect(emulator.activeSessionCount == 0)
        #expect(FileManager.default.fileExists(atPath: tokenFile.path) == false)
    }
}

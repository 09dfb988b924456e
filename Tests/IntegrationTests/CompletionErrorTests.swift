import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// `FMError.current`: the whole error (message, HTTP status, underlying error) inside a `(value?, code)`
/// completion, on every callback family.
@Suite("FMError.current in callback completions")
struct CompletionErrorTests {
    /// What a completion saw: its code and `FMError.current` read inside it.
    struct Seen: Sendable {
        var code: String
        var error: FMError?
    }

    /// Starts a callback call whose completion reports `(code, FMError.current)`.
    func seen(_ api: DataAPI, _ start: (@escaping @Sendable (String) -> Void) -> Void) async -> Seen {
        let (value, code) = await callback(api) { (done: @escaping @Sendable (Seen?, String) -> Void) in
            start { code in done(Seen(code: code, error: FMError.current), code) }
        }
        return value ?? Seen(code: code, error: nil)
    }

    /// Checks the pair a failing completion saw: `FMError.current` is the error behind `code`, with a message.
    func expectFailure(_ seen: Seen, code: String, status: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(seen.code == code, sourceLocation: sourceLocation)
        #expect(seen.error?.code == code, sourceLocation: sourceLocation)
        #expect(seen.error?.message.isEmpty == false, sourceLocation: sourceLocation)
        if let status { #expect(seen.error?.httpStatus == status, sourceLocation: sourceLocation) }
    }

    func withDemo(_ body: (DataAPI, Emulator) async throws -> Void) async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        // Three attempts (the default before reads rode out a restart): a download refused on port 1 fails
        // after them instead of riding the refusal out until its deadline.
        var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        configuration.retry = FMRetryPolicy(maxAttempts: 3)
        try await body(DataAPI(configuration: configuration), emulator)
    }

    @Test func nilOnSuccessAndOutsideCompletions() async throws {
        #expect(FMError.current == nil)
        try await withDemo { api, _ in
            let ok = await seen(api) { done in api.getRecords(layout: "Artists", limit: 1) { _, code in done(code) } }
            #expect(ok.code == "0" && ok.error == nil)
        }
        #expect(FMError.current == nil)
    }

    @Test func records() async throws {
        try await withDemo { api, emulator in
            let missing = await seen(api) { done in api.getRecord(layout: "Artists", recordId: 9_999) { _, code in done(code) } }
            expectFailure(missing, code: "101", status: 500)
            let badLayout = await seen(api) { done in api.getRecords(layout: "Nope", limit: 1) { _, code in done(code) } }
            expectFailure(badLayout, code: "105")
            let stale = await seen(api) { done in
                api.editRecord(layout: "Artists", recordId: 1, fieldData: ["city": "Dallas"], modId: "99") { _, code in done(code) }
            }
            expectFailure(stale, code: "306")
            let bad = await seen(api) { done in api.createRecord(layout: "Artists", fieldData: ["name": NSNull()]) { _, code in done(code) } }
            expectFailure(bad, code: FMError.ClientCode.invalidArgument)
            #expect(bad.error?.httpStatus == nil)   // never sent
            emulator.inject(.html502)
            let html = await seen(api) { done in api.deleteRecord(layout: "Artists", recordId: 1) { _, code in done(code) } }
            expectFailure(html, code: FMError.ClientCode.notJSON, status: 502)
        }
    }

    @Test func find() async throws {
        try await withDemo { api, _ in
            let none = await seen(api) { done in
                api.find(layout: "Artists", request: FMFindRequest(queries: [FMQuery(["city": "==Nowhere"])])) { _, code in done(code) }
            }
            expectFailure(none, code: "401")
            #expect(none.error?.message == "No records match the request")
        }
    }

    @Test func scripts() async throws {
        try await withDemo { api, _ in
            let missing = await seen(api) { done in api.runScript(layout: "Artists", script: "No Such Script") { _, code in done(code) } }
            expectFailure(missing, code: "104")
            let ok = await seen(api) { done in api.scripts { _, code in done(code) } }
            #expect(ok.code == "0" && ok.error == nil)
        }
    }

    @Test func containers() async throws {
        try await withDemo { api, _ in
            let notContainer = await seen(api) { done in
                api.uploadContainer(layout: "Artists", recordId: 1, field: "name", data: Data("x".utf8), fileName: "x.txt") { _, code in done(code) }
            }
            #expect(notContainer.code != "0" && notContainer.error?.code == notContainer.code)
            #expect(notContainer.error?.message.isEmpty == false)
            // Nobody listens on port 1: the transport error is the underlying one.
            let refused = await seen(api) { done in
                api.downloadContainer(url: URL(string: "http://127.0.0.1:1/Streaming_SSL/MainDB/x.png")!) { _, code in done(code) }
            }
            expectFailure(refused, code: FMError.ClientCode.transport)
            #expect(refused.error?.underlying?.isEmpty == false)
        }
    }

    @Test func globals() async throws {
        try await withDemo { api, _ in
            let notGlobal = await seen(api) { done in api.setGlobals(["Artists::name": "x"]) { _, code in done(code) } }
            #expect(notGlobal.code != "0" && notGlobal.error?.code == notGlobal.code)
            #expect(notGlobal.error?.message.isEmpty == false)
            let ok = await seen(api) { done in api.setGlobals(["Artists::g_note": "hi"]) { _, code in done(code) } }
            #expect(ok.code == "0" && ok.error == nil)
        }
    }

    @Test func metadata() async throws {
        try await withDemo { api, _ in
            let missing = await seen(api) { done in api.layoutMetadata(layout: "Nope") { _, code in done(code) } }
            expectFailure(missing, code: "105")
        }
    }

    @Test func sessions() async throws {
        try await withDemo { _, emulator in
            let url = try #require(emulator.baseURL)
            let wrong = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "wrong")
            let login = await seen(wrong) { done in wrong.login { _, code in done(code) } }
            expectFailure(login, code: "212", status: 401)
            let validate = await seen(wrong) { done in wrong.validateSession { _, code in done(code) } }
            expectFailure(validate, code: FMError.ClientCode.noToken)
        }
    }

    /// The case: `-1001` means no host, a bad host, a bad port or a bad scheme; the message says which.
    @Test func configurationMessagesTellTheCasesApart() async throws {
        var messages: [String] = []
        for host in ["", "ftp://fms.example.com", "fms.example.com:70000"] {
            let api = DataAPI(host: host, database: "Music", username: "admin", password: "admin")
            let result = await seen(api) { done in api.productInfo { _, code in done(code) } }
            expectFailure(result, code: FMError.ClientCode.invalidConfiguration)
            messages.append(result.error?.message ?? "")
        }
        #expect(Set(messages).count == 3)
        #expect(messages[0].contains("No host") && messages[2].contains("port"))
    }

    @Test func cancelled() async throws {
        try await withDemo { api, emulator in
            emulator.inject(.delay(60))   // the answer cannot arrive before the cancel, however busy the machine
            let result = await seen(api) { done in
                let request = api.productInfo { _, code in done(code) }
                request.cancel()
            }
            expectFailure(result, code: FMError.ClientCode.cancelled)
        }
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: a call that cannot change data (a read, a find, metadata, a container download, an OData read) whose
// answer broke off after its head arrived (`-1003`, "The answer from HOST:PORT broke off: …", as a server restarting
// mid-answer or a proxy cutting a connection leaves it) is sent again under the retry policy, up to
// `FMRetryPolicy.maxAttempts` (not ridden out until the deadline: the server is there); it completes with the last
// "broke off" error when every attempt broke off. A write whose answer broke off is never sent again, not even with
// `retriesWrites: true`: the server answered, so it ran. `FMRetryPolicy.none` sends nothing twice.

@Suite("A read whose answer broke off is sent again; a write is not")
struct BrokenOffReadRetryTests {
    private static func configuration(_ base: URL, _ emulator: Emulator, retry: FMRetryPolicy) -> FMConfiguration {
        var configuration = FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.retry = retry
        configuration.timeout = 3_600   // the outcome never depends on how fast a loaded machine is
        return configuration
    }

    private static let quickRetries = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)

    private static func reads(_ emulator: Emulator, _ method: String, _ path: String) -> Int {
        emulator.requestLog.filter { $0.method == method && $0.decodedPath.hasSuffix(path) }.count
    }

    @Test("a Data API read (callback) whose answer broke off once succeeds on its second attempt")
    func aCallbackReadIsSentAgain() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: Self.configuration(base, emulator, retry: .standard))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.closeMidBody, count: 1, matching: "/records")
        let (found, code): (FMFoundSet?, String) = await withCheckedContinuation { done in
            api.getRecords(layout: "Artists", limit: 5) { found, code in done.resume(returning: (found, code)) }
        }
        #expect(code == "0")
        #expect(found?.records.isEmpty == false)
        #expect(Self.reads(emulator, "GET", "/layouts/Artists/records") == 1 + 2)
    }

    @Test("a Data API find (async) whose answer broke off once succeeds on its second attempt")
    func anAsyncFindIsSentAgain() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: Self.configuration(base, emulator, retry: Self.quickRetries))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.closeMidBody, count: 1, matching: "/_find")
        let found = try await api.find(layout: "Artists", payload: ["query": [["name": "*"]]])
        #expect(!found.records.isEmpty)
        #expect(Self.reads(emulator, "POST", "/_find") == 2)
    }

    @Test("an OData read whose answer broke off once succeeds on its second attempt")
    func anODataReadIsSentAgain() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: Self.configuration(base, emulator, retry: Self.quickRetries))
        emulator.inject(.closeMidBody, count: 1, matching: "/odata/")
        let page = try await odata.records(from: "Artists")
        #expect(!page.rows.isEmpty)
        #expect(emulator.requestLog.filter { $0.method == "GET" && $0.decodedPath.contains("/odata/") }.count == 2)
    }

    @Test("a read whose answer breaks off every time ends after maxAttempts with the answer that broke off")
    func aReadThatAlwaysBreaksOffKeepsToMaxAttempts() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        // The default policy rides a restart out until the deadline (an hour here): an answer that broke off is no
        // restart, so it keeps to maxAttempts.
        var policy = FMRetryPolicy.standard
        policy.initialDelay = 0
        policy.maxDelay = 0
        let api = DataAPI(configuration: Self.configuration(base, emulator, retry: policy))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.closeMidBody, count: 1_000, matching: "/records")
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read whose every answer broke off succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("broke off"), "\(error.message)")
        }
        #expect(Self.reads(emulator, "GET", "/layouts/Artists/records") == 1 + policy.maxAttempts)
    }

    @Test("a write whose answer broke off is not sent again, even with retriesWrites", arguments: [false, true])
    func aWriteIsNotSentAgain(retriesWrites: Bool) async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: Self.configuration(base, emulator,
                                                            retry: FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0, retriesWrites: retriesWrites)))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        let before = emulator.recordCount(inTable: "Artists")
        emulator.inject(.closeMidBody, count: 1, matching: "/records")
        do {
            _ = try await api.createRecord(layout: "Artists", fieldData: ["name": "Broken Off"])
            Issue.record("a create whose answer broke off succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("broke off"), "\(error.message)")
        }
        #expect(Self.reads(emulator, "POST", "/layouts/Artists/records") == 1)
        #expect(emulator.recordCount(inTable: "Artists") == before + 1)
    }

    @Test("with FMRetryPolicy.none a read whose answer broke off is not sent again")
    func noRetriesMeansOneAttempt() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: Self.configuration(base, emulator, retry: .none))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.closeMidBody, count: 1, matching: "/records")
        await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "Artists", limit: 5) }
        #expect(Self.reads(emulator, "GET", "/layouts/Artists/records") == 2)
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Against the emulator: a host written without a scheme (https) fails at once and names the
/// scheme to write; the id `createRecord` gives edits, reads and deletes the record.
@Suite("First contact, client against the emulator")
struct FirstContactIntegrationTests {
    /// `DataAPI(host: "127.0.0.1:PORT")` means https; the emulator speaks plain HTTP and answers the TLS
    /// ClientHello with a 400. The call fails with -1003 (not a -1004 after the deadline), once (no retry),
    /// and its message says to write `http://127.0.0.1:PORT`.
    @Test func aHostWithoutTheSchemeFailsAtOnceAndNamesIt() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let address = try #require(url.host).appending(":\(try #require(url.port))")
        let lines = LineSink()
        let configuration = FMConfiguration(host: address, database: "Music", username: "admin", password: "admin", timeout: 600)
        let api = DataAPI(configuration: configuration, logger: { lines.append("\($0)") })

        let (found, code) = await callback(api) { (done: @escaping @Sendable (FMFoundSet?, String) -> Void) in
            api.getRecords(layout: "Artists", limit: 1) { found, code in done(found, code) }
        }
        #expect(found == nil && code == FMError.ClientCode.transport)
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            Issue.record("a TLS handshake with a plain-HTTP server succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("http://\(address)"), "\(error)")
            #expect(String(describing: error).hasPrefix("FMError -1003: Wrong scheme:"))
        }
        #expect(!lines.lines.contains { $0.contains("retry") }, "a wrong scheme is not retried: \(lines.lines)")
        #expect(emulator.loginCount == 0)
    }

    /// Nothing listening on the port, default configuration (a 30 s deadline, the standard retry
    /// policy). The first call fails at the first refusal — no retry, no back-off — through the callback and
    /// the async surfaces, over the default transport (plain HTTP: the socket transport on Linux) and over
    /// URLSession (a bare host means https), and says host, port and "connection refused". (It took 29 s.)
    @Test(arguments: ["http://127.0.0.1:1", "127.0.0.1:1"])
    func nothingListeningFailsAtOnceAndSaysWhere(_ host: String) async throws {
        let lines = LineSink()
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "admin")
        let api = DataAPI(configuration: configuration, logger: { lines.append("\($0)") })
        let (found, code) = await callback(api) { (done: @escaping @Sendable ((FMFoundSet?, String?), String) -> Void) in
            api.getRecords(layout: "Artists", limit: 1) { found, code in done((found, FMError.current?.message), code) }
        }
        #expect(found?.0 == nil && code == FMError.ClientCode.transport)
        let text = try #require(found?.1)
        #expect(text.contains("127.0.0.1:1") && text.contains("connection refused"), "\(text)")
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            Issue.record("nothing listening answered")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("The request to 127.0.0.1:1 failed before FileMaker answered: connection refused"), "\(error)")
            #expect(error.message.contains("not retried"), "\(error)")
        }
        #expect(!lines.lines.contains { $0.contains("retry") }, "first contact is not retried: \(lines.lines)")
    }

    /// A name that does not resolve (`.invalid`, RFC 6761: never a real host) fails at once with "no such host".
    @Test(arguments: ["http://swiftfm-first-contact.invalid:3000", "https://swiftfm-first-contact.invalid"])
    func anUnresolvableHostFailsAtOnceAndSaysSo(_ host: String) async throws {
        let lines = LineSink()
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "admin")
        let api = DataAPI(configuration: configuration, logger: { lines.append("\($0)") })
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            Issue.record("a .invalid host answered")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("swiftfm-first-contact.invalid:") && error.message.contains("no such host"), "\(error)")
        }
        #expect(!lines.lines.contains { $0.contains("retry") }, "first contact is not retried: \(lines.lines)")
    }

    /// A host that answered and then went away for good: the read retries it (a host that answered this client is
    /// retried, under any policy) and then says for how long and how many times it was retried.
    ///
    /// The ride-out ends after its attempts (three retries, soon after each other), not at a short deadline: the
    /// deadline is a hang bound, since the first read (its login included) must succeed, which a loaded machine could
    /// take longer than a 2 s deadline for (before: `-1004` from the first read, or the second ending at its deadline
    /// mid-attempt). A ride-out until the deadline: RestartRideOutTests.
    @Test func aHostThatAnsweredAndWentAwaySaysHowLongItWasRetried() async throws {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin", timeout: 300)
        configuration.retry = FMRetryPolicy(maxAttempts: 4, initialDelay: 0.05, maxDelay: 0.1)
        let api = DataAPI(configuration: configuration)
        _ = try await api.getRecords(layout: "Bands", limit: 1)
        emulator.stop()
        do {
            _ = try await api.getRecords(layout: "Bands", limit: 1)
            Issue.record("a stopped emulator answered")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport, "\(error)")
            #expect(error.message.contains("127.0.0.1:\(url.port ?? 0)") && error.message.contains("connection refused; retried "), "\(error)")
            #expect(error.message.range(of: #"retried 3 times over \d+\.\d s$"#, options: .regularExpression) != nil, "\(error)")
        }
    }

    /// The README's chain: create, then edit, read, delete with the `recordId` create gave (a `String`).
    @Test func createThenEditWithTheIdItGave() async throws {
        try await withClient { api, emulator in
            let (ref, code) = await callback(api) { (done: @escaping @Sendable (FMRecordReference?, String) -> Void) in
                api.createRecord(layout: "Bands", fieldData: ["name": "Chain"]) { ref, code in done(ref, code) }
            }
            let created = try #require(ref)
            #expect(code == "0")
            let (edit, editCode) = await callback(api) { (done: @escaping @Sendable (FMEditResult?, String) -> Void) in
                api.editRecord(layout: "Bands", recordId: created.recordId, fieldData: ["name": "Chained"], modId: created.modId) { result, code in
                    done(result, code)
                }
            }
            #expect(editCode == "0" && edit?.modId != created.modId)

            let again = try await api.getRecord(layout: "Bands", recordId: created.recordId)
            #expect((again.records.first?["fieldData"] as? [String: Any])?["name"] as? String == "Chained")
            try await api.editRecord(layout: "Bands", recordId: created.recordId, fieldData: ["name": "Chain 3"])
            try await api.deleteRecord(layout: "Bands", recordId: created.recordId)
            await #expect(throws: FMError.self) { try await api.getRecord(layout: "Bands", recordId: created.recordId) }
            _ = emulator
        }
    }
}

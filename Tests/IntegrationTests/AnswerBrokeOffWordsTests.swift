import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: a connection that fails after the answer's head arrived is reported as an answer that broke off
// (`-1003`, "The answer from HOST:PORT broke off: …"), never as a request that "failed before FileMaker answered";
// a connection that fails before any byte of the answer keeps those words. Both APIs, both call forms. An answer that
// broke off is an answer all the same (the first-contact rule: any HTTP answer counts): a later connection failure to
// that host is ridden out as for a host that answered, never told "has not answered this client yet".

@Suite("A connection lost in the middle of an answer is named as such")
struct AnswerBrokeOffWordsTests {
    private func configuration(_ base: URL, _ emulator: Emulator) -> FMConfiguration {
        var configuration = FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.retry = .none
        return configuration
    }

    @Test("Data API read (async): the answer broke off, it did not fail before FileMaker answered")
    func dataAPIReadBrokeOff() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(configuration: configuration(base, emulator))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.closeMidBody, count: 1, matching: "/records")
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read whose answer broke off succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(!error.message.contains("before FileMaker answered"), "\(error.message)")
            #expect(error.message.hasPrefix("The answer from \(base.host ?? ""):\(base.port ?? 0) broke off"), "\(error.message)")
        }
    }

    @Test("OData read (callback): the answer broke off")
    func odataReadBrokeOff() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let odata = FMOData(configuration: configuration(base, emulator))
        emulator.inject(.closeMidBody, count: 1, matching: "/odata/")
        let (page, code, message): (FMODataPage?, String, String?) = await withCheckedContinuation { done in
            odata.records(from: "Artists") { page, code in done.resume(returning: (page, code, FMError.current?.message)) }
        }
        #expect(page == nil)
        #expect(code == FMError.ClientCode.transport)
        let words = try #require(message)
        #expect(!words.contains("before FileMaker answered"), "\(words)")
        #expect(words.contains("broke off"), "\(words)")
    }

    @Test("a connection refused before any byte of the answer still failed before FileMaker answered")
    func refusedBeforeAnswerKeepsItsWords() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        let api = DataAPI(configuration: configuration(base, emulator))
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.stop()   // nothing listens there any more: no byte of an answer comes
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read to a stopped server succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("failed before FileMaker answered"), "\(error.message)")
            #expect(!error.message.contains("broke off"), "\(error.message)")
        }
    }

    @Test("a host whose answer broke off has answered this client: a later connection failure is no first contact")
    func anAnswerThatBrokeOffCountsAsAnAnswer() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        var configuration = configuration(base, emulator)
        configuration.retry = FMRetryPolicy(maxAttempts: 2, initialDelay: 0, maxDelay: 0)
        let odata = FMOData(configuration: configuration)
        // Both attempts break off (a read whose answer broke off is sent again under the policy).
        emulator.inject(.closeMidBody, count: 2, matching: "/odata/")
        do {
            _ = try await odata.records(from: "Artists")
            Issue.record("a read whose answer broke off succeeded")
        } catch let error as FMError {
            #expect(error.message.contains("broke off"), "\(error.message)")
        }
        emulator.stop()   // nothing listens there any more
        do {
            _ = try await odata.records(from: "Artists")
            Issue.record("a read to a stopped server succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(!error.message.contains("has not answered this client yet"), "\(error.message)")
        }
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Faults injected at the emulator: every one ends in exactly one completion with the right code.
@Suite("Faults, client against the emulator")
struct FaultTests {
    @Test func tokenExpiredServerSideIsReplayedOnceAfterOneLogin() async throws {
        try await withClient { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.expireAllTokens()
            let (found, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "0" && found?.records.count == 4)
            #expect(emulator.loginCount == 2, "one login at first, exactly one after the 952")
        }
    }

    @Test func a952EveryTimeIsReportedNotLooped() async throws {
        try await withClient { api, emulator in
            emulator.inject(.fileMakerError(code: "952", status: 401, message: "Invalid FileMaker Data API token (*)"), count: 5, matching: "records")
            let (_, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "952")
            #expect(emulator.loginCount == 2, "the first login, then one re-login; no loop")
        }
    }

    @Test func failedLoginIsReportedOnce() async throws {
        try await withClient { api, emulator in
            emulator.rejectLogins(true)
            let (_, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(code == "212")
            #expect(emulator.loginCount == 1)
        }
    }

    @Test func html502IsNotJSON() async throws {
        try await withClient(retry: FMRetryPolicy(maxAttempts: 3)) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            // A 502 is retried (here 3 attempts; the default rides it out); when every attempt gets it, -1006 is reported.
            emulator.inject(.html502, count: 3, matching: "records")
            let (value, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(value == nil && code == FMError.ClientCode.notJSON)
            #expect(emulator.requestLog.filter { $0.decodedPath.contains("records") }.count == 3)
        }
    }

    @Test func truncatedJSONIsMalformed() async throws {
        try await withClient { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.truncatedJSON, count: 1, matching: "records")
            let (value, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(value == nil && code == FMError.ClientCode.malformedResponse)
        }
    }

    @Test func connectionClosedMidBody() async throws {
        try await withClient { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            // Every attempt's answer breaks off (a read whose answer broke off is sent again under the policy).
            emulator.inject(.closeMidBody, count: 1_000, matching: "records")
            let (value, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(value == nil)
            #expect([FMError.ClientCode.transport, FMError.ClientCode.malformedResponse].contains(code), "got \(code)")
        }
    }

    @Test func timeout() async throws {
        try await withClient(timeout: 1) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.delay(20), count: 1, matching: "records")
            let (value, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
            #expect(value == nil && code == FMError.ClientCode.timeout)
        }
    }

    @Test func connectionRefused() async throws {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        emulator.stop()   // nothing listens on that port any more
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        // No retry: a refused login is retried under the policy, and a retry could reach another test's
        // emulator started on the same port meanwhile.
        configuration.retry = .none
        let api = DataAPI(configuration: configuration)
        let (value, code) = await callback(api) { api.getRecords(layout: "Bands", completion: $0) }
        #expect(value == nil && code == FMError.ClientCode.transport)
    }

    @Test func badConfigurationAndPayload() async throws {
        let broken = DataAPI(configuration: FMConfiguration(host: "", database: "", username: "u", password: "p"))
        let (_, code) = await callback(broken) { broken.getRecords(layout: "Bands", completion: $0) }
        #expect(code == FMError.ClientCode.invalidConfiguration)
        try await withClient { api, emulator in
            let (_, bad) = await callback(api) { api.createRecord(layout: "Bands", fieldData: ["when": Date()], completion: $0) }
            #expect(bad == FMError.ClientCode.invalidArgument)
            #expect(!emulator.requestLog.contains { $0.method == "POST" && $0.decodedPath.hasSuffix("/records") })
        }
    }

    @Test func cancelIsIdempotentAndStillCompletesOnce() async throws {
        try await withClient { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.delay(30), count: 1, matching: "records")
            let (_, code) = await callback(api) { done in
                let request = api.getRecords(layout: "Bands", completion: done)
                DispatchQueue.concurrentPerform(iterations: 8) { _ in request.cancel() }
            }
            #expect(code == FMError.ClientCode.cancelled)
        }
    }
}

/// Many callers at once.
@Suite("Concurrency, client against the emulator")
struct ConcurrencyTests {
    @Test func twoHundredCallsWithAnExpiredTokenCauseOneLogin() async throws {
        // A generous deadline: the calls queue for the one session, one at a time, and on a loaded machine the last
        // of 240 may wait longer than the default 30 s (the deadline is not what this test is about).
        try await withClient(timeout: 600) { api, emulator in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.expireAllTokens()
            let logins = emulator.loginCount
            let calls = 240
            let codes: [String] = await withTaskGroup(of: String.self) { group in
                for _ in 0..<calls {
                    group.addTask { await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }.1 }
                }
                var codes: [String] = []
                for await code in group { codes.append(code) }
                return codes
            }
            #expect(codes.count == calls, "no lost completion")
            #expect(codes.allSatisfy { $0 == "0" }, "\(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))")
            #expect(emulator.loginCount - logins == 1, "exactly one login for \(calls) callers")
        }
    }
}

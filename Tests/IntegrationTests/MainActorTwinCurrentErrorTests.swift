// Contract: FMError.current is the whole error behind the code inside every (value?, code) completion, a
// completion marked `{ @MainActor … in }` (run by a main-actor twin) included: the instance API, the legacy
// static surface and a paging walk's completion. It is nil after a success, and unbound again after the
// completion. It never leaks: a call started inside a failed call's completion sees its own outcome (nil on
// success), a walk's page callback (the synchronous hop) sees nil, and many calls at once each see their own error.
import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

@Suite("FMError.current inside a @MainActor completion")
@MainActor struct MainActorTwinCurrentErrorTests {
    func start() throws -> (DataAPI, Emulator) {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.timeout = 60
        return (DataAPI(configuration: configuration), emulator)
    }

    @Test func anInstanceCallsMarkedCompletionSeesTheError() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let (code, error) = await withCheckedContinuation { (resumed: CheckedContinuation<(String, FMError?), Never>) in
            api.getRecords(layout: "No Such Layout", limit: 1) { @MainActor _, code in
                resumed.resume(returning: (code, FMError.current))
            }
        }
        #expect(code == "105")
        #expect(error?.code == "105" && error?.httpStatus == 500, "\(String(describing: error))")
        #expect(FMError.current == nil)
    }

    @Test func aSuccessLeavesItNil() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let (code, error) = await withCheckedContinuation { (resumed: CheckedContinuation<(String, FMError?), Never>) in
            api.getRecords(layout: "Bands", limit: 1) { @MainActor _, code in resumed.resume(returning: (code, FMError.current)) }
        }
        #expect(code == "0" && error == nil)
    }

    @Test func aWalksMarkedCompletionSeesTheError() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let (code, error) = await withCheckedContinuation { (resumed: CheckedContinuation<(String, FMError?), Never>) in
            api.forEachPage(layout: "No Such Layout", pageSize: 1, page: { @MainActor _ in true },
                            completion: { @MainActor _, code in resumed.resume(returning: (code, FMError.current)) })
        }
        #expect(code == "105" && error?.code == "105", "\(String(describing: error))")
    }

    @Test func aLegacyMarkedCompletionSeesTheError() async throws {
        let (_, emulator) = try start()
        defer { emulator.stop() }
        let url = try #require(emulator.baseURL)
        let suite = "SwiftFM.MainActorTwinCurrentError.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set("\(url.absoluteString)/fmi/data/v1/databases/Integration", forKey: "fm-db-path")
        let (code, error) = await DataAPI.withLegacyDefaults(defaults) {
            await withCheckedContinuation { (resumed: CheckedContinuation<(String, FMError?), Never>) in
                DataAPI.getRecords(token: "not-a-token", layout: "Bands", limit: 1) { @MainActor (_: [[String: Any]]?, code: String) in
                    resumed.resume(returning: (code, FMError.current))
                }
            }
        }
        #expect(code == "952" && error?.code == "952", "\(String(describing: error))")
    }

    @Test func aCallStartedInsideAFailedCompletionSeesItsOwnOutcome() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let (outer, inner, innerCode) = await withCheckedContinuation {
            (resumed: CheckedContinuation<(FMError?, FMError?, String), Never>) in
            api.getRecords(layout: "No Such Layout", limit: 1) { @MainActor _, _ in
                let outer = FMError.current
                api.getRecords(layout: "Bands", limit: 1) { @MainActor _, code in
                    resumed.resume(returning: (outer, FMError.current, code))
                }
            }
        }
        #expect(outer?.code == "105")
        #expect(innerCode == "0")
        #expect(inner == nil, "\(String(describing: inner))")
    }

    @Test func aWalksPageCallbackStartedInsideAFailedCompletionSeesNil() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let (pageErrors, code, error) = await withCheckedContinuation {
            (resumed: CheckedContinuation<([FMError?], String, FMError?), Never>) in
            api.getRecords(layout: "No Such Layout", limit: 1) { @MainActor _, _ in
                var seen: [FMError?] = []
                api.forEachPage(layout: "Bands", pageSize: 1, page: { @MainActor _ in
                    seen.append(FMError.current)
                    return seen.count < 2
                }, completion: { @MainActor _, code in resumed.resume(returning: (seen, code, FMError.current)) })
            }
        }
        #expect(code == "0" && error == nil, "\(String(describing: error))")
        #expect(!pageErrors.isEmpty)
        #expect(pageErrors.allSatisfy { $0 == nil }, "\(pageErrors)")
    }

    @Test func manyCallsAtOnceEachSeeTheirOwnError() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let outcomes = await withCheckedContinuation { (resumed: CheckedContinuation<[(Bool, String, FMError?)], Never>) in
            var all: [(Bool, String, FMError?)] = []
            for index in 0..<24 {
                let failing = index % 2 == 0
                api.getRecords(layout: failing ? "No Such Layout" : "Bands", limit: 1) { @MainActor _, code in
                    all.append((failing, code, FMError.current))
                    if all.count == 24 { resumed.resume(returning: all) }
                }
            }
        }
        #expect(outcomes.count == 24)
        for (failing, code, error) in outcomes {
            if failing {
                #expect(code == "105" && error?.code == "105", "\(String(describing: error))")
            } else {
                #expect(code == "0" && error == nil, "\(String(describing: error))")
            }
        }
    }
}

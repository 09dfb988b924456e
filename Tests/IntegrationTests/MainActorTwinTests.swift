import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Completions written `{ @MainActor … in }` (or a `@MainActor` method passed as one), Swift 6 language mode,
// against the emulator: Swift picks the main-actor twin of the call (Sources/SwiftFM/MainActor/), which runs
// them on the main actor whatever the client's callback queue. Before the twins, Swift 6.3 accepted the mark for
// the `sending` completion and the closure trapped (SIGILL in `_swift_task_checkIsolatedSwift`, the whole test
// process down) when SwiftFM called it on its own queue. `MainActor.assumeIsolated` inside each completion traps
// too when it is not on the main actor; `MainQueue.isCurrent` says so without trapping.

/// Main-actor state written from main-actor completions.
@MainActor final class MainActorLedger {
    var names: [String] = []
    var codes: [String] = []
    var pages = 0
    /// Completions (and pages) that did not run on the main queue.
    var offMain = 0
    /// Called after each ``note(_:)``: the test's wait.
    var noted: (@MainActor () -> Void)?

    func note(_ code: String) {
        MainActor.assumeIsolated { codes.append(code) }
        if !MainQueue.isCurrent { offMain += 1 }
        noted?()
    }

    /// A `@MainActor` method passed as a completion: a function value, not a closure.
    func received(_ found: FMFoundSet?, _ code: String) {
        names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
        note(code)
    }
}

/// Top-level code's shape (a Swift 6 `main.swift`): a main-actor global, written from a main-actor completion.
@MainActor var topLevelBandCount = -1

/// Top-level code's shape: a call started on the main actor, its completion marked `@MainActor`.
@MainActor func topLevelShapedRead(_ api: DataAPI, then done: @escaping @MainActor (String) -> Void) {
    api.getRecords(layout: "Bands", limit: 20) { @MainActor found, code in
        topLevelBandCount = found?.records.compactMap { $0.field("name", as: String.self) }.count ?? 0
        done(code)
    }
}

@Suite("Completions marked @MainActor run on the main actor")
@MainActor struct MainActorTwinTests {
    static let bands = ["John Doe", "John Smith", "Joe Example", "David"]

    /// An emulator with ``integrationSchema`` and a client pointed at it.
    func start(callbackQueue: DispatchQueue? = nil) throws -> (DataAPI, Emulator) {
        MainQueue.mark()
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.timeout = 60
        return (DataAPI(configuration: configuration, callbackQueue: callbackQueue), emulator)
    }

    @Test("an instance call's @MainActor completion runs on the main actor, whatever the callback queue",
          arguments: [nil, DispatchQueue(label: "MainActorTwinTests.callbacks")])
    func instanceCall(callbackQueue: DispatchQueue?) async throws {
        let (api, emulator) = try start(callbackQueue: callbackQueue)
        defer { emulator.stop() }
        let ledger = MainActorLedger()
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            api.getRecords(layout: "Bands", limit: 20) { @MainActor found, code in
                ledger.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []   // a nested closure
                ledger.note(code)
                resumed.resume()
            }
        }
        #expect(ledger.codes == ["0"] && Set(ledger.names) == Set(Self.bands))
        #expect(ledger.offMain == 0)
    }

    @Test func writesTypedReadsAndAMainActorMethodAsTheCompletion() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let ledger = MainActorLedger()
        struct Band: Decodable, Sendable { let name: String }
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            api.createRecord(layout: "Bands", fieldData: ["name": "Main Actors"]) { @MainActor reference, code in
                ledger.note(code)
                api.getRecords(as: Band.self, layout: "Bands", limit: 20) { @MainActor found, code in
                    ledger.names = found?.records.map { $0.fieldData.name } ?? []
                    ledger.note(code)
                    resumed.resume()
                }
            }
        }
        #expect(ledger.codes == ["0", "0"] && ledger.names.contains("Main Actors"))
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            ledger.noted = { resumed.resume() }
            api.getRecords(layout: "Bands", limit: 2, completion: ledger.received)
        }
        #expect(ledger.codes == ["0", "0", "0"] && ledger.names.count == 2)
        #expect(ledger.offMain == 0)
    }

    @Test func aPagingWalksPagesAndCompletionRunOnTheMainActor() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let ledger = MainActorLedger()
        let delivered: Int? = await withCheckedContinuation { resumed in
            api.forEachPage(layout: "Bands", pageSize: 1, page: { @MainActor page in
                ledger.pages += 1
                ledger.names += page.records.compactMap { $0.field("name", as: String.self) }
                if !MainQueue.isCurrent { ledger.offMain += 1 }
                return ledger.pages < 3
            }, completion: { @MainActor count, code in
                ledger.note(code)
                resumed.resume(returning: count)
            })
        }
        #expect(delivered == 3 && ledger.pages == 3 && ledger.names.count == 3)
        #expect(ledger.codes == ["0"] && ledger.offMain == 0)
    }

    @Test func topLevelShapedCodeWritesItsGlobalOnTheMainActor() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let code: String = await withCheckedContinuation { resumed in
            topLevelShapedRead(api) { code in resumed.resume(returning: code) }
        }
        #expect(code == "0" && topLevelBandCount == Self.bands.count)
    }

    @Test func odataCallsAndWalksRunTheirMainActorCompletionsOnTheMainActor() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let odata = FMOData(sharing: api)
        let ledger = MainActorLedger()
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            odata.records(from: "Bands") { @MainActor page, code in
                ledger.names = page?.rows.compactMap { $0["name"] as? String } ?? []
                ledger.note(code)
                odata.count(of: "Bands") { @MainActor count, code in
                    ledger.note(code + ":\(count ?? -1)")
                    resumed.resume()
                }
            }
        }
        #expect(Set(ledger.names) == Set(Self.bands) && ledger.codes == ["0", "0:\(Self.bands.count)"])
        emulator.odataPageSize = 2   // server-driven paging: two pages of the four bands
        let rows: Int? = await withCheckedContinuation { resumed in
            odata.forEachPage(from: "Bands", query: FMODataQuery(orderBy: [.ascending("name")]), page: { @MainActor page in
                ledger.pages += 1
                if !MainQueue.isCurrent { ledger.offMain += 1 }
                return true
            }, completion: { @MainActor rows, code in
                ledger.note(code)
                resumed.resume(returning: rows)
            })
        }
        #expect(rows == Self.bands.count && ledger.pages == 2 && ledger.codes.last == "0")
        #expect(ledger.offMain == 0)
    }

    @Test func anUnmarkedCompletionStillRunsOnTheCallbackQueueAndTheSemaphorePatternGetsItsAnswer() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        // Main-actor code, completion not marked: the `sending` original, on the callback queue (the main
        // thread is blocked meanwhile, so a hop to it would never return).
        let read = readBlockingTheMainThread(api)
        let answer = try #require(read, "the completion never signalled: it waited for the blocked main thread")
        #expect(answer.code == "0" && Set(answer.names) == Set(Self.bands) && answer.onMain == false)
    }
}

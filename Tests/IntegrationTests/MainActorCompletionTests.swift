import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Swift 6 call sites on the main actor, compiled in Swift 6 language mode and run against the emulator.
//
// Before completions were `sending`, a completion written in main-actor code was inferred to be main-actor
// isolated; SwiftFM called it on its callback queue, and the nested closure (`records.compactMap { … }`) trapped
// (SIGILL in `_swift_task_checkIsolatedSwift`), taking the whole test process down. Now such a completion is not
// isolated: it runs on the callback queue, and main-actor state inside it does not compile (see the porting guide).

/// A ported view controller: main-actor state, callbacks that hand their results back to the main actor.
@MainActor final class BandsViewModel {
    let api: DataAPI
    private(set) var names: [String] = []
    private(set) var code = ""
    /// Whether the completion itself ran on the main queue (the main actor's executor).
    private(set) var completionRanOnMain: Bool?
    /// Whether the hand-back ran on the main actor.
    private(set) var handBackRanOnMainActor: Bool?

    init(api: DataAPI) { self.api = api }

    /// The completion (with a nested closure) runs on the callback queue, then hops to the main actor.
    func load(then done: @escaping @Sendable () -> Void) {
        api.getRecords(layout: "Bands", limit: 20) { found, code in
            let names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            let onMain = MainQueue.isCurrent
            Task { @MainActor in
                self.names = names
                self.code = code
                self.completionRanOnMain = onMain
                self.handBackRanOnMainActor = MainQueue.isCurrent
                done()
            }
        }
    }

    /// With `callbackQueue: .main` a completion marked `@MainActor` runs where its isolation says (the compiler
    /// accepts the mark on any client; on another callback queue it would trap, as the README warns).
    func loadWithAMainActorCompletion(then done: @escaping @Sendable () -> Void) {
        api.getRecords(layout: "Bands", limit: 20) { @MainActor found, code in
            self.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            self.code = code
            self.completionRanOnMain = MainQueue.isCurrent
            done()
        }
    }

    /// With `callbackQueue: .main` the completion runs on the main queue: `MainActor.assumeIsolated` says so.
    func loadOnMainQueue(then done: @escaping @Sendable () -> Void) {
        api.getRecords(layout: "Bands", limit: 20) { found, code in
            MainActor.assumeIsolated {
                self.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
                self.code = code
                self.completionRanOnMain = MainQueue.isCurrent
                done()
            }
        }
    }
}

/// What a Swift 6 `main.swift` does (its top-level code is main-actor isolated): starts a call, then blocks the
/// main thread on a semaphore until the completion signals it.
@MainActor func readBlockingTheMainThread(_ api: DataAPI) -> (names: [String], code: String, onMain: Bool)? {
    let done = DispatchSemaphore(value: 0)
    let result = LockedValue<(names: [String], code: String, onMain: Bool)?>(nil)
    api.getRecords(layout: "Bands", limit: 20) { found, code in
        let names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
        result.set((names, code, MainQueue.isCurrent))
        done.signal()
    }
    guard done.wait(timeout: .now() + 300) == .success else { return nil }   // the hang bound: a loaded machine only slows it
    return result.value
}

/// Whether code runs on the main queue, the main actor's executor. On Linux that queue may be served by a thread
/// other than the process's first one (`Thread.isMainThread` is then `false` on the main actor), so the test
/// marks the queue itself.
enum MainQueue {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()
    /// Marks the main queue (once); call it before asking ``isCurrent``.
    static func mark() { _ = marked }
    /// `true` on the main queue.
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}

/// A value behind a lock, for the semaphore pattern.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    func set(_ value: Value) { lock.lock(); defer { lock.unlock() }; stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
}

@Suite("Swift 6 completions on the main actor")
@MainActor struct MainActorCompletionTests {
    static let bands = ["John Doe", "John Smith", "Joe Example", "David"]

    /// An emulator with ``integrationSchema`` and a client pointed at it (`withClient` takes a nonisolated body).
    func start(callbackQueue: DispatchQueue? = nil) throws -> (DataAPI, Emulator) {
        MainQueue.mark()
        #expect(MainQueue.isCurrent, "a @MainActor test runs on the main queue")
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        let configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        return (DataAPI(configuration: configuration, callbackQueue: callbackQueue), emulator)
    }

    @Test func aMainActorClassCompletionRunsOnTheCallbackQueueAndHandsBackToTheMainActor() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let model = BandsViewModel(api: api)
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            model.load { resumed.resume() }
        }
        #expect(model.code == "0" && Set(model.names) == Set(Self.bands))
        #expect(model.completionRanOnMain == false, "the completion is not main-actor isolated: it runs on the callback queue")
        #expect(model.handBackRanOnMainActor == true)
    }

    @Test func withTheMainQueueAsCallbackQueueTheCompletionRunsOnTheMainActor() async throws {
        let (api, emulator) = try start(callbackQueue: .main)
        defer { emulator.stop() }
        let model = BandsViewModel(api: api)
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            model.loadOnMainQueue { resumed.resume() }
        }
        #expect(model.code == "0" && Set(model.names) == Set(Self.bands))
        #expect(model.completionRanOnMain == true)
    }

    @Test func aCompletionMarkedMainActorRunsOnTheMainActorWithTheMainQueueAsCallbackQueue() async throws {
        let (api, emulator) = try start(callbackQueue: .main)
        defer { emulator.stop() }
        let model = BandsViewModel(api: api)
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            model.loadWithAMainActorCompletion { resumed.resume() }
        }
        #expect(model.code == "0" && Set(model.names) == Set(Self.bands))
        #expect(model.completionRanOnMain == true)
    }

    @Test func topLevelCodeBlockingTheMainThreadOnASemaphoreGetsItsAnswer() async throws {
        let (api, emulator) = try start()
        defer { emulator.stop() }
        let read = readBlockingTheMainThread(api)
        let answer = try #require(read, "the completion never signalled: it waited for the blocked main thread")
        #expect(answer.code == "0" && Set(answer.names) == Set(Self.bands))
        #expect(answer.onMain == false)
    }
}

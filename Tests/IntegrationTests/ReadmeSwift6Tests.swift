import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// README, "Swift 6: the main actor, and a Dispatch daemon": the two snippets, compiled here in Swift 6 language
// mode and run against the demo solution.

/// README: `ArtistsModel` (with a `then` added so the test can await the hand-back).
@MainActor final class ArtistsModel {
    var names: [String] = []

    func load(_ api: DataAPI, then done: @escaping @Sendable () -> Void = {}) {
        api.getRecords(layout: "Artists", limit: 20) { found, code in         // on the callback queue
            let names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            Task { @MainActor in self.names = names; done() }                // back on the main actor
        }
    }
}

/// README: the completion marked `@MainActor` (the main-actor twin), in `ArtistsModel`, with a `then` added.
extension ArtistsModel {
    func loadMarked(_ api: DataAPI, then done: @escaping @MainActor () -> Void = {}) {
        api.getRecords(layout: "Artists", limit: 20) { @MainActor found, code in      // on the main actor
            self.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            done()
        }
    }
}

/// README: `Poller`, as printed.
final class Poller: @unchecked Sendable {   // its state is only touched on `queue`
    let queue = DispatchQueue(label: "poller")
    let api: DataAPI
    private(set) var polls = 0
    private(set) var lastCode = ""
    private var stopping = false

    init(configuration: FMConfiguration) {
        api = DataAPI(configuration: configuration, callbackQueue: queue)
    }

    func poll() {                                    // on `queue`
        guard !stopping else { return }
        api.getRecords(layout: "Artists", limit: 50) { found, code in
            self.polls += 1                          // on `queue`: the callback queue
            self.lastCode = code
            self.queue.asyncAfter(deadline: .now() + 60) { self.poll() }
        }
    }

    func stop(then done: @escaping @Sendable () -> Void) {   // on `queue`, e.g. from a SIGTERM DispatchSource
        stopping = true
        api.shutdown { done() }                      // calls in flight finish, sessions are logged out
    }
}

@Suite("README: Swift 6")
struct ReadmeSwift6Tests {
    @MainActor @Test func mainActorModelHopsBack() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        let model = ArtistsModel()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            model.load(api) { done.resume() }
        }
        #expect(model.names.count == 5 && model.names.contains("Brian Eno"))
    }

    @MainActor @Test func mainActorModelWithAMarkedCompletion() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let api = DataAPI(host: url.absoluteString, database: "Music", username: "admin", password: "admin")
        let model = ArtistsModel()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            model.loadMarked(api) { done.resume() }
        }
        #expect(model.names.count == 5 && model.names.contains("Brian Eno"))
    }

    @Test func daemonPollsOnItsQueueAndStops() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let poller = Poller(configuration: FMConfiguration(host: url.absoluteString, database: "Music",
                                                           username: "admin", password: "admin"))
        poller.queue.async { poller.poll() }   // README: the top-level code, then dispatchMain()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            poller.queue.async { poller.stop { done.resume() } }
        }
        let (polls, code) = poller.queue.sync { (poller.polls, poller.lastCode) }
        #expect(polls == 1 && code == "0", "the poll in flight at the stop finished; the next one will not run")
        #expect(emulator.activeSessionCount == 0)
    }
}

import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// A paging walk's `{ @MainActor page in … }` over a client whose callback queue is the main queue: the page is
// asked for on the main queue already, which on Linux (an async entry point drains that queue with dispatch_main)
// is served by a thread that is not the process's first one. The twin must call the page there and then, never
// wait for the main queue from inside it (a `DispatchQueue.main.sync` on the main queue never returns or traps).

/// Whichever comes first: the walk's completion, or the bound (then `nil`: the walk never ended).
private final class WalkEnd: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<(Int?, String, Int, Int)?, Never>?
    private var done = false

    func wait(bound seconds: Double, start: @escaping @Sendable (WalkEnd) -> Void) async -> (Int?, String, Int, Int)? {
        await withCheckedContinuation { continuation in
            lock.withLock { self.continuation = continuation }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { self.finish(nil) }
            start(self)
        }
    }

    func finish(_ value: (Int?, String, Int, Int)?) {
        let waiting = lock.withLock { () -> CheckedContinuation<(Int?, String, Int, Int)?, Never>? in
            guard !done else { return nil }
            done = true
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }
}

@MainActor private final class PageCount {
    var pages = 0
    var offMain = 0
}

@Suite("A main-actor page over the main queue as callback queue")
struct MainActorPageOnMainQueueTests {
    @Test(arguments: [false, true])
    func dataAPIWalkWithTheMainQueueAsCallbackQueue(targeting: Bool) async throws {
        MainQueue.mark()
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.timeout = 300   // the hang bound: the main queue and the pool of a loaded machine may be slow
        // The main queue itself, or a serial queue that targets it (its blocks run on the main queue too).
        let queue = targeting ? DispatchQueue(label: "MainActorPageOnMainQueueTests.targeting", target: .main) : .main
        let api = DataAPI(configuration: configuration, callbackQueue: queue)
        let ended = await WalkEnd().wait(bound: 300) { end in
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    let count = PageCount()
                    api.forEachPage(layout: "Bands", pageSize: 1, page: { @MainActor page in
                        count.pages += 1
                        if !MainQueue.isCurrent { count.offMain += 1 }
                        return count.pages < 3
                    }, completion: { @MainActor delivered, code in
                        end.finish((delivered, code, count.pages, count.offMain))
                    })
                }
            }
        }
        let result = try #require(ended, "the walk never ended: its page waited for the main queue it was on")
        #expect(result.0 == 3 && result.1 == "0" && result.2 == 3 && result.3 == 0)
    }

    @Test func odataWalkWithTheMainQueueAsCallbackQueue() async throws {
        MainQueue.mark()
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        emulator.odataPageSize = 2
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
        configuration.timeout = 300   // the hang bound: the main queue and the pool of a loaded machine may be slow
        let api = DataAPI(configuration: configuration, callbackQueue: .main)
        let odata = FMOData(sharing: api)
        let ended = await WalkEnd().wait(bound: 300) { end in
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    let count = PageCount()
                    odata.forEachPage(from: "Bands", page: { @MainActor page in
                        count.pages += 1
                        if !MainQueue.isCurrent { count.offMain += 1 }
                        return true
                    }, completion: { @MainActor rows, code in
                        end.finish((rows, code, count.pages, count.offMain))
                    })
                }
            }
        }
        let result = try #require(ended, "the walk never ended: its page waited for the main queue it was on")
        #expect(result.0 == 4 && result.1 == "0" && result.2 == 2 && result.3 == 0)
    }
}

import Foundation
import Testing

// Swift 5 language mode: a legacy completion marked `{ @MainActor … in }` picks the main-actor twin and runs on
// the main actor; an unmarked one in the same main-actor class still runs on SwiftFM's queue, as it always did.

/// Whether code runs on the main queue (on Linux the main actor's thread may not be the first one).
private enum Swift5MainQueue {
    static let key = DispatchSpecificKey<Bool>()
    static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()
    static var isCurrent: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: key) == true
    }
}

@MainActor final class Swift5ArtistsScreen {
    var names: [String] = []
    var ranOnMain: [Bool] = []
}

@Suite struct Swift5MainActorTests {
    @MainActor @Test func aMarkedCompletionRunsOnTheMainActorAndAnUnmarkedOneDoesNot() async throws {
        _ = Swift5MainQueue.isCurrent
        let server = try LegacyServer(.dbPath)
        let token = try server.run { try server.login() }
        let screen = Swift5ArtistsScreen()
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            DataAPI.withLegacyDefaults(server.defaults) {
                DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { @MainActor records, code in
                    screen.names = records?.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String } ?? []
                    screen.ranOnMain.append(Swift5MainQueue.isCurrent)
                    resumed.resume()
                }
            }
        }
        let unmarkedOnMain: Bool? = wait { done in
            DataAPI.withLegacyDefaults(server.defaults) {
                DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { records, code in done(Swift5MainQueue.isCurrent) }
            }
        }
        #expect(Set(screen.names) == ["Brian", "Geoff", "Sudie"])
        #expect(screen.ranOnMain == [true])
        #expect(unmarkedOnMain == false)
    }
}

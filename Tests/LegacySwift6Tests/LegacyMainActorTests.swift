import Foundation
import SwiftFM
import Testing

// Compiled in Swift 6 language mode only: the legacy static surfaces called from the main actor (a ported view
// controller) with completions marked `{ @MainActor … in }`. Swift picks each call's main-actor twin, which runs
// the completion on the main actor; before the twins Swift 6.3 accepted the mark for the `sending` completion and
// the closure trapped when SwiftFM called it on its own queue.

/// Whether code runs on the main queue (the main actor's executor; on Linux its thread may not be the first one).
enum LegacyMainQueue {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()
    static var isCurrent: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: key) == true
    }
}

/// A view controller's main-actor state, written straight from legacy completions.
@MainActor final class LegacyArtistsScreen {
    var names: [String] = []
    var codes: [String] = []
    var offMain = 0

    func note(_ code: String) {
        MainActor.assumeIsolated { codes.append(code) }   // traps off the main actor
        if !LegacyMainQueue.isCurrent { offMain += 1 }
    }
}

@Suite("Legacy completions marked @MainActor run on the main actor")
@MainActor struct LegacyMainActorTests {
    @Test func era2018To2020AndSwiftFM2CompletionsRunOnTheMainActor() async throws {
        _ = LegacyMainQueue.isCurrent
        let server = try LegacyServer(.dbPath)   // 2018–2019 read fm-db-path; 2020 and SwiftFM 2.x fm-host and fm-db
        server.defaults.set(server.url.absoluteString, forKey: "fm-host")
        server.defaults.set(LegacySchema.database, forKey: "fm-db")
        let screen = LegacyArtistsScreen()
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            DataAPI.withLegacyDefaults(server.defaults) {
                // 2018–2019: refreshToken(for:) (token, expiry); 2019: getRecords(token:layout:limit:).
                DataAPI.refreshToken(for: LegacyServer.auth) { @MainActor token, expiry in
                    screen.note(token.isEmpty ? "no token" : "0")
                    DataAPI.withLegacyDefaults(server.defaults) {
                        DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { @MainActor records, code in
                            screen.names = records?.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String } ?? []
                            screen.note(code)
                            DataAPI.withLegacyDefaults(server.defaults) {
                                // 2020: validateSession(token:); SwiftFM 2.x: deleteSession(token:).
                                DataAPI.validateSession(token: token) { @MainActor valid, message in
                                    screen.note("\(valid) \(message)")
                                    DataAPI.withLegacyDefaults(server.defaults) {
                                        SwiftFM.deleteSession(token: token) { @MainActor closed in
                                            screen.note("\(closed)")
                                            resumed.resume()
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(screen.codes == ["0", "0", "true OK", "true"])   // 2020's validateSession: (valid, message)
        #expect(Set(screen.names) == ["Brian", "Geoff", "Sudie"])
        #expect(screen.offMain == 0)
    }
}

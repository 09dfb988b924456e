import Foundation
import SwiftFM

// Compiled in Swift 6 language mode only: a caller isolated to the main actor.

/// A SwiftUI-era main-actor model with non-Sendable stored payloads: compiles in Swift 6 mode because
/// the functions taking `[String: Any]` run in the caller's isolation (`nonisolated(nonsending)`).
@MainActor final class MainActorArtistsStore {
    var payload: [String: Any] = ["query": [["name": "Brian"]]]
    var globals: [String: Any] = ["globalFields": ["Artists::g_note": "x"]]
    var artists = [Artist.Record]()

    func refresh(token: String) async {
        guard let (data, info) = try? await SwiftFM.query(layout: "Artists", payload: payload, token: token),
              let records = try? JSONDecoder().decode([Artist.Record].self, from: data)
        else { return }
        if info.foundCount > 0 { artists = records }
        _ = await SwiftFM.setGlobals(payload: globals, token: token)
        _ = await SwiftFM.createRecord(layout: "Artists", payload: payload, token: token)
        _ = await SwiftFM.editRecord(id: 1, layout: "Artists", payload: payload, token: token)
    }
}

import Foundation
import SwiftFM

// Compile-only, Swift 6 language mode: the snippet of PortingFromDataAPISwift.md, "Swift 6 language mode",
// item 4 (a view controller's main-actor state, updated from a legacy completion by hopping back with
// `Sendable` values). Written without the hop (`self.names = …` in the completion) it does not compile.

/// Stands in for a `UITableView`.
@MainActor final class TableViewStandIn {
    private(set) var reloads = 0
    func reloadData() { reloads += 1 }
}

/// Stands in for a `UIViewController` (main-actor isolated, as UIKit's are).
@MainActor final class ArtistsViewController {
    var names: [String] = []
    let tableView = TableViewStandIn()

    func load(token: String) {
        DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { records, code in
            let names = records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
            DispatchQueue.main.async { self.names = names; self.tableView.reloadData() }
        }
    }
}

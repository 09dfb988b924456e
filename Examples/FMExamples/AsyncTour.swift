import Foundation
import SwiftFM

/// A command-line tour of the async/await overlay: the same calls, with `try await`.
struct AsyncTour {
    let target: ExampleTarget

    /// Runs the tour; returns `true` when every step succeeded.
    func run() async -> Bool {
        let api = DataAPI(configuration: target.configuration)
        say("tour: async/await")
        do {
            let info = try await api.productInfo()
            say("tour: productInfo → \(info.name) \(info.version)")
            let layouts = try await api.layouts()
            let names = layouts.flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] }
            say("tour: \(names.count) layouts")
            guard let layout = target.layout ?? names.first else { return true }

            // The demo layout has a `name` field; a real server's layout may not, so it is read unsorted there.
            let sort = target.writable ? [FMSort("name")] : []
            let page = try await api.getRecords(layout: layout, limit: 3, sort: sort)
            say("tour: first \(page.records.count) records of \(page.dataInfo?.foundCount ?? 0)\(sort.isEmpty ? "" : ", sorted by name")")

            if target.writable {
                struct Artist: Decodable { let name: String; let city: String }
                let ref = try await api.createRecord(layout: layout, fieldData: ["name": "Tour Band", "city": "Houston"])
                say("tour: created record \(ref.recordId)")
                let typed = try await api.find(layout: layout, request: FMFindRequest(queries: [FMQuery(["city": "Houston"])]))
                let artists = try typed.decode(Artist.self)
                say("tour: find(city: Houston) → \(artists.map(\.fieldData.name).joined(separator: ", "))")
                let none = try await api.find(layout: layout, request: FMFindRequest(queries: [FMQuery(["name": "==Nobody"])]))
                say("tour: a find with no match returns an empty found set (\(none.records.count) records)")
                let script = try await api.runScript(layout: layout, script: "Echo", parameter: "hello from async")
                say("tour: script result \(script.result ?? "-")")
                if let id = Int(ref.recordId) {
                    _ = try await api.deleteRecord(layout: layout, recordId: id)
                    say("tour: deleted record \(id)")
                }
            }
            try await api.logout()
            say("tour: logged out")
            return true
        } catch let error as FMError {
            say("tour: failed with \(error)")
            return false
        } catch {
            say("tour: failed with \(error)")
            return false
        }
    }
}

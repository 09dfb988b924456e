import Foundation
import Testing

// Idioms that only Swift 5 language mode accepts, as apps that never moved to Swift 6 still write them:
// hopping to another queue from inside a legacy completion while capturing a non-Sendable `self`.

final class ReportViewController {
    var rows: [String] = []
    var status = ""
    let finished = DispatchSemaphore(value: 0)

    func load(token: String) {
        DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["city": "Dallas"]]]) { records, code in
            guard let records = records else { return }
            // "refresh UI": a hop with an unchecked capture of self (an error in Swift 6 mode).
            DispatchQueue.global().async {
                self.rows = records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }.sorted()
                self.status = code
                self.finished.signal()
            }
        }
    }
}

@Suite struct Swift5IdiomsTests {
    @Test func hopFromTheCompletionCapturingSelf() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            let vc = ReportViewController()
            vc.load(token: token)
            #expect(vc.finished.wait(timeout: .now() + 300) == .success)
            #expect(vc.rows == ["Brian", "Sudie"])
            #expect(vc.status == "0")
        }
    }

    @Test func wildcardBodiesResolve() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            let refreshed = wait { done in DataAPI.refreshToken(for: LegacyServer.auth) { _, _, _ in done(true) } }
            #expect(refreshed == true)
            let found = wait { done in DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Brian"]]]) { _, _ in done(true) } }
            #expect(found == true)
            let record = wait { done in DataAPI.getRecordWith(id: 1, token: token, layout: "Artists") { _, _ in done(true) } }
            #expect(record == true)
            let created = wait { done in DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "W"]]) { _, _ in done(true) } }
            #expect(created == true)
            let instance = wait { done in DataAPI().createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "V"]]) { _, _ in done(true) } }
            #expect(instance == true)
        }
    }
}

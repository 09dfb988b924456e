import Foundation
import SwiftFMEmulator

// Scenario `emulatorlog`: what a read costs the emulator with a full request log (10,000
// entries, the default cap) against a log of one entry. Two emulators in this process, each called
// through its HTTP handler (no sockets: the figure is the emulator's own work per read), interleaved
// call by call. Target: full / empty within 1.10.
extension Bench {
    func emulatorLog() async throws {
        func prepared(logCap: Int) throws -> (Emulator, HTTPRequest) {
            let emulator = Emulator()
            emulator.maxLoggedRequests = logCap
            for i in 0..<200 { _ = try emulator.addRecord(toTable: "Artists", ["name": "Person \(i)"]) }
            let login = emulator.handler.handle(HTTPRequest(
                method: "POST", target: "/fmi/data/vLatest/databases/Music/sessions",
                headers: [("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString()),
                          ("Content-Type", "application/json")], body: Data("{}".utf8)))
            guard login.status == 200, let token = login.headers.first(where: { $0.name == "X-FM-Data-Access-Token" })?.value else {
                throw BenchError("emulatorlog: login answered \(login.status)")
            }
            let read = HTTPRequest(method: "GET", target: "/fmi/data/vLatest/databases/Music/layouts/Artists/records?_limit=20",
                                   headers: [("Authorization", "Bearer \(token)")])
            guard emulator.handler.handle(read).status == 200 else { throw BenchError("emulatorlog: the read failed") }
            return (emulator, read)
        }
        let (full, fullRead) = try prepared(logCap: 10_000)
        let (empty, emptyRead) = try prepared(logCap: 1)
        let info = HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo")
        for _ in 0..<10_000 { _ = full.handler.handle(info) }
        guard full.requestLog.count == 10_000 else { throw BenchError("emulatorlog: the log holds \(full.requestLog.count)") }
        let contenders: [(String, () async throws -> Void)] = [
            ("full", { _ = full.handler.handle(fullRead) }),
            ("empty", { _ = empty.handler.handle(emptyRead) }),
        ]
        for _ in 0..<50 { for (_, run) in contenders { try await run() } }
        let tally = try await interleaved(contenders, rounds: settings.rounds, calls: settings.calls)
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("emulator, a read of 20 records with a full request log (10,000 entries) vs one entry (\(settings.rounds) rounds × \(settings.calls) calls, in process):")
        say("  full log \(micro("full")), one entry \(micro("empty"))")
        say("  full / empty  \(tally.ratioText("full", over: "empty"))   target ≤ 1.10")
    }
}

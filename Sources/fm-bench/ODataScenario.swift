import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SwiftFM

// Scenario `odata` (only when named): the same 10,000-row read end to end against fm-emulator in its own
// process, one call each, interleaved with the order rotating: SwiftFM's FMOData raw and typed vs the same rows
// through the Data API (getRecords raw and typed, target ≤ 1.1) and vs fms-odata-py 0.2.0 (timed inside
// Python per read, target ≤ 0.4), and the floor: the same request through a bare URLSession, bytes only. Figures:
// min / median / max over rounds of the per-round ratio.

/// The fms-odata-py driver: one command per line on stdin, one answer line ("seconds rows" or "error …").
let fmsODataDriver = pythonDriver(setup: #"""
import sys, time, warnings
warnings.filterwarnings("ignore")
from fms_odata import FMSODataClient
from fms_odata_spec import basic_auth
url, database, table = sys.argv[1], sys.argv[2], sys.argv[3]
db = FMSODataClient(host=url, database=database, token=basic_auth("admin", "admin"), timeout_ms=120_000)
"""#, commands: #"""
        if command == "login":
            db.from_(table).top(1).get(); answer("ok")
        elif command == "get":       # one read as its users write it: request, JSON, QueryResult
            start = time.perf_counter()
            result = db.from_(table).top(int(arguments[0])).get()
            elapsed = time.perf_counter() - start
            answer(f"{elapsed} {len(result.value)}")
"""#)

/// The installed fms-odata-py version, or `nil` when `python3` cannot import it.
func fmsODataVersion() -> String? {
    let version = runPython("import fms_odata, importlib.metadata as m; print(m.version('fms-odata-py'))")
    return version?.isEmpty == false ? version : nil
}

extension Bench {
    // MARK: Scenario: odata

    func odata() async throws {
        let limit = settings.records
        let odata = FMOData(sharing: api)
        let query = FMODataQuery(top: limit)
        var python: PythonContender?
        let version = settings.python ? fmsODataVersion() : nil
        if let version {
            if version != "0.2.0" { say("odata: fms-odata-py \(version) installed; the figures are pinned to 0.2.0") }
            let script = directory.appendingPathComponent("fms_odata_driver.py")
            try Data(fmsODataDriver.utf8).write(to: script)
            python = try PythonContender(script: script, url: emulator.url, database: "Bench", layout: "Bench")
            _ = try python?.send("login")
        }
        defer { python?.stop() }

        func timed(_ body: () async throws -> Int) async throws -> Double {
            let start = now()
            let rows = try await body()
            let elapsed = Double(now() - start) / 1e9
            guard rows == limit else { throw BenchError("odata: a read gave \(rows) rows, not \(limit)") }
            return elapsed
        }
        // The floor: the same request FMOData sends (JSON without per-row links), bytes only, no parsing.
        var floorRequest = URLRequest(url: URL(string: baseURL.absoluteString.trimmingCharacters(in: ["/"]) + "/fmi/odata/v4/Bench/Bench?$top=\(limit)")!)
        floorRequest.setValue("Basic " + Data("admin:admin".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        floorRequest.setValue("application/json;odata.metadata=none", forHTTPHeaderField: "Accept")
        floorRequest.setValue("4.0", forHTTPHeaderField: "OData-Version")
        var contenders: [(String, () async throws -> Double)] = [
            ("raw URLSession bytes-only", {
                let start = now()
                let bytes = try await rawGet(session, floorRequest)
                guard bytes.count > limit else { throw BenchError("odata: the raw read gave \(bytes.count) bytes") }
                return Double(now() - start) / 1e9
            }),
            ("FMOData raw", { try await timed { try await odata.records(from: "Bench", query: query).rows.count } }),
            ("FMOData typed", { try await timed { try await odata.records(as: Row.self, from: "Bench", query: query).rows.count } }),
            ("Data API raw", { try await timed { try await api.getRecords(layout: "Bench", limit: limit).records.count } }),
            ("Data API typed", { try await timed { try await api.getRecords(as: Row.self, layout: "Bench", limit: limit).records.count } }),
        ]
        if let python {
            contenders.append(("fms-odata-py", {
                let line = try python.send("get \(limit)")
                let parts = line.split(separator: " ")
                guard parts.count == 2, let seconds = Double(parts[0]), Int(parts[1]) == limit else {
                    throw BenchError("fms-odata-py: \(line)")
                }
                return seconds
            }))
        }
        if let profiled = settings.profile {
            guard let (_, run) = contenders.first(where: { $0.0 == profiled }) else {
                throw BenchError("--profile: no contender \(profiled) (known: \(contenders.map(\.0).joined(separator: ", ")))")
            }
            var total = 0.0
            for _ in 0..<(settings.rounds * 5) { total += try await run() }
            say(String(format: "profile %@: %.1f ms per run", profiled, total * 1e3 / Double(settings.rounds * 5)))
            return
        }
        var tally = Tally()
        let rounds = max(3, settings.rounds)
        for round in 0..<(rounds + 1) { // the first round warms up and is not counted
            for offset in 0..<contenders.count {
                let (name, run) = contenders[(round + offset) % contenders.count]
                tally.add(name, try await run())
            }
            if round == 0 { tally = Tally() } else { tally.endRound() }
        }
        let milli = { (name: String) in String(format: "%.0f ms", tally.median(name) * 1e3) }
        let pythonState = python != nil ? "fms-odata-py \(version ?? "?")"
            : settings.python ? "fms-odata-py not available (pip install fms-odata-py==0.2.0)" : "fms-odata-py left out (--no-python)"
        say("odata: \(limit) rows × 20 fields in one read against the emulator (\(rounds) rounds, interleaved; \(pythonState)):")
        say("  raw URLSession bytes-only \(milli("raw URLSession bytes-only")) (the floor: the emulator's time and the transfer), "
            + "FMOData raw \(milli("FMOData raw")), FMOData typed \(milli("FMOData typed")), Data API raw \(milli("Data API raw")), "
            + "Data API typed \(milli("Data API typed"))" + (python == nil ? "" : ", fms-odata-py \(milli("fms-odata-py"))"))
        say("  FMOData raw / Data API raw       \(tally.ratioText("FMOData raw", over: "Data API raw"))   target ≤ 1.1")
        say("  FMOData typed / Data API typed   \(tally.ratioText("FMOData typed", over: "Data API typed"))   target ≤ 1.1")
        if python != nil {
            say("  FMOData raw / fms-odata-py       \(tally.ratioText("FMOData raw", over: "fms-odata-py"))   target ≤ 0.4")
            say("  FMOData typed / fms-odata-py     \(tally.ratioText("FMOData typed", over: "fms-odata-py"))   target ≤ 0.4")
            say("  the floor / fms-odata-py         \(tally.ratioText("raw URLSession bytes-only", over: "fms-odata-py"))   (no client can go below it)")
        }
    }
}

// fm-bench: SwiftFM's speed, as ratios against a baseline measured in the same run.
//
//   swift run -c release fm-bench [iterations]
//
// 1. Per-call overhead: `DataAPI.getRecord` against a raw URLSession request for the same record on the
//    same emulator (loopback, keep-alive), both sequential. Target: within 10 %.
// 2. Found-set decoding: SwiftFM's one pass over the response bytes against the SwiftFM 2.x way
//    (JSONSerialization, re-serialise `response.data`, then JSONDecoder).
// 3. The emulator alone: get-record round trips per second over raw URLSession.
import Foundation
import SwiftFM
import SwiftFMEmulator
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 2000

/// One unbuffered line on standard output.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func rawGet(_ session: URLSession, _ request: URLRequest) async throws -> Data {
    try await withCheckedThrowingContinuation { continuation in
        session.dataTask(with: request) { data, _, error in
            if let data { continuation.resume(returning: data) } else { continuation.resume(throwing: error ?? URLError(.unknown)) }
        }.resume()
    }
}

struct Band: Decodable { let name: String; let city: String; let members: Int? }

let emulator = Emulator()
let base = try emulator.start()
defer { emulator.stop() }
let api = DataAPI(configuration: FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin"))
let token = try await api.login()
let layout = "Artists"

var request = URLRequest(url: base.appendingPathComponent("fmi/data/vLatest/databases/\(emulator.database)/layouts/\(layout)/records/1"))
request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
let session = URLSession(configuration: .ephemeral)

// Warm up both paths.
for _ in 0..<100 { _ = try await rawGet(session, request); _ = try await api.getRecord(layout: layout, recordId: 1) }

var rawTimes: [Double] = []
var apiTimes: [Double] = []
for _ in 0..<5 {   // interleaved rounds, so drift hits both sides alike
    rawTimes.append(try await seconds { for _ in 0..<iterations { _ = try await rawGet(session, request) } })
    apiTimes.append(try await seconds { for _ in 0..<iterations { _ = try await api.getRecord(layout: layout, recordId: 1) } })
}
let raw = rawTimes.sorted()[2], client = apiTimes.sorted()[2]
say(String(format: "per-call: raw URLSession %.1f µs, DataAPI.getRecord %.1f µs, ratio %.3f (target ≤ 1.10)",
             raw / Double(iterations) * 1e6, client / Double(iterations) * 1e6, client / raw))
say(String(format: "emulator: %.0f get-record requests/s over one keep-alive connection", Double(iterations) / raw))

// Decoding a large found set.
var rows: [[String: Any]] = []
for i in 0..<5000 {
    rows.append(["fieldData": ["name": "Band \(i)", "city": "Austin", "members": i % 7], "portalData": [:], "recordId": "\(i + 1)", "modId": "0"])
}
let body = try JSONSerialization.data(withJSONObject: [
    "response": ["dataInfo": ["database": "Music", "layout": "Artists", "table": "Artists", "totalRecordCount": 5000, "foundCount": 5000, "returnedCount": 5000], "data": rows],
    "messages": [["code": "0", "message": "OK"]],
])
struct Envelope: Decodable { struct Response: Decodable { let data: [FMRecord<Band>] }; let response: Response }
var oursTimes: [Double] = [], oldTimes: [Double] = []
for _ in 0..<5 {
    oursTimes.append(try await seconds { for _ in 0..<10 { _ = try JSONDecoder().decode(Envelope.self, from: body) } })
    oldTimes.append(try await seconds {
        for _ in 0..<10 {   // the SwiftFM 2.x way: parse, re-serialise response.data, decode again
            let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            let data = (object?["response"] as? [String: Any])?["data"] ?? []
            let again = try JSONSerialization.data(withJSONObject: data)
            _ = try JSONDecoder().decode([FMRecord<Band>].self, from: again)
        }
    })
}
let ours = oursTimes.sorted()[2], old = oldTimes.sorted()[2]
say(String(format: "decode 5000 records: one pass %.1f ms, 2.x re-serialising %.1f ms, ratio %.3f",
             ours / 10 * 1e3, old / 10 * 1e3, ours / old))

// fm-bench: SwiftFM's speed, as ratios against a baseline measured in the same run.
//
//   swift run -c release fm-bench [iterations]
//
// 1. Per-call overhead: `DataAPI.getRecord` against a raw URLSession request for the same record on the
//    same emulator (loopback, keep-alive), both sequential. Target: within 10 %.
// 2. Found-set decoding: SwiftFM's one pass over the response bytes against the SwiftFM 2.x way
//    (JSONSerialization, re-serialise `response.data`, then JSONDecoder).
// 3. The emulator alone: get-record round trips over raw keep-alive sockets (no URLSession), one
//    connection and eight concurrent ones.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftFM
import SwiftFMEmulator
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 2000

/// One unbuffered line on standard output.
func say(_ line: String) {
    // POSIX write: a closed pipe (`| head`) ends the output quietly; FileHandle.write would trap on EPIPE,
    // and the emulator ignores SIGPIPE for the whole process.
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
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

// Interleaved rounds, so drift hits both sides alike; the ratio is the median of the per-round ratios.
let rounds = 11
let perRound = max(iterations / 4, 1)
var rawTimes: [Double] = []
var apiTimes: [Double] = []
for _ in 0..<rounds {
    rawTimes.append(try await seconds { for _ in 0..<perRound { _ = try await rawGet(session, request) } })
    apiTimes.append(try await seconds { for _ in 0..<perRound { _ = try await api.getRecord(layout: layout, recordId: 1) } })
}
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
let ratios = zip(apiTimes, rawTimes).map { $0 / $1 }
say(String(format: "per-call: raw URLSession %.1f µs, DataAPI.getRecord %.1f µs, ratio %.3f (median of %d rounds; spread %.3f–%.3f; target ≤ 1.10)",
             median(rawTimes) / Double(perRound) * 1e6, median(apiTimes) / Double(perRound) * 1e6, median(ratios),
             rounds, ratios.min() ?? 0, ratios.max() ?? 0))

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

// The emulator alone, over raw sockets: one keep-alive connection, then eight concurrent ones.
let rawRequest = Array("GET /fmi/data/vLatest/databases/\(emulator.database)/layouts/\(layout)/records/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
let port = UInt16(base.port ?? 0)

#if canImport(Glibc)
let streamSocket = Int32(SOCK_STREAM.rawValue)
let sendFlags = Int32(MSG_NOSIGNAL)
#else
let streamSocket = SOCK_STREAM
let sendFlags: Int32 = 0   // SIGPIPE is ignored below on Darwin
#endif
signal(SIGPIPE, SIG_IGN)

/// Sends `count` get-record requests on one keep-alive connection; returns how many got a 200.
func hammer(count: Int) -> Int {
    let fd = socket(AF_INET, streamSocket, 0)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return 0 }
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    var ok = 0
    var buffer = [UInt8](repeating: 0, count: 65536)
    var pending: [UInt8] = []
    for _ in 0..<count {
        guard send(fd, rawRequest, rawRequest.count, sendFlags) == rawRequest.count else { return ok }
        // Read one response: headers, then Content-Length bytes.
        while true {
            if let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if pending.count >= end.upperBound + length {
                    if head.hasPrefix("HTTP/1.1 200") { ok += 1 }
                    pending.removeFirst(end.upperBound + length)
                    break
                }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return ok }
            pending.append(contentsOf: buffer[0..<n])
        }
    }
    return ok
}

_ = hammer(count: 200)   // warm up
let single = await seconds { _ = hammer(count: iterations) }
let perConnection = iterations
final class Tally: @unchecked Sendable { let lock = NSLock(); var ok = 0 }
let tally = Tally()
let concurrent = await seconds {
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
        let ok = hammer(count: perConnection)
        tally.lock.lock(); tally.ok += ok; tally.lock.unlock()
    }
}
say(String(format: "emulator, raw sockets: %.1f µs per get-record on one keep-alive connection (%.0f/s); 8 connections: %.0f requests/s (%d/%d answered 200)",
             single / Double(iterations) * 1e6, Double(iterations) / single, Double(8 * perConnection) / concurrent, tally.ok, 8 * perConnection))

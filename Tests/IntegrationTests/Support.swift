import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The schema every integration test runs against: small, and independent of the demo solution.
let integrationSchema = Data(#"""
{
  "database": "Integration",
  "accounts": [ { "username": "admin", "password": "admin" } ],
  "tables": {
    "Bands": {
      "fields": {
        "id":      { "type": "number", "autoEnter": "serial" },
        "name":    { "type": "text", "notEmpty": true },
        "city":    "text",
        "formed":  "date",
        "members": "number",
        "photo":   "container",
        "g_motto": { "type": "text", "global": true }
      }
    },
    "Gigs": { "fields": { "band_id": "number", "venue": "text", "year": "number" } }
  },
  "layouts": {
    "Bands": {
      "table": "Bands",
      "fields": ["id", "name", "city", "formed", "members", "photo", "g_motto"],
      "portals": { "gigs": { "table": "Gigs", "match": { "id": "band_id" }, "fields": ["venue", "year"] } },
      "valueLists": { "Cities": ["Austin", "Dallas", "Houston"] }
    },
    "Band List": { "table": "Bands", "fields": ["name", "city"] },
    "My Layout/Odd?#": { "table": "Bands", "fields": ["name"] },
    "Archive": { "folder": true, "layouts": ["Band List"] }
  },
  "scripts": {
    "Echo": { "returns": "parameter" },
    "Fail": { "error": "3" }
  },
  "records": {
    "Bands": [
      { "name": "John Doe", "city": "Austin", "members": 3, "formed": "03/14/1975" },
      { "name": "John Smith", "city": "Dallas", "members": 4 },
      { "name": "Joe Example", "city": "Houston", "members": 5 },
      { "name": "David", "city": "Austin", "members": 2 }
    ],
    "Gigs": [
      { "band_id": 1, "venue": "Mohawk", "year": 2019 },
      { "band_id": 1, "venue": "Stubb's", "year": 2021 },
      { "band_id": 1, "venue": "Parish", "year": 2023 }
    ]
  }
}
"""#.utf8)

/// Starts an emulator with ``integrationSchema`` and a client pointed at it, runs `body`, stops the emulator.
func withClient<T>(
    callbackQueue: DispatchQueue? = nil,
    timeout: TimeInterval = 30,
    retry: FMRetryPolicy = .standard,
    _ body: (DataAPI, Emulator) async throws -> T
) async throws -> T {
    let emulator = try Emulator(schemaJSON: integrationSchema)
    emulator.logsBodies = true   // tests assert on the bodies the client sends
    let url = try emulator.start()
    defer { emulator.stop() }
    var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
    configuration.timeout = timeout
    configuration.retry = retry
    let api = DataAPI(configuration: configuration, callbackQueue: callbackQueue)
    return try await body(api, emulator)
}

/// Counts how often a completion ran; a test asserts exactly one.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func hit() -> Int { lock.lock(); defer { lock.unlock() }; count += 1; return count }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

/// Awaits a callback method's `(value?, code)` completion, and checks it ran exactly once.
///
/// After the first delivery it waits for one more turn of the callback queue, so a second
/// (wrong) delivery queued behind the first would be counted.
func callback<V>(
    _ api: DataAPI,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ start: (@escaping @Sendable (V?, String) -> Void) -> Void
) async -> (V?, String) {
    let counter = CallCounter()
    let box: UncheckedResult<V> = await withCheckedContinuation { continuation in
        start { value, code in
            if counter.hit() == 1 {
                continuation.resume(returning: UncheckedResult(value: value, code: code))
            }
        }
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        api.callbackQueue.async { done.resume() }
    }
    #expect(counter.value == 1, "completion ran \(counter.value) times", sourceLocation: sourceLocation)
    return (box.value, box.code)
}

/// A `(value?, code)` pair carried across the continuation (raw dictionaries are not `Sendable`).
struct UncheckedResult<V>: @unchecked Sendable {
    var value: V?
    var code: String
}

extension Emulator {
    /// How many logins reached the server.
    var loginCount: Int {
        requestLog.filter { $0.method == "POST" && $0.decodedPath.hasSuffix("/sessions") }.count
    }
}

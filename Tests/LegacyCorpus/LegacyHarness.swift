// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation
import SwiftFMEmulator
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A client that closes a connection the emulator is still writing to must not kill the test process.
private let sigpipeIgnored: Bool = {
    signal(SIGPIPE, SIG_IGN)
    return true
}()

/// The solution every corpus test runs against (SCHEMA.md), independent of the emulator's demo.
enum LegacySchema {
    static let database = "Legacy"
    static let json = #"""
    {
      "database": "Legacy",
      "accounts": [ { "username": "admin", "password": "admin" } ],
      "tables": {
        "Artists": {
          "fields": {
            "id": { "type": "number", "autoEnter": "serial" },
            "name": { "type": "text", "notEmpty": true },
            "city": "text",
            "rating": "number",
            "photo": "container",
            "g_note": { "type": "text", "global": true }
          }
        },
        "Albums": { "fields": { "artist_id": "number", "title": "text", "year": "number" } }
      },
      "layouts": {
        "Artists": {
          "table": "Artists",
          "fields": ["id", "name", "city", "rating", "photo", "g_note"],
          "portals": { "albums": { "table": "Albums", "match": { "id": "artist_id" }, "fields": ["title", "year"] } },
          "valueLists": { "Cities": ["Austin", "Dallas"] }
        },
        "Artist List / Web": { "table": "Artists", "fields": ["id", "name", "city"] },
        "Albums": { "table": "Albums", "fields": ["artist_id", "title", "year"] },
        "Web": { "folder": true, "layouts": ["Artist List / Web"] }
      },
      "scripts": { "Echo Back": { "returns": "parameter" } },
      "records": {
        "Artists": [
          { "name": "Brian", "city": "Dallas", "rating": 4 },
          { "name": "Geoff", "city": "Austin", "rating": 3 },
          { "name": "Sudie", "city": "Dallas", "rating": 5 }
        ],
        "Albums": [ { "artist_id": 1, "title": "Pinkish Black", "year": 2013 } ]
      }
    }
    """#
}

/// One emulator, one private `UserDefaults` suite, set up the way each era's README told apps to.
final class LegacyServer: @unchecked Sendable {
    enum Style {
        /// 2018–2019: `fm-db-path` = `http://127.0.0.1:PORT/fmi/data/v1/databases/Legacy`, `fm-auth`.
        case dbPath
        /// 2020 and SwiftFM 2.x: `fm-host` = `http://127.0.0.1:PORT`, `fm-db`, `fm-auth`.
        case hostAndDatabase
    }

    let emulator: Emulator
    let url: URL
    let defaults: UserDefaults
    private let suiteName: String
    /// base64 of `admin:admin`, what apps stored in `fm-auth`.
    static let auth = Data("admin:admin".utf8).base64EncodedString()

    init(_ style: Style) throws {
        _ = sigpipeIgnored
        emulator = try Emulator(schemaJSON: Data(LegacySchema.json.utf8))
        emulator.logsBodies = true   // the corpus asserts on the bodies old call sites send
        url = try emulator.start()
        suiteName = "SwiftFM.LegacyTests.\(UUID().uuidString)"
        defaults = try #require(UserDefaults(suiteName: suiteName))
        switch style {
        case .dbPath:
            defaults.set("\(url.absoluteString)/fmi/data/v1/databases/\(LegacySchema.database)", forKey: "fm-db-path")
        case .hostAndDatabase:
            defaults.set(url.absoluteString, forKey: "fm-host")
            defaults.set(LegacySchema.database, forKey: "fm-db")
        }
        defaults.set(LegacyServer.auth, forKey: "fm-auth")
    }

    deinit {
        emulator.stop()
        defaults.removePersistentDomain(forName: suiteName)
    }

    /// Runs `body` with this server's defaults as the legacy configuration.
    func run<R>(_ body: () throws -> R) throws -> R {
        try DataAPI.withLegacyDefaults(defaults, body)
    }

    /// The requests the emulator received whose decoded path contains `fragment`.
    func requests(_ method: String, _ fragment: String) -> [RecordedRequest] {
        emulator.requestLog.filter { $0.method == method && $0.decodedPath.contains(fragment) }
    }

    /// Logs in the way the 2019 README did and returns the token (written to `fm-token` by the library).
    func login() throws -> String {
        let result = wait { done in
            DataAPI.refreshToken(for: LegacyServer.auth) { token, expiry, code in done((token, expiry, code)) }
        }
        let (token, _, code) = try #require(result)
        #expect(code == "0")
        return try #require(token)
    }
}

/// Blocks until a legacy completion delivers (a generous hang guard only, never a timing assertion),
/// and records the thread it ran on.
final class Waiter<T>: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private var value: T?
    private(set) var calls = 0
    private(set) var onMainThread = false

    func deliver(_ value: T) {
        self.value = value
        calls += 1
        onMainThread = Thread.isMainThread
        semaphore.signal()
    }

    func result() -> T? {
        guard semaphore.wait(timeout: .now() + 300) == .success else { return nil }
        return value
    }
}

/// Starts one legacy call and returns what its completion delivered (nil if it never fired).
///
/// `done` is `@Sendable` so that, in Swift 6 mode, a completion (a `sending` parameter) may capture it.
func wait<T>(_ start: (@escaping @Sendable (T) -> Void) -> Void) -> T? {
    let waiter = Waiter<T>()
    start { waiter.deliver($0) }
    let result = waiter.result()
    #expect(!waiter.onMainThread, "legacy completions run on a background queue, as the originals did")
    return result
}

/// A record's `fieldData[name]` as text.
func field(_ record: [String: Any]?, _ name: String) -> String? {
    guard let fields = record?["fieldData"] as? [String: Any] else { return nil }
    switch fields[name] {
    case let text as String: return text
    case let number as NSNumber: return number.stringValue
    default: return nil
    }
}

/// The `name` of each record.
func names(_ records: [[String: Any]]?) -> [String] {
    (records ?? []).compactMap { field($0, "name") }
}

/// A request body as a JSON object.
func jsonBody(_ request: RecordedRequest?) -> [String: Any]? {
    guard let body = request?.body else { return nil }
    return (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
}

import Foundation
import Testing
@testable import SwiftFM

// Token stores: in memory, in UserDefaults with the legacy keys and types (or custom keys), and in a file with
// private permissions (a missing directory fails quietly); `DataAPI` writes the store it is given.

@Suite("Token stores")
struct TokenStoreTests {
    let token = FMStoredToken(token: "abc123", expiry: Date(timeIntervalSince1970: 1_800_000_000))

    @Test func memoryRoundTrip() {
        let store = FMMemoryTokenStore()
        #expect(store.load() == nil)
        store.save(token)
        #expect(store.load() == token)
        store.save(nil)
        #expect(store.load() == nil)
    }

    @Test func userDefaultsUsesTheLegacyKeysAndTypes() throws {
        let suite = "SwiftFMTests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let store = FMUserDefaultsTokenStore(defaults: defaults)
        #expect(store.load() == nil)
        store.save(token)
        #expect(defaults.string(forKey: "fm-token") == "abc123")
        #expect(defaults.object(forKey: "fm-token-expiry") as? Date == token.expiry)
        #expect(store.load() == token)
        store.save(nil)
        #expect(defaults.string(forKey: "fm-token") == nil)
        #expect(defaults.integer(forKey: "fm-token-expiry") == 0)
        #expect(defaults.object(forKey: "fm-token-expiry") as? Date == nil) // old readers see "expired"
        #expect(store.load() == nil)
        // A token written by old code without an expiry reads as expired (1970), as isActiveToken did.
        defaults.set("legacy", forKey: "fm-token")
        #expect(store.load() == FMStoredToken(token: "legacy", expiry: Date(timeIntervalSince1970: 0)))
    }

    @Test func userDefaultsCustomKeys() throws {
        let suite = "SwiftFMTests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let store = FMUserDefaultsTokenStore(defaults: defaults, tokenKey: "t", expiryKey: "e")
        store.save(token)
        #expect(defaults.string(forKey: "t") == "abc123")
        #expect(defaults.string(forKey: "fm-token") == nil)
    }

    @Test func fileStoreRoundTripWithPrivatePermissions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFMTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("token.json")
        let store = FMFileTokenStore(url: url)
        #expect(store.load() == nil)
        store.save(token)
        #expect(store.load() == token)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // Overwrite, then a second instance reads it (another launch).
        let newer = FMStoredToken(token: "def", expiry: token.expiry + 60)
        store.save(newer)
        #expect(FMFileTokenStore(url: url).load() == newer)
        // No temporary files left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["token.json"])
        store.save(nil)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(store.load() == nil)
        // A corrupt file reads as no token.
        try Data("not json".utf8).write(to: url)
        #expect(store.load() == nil)
    }

    @Test func fileStoreInAMissingDirectoryFailsQuietly() {
        let url = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/token.json")
        let store = FMFileTokenStore(url: url)
        store.save(token)
        #expect(store.load() == nil)
    }

    @Test func dataAPIWritesTheUserDefaultsStore() throws {
        let suite = "SwiftFMTests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let store = FMUserDefaultsTokenStore(defaults: defaults)
        let h = Harness(store: store) { request in
            isLogin(request) ? .json(200, Bodies.login("ud-token")) : .json(200, Bodies.ok)
        }
        let done = Recorder<(String?, Date?, String)>()
        h.api.refreshToken { done.record(($0, $1, $2)) }
        done.wait()
        #expect(defaults.string(forKey: "fm-token") == "ud-token")
        #expect(defaults.object(forKey: "fm-token-expiry") as? Date == h.clock.now + 900)
        // A second instance over the same defaults picks the token up without logging in.
        let second = Harness(store: store, clock: h.clock)
        #expect(second.api.isActiveToken())
        #expect(second.api.currentToken == "ud-token")
    }
}

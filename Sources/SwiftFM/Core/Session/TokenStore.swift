import Foundation

/// A session token and the moment SwiftFM believes it expires (15 minutes after its last use), on the wall clock: the
/// form a token is shared in with other processes and later launches. A ``DataAPI`` judges the token it holds in memory
/// on an elapsed clock instead (see <doc:SessionsAndTokens>).
public struct FMStoredToken: Sendable, Equatable, Codable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The Data API session token.
    public var token: String
    /// The local expiry, on the wall clock.
    public var expiry: Date

    /// Creates a stored token.
    public init(token: String, expiry: Date) {
        self.token = token
        self.expiry = expiry
    }

    /// A description that never shows the token.
    public var description: String { "FMStoredToken(token: <redacted>, expiry: \(expiry))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no token (what `dump` and `Mirror(reflecting:)` read).
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

/// Where ``DataAPI`` keeps its session token between calls (and, for persistent stores, between launches).
///
/// Implementations must be thread-safe: the engine calls them from its own queues.
public protocol FMTokenStore: Sendable {
    /// The stored token, or `nil`.
    func load() -> FMStoredToken?
    /// Stores `token`; `nil` clears the store.
    func save(_ token: FMStoredToken?)
}

/// A token store in memory: the default. Nothing survives the process.
public final class FMMemoryTokenStore: FMTokenStore, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let storage = Locked<FMStoredToken?>(nil)

    /// Creates an empty store, or one holding `token`.
    public init(_ token: FMStoredToken? = nil) {
        storage.withLock { $0 = token }
    }

    /// The stored token, or `nil`.
    public func load() -> FMStoredToken? { storage.value }

    /// Stores `token`; `nil` clears the store.
    public func save(_ token: FMStoredToken?) { storage.withLock { $0 = token } }

    /// `"FMMemoryTokenStore(<redacted>)"`.
    public var description: String { "FMMemoryTokenStore(<redacted>)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no token.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

/// A token store in `UserDefaults`, using the keys of the original DataAPI.swift.
///
/// The token is written as a `String` under ``tokenKey`` (`"fm-token"`) and the expiry as a `Date`
/// under ``expiryKey`` (`"fm-token-expiry"`), so old code that reads
/// `defaults.object(forKey: "fm-token-expiry") as? Date` keeps working. Clearing removes the token and
/// writes the `Int` `0` as the expiry, as the original `deleteToken` did (old readers then see
/// `as? Date == nil`, i.e. expired).
public final class FMUserDefaultsTokenStore: FMTokenStore, @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    // UserDefaults is documented as thread-safe; it is not `Sendable`-annotated on every platform.
    private let defaults: UserDefaults
    /// The key of the token string (`"fm-token"` by default).
    public let tokenKey: String
    /// The key of the expiry date (`"fm-token-expiry"` by default).
    public let expiryKey: String

    /// Creates a store over `defaults` (`.standard` by default) with the legacy keys.
    public init(defaults: UserDefaults = .standard, tokenKey: String = "fm-token", expiryKey: String = "fm-token-expiry") {
        self.defaults = defaults
        self.tokenKey = tokenKey
        self.expiryKey = expiryKey
    }

    /// The stored token, or `nil` when there is no token string. A missing or non-`Date` expiry reads as
    /// `1970-01-01` (expired), as the original `isActiveToken` did.
    public func load() -> FMStoredToken? {
        guard let token = defaults.string(forKey: tokenKey), !token.isEmpty else { return nil }
        let expiry = defaults.object(forKey: expiryKey) as? Date ?? Date(timeIntervalSince1970: 0)
        return FMStoredToken(token: token, expiry: expiry)
    }

    /// Writes the token and its expiry, or clears them (token removed, expiry set to `Int` `0`).
    public func save(_ token: FMStoredToken?) {
        if let token {
            defaults.set(token.token, forKey: tokenKey)
            defaults.set(token.expiry, forKey: expiryKey)
        } else {
            defaults.removeObject(forKey: tokenKey)
            defaults.set(0, forKey: expiryKey)
        }
    }

    /// `"FMUserDefaultsTokenStore(tokenKey: …, expiryKey: …)"` (never the token).
    public var description: String { Redaction.oneLine("FMUserDefaultsTokenStore(tokenKey: \(tokenKey), expiryKey: \(expiryKey))") }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no token.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

/// A token store in a JSON file, for daemons: written atomically with permissions `0600`.
///
/// Read and write failures are not fatal: an unreadable file reads as "no token" (SwiftFM logs in again),
/// and a failed write only costs a login after a restart (a ``DataAPI`` using the store logs it once, at `warning`,
/// with the file and the reason).
public final class FMFileTokenStore: FMTokenStore, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The file.
    public let url: URL
    private let lock = Locked<Void>(())

    /// Creates a store writing to `url` (the directory must exist).
    public init(url: URL) {
        self.url = url
    }

    /// The stored token, or `nil` when the file is missing or unreadable.
    public func load() -> FMStoredToken? {
        lock.withLock { _ in
            guard let data = try? Data(contentsOf: url) else { return nil }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            return try? decoder.decode(FMStoredToken.self, from: data)
        }
    }

    /// Writes the token atomically (`0600`), or deletes the file for `nil`.
    public func save(_ token: FMStoredToken?) {
        _ = write(token)
    }

    /// ``save(_:)``, saying why it failed: `nil` when the file now holds `token` (or is gone for `nil`), else the
    /// system's reason (`No such file or directory`).
    func write(_ token: FMStoredToken?) -> String? {
        lock.withLock { _ in
            guard let token else {
                guard unlink(url.path) == 0 || errno == ENOENT else { return Self.reason(errno) }
                return nil
            }
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .secondsSince1970
            guard let data = try? encoder.encode(token) else { return "the token cannot be encoded" }
            // Write a private temporary file next to the target, then rename it over the target.
            let temporary = url.deletingLastPathComponent()
                .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            if let failure = Self.writePrivately(data, to: temporary.path) { return failure }
            guard rename(temporary.path, url.path) == 0 else {
                let failure = Self.reason(errno)
                unlink(temporary.path)
                return failure
            }
            return nil
        }
    }

    /// The system's words for `code` (`strerror`).
    private static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// `"FMFileTokenStore(url: …)"` (never the token).
    public var description: String { Redaction.oneLine("FMFileTokenStore(url: \(url.path))") }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no token.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }

    /// Creates `path` with mode 0600 from the start (no window where another user could read it) and writes `data`;
    /// `nil` when it did, else the system's reason (a partly written file is removed).
    private static func writePrivately(_ data: Data, to path: String) -> String? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { return reason(errno) }
        let failure = data.withUnsafeBytes { buffer -> String? in
            guard var base = buffer.baseAddress else { return nil }
            var remaining = buffer.count
            while remaining > 0 {
                let written = Foundation.write(descriptor, base, remaining)
                if written < 0 {
                    if errno == EINTR { continue }
                    return reason(errno)
                }
                remaining -= written
                base = base.advanced(by: written)
            }
            return fsync(descriptor) == 0 ? nil : reason(errno)
        }
        close(descriptor)
        if failure != nil { unlink(path) }
        return failure
    }
}

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
/// Implementations must be thread-safe: the engine calls them from its own queues, holding none of its locks, so a
/// store may call its client back (a `logout()` from inside ``save(_:)`` is written once `save` returns).
///
/// A store that can fail (a file, the Keychain, a server) says why by implementing ``tryLoad()`` and ``trySave(_:)``
/// too: SwiftFM calls those, and logs one `warning` per distinct problem (not one per call), with the token redacted.
/// A failed save costs no call (the session goes on in memory); a failed load reads as "no token" (SwiftFM logs in).
/// A store with only ``load()`` and ``save(_:)`` is never warned about.
public protocol FMTokenStore: Sendable {
    /// The stored token, or `nil`.
    func load() -> FMStoredToken?
    /// Stores `token`; `nil` clears the store.
    func save(_ token: FMStoredToken?)
    /// ``load()``, throwing when the store could not be read (`nil`: it holds no token). By default ``load()``, which
    /// never throws. Throw an ``FMTokenStoreError`` to name what could not be read, or any error.
    func tryLoad() throws -> FMStoredToken?
    /// ``save(_:)``, throwing when the store does not hold `token` afterwards (or, for `nil`, still holds a token).
    /// By default ``save(_:)``, which never throws. Throw an ``FMTokenStoreError`` to name what could not be written,
    /// or any error.
    func trySave(_ token: FMStoredToken?) throws
}

extension FMTokenStore {
    /// ``load()``: a store that does not implement ``tryLoad()`` never reports a failure.
    public func tryLoad() throws -> FMStoredToken? { load() }
    /// ``save(_:)``: a store that does not implement ``trySave(_:)`` never reports a failure.
    public func trySave(_ token: FMStoredToken?) throws { save(token) }
}

/// Why a token store could not read or write: what ``FMTokenStore/tryLoad()`` and ``FMTokenStore/trySave(_:)`` may
/// throw, and what SwiftFM's warning then says (`the token store cannot write LOCATION: REASON; …`).
public struct FMTokenStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What could not be read or written: a file's path, a Keychain item, a key. Never a token.
    public var location: String
    /// Why, in the system's or the service's words (`No such file or directory`). Never a token.
    public var reason: String

    /// Creates an error naming `location` and `reason`.
    public init(location: String, reason: String) {
        self.location = location
        self.reason = reason
    }

    /// `"LOCATION: REASON"`, on one line.
    public var description: String { Redaction.oneLine("\(location): \(reason)") }
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
        try? trySave(token)
    }

    /// ``save(_:)``, throwing an ``FMTokenStoreError`` when a key is managed (forced by a configuration profile or an
    /// administrator): `UserDefaults` then keeps the managed value, whatever is written.
    public func trySave(_ token: FMStoredToken?) throws {
        if let forced = [tokenKey, expiryKey].first(where: { defaults.objectIsForced(forKey: $0) }) {
            throw FMTokenStoreError(location: "UserDefaults key \(forced)",
                                    reason: "the key is managed (forced by a profile or an administrator), so writes do not change it")
        }
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
/// and a failed write only costs a login after a restart. ``tryLoad()`` and ``trySave(_:)`` say why (an
/// ``FMTokenStoreError`` naming the file and the system's reason), and a ``DataAPI`` using the store logs it once per
/// problem, at `warning`.
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
        (try? tryLoad()) ?? nil
    }

    /// The stored token, or `nil` when there is no file; throws an ``FMTokenStoreError`` when the file cannot be read
    /// (no permission, a directory) or holds no stored token (a damaged or foreign file).
    public func tryLoad() throws -> FMStoredToken? {
        let data = try lock.withLock { _ -> Data? in
            let descriptor = open(url.path, O_RDONLY | O_NONBLOCK)
            guard descriptor >= 0 else {
                if errno == ENOENT { return nil }
                throw failure(Self.reason(errno))
            }
            defer { close(descriptor) }
            let (data, problem) = Self.readAll(descriptor)
            if let problem { throw failure(problem) }
            return data
        }
        guard let data else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let stored = try? decoder.decode(FMStoredToken.self, from: data) else {
            throw failure("the file does not hold a stored token (\(data.count) bytes)")
        }
        return stored
    }

    /// Writes the token atomically (`0600`), or deletes the file for `nil`.
    public func save(_ token: FMStoredToken?) {
        try? trySave(token)
    }

    /// ``save(_:)``, throwing an ``FMTokenStoreError`` with the file and the system's reason (`No such file or
    /// directory`) when the file does not hold `token` afterwards (or, for `nil`, could not be deleted).
    public func trySave(_ token: FMStoredToken?) throws {
        if let problem = write(token) { throw failure(problem) }
    }

    /// `reason` about this store's file.
    private func failure(_ reason: String) -> FMTokenStoreError {
        FMTokenStoreError(location: url.path, reason: reason)
    }

    /// Writes `token` (or deletes the file for `nil`): `nil` when done, else the system's reason.
    private func write(_ token: FMStoredToken?) -> String? {
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

    /// The whole content of `descriptor`, a regular file of at most 16 MiB (far beyond any token: a Data API token's file
    /// is some 100 bytes), or why not.
    private static func readAll(_ descriptor: Int32) -> (Data, String?) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return (Data(), reason(errno)) }
        guard status.st_mode & S_IFMT == S_IFREG else { return (Data(), "not a regular file") }
        let limit = 16 << 20
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return (data, reason(errno))
            }
            if count == 0 { return (data, nil) }
            data.append(contentsOf: buffer[..<count])
            if data.count > limit { return (data, "the file is larger than \(limit) bytes: not a stored token") }
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

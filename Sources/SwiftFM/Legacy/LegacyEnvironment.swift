import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The configuration of the legacy surfaces (the DataAPI.swift eras 2018–2020 and SwiftFM 2.x):
// the UserDefaults keys old apps set, how a base URL is resolved from them, the injectable
// `UserDefaults` instance, one cached `DataAPI` per resolved configuration (the 256 reached most recently), and one
// transport per transport setting (the 256 reached most recently).

/// The UserDefaults keys of the legacy surfaces, exactly as the originals spelled them.
enum LegacyKey {
    /// `https://<host>/fmi/data/v1/databases/<db>` (DataAPI.swift 2018–2019). Written by the app.
    static let dbPath = "fm-db-path"
    /// base64 of `user:pass`. Written by the app; read by SwiftFM 2.x `newSession()`.
    static let auth = "fm-auth"
    /// The session token. Written by `refreshToken` / `newSession`, cleared by `deleteToken` / `deleteSession`.
    static let token = "fm-token"
    /// A `Date` (now + 900 s) written with the token; `deleteToken` writes the Int `0`.
    static let tokenExpiry = "fm-token-expiry"
    /// A bare host (`my.server.com` → `https://my.server.com`) or an explicit `http://host:port`.
    static let host = "fm-host"
    /// The database name (DataAPI.swift 2020, SwiftFM 2.x).
    static let database = "fm-db"
}

/// Which keys a legacy call reads first.
enum LegacyEra: Sendable {
    /// DataAPI.swift 2018–2019: `fm-db-path` first, then `fm-host` + `fm-db`.
    case dbPath
    /// DataAPI.swift 2020 and SwiftFM 2.x: `fm-host` + `fm-db` first, then `fm-db-path`.
    case hostAndDatabase
}

/// A resolved legacy configuration: where the Data API lives.
struct LegacyTarget: Hashable, Sendable {
    /// Scheme, host, port and an optional path prefix (`https://my.server.com`, `http://127.0.0.1:8080`).
    var server: URL
    /// The `{version}` path segment.
    var version: FMAPIVersion
    /// The database, or `nil` when only host-scoped calls are possible.
    var database: String?
    /// The keys the server and database came from, which messages name (`fm-host` and `fm-db`, or `fm-db-path`).
    /// Not part of the target's identity: the same server and database is one service, whichever key named it.
    var names = FMConfiguration.SettingNames(host: LegacyKey.host, database: LegacyKey.database)

    static func == (lhs: LegacyTarget, rhs: LegacyTarget) -> Bool {
        lhs.server == rhs.server && lhs.version == rhs.version && lhs.database == rhs.database
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(server)
        hasher.combine(version)
        hasher.combine(database)
    }
}

/// The mutable state of the legacy layer: the injected `UserDefaults` and the cached services.
final class LegacyState: @unchecked Sendable {
    static let shared = LegacyState()

    private let lock = NSLock()
    private var _defaults: UserDefaults = .standard
    /// The services by target, each with when it was last reached (a count, for ``maxServices``) and the setting of
    /// the transport it was made on.
    private var services: [LegacyTarget: (api: DataAPI, turn: UInt64, setting: TransportSetting)] = [:]
    private var nextTurn: UInt64 = 0
    /// The most services kept: past it, the one reached least recently is let go (a daemon reaching a database per
    /// tenant must not keep one per database for weeks). One let go is made again when next reached.
    static let maxServices = 256
    /// How many services are kept (tests).
    var serviceCount: Int { lock.withLock { services.count } }
    /// The transports the services share: one per ``TransportSetting``, whatever the server or database (with
    /// libcurl, one thread each), so a process that reaches many databases keeps one, not one per database. Kept by
    /// setting, not by service: services let go and made again (more targets in rotation than ``maxServices``) find
    /// their setting's transport still there. Each with when its setting was last reached (``nextTurn``).
    private var transports: [TransportSetting: (transport: any FMTransport, note: String?, turn: UInt64)] = [:]
    /// The most transports kept: past it, the one whose setting was reached least recently is let go (the calls in
    /// flight on it still hold it). Not below ``maxServices``: the settings of the kept services are among the
    /// ``maxServices`` settings reached most recently, so a kept service's transport is not the one let go, and at most
    /// this many transports are alive besides those of calls in flight. More settings than this in rotation (a pinned
    /// key for each of 300 servers, reached in turn) still make a transport each time one comes round again.
    static let maxTransports = maxServices
    /// How many transports are kept (tests).
    var transportCount: Int { lock.withLock { transports.count } }
    private var _adjust: (@Sendable (inout FMConfiguration) -> Void)?
    private var _logger: FMLogHandler?

    /// Where the legacy services log, and the SwiftFM 2.x calls their failures (``DataAPI/legacyLogger``).
    var logger: FMLogHandler? {
        get { lock.lock(); defer { lock.unlock() }; return _logger }
        set { lock.lock(); _logger = newValue; lock.unlock() }
    }

    /// Applied to the configuration of every service made from now on (see ``DataAPI/configureLegacyCalls(_:)``).
    var adjust: (@Sendable (inout FMConfiguration) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return _adjust }
        set { lock.lock(); _adjust = newValue; lock.unlock() }
    }

    /// The queue for completions that fail before any service exists (missing configuration).
    let queue = DispatchQueue(label: "SwiftFM.legacy")

    var defaults: UserDefaults {
        get { lock.lock(); defer { lock.unlock() }; return _defaults }
        set { lock.lock(); _defaults = newValue; lock.unlock() }
    }

    /// The service for `target`, created once and then reused (its URLSession and queue are shared), among the
    /// ``maxServices`` reached most recently.
    ///
    /// It is made outside the lock: `adjust` is the caller's code, which may read ``DataAPI/legacyDefaults`` or
    /// ``DataAPI/legacyLogger`` (this lock). Two threads that make one at once keep the first; the other is dropped
    /// unused.
    func service(for target: LegacyTarget) -> DataAPI {
        let (existing, adjust, logger) = lock.withLock { () -> (DataAPI?, (@Sendable (inout FMConfiguration) -> Void)?, FMLogHandler?) in
            (reached(target), _adjust, _logger)
        }
        if let existing { return existing }
        let (made, setting) = makeService(target, adjust: adjust, logger: logger)
        return lock.withLock {
            if let first = reached(target) { return first }
            if services.count >= Self.maxServices, let oldest = services.min(by: { $0.value.turn < $1.value.turn }) {
                // Its calls in flight still end: a call holds its pipeline (and its transport), not its DataAPI. Its
                // transport stays kept for its setting (let go by `sharedTransport(for:_:)` once settings reached more
                // recently fill ``maxTransports``): the next service of that setting is made on it, not on a new one.
                services[oldest.key] = nil
            }
            nextTurn &+= 1
            services[target] = (made, nextTurn, setting)
            return made
        }
    }

    /// The service kept for `target`, marked as reached now; `nil` when none is. Under `lock`.
    private func reached(_ target: LegacyTarget) -> DataAPI? {
        guard let kept = services[target] else { return nil }
        nextTurn &+= 1
        services[target]?.turn = nextTurn
        // Its setting is reached too: the transports of the settings in use are the last let go.
        transports[kept.setting]?.turn = nextTurn
        return kept.api
    }

    /// The transport of `setting`, kept or made now (`configuration` is what it is made from), marked as reached now;
    /// past ``maxTransports`` the one reached least recently is let go. Under `lock`.
    private func sharedTransport(for setting: TransportSetting, _ configuration: FMConfiguration) -> (any FMTransport, String?) {
        nextTurn &+= 1
        if let kept = transports[setting] {
            transports[setting]?.turn = nextTurn
            return (kept.transport, kept.note)
        }
        if transports.count >= Self.maxTransports, let oldest = transports.min(by: { $0.value.turn < $1.value.turn }) {
            transports[oldest.key] = nil
        }
        let made = defaultTransportChoice(for: configuration, libraryPath: "libcurl.so.4")
        transports[setting] = (made.transport, made.note, nextTurn)
        return made
    }

    /// Builds the `DataAPI` the legacy calls of one configuration go through, on the transport its settings share.
    ///
    /// Legacy calls pass their own token (`Endpoint.Auth.token`) or their own base64 credentials
    /// (`.basic(encoded:)`), so the service is configured with the server and database only.
    private func makeService(_ target: LegacyTarget, adjust: (@Sendable (inout FMConfiguration) -> Void)?,
                             logger: FMLogHandler?) -> (service: DataAPI, setting: TransportSetting) {
        var configuration = FMConfiguration(
            host: target.server.absoluteString, database: target.database ?? "", credentials: nil, version: target.version)
        configuration.settingNames = target.names
        adjust?(&configuration)
        let setting = TransportSetting(configuration)
        let (transport, note) = lock.withLock { sharedTransport(for: setting, configuration) }
        let service = DataAPI(configuration: configuration, transport: transport, logger: logger)
        if let note { service.logger.log(.warning, note) }
        return (service, setting)
    }

    /// What a default transport is made from (``defaultTransportChoice(for:libraryPath:)``): services that agree on
    /// it can share one.
    struct TransportSetting: Hashable {
        let idleTimeout: TimeInterval
        let connectionsPerHost: Int
        let tls: FMTLSOptions
        let proxy: URL?

        init(_ configuration: FMConfiguration) {
            idleTimeout = defaultIdleTimeout(for: configuration)
            connectionsPerHost = configuration.transportConnectionLimit
            tls = configuration.tls
            proxy = configuration.proxy
        }

        /// The TLS options (not `Hashable` themselves) by their parts.
        func hash(into hasher: inout Hasher) {
            hasher.combine(idleTimeout)
            hasher.combine(connectionsPerHost)
            hasher.combine(proxy)
            hasher.combine(tls.caCertificates)
            hasher.combine(tls.pinnedPublicKeys)
            hasher.combine(tls.clientCertificate)
            hasher.combine(tls.clientKey)
        }
    }
}

extension DataAPI {
    /// Sets the limits of the legacy calls (the `DataAPI` class functions of 2018–2020 and the SwiftFM 2.x
    /// `SwiftFM` API): `adjust` edits the configuration of the services they go through — its
    /// ``FMConfiguration/timeout`` (the whole-call deadline), ``FMConfiguration/maxResponseBytes``,
    /// ``FMConfiguration/retry`` and ``FMConfiguration/maxConcurrentRequests``; `host` is the legacy
    /// server's URL and `database` its database, so one process can treat several servers differently.
    /// It applies to the servers the legacy calls reach from now on (call it at start-up, before the first
    /// legacy call), and to a server's service made again after it was let go (one is kept for each of the 256
    /// servers and databases reached most recently); `nil` restores the defaults (30 s, 256 MiB, ``FMRetryPolicy/standard``, no cap) for them.
    /// Services whose timeout, connection limit, TLS options and proxy agree share one transport, kept for the 256
    /// settings reached most recently whichever services come and go: a program that reaches more servers and
    /// databases than the 256 services kept makes each setting's transport (with libcurl, a thread) once, not again
    /// each time that setting's services were let go.
    public static func configureLegacyCalls(_ adjust: (@Sendable (inout FMConfiguration) -> Void)?) {
        LegacyState.shared.adjust = adjust
    }

    /// Where the legacy surfaces log: one redacted line per request and answer of the `DataAPI` class
    /// functions and the SwiftFM 2.x `SwiftFM` API, and a warning for each 2.x call that fails (those
    /// return `nil` or `false` and say nothing else: a wrong password in `newSession()` is logged here).
    /// Set it at start-up, before the first legacy call; `nil` (the default) is silence.
    public static var legacyLogger: FMLogHandler? {
        get { LegacyState.shared.logger }
        set { LegacyState.shared.logger = newValue }
    }

    /// The `UserDefaults` the legacy surfaces (`DataAPI`'s class functions and `SwiftFM`) read and write.
    ///
    /// Defaults to `.standard`, as the originals did. Tests and daemons inject a suite
    /// (`UserDefaults(suiteName:)`) so they don't share state by accident.
    public static var legacyDefaults: UserDefaults {
        get { LegacyState.shared.defaults }
        set { LegacyState.shared.defaults = newValue }
    }
}

extension DataAPI {
    /// Runs `body` with `defaults` as the legacy configuration for every legacy call it makes, and for
    /// the calls made from those calls' completions, without touching ``legacyDefaults``.
    ///
    /// For test suites and daemons that talk to several servers at once; the scope follows each
    /// call into its completion, so nested legacy calls (refresh, then fetch) keep the same configuration.
    public static func withLegacyDefaults<R>(_ defaults: UserDefaults, _ body: () throws -> R) rethrows -> R {
        try LegacyScope.$defaults.withValue(UncheckedBox(defaults), operation: body)
    }

    /// The async form of ``withLegacyDefaults(_:_:)``.
    nonisolated(nonsending)
    public static func withLegacyDefaults<R>(_ defaults: UserDefaults, _ body: () async throws -> R) async rethrows -> R {
        try await LegacyScope.$defaults.withValue(UncheckedBox(defaults), operation: body)
    }
}

extension DataAPI {
    /// 2019 (E11–E18, `DataAPI().createRecord(…)`): a service configured from the legacy UserDefaults keys:
    /// `fm-db-path` (or `fm-host` + `fm-db`) and `fm-auth`. Without them, its calls complete with `-1001`.
    ///
    /// Its managed session is kept in `fm-token` / `fm-token-expiry` of the same `UserDefaults`, so it
    /// shares the token with the class functions and `isActiveToken()`.
    public convenience init() {
        let defaults = LegacyEnvironment.defaults
        let auth = defaults.string(forKey: LegacyKey.auth).flatMap { $0.isEmpty ? nil : $0 }
        let credentials = auth.map { FMCredentials.encoded($0) }
        let configuration: FMConfiguration
        switch LegacyEnvironment.resolve(.dbPath) {
        case .success(let target):
            var resolved = FMConfiguration(
                host: target.server.absoluteString, database: target.database ?? "",
                credentials: credentials, version: target.version)
            resolved.settingNames = target.names
            configuration = resolved
        case .failure:
            configuration = FMConfiguration(host: "", database: "", credentials: credentials)
        }
        self.init(configuration: configuration, tokenStore: FMUserDefaultsTokenStore(defaults: defaults))
    }
}

/// The scoped legacy configuration (task-local; bound around each legacy completion too).
enum LegacyScope {
    @TaskLocal static var defaults: UncheckedBox<UserDefaults>?

    /// Test seam, internal: the whole-call deadline, in seconds, of each legacy call started in this scope, in
    /// place of its service's ``FMConfiguration/timeout`` (30 s, or what ``DataAPI/configureLegacyCalls(_:)`` set
    /// when the service was made). A test that runs hundreds of legacy calls at once binds a deadline no machine
    /// reaches, so that a loaded machine cannot end them with `-1004`: the process-wide `configureLegacyCalls`
    /// closure is another test target's, and a legacy service is made once per server. Not bound outside tests
    /// (`nil`: the service's own deadline); not carried into completions.
    @TaskLocal static var timeout: TimeInterval?

    /// The legacy call whose completion runs (bound as `FMError.current` is): what its failure line names
    /// (``SwiftFM/warnFailure(_:_:)``).
    @TaskLocal static var call: LegacyCallLog?
}

/// What the line of a failed SwiftFM 2.x call names of the call, as every failure line does: its endpoint, its layout,
/// the number of its request (`fm.request_id`, when one was drawn: a logger was set when its service was made) and the
/// caller's logging context, read as the call began; and the secrets of the service that sent it, hidden from the line.
struct LegacyCallLog: Sendable {
    var kind: String
    var layout: String?
    var requestID: UInt64?
    var context: [String: String] = [:]
    var secrets: @Sendable () -> [String] = { [] }

    /// The line's metadata: the caller's context under SwiftFM's keys.
    func metadata(code: String) -> [String: String] {
        var metadata = context
        metadata["fm.endpoint"] = kind
        if let layout { metadata["fm.layout"] = layout }
        if let requestID, requestID != 0 { metadata["fm.request_id"] = String(requestID) }
        metadata["fm.code"] = code
        return metadata
    }
}

// MARK: - Resolution

enum LegacyEnvironment {
    /// The scoped `UserDefaults` when there is one, otherwise ``DataAPI/legacyDefaults``.
    static var defaults: UserDefaults { LegacyScope.defaults?.value ?? LegacyState.shared.defaults }

    /// Resolves the configuration from the UserDefaults keys, in the order `era` prefers.
    /// `needsDatabase: false` is for host-scoped calls (validateSession, productInfo, databases).
    static func resolve(_ era: LegacyEra, needsDatabase: Bool = true) -> Result<LegacyTarget, FMError> {
        let defaults = self.defaults
        let fromPath = defaults.string(forKey: LegacyKey.dbPath).flatMap(parseDatabasePath)
        let fromHost = defaults.string(forKey: LegacyKey.host).flatMap { host -> LegacyTarget? in
            guard let server = parseHost(host) else { return nil }
            let db = defaults.string(forKey: LegacyKey.database).flatMap { $0.isEmpty ? nil : $0 }
            return LegacyTarget(server: server, version: .vLatest, database: db)
        }
        let ordered = era == .dbPath ? [fromPath, fromHost] : [fromHost, fromPath]
        let candidates = ordered.compactMap { $0 }
        if let complete = candidates.first(where: { $0.database != nil }) { return .success(complete) }
        if !needsDatabase, let hostOnly = candidates.first { return .success(hostOnly) }
        let wanted = era == .dbPath
            ? "\(LegacyKey.dbPath) (or \(LegacyKey.host) and \(LegacyKey.database))"
            : "\(LegacyKey.host) and \(LegacyKey.database) (or \(LegacyKey.dbPath))"
        let problems = era == .dbPath ? [pathProblem(defaults), hostProblem(defaults)] : [hostProblem(defaults), pathProblem(defaults)]
        let detail = problems.compactMap { $0 }.map { "; \($0)" }.joined()
        return .failure(.invalidConfiguration("Missing or invalid UserDefaults configuration: set \(wanted)\(detail)"))
    }

    /// What is wrong with a set `fm-db-path`, or `nil` when it is unset or usable. Its value is not repeated
    /// (a URL may carry credentials).
    private static func pathProblem(_ defaults: UserDefaults) -> String? {
        guard let path = defaults.string(forKey: LegacyKey.dbPath),
              !path.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        guard let target = parseDatabasePath(path) else {
            return "\(LegacyKey.dbPath) is set but is not https://HOST/fmi/data/v1/databases/DATABASE (or http:// for a local server)"
        }
        return target.database == nil ? "\(LegacyKey.dbPath) names no database: end it with /databases/DATABASE" : nil
    }

    /// What is wrong with a set `fm-host` (and its `fm-db`), or `nil` when it is unset or usable.
    private static func hostProblem(_ defaults: UserDefaults) -> String? {
        guard let host = defaults.string(forKey: LegacyKey.host),
              !host.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        guard parseHost(host) != nil else {
            return "\(LegacyKey.host) is set but is not a host (my.server.com, or http://HOST:PORT for a local server)"
        }
        let database = defaults.string(forKey: LegacyKey.database) ?? ""
        return database.isEmpty ? "\(LegacyKey.host) is set, \(LegacyKey.database) is not set" : nil
    }

    /// `https://host[:port]/fmi/data/{v1|v2|vLatest}/databases/{db}` → target. A missing scheme means https.
    static func parseDatabasePath(_ path: String) -> LegacyTarget? {
        let trimmed = path.trimmingCharacters(in: .whitespacesAndNewlines)
        // A scheme only when the value starts with one: a `://` in its query is not it (as FMConfiguration reads a host).
        let withScheme = Redaction.schemeSeparator(in: trimmed) == nil ? "https://" + trimmed : trimmed
        guard let url = URL(string: withScheme) else { return nil }
        let parts = url.pathComponents.filter { $0 != "/" }
        guard let fmi = parts.firstIndex(of: "fmi"), parts.count > fmi + 2, parts[fmi + 1] == "data",
              let version = FMAPIVersion(rawValue: parts[fmi + 2]),
              let server = serverURL(of: url, prefix: Array(parts[..<fmi]))
        else { return nil }
        var database: String?
        if parts.count > fmi + 4, parts[fmi + 3] == "databases" {
            database = parts[fmi + 4]
        }
        return LegacyTarget(server: server, version: version, database: database,
                            names: FMConfiguration.SettingNames(host: LegacyKey.dbPath, database: LegacyKey.dbPath))
    }

    /// A bare host (`my.server.com`, `my.server.com:8443`) means https; an explicit scheme is honoured,
    /// and so is a path prefix (`https://proxy.example.com/filemaker`), which the originals interpolated too.
    static func parseHost(_ host: String) -> URL? {
        var trimmed = host.trimmingCharacters(in: .whitespacesAndNewlines)
        // Trailing slashes go, but not the scheme's own (`https://` names no host, not a host called `https`).
        while trimmed.hasSuffix("/"), !trimmed.hasSuffix("://") { trimmed.removeLast() }
        guard !trimmed.isEmpty else { return nil }
        let withScheme = Redaction.schemeSeparator(in: trimmed) == nil ? "https://" + trimmed : trimmed
        guard let url = URL(string: withScheme) else { return nil }
        return serverURL(of: url, prefix: url.pathComponents.filter { $0 != "/" })
    }

    /// Scheme, host, port and a path prefix (the part of the path before `/fmi/data/…`).
    private static func serverURL(of url: URL, prefix: [String]) -> URL? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else { return nil }
        var components = URLComponents()
        components.scheme = scheme
        components.host = host
        components.port = url.port
        if !prefix.isEmpty { components.path = "/" + prefix.joined(separator: "/") }
        return components.url
    }

    // MARK: Token keys

    /// Writes `fm-token` and `fm-token-expiry` (now + 900 s) as `refreshToken` always did.
    static func storeToken(_ token: String) -> Date {
        let expiry = Date(timeIntervalSinceNow: 900)
        let defaults = self.defaults
        defaults.set(token, forKey: LegacyKey.token)
        defaults.set(expiry, forKey: LegacyKey.tokenExpiry)
        return expiry
    }

    /// Clears `fm-token` and writes the Int `0` to `fm-token-expiry`, as `deleteToken` did (2019).
    static func clearToken() {
        let defaults = self.defaults
        defaults.removeObject(forKey: LegacyKey.token)
        defaults.set(0, forKey: LegacyKey.tokenExpiry)
    }

    /// After a successful explicit-token call: FileMaker slid the token's life, so slide
    /// `fm-token-expiry` too, when the token used is the one in `fm-token`.
    static func slideExpiry(ifCurrent token: String) {
        let defaults = self.defaults
        guard !token.isEmpty, defaults.string(forKey: LegacyKey.token) == token else { return }
        defaults.set(Date(timeIntervalSinceNow: 900), forKey: LegacyKey.tokenExpiry)
    }

    /// The server rejected `token`: when it is the one in `fm-token`, write `0` to `fm-token-expiry` (as the
    /// original `deleteToken` did), so old readers see it as expired.
    static func expireToken(ifCurrent token: String) {
        let defaults = self.defaults
        guard !token.isEmpty, defaults.string(forKey: LegacyKey.token) == token else { return }
        defaults.set(0, forKey: LegacyKey.tokenExpiry)
    }

    /// `isActiveToken()` of 2018–2019: a token in `fm-token` and a `Date` in `fm-token-expiry` in the future.
    ///
    /// A `fm-token` that cannot be sent as a `Bearer` token (empty, a space or line break, over 4 KiB: a
    /// hand-written or stale value) is not active, as `DataAPI().isActiveToken()` reads the same key: the 2019
    /// pattern then logs in again instead of failing every call with it until the expiry.
    static func isActiveToken() -> Bool {
        let defaults = self.defaults
        guard let token = defaults.string(forKey: LegacyKey.token), RequestBuilder.isValidSessionToken(token) else { return false }
        let expiry = defaults.object(forKey: LegacyKey.tokenExpiry) as? Date ?? Date(timeIntervalSince1970: 0)
        return expiry > Date()
    }
}

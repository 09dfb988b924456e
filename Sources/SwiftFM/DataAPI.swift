import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which Data API version a ``DataAPI`` speaks (the `{version}` of `/fmi/data/{version}`).
public enum FMAPIVersion: String, Sendable, CaseIterable {
    /// FileMaker Server 17 and later.
    case v1
    /// FileMaker Server 19 and later.
    case v2
    /// The newest version the server supports.
    case vLatest
}

/// The account a ``DataAPI`` logs in with.
///
/// Every case is redacted in `description`, `debugDescription`, `dump` and `Mirror`.
public enum FMCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A user name and a password.
    case basic(username: String, password: String)
    /// A ready base64 value of `user:pass` (the legacy `fm-auth` value).
    case encoded(String)
    /// A Claris ID (FileMaker Cloud) login: `Authorization: FMID <token>`, with the token from `provider`.
    ///
    /// Claris ID tokens expire after an hour: when the server rejects a token at login, SwiftFM asks the
    /// provider again (with `refresh: true`) and logs in once more.
    case clarisID(FMClarisIDTokenProvider)
    /// An OAuth login (`X-FM-Data-OAuth-Request-Id` and `X-FM-Data-OAuth-Identifier` headers), with the
    /// request id and identifier your OAuth flow obtained from the server.
    case oauth(requestId: String, identifier: String)

    /// The base64 `user:pass` value sent after `Basic `, or `nil` when it would be empty (or the
    /// credentials are not Basic ones).
    public var encodedValue: String? {
        switch self {
        case .basic(let username, let password):
            guard !username.isEmpty else { return nil }
            return Data("\(username):\(password)".utf8).base64EncodedString()
        case .encoded(let value):
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : trimmed
        case .clarisID, .oauth:
            return nil
        }
    }

    /// A description that never shows the password, the encoded value or a token.
    public var description: String {
        switch self {
        case .basic(let username, _): "FMCredentials.basic(username: \(Redaction.oneLine(username)), password: <redacted>)"
        case .encoded: "FMCredentials.encoded(<redacted>)"
        case .clarisID: "FMCredentials.clarisID(<redacted>)"
        case .oauth: "FMCredentials.oauth(requestId: <redacted>, identifier: <redacted>)"
        }
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror that shows no secret (what `dump` and `Mirror(reflecting:)` read).
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }

    /// The secrets to scrub from log lines.
    var secrets: [String] {
        switch self {
        case .basic(_, let password): [password] + (encodedValue.map { [$0] } ?? [])
        case .encoded: encodedValue.map(Redaction.basicSecrets) ?? []
        case .clarisID(let provider): provider.secrets()
        case .oauth(let requestId, let identifier): [requestId, identifier]
        }
    }
}

/// An external FileMaker data source to authenticate at login (`fmDataSource` of the login body).
public struct FMDataSource: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The external file's name, without `.fmp12`.
    public var database: String
    /// The account name in that file.
    public var username: String
    /// The password in that file.
    public var password: String

    /// Creates a data source login.
    public init(database: String, username: String, password: String) {
        self.database = database
        self.username = username
        self.password = password
    }

    /// A description that never shows the password, on one line.
    public var description: String {
        "FMDataSource(database: \(Redaction.oneLine(database)), username: \(Redaction.oneLine(username)), password: <redacted>)"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no password.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

/// Everything a ``DataAPI`` needs to reach one database. Nothing global is read.
///
/// Values are not validated when the configuration is created: a missing host, database or credential is
/// reported as `"-1001"` through the completion of the first call that needs it.
public struct FMConfiguration: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A bare host (`fms.example.com`, `fms.example.com:8443`, meaning `https://`) or a URL string
    /// (`http://127.0.0.1:3000`, `https://proxy.example.com/prefix`). Anything from `/fmi/data` on is
    /// ignored, so a legacy `https://host/fmi/data/v1/databases/db` value resolves to `https://host`; a query or
    /// fragment is never sent. It has a scheme only when it starts with one (`scheme://`): a `://` further on, in a
    /// query or fragment, changes nothing. A host that cannot be used (`-1001`) is named in the error without its
    /// user info, query or fragment (on one line, at most 300 characters of it), with what is wrong with it: not a URL, a scheme other than `http` or `https`,
    /// no host name, user info (`user:password@`: the account goes in ``credentials``), a port outside 1…65535.
    public var host: String
    /// The database (file) name, without `.fmp12`.
    public var database: String
    /// The account; `nil` when only calls without a login are made (product info, database list).
    public var credentials: FMCredentials?
    /// The Data API version of the paths.
    public var version: FMAPIVersion
    /// The deadline of a whole call, in seconds: waiting for a concurrency slot, logging in, every retry
    /// and its back-off, and every byte of the answer. Past it the call completes once with `-1004`,
    /// however the server behaves. Container transfers use ``containerTimeout`` instead.
    public var timeout: TimeInterval
    /// External data sources authenticated at login.
    public var dataSources: [FMDataSource]
    /// The deadline of a container upload or download, in seconds (default one hour): they are long by
    /// nature. The silence allowed between two bytes is still ``timeout``.
    public var containerTimeout: TimeInterval = 3600

    /// The deadline of one call: ``containerTimeout`` for a container transfer, ``timeout`` for any other.
    func deadline(isTransfer: Bool) -> TimeInterval { isTransfer ? containerTimeout : timeout }
    /// The most bytes an answer may have after content decoding (default 256 MiB). A larger answer is
    /// cancelled at the cap and the call completes with `-1011` (``FMError/ClientCode/responseTooLarge``).
    /// A container download to `Data` obeys it; a download to a file is streamed and is not capped.
    public var maxResponseBytes: Int = 256 * 1024 * 1024
    /// How transient failures are retried (default ``FMRetryPolicy/standard``: reads only, and a read that
    /// finds the server away — refused, reset, 502/503/504 — rides it out until ``timeout``).
    public var retry: FMRetryPolicy = .standard
    /// The most HTTP requests in flight at once, logins included (default `nil`: no cap). Calls past it
    /// wait in FIFO order; a waiting call that is cancelled or whose deadline passes is never sent.
    public var maxConcurrentRequests: Int?
    /// The most server sessions this ``DataAPI`` opens (default 1). FileMaker runs one request per session
    /// at a time, so each session serves one call at a time: the other calls wait in FIFO order, under their
    /// deadline, for the first session that frees, and a new session is opened (up to this size) only while
    /// calls wait. A call never waits for a particular login: a slow or hanging one holds no call while
    /// another session frees. The token store holds the first session's token; the others live in memory and
    /// are logged out by ``DataAPI/shutdown(grace:completion:)``. Values below 1 mean 1; values above 1,000
    /// mean 1,000.
    public var sessionPoolSize: Int = 1
    /// How long, in seconds, a pool session may stay unused before SwiftFM logs it out (default 300). The
    /// pool checks whenever a call takes or gives back a session, and the sessions beyond the first also on a
    /// timer, so a pool grown for a burst shrinks back to one session after it even when no call follows; a
    /// session in use is never closed. `.infinity` keeps sessions until FileMaker expires them.
    public var sessionIdleTimeout: TimeInterval = 300
    /// The most calls one pool session serves at once (default 1, as FileMaker Server runs one request per
    /// session at a time). A larger value lets calls share a busy session, where they queue at the server
    /// instead of in the client. Values below 1 mean 1.
    public var maxCallsPerSession: Int = 1
    /// The most requests per second this ``DataAPI`` sends, logins included (default `nil`: no limit). Requests
    /// leave evenly spaced (a token bucket of one token, refilled every `1 / maxRequestsPerSecond` seconds), in
    /// FIFO order; a request waiting for its turn still obeys its call's deadline, and one whose call is
    /// cancelled or out of time is never sent. For polling daemons that would otherwise melt a server.
    public var maxRequestsPerSecond: Double?
    /// Receives what every call and pool session cost (default `nil`: nothing is measured). See
    /// ``FMMetricsObserver``.
    public var metrics: (any FMMetricsObserver)? {
        get { metricsBox.observer }
        set { metricsBox = MetricsBox(observer: newValue) }
    }
    var metricsBox = MetricsBox(observer: nil)
    /// TLS for this client only: a CA bundle trusted instead of the system store, pinned public keys, a client
    /// certificate (default: the system store, no pin, no client certificate). Honoured by ``FMCurlTransport``;
    /// see ``FMTLSOptions``. A transport that cannot honour what is set fails every call with `-1001`.
    public var tls = FMTLSOptions()
    /// The HTTP proxy every request goes through (`http://proxy.example.com:3128`, credentials in the URL
    /// allowed: they are redacted in every description and log line). `nil` (default): the environment's
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY`, as curl reads them. Honoured by
    /// ``FMCurlTransport``; another transport fails every call with `-1001` when it is set.
    public var proxy: URL?
    /// Whether a large answer may be decoded on several threads at once (default `false`: every answer is decoded
    /// on the one thread that finished its call). When `true`, a found set of 1 MiB or more read by this
    /// ``DataAPI`` (a find, a record or range read, a page of a walk) is split into parts read on up to 8 cores
    /// at once (`DispatchQueue.concurrentPerform`), and the call's thread waits for them: records and order are
    /// the same, the decoding takes less wall time and more CPU. Your types' `init(from:)` then runs on several
    /// threads concurrently, one record on one thread: they must not share mutable state without a lock.
    /// Found sets you decode yourself (``FMFoundSet/decode(_:timeZone:)``, ``FMTypedFoundSet/init(responseBody:timeZone:)``)
    /// are always decoded on the calling thread.
    public var parallelDecoding = false
    /// The lowest level handed to the logging hook (default ``FMLogEvent/Level/debug``: every line). Lines
    /// below it are not even formatted: a daemon whose logger shows `info` and above sets `.info` and its
    /// calls build no request or answer line. See ``FMLogEvent``.
    public var logLevel: FMLogEvent.Level = .debug
    /// Traces every call (default `nil`: nothing is traced): ``FMInstrumentation/startCall(_:)`` runs on the
    /// caller's thread or task as a call begins, and the span it returns is ended once with the outcome.
    /// The companion package `SwiftFMServer` has one for swift-distributed-tracing. See ``FMInstrumentation``.
    public var instrumentation: (any FMInstrumentation)? {
        get { instrumentationBox.instrumentation }
        set { instrumentationBox = InstrumentationBox(instrumentation: newValue) }
    }
    var instrumentationBox = InstrumentationBox(instrumentation: nil)
    /// Adds the caller's logging context to each call's log lines (default `nil`: a line carries SwiftFM's metadata
    /// only): ``FMLogMetadataProvider/metadata()`` is called once as a call begins, on the caller's thread or task (where
    /// its task-local values are), and what it returns goes into the ``FMLogEvent/metadata`` of every line of that call,
    /// which SwiftFM logs on its own queues. The companion package `SwiftFMServer` sets it from a swift-log logger's
    /// metadata provider. See ``FMLogMetadataProvider``.
    public var logMetadataProvider: FMLogMetadataProvider? {
        get { logMetadataProviderBox.provider }
        set { logMetadataProviderBox = LogMetadataProviderBox(provider: newValue) }
    }
    var logMetadataProviderBox = LogMetadataProviderBox(provider: nil)
    /// How the caller wrote the host and the database, for messages that say what to check.
    var settingNames = SettingNames()

    /// The names of the host and database settings as the caller wrote them: ``host`` and ``database`` by default,
    /// the UserDefaults keys (`fm-host`, `fm-db`, `fm-db-path`) for the legacy calls.
    struct SettingNames: Sendable, Hashable {
        var host = "FMConfiguration.host"
        var database = "FMConfiguration.database"
    }

    /// Creates a configuration.
    public init(
        host: String,
        database: String,
        credentials: FMCredentials?,
        version: FMAPIVersion = .vLatest,
        timeout: TimeInterval = 30,
        dataSources: [FMDataSource] = []
    ) {
        self.host = host
        self.database = database
        self.credentials = credentials
        self.version = version
        self.timeout = timeout
        self.dataSources = dataSources
    }

    /// Creates a configuration with a user name and password.
    public init(
        host: String,
        database: String,
        username: String,
        password: String,
        version: FMAPIVersion = .vLatest,
        timeout: TimeInterval = 30,
        dataSources: [FMDataSource] = []
    ) {
        self.init(
            host: host, database: database, credentials: .basic(username: username, password: password),
            version: version, timeout: timeout, dataSources: dataSources
        )
    }

    /// Creates a configuration with a ready base64 `user:pass` value.
    public init(
        host: String,
        database: String,
        encodedCredentials: String,
        version: FMAPIVersion = .vLatest,
        timeout: TimeInterval = 30
    ) {
        self.init(host: host, database: database, credentials: .encoded(encodedCredentials), version: version, timeout: timeout)
    }

    /// The base URL the host resolves to (`https://host` for a bare host), or `nil` when it is invalid.
    public var baseURL: URL? { try? resolvedBase().get().url }

    /// A description with credentials redacted, on one line (a control character in the host or a name is replaced).
    public var description: String {
        let credentialText = credentials.map(String.init(describing:)) ?? "nil"
        return "FMConfiguration(host: \(Redaction.oneLine(Redaction.host(host))), database: \(Redaction.oneLine(database)), credentials: \(credentialText), "
            + "version: \(version.rawValue), timeout: \(timeout), dataSources: \(dataSources), "
            + "containerTimeout: \(containerTimeout), maxResponseBytes: \(maxResponseBytes), retry: \(retry), "
            + "maxConcurrentRequests: \(maxConcurrentRequests.map(String.init) ?? "nil"), sessionPoolSize: \(sessionPoolSize), "
            + "sessionIdleTimeout: \(sessionIdleTimeout), maxCallsPerSession: \(maxCallsPerSession), "
            + "maxRequestsPerSecond: \(maxRequestsPerSecond.map { String(describing: $0) } ?? "nil"), metrics: \(metrics == nil ? "nil" : "set"), logLevel: \(logLevel), "
            + "instrumentation: \(instrumentation == nil ? "nil" : "set"), "
            + "logMetadataProvider: \(logMetadataProvider == nil ? "nil" : "set"), parallelDecoding: \(parallelDecoding), "
            + "tls: \(tls), proxy: \(proxy.map { Redaction.oneLine(Redaction.host($0.absoluteString)) } ?? "nil"))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror that shows no secret (what `dump` and `Mirror(reflecting:)` read).
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }

    /// Resolves ``host``: scheme (https unless given), host, port and an optional path prefix; the query and fragment
    /// dropped. The host has a scheme only when it starts with one (``Redaction/schemeSeparator(in:)``, the rule its
    /// redaction follows): a `://` further on is part of its query, fragment or path. A host that cannot be used is
    /// `-1001` `Invalid host "HOST": WHAT IS WRONG`, the host shown as ``Redaction/host(_:)`` shows it (never its user
    /// info, query or fragment), on one line and cut at 300 characters (``FMError/serverText(_:limit:)``).
    func resolvedBase() -> Result<URLComponents, FMError> {
        let trimmed = host.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .failure(.invalidConfiguration("No host is configured")) }
        func invalid(_ what: String) -> Result<URLComponents, FMError> {
            // One bounded line: a host may come from a tenant's input (a line break in it must not forge a log line).
            .failure(.invalidConfiguration("Invalid host \"\(FMError.serverText(Redaction.host(trimmed), limit: 300))\": \(what)"))
        }
        let text = Redaction.schemeSeparator(in: trimmed) == nil ? "https://" + trimmed : trimmed
        guard var components = URLComponents(string: text) else {
            return invalid("it cannot be read as a URL (a space, or another character a URL cannot hold); "
                           + "give it as fms.example.com or https://fms.example.com:8443")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            let named = components.scheme.map { "its scheme is \(FMError.serverText($0, limit: 40))" } ?? "it has no scheme"
            return invalid("\(named), and only http and https are supported")
        }
        guard components.user == nil, components.password == nil else {
            return invalid("it holds user info (user:password@), which is never sent; give the account in the configuration's credentials")
        }
        guard let hostName = components.host, !hostName.isEmpty else { return invalid("it has no host name") }
        // A port must be 1…65535: a larger one (or 0) can never connect, and a 20-digit one overflows
        // `URLComponents.port` (nil) while staying in the URL.
        if let range = components.rangeOfPort, let text = components.string {
            let port = text[range]
            guard port.isEmpty || Int(port).map({ (1...65_535).contains($0) }) == true else {
                return invalid("its port \(FMError.serverText(String(port), limit: 40)) is not in 1…65535")
            }
        }
        components.scheme = scheme
        // A legacy `fm-db-path`-style value (`https://host/fmi/data/v1/databases/db`): keep only what precedes /fmi/data.
        if let range = components.percentEncodedPath.range(of: "/fmi/data", options: .caseInsensitive) {
            components.percentEncodedPath = String(components.percentEncodedPath[..<range.lowerBound])
        }
        components.query = nil
        components.fragment = nil
        return .success(components)
    }
}

/// The FileMaker Data API service class.
///
/// One instance talks to one database. Every callback method returns an ``FMRequest`` cancel handle and calls
/// its completion exactly once, on ``callbackQueue``, whatever happens. Sessions are managed: a pool of up to
/// ``FMConfiguration/sessionPoolSize`` server sessions, each obtained when needed (one login for any number of
/// concurrent callers), reused, slid on every successful call, renewed when the local clock says it expired,
/// and renewed once (with one replay of the call) when the server no longer knows it (952, 112, an HTML 401).
/// Every call is bounded by ``FMConfiguration/timeout`` and ``FMConfiguration/maxResponseBytes``, and transient
/// failures are retried under ``FMConfiguration/retry``.
///
/// Completions are `sending` closures: in Swift 6 language mode one written in main-actor code is not isolated
/// to the main actor (it runs on ``callbackQueue``), so main-actor state inside it does not compile; hop back
/// with `Task { @MainActor in … }`, or pass `callbackQueue: .main` and use `MainActor.assumeIsolated`, or mark the
/// completion `{ @MainActor found, code in … }`: every completion method has a main-actor twin, which Swift picks for
/// a marked closure and which runs it on the main actor.
public final class DataAPI: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The configuration this instance was made with.
    public let configuration: FMConfiguration
    /// The queue every completion runs on (a private serial queue unless one was given; never `.main` by default).
    public let callbackQueue: DispatchQueue
    /// What a call reaches: the session stage, the send stage, the lifecycle (``CallContext``).
    let context: CallContext

    /// Where the session token (of the first pool session) is kept.
    public var tokenStore: FMTokenStore { context.sessions.tokenStore }
    /// The session stage: the pool, logins, the token store.
    var sessions: SessionStage { context.sessions }
    /// The send stage's tenants: the transport, the rate limit, the concurrency cap, the log.
    var sender: Sender { context.sender }
    var lifecycle: Lifecycle { context.lifecycle }
    var logger: Logger { context.sender.logger }
    var pool: SessionPool { context.sessions.pool }
    /// The injected clock.
    var now: @Sendable () -> Date { context.sessions.now }
    var transport: any FMTransport { context.sender.transport }
    var rateLimiter: RateLimiter? { context.sender.rateLimiter }
    /// Draws a retry's back-off from its range (full jitter); the tests' seam for the random source.
    var retryJitter: Locked<@Sendable (ClosedRange<Double>) -> Double> { context.sender.retryJitter }
    /// Where logins and logouts report (never the callback queue, which a caller may block).
    var sessionQueue: DispatchQueue { context.sessions.queue }

    /// Creates a service with the default transport: on Linux ``FMCurlTransport`` wherever libcurl loads (else
    /// ``FMURLSessionTransport``, and the logger says so once), elsewhere ``FMURLSessionTransport``; either allows
    /// as many connections as SwiftFM may have requests in flight.
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, version, limits, retries, pool size.
    ///   - callbackQueue: where completions run; by default a serial queue owned by this instance.
    ///   - tokenStore: where the session token is kept; in memory by default.
    ///   - logger: receives one redacted line per request and per answer; `nil` for silence.
    ///   - now: the wall clock of the token store's expiries (`Date()` by default). Injected, it also measures how long
    ///     a session has been idle (a test's clock); by default that is the system's elapsed clock, which counts a
    ///     sleep and no wall-clock step (see <doc:SessionsAndTokens>).
    public convenience init(
        configuration: FMConfiguration,
        callbackQueue: DispatchQueue? = nil,
        tokenStore: FMTokenStore = FMMemoryTokenStore(),
        logger: FMLogHandler? = nil,
        now: (@Sendable () -> Date)? = nil
    ) {
        self.init(configuration: configuration, callbackQueue: callbackQueue, tokenStore: tokenStore, logger: logger,
                  clock: SessionClock.of(now), curlLibraryPath: "libcurl.so.4")
    }

    /// The default transport's client, libcurl loaded from `curlLibraryPath` (the tests' missing library); when
    /// it cannot be loaded, the logger says so once.
    convenience init(
        configuration: FMConfiguration,
        callbackQueue: DispatchQueue?,
        tokenStore: FMTokenStore,
        logger: FMLogHandler?,
        clock: SessionClock,
        curlLibraryPath: String
    ) {
        let (transport, note) = defaultTransportChoice(for: configuration, libraryPath: curlLibraryPath)
        self.init(configuration: configuration, transport: transport, callbackQueue: callbackQueue, tokenStore: tokenStore,
                  logger: logger, clock: clock)
        if let note { self.logger.log(.warning, note) }
    }

    /// Creates a service for `database` on `host` (a bare host means `https://host`) with an account.
    public convenience init(host: String, database: String, username: String, password: String) {
        self.init(configuration: FMConfiguration(host: host, database: database, username: username, password: password))
    }

    /// Creates a service over your own HTTP client (see ``FMTransport``).
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, version, limits, retries, pool size.
    ///   - transport: sends every request.
    ///   - callbackQueue: where completions run; by default a serial queue owned by this instance.
    ///   - tokenStore: where the session token is kept; in memory by default.
    ///   - logger: receives one redacted line per request and per answer; `nil` for silence.
    ///   - now: the wall clock of the token store's expiries (`Date()` by default). Injected, it also measures how long
    ///     a session has been idle (a test's clock); by default that is the system's elapsed clock, which counts a
    ///     sleep and no wall-clock step (see <doc:SessionsAndTokens>).
    public convenience init(
        configuration: FMConfiguration,
        transport: any FMTransport,
        callbackQueue: DispatchQueue? = nil,
        tokenStore: FMTokenStore = FMMemoryTokenStore(),
        logger: FMLogHandler? = nil,
        now: (@Sendable () -> Date)? = nil
    ) {
        self.init(configuration: configuration, transport: transport, callbackQueue: callbackQueue, tokenStore: tokenStore,
                  logger: logger, clock: SessionClock.of(now))
    }

    /// A service on `clock`: the wall clock and the elapsed clock a session's idle time is measured on (the tests'
    /// seam to move them apart).
    init(
        configuration: FMConfiguration,
        transport: any FMTransport,
        callbackQueue: DispatchQueue?,
        tokenStore: FMTokenStore,
        logger: FMLogHandler?,
        clock: SessionClock
    ) {
        let callbackQueue = callbackQueue ?? DispatchQueue(label: "SwiftFM.DataAPI.callbacks")
        self.configuration = configuration
        self.callbackQueue = callbackQueue
        // The store's first read: a store that cannot be read is told once the stage (and its logger) exist.
        let (stored, readFailure) = SessionStage.read(tokenStore)
        let pool = SessionPool(size: configuration.sessionPoolSize, idleTimeout: configuration.sessionIdleTimeout,
                               callsPerSession: configuration.maxCallsPerSession,
                               stored: SessionStage.usable(stored), now: clock.now)
        let logger = Self.makeLogger(logger, configuration: configuration, pool: pool)
        let lifecycle = Lifecycle()
        let sender = Sender(configuration: configuration, transport: transport, refusal: refusal(of: transport, for: configuration),
                            logger: logger, clock: clock)
        let sessions = SessionStage(
            pool: pool, tokenStore: tokenStore, configuration: configuration, logger: logger, lifecycle: lifecycle, clock: clock,
            pinnedAPI: { pinned in
                DataAPI(context: CallContext(configuration: configuration, sessions: pinned, sender: sender, lifecycle: lifecycle,
                                             callbackQueue: callbackQueue))
            },
            send: CallContext.sessionSend(configuration: configuration, sender: sender, lifecycle: lifecycle, callbackQueue: callbackQueue))
        self.context = CallContext(configuration: configuration, sessions: sessions, sender: sender, lifecycle: lifecycle,
                                   callbackQueue: callbackQueue)
        sessions.tell(sessions.readWarning(stored, failure: readFailure))
    }

    /// A service over `context` (the new-session hook's: a pinned session stage, the parent's sender and lifecycle).
    init(context: CallContext) {
        self.configuration = context.configuration
        self.callbackQueue = context.callbackQueue
        self.context = context
    }

    /// A service that uses `token` for every call and never logs in or renews, over `parent`'s sender and lifecycle.
    convenience init(pinnedTo token: String, parent: DataAPI) {
        let context = parent.context
        self.init(context: CallContext(configuration: context.configuration,
                                       sessions: SessionStage(pinnedTo: token, parent: context.sessions),
                                       sender: context.sender, lifecycle: context.lifecycle, callbackQueue: context.callbackQueue))
    }

    private static func makeLogger(_ handler: FMLogHandler?, configuration: FMConfiguration, pool: SessionPool) -> Logger {
        let credentials = configuration.credentials
        let dataSources = configuration.dataSources
        let proxySecrets = configuration.proxy.map(Self.proxySecrets) ?? []
        // The configured host and database are known to whoever reads the lines: a secret inside them is left there.
        let shown = [(try? configuration.resolvedBase().get())?.host, configuration.database].compactMap { $0 }
        return Logger(handler: handler, minimum: configuration.logLevel, shown: shown) {
            (credentials?.secrets ?? []) + dataSources.map(\.password) + pool.heldTokens + proxySecrets
        }
    }

    /// The secrets of a proxy URL's credentials in every form they are sent in: the user and the password as written
    /// in the URL and percent-decoded (curl decodes them; Foundation on Linux hands the password back still encoded),
    /// and the base64 `user:password` of the `Proxy-Authorization` Basic value curl sends.
    static func proxySecrets(_ proxy: URL) -> [String] {
        let user = proxy.user ?? ""
        let plainUser = user.removingPercentEncoding ?? user
        var secrets = [user, plainUser]
        if let password = proxy.password {
            let plainPassword = password.removingPercentEncoding ?? password
            secrets += [password, plainPassword, Data("\(plainUser):\(plainPassword)".utf8).base64EncodedString()]
        }
        return secrets.filter { !$0.isEmpty }
    }

    /// A description with credentials and tokens redacted.
    public var description: String { "DataAPI(\(configuration))" }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror that shows no secret (what `dump` and `Mirror(reflecting:)` read).
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

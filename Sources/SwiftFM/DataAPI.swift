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
public enum FMCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A user name and a password.
    case basic(username: String, password: String)
    /// A ready base64 value of `user:pass` (the legacy `fm-auth` value).
    case encoded(String)

    /// The base64 `user:pass` value sent after `Basic `, or `nil` when it would be empty.
    public var encodedValue: String? {
        switch self {
        case .basic(let username, let password):
            guard !username.isEmpty else { return nil }
            return Data("\(username):\(password)".utf8).base64EncodedString()
        case .encoded(let value):
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : trimmed
        }
    }

    /// A description that never shows the password or the encoded value.
    public var description: String {
        switch self {
        case .basic(let username, _): "FMCredentials.basic(username: \(username), password: <redacted>)"
        case .encoded: "FMCredentials.encoded(<redacted>)"
        }
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// An external FileMaker data source to authenticate at login (`fmDataSource` of the login body).
public struct FMDataSource: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
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

    /// A description that never shows the password.
    public var description: String { "FMDataSource(database: \(database), username: \(username), password: <redacted>)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// Everything a ``DataAPI`` needs to reach one database. Nothing global is read.
///
/// Values are not validated when the configuration is created: a missing host, database or credential is
/// reported as `"-1001"` through the completion of the first call that needs it.
public struct FMConfiguration: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A bare host (`fms.example.com`, `fms.example.com:8443`, meaning `https://`) or a URL string
    /// (`http://127.0.0.1:3000`, `https://proxy.example.com/prefix`). Anything from `/fmi/data` on is
    /// ignored, so a legacy `https://host/fmi/data/v1/databases/db` value resolves to `https://host`.
    public var host: String
    /// The database (file) name, without `.fmp12`.
    public var database: String
    /// The account; `nil` when only calls without a login are made (product info, database list).
    public var credentials: FMCredentials?
    /// The Data API version of the paths.
    public var version: FMAPIVersion
    /// The timeout of each request, in seconds.
    public var timeout: TimeInterval
    /// External data sources authenticated at login.
    public var dataSources: [FMDataSource]

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

    /// A description with credentials redacted.
    public var description: String {
        let credentialText = credentials.map(String.init(describing:)) ?? "nil"
        return "FMConfiguration(host: \(Redaction.host(host)), database: \(database), credentials: \(credentialText), "
            + "version: \(version.rawValue), timeout: \(timeout), dataSources: \(dataSources))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Resolves ``host``: scheme (https unless given), host, port and an optional path prefix.
    func resolvedBase() -> Result<URLComponents, FMError> {
        let trimmed = host.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .failure(.invalidConfiguration("No host is configured")) }
        let text = trimmed.contains("://") ? trimmed : "https://" + trimmed
        guard var components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let hostName = components.host, !hostName.isEmpty,
              components.user == nil, components.password == nil
        else {
            // Never echo user info (`user:password@`) into an error message.
            return .failure(.invalidConfiguration("Invalid host: \(Redaction.host(trimmed))"))
        }
        // A port must be 1…65535: a larger one (or 0) can never connect, and a 20-digit one overflows
        // `URLComponents.port` (nil) while staying in the URL.
        if let range = components.rangeOfPort, let text = components.string {
            let port = text[range]
            guard port.isEmpty || Int(port).map({ (1...65_535).contains($0) }) == true else {
                return .failure(.invalidConfiguration("Invalid port in host: \(port)"))
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
/// its completion exactly once, on ``callbackQueue``, whatever happens. The session token is managed: it is
/// obtained when needed (one login for any number of concurrent callers), reused, slid on every successful
/// call, renewed when the local clock says it expired, and renewed once (with one replay of the call) when
/// FileMaker answers 952.
public final class DataAPI: Sendable, CustomStringConvertible {
    /// The configuration this instance was made with.
    public let configuration: FMConfiguration
    /// The queue every completion runs on (a private serial queue unless one was given; never `.main` by default).
    public let callbackQueue: DispatchQueue
    /// Where the session token is kept.
    public let tokenStore: FMTokenStore
    /// The injected clock.
    let now: @Sendable () -> Date
    let transport: Transport
    let logger: Logger
    let session: Locked<SessionStateMachine<SessionWaiter>>
    /// Serialises token-store writes and drops out-of-date ones (see ``SessionStateMachine/Persist``).
    let persistedVersion = Locked<UInt64>(0)

    /// Creates a service.
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, version, timeout.
    ///   - callbackQueue: where completions run; by default a serial queue owned by this instance.
    ///   - tokenStore: where the session token is kept; in memory by default.
    ///   - logger: receives one redacted line per request and per answer; `nil` for silence.
    ///   - now: the clock used for token expiry.
    public convenience init(
        configuration: FMConfiguration,
        callbackQueue: DispatchQueue? = nil,
        tokenStore: FMTokenStore = FMMemoryTokenStore(),
        logger: FMLogHandler? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            configuration: configuration,
            transport: URLSessionTransport(timeout: configuration.timeout),
            callbackQueue: callbackQueue,
            tokenStore: tokenStore,
            logger: logger,
            now: now
        )
    }

    /// Creates a service for `database` on `host` (a bare host means `https://host`) with an account.
    public convenience init(host: String, database: String, username: String, password: String) {
        self.init(configuration: FMConfiguration(host: host, database: database, username: username, password: password))
    }

    /// Creates a service over any transport (tests use a stub).
    init(
        configuration: FMConfiguration,
        transport: Transport,
        callbackQueue: DispatchQueue? = nil,
        tokenStore: FMTokenStore = FMMemoryTokenStore(),
        logger: FMLogHandler? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.transport = transport
        self.callbackQueue = callbackQueue ?? DispatchQueue(label: "SwiftFM.DataAPI.callbacks")
        self.tokenStore = tokenStore
        self.now = now
        let session = Locked(SessionStateMachine<SessionWaiter>(stored: Self.usable(tokenStore.load()), now: now()))
        self.session = session
        let credentials = configuration.credentials
        let dataSources = configuration.dataSources
        self.logger = Logger(handler: logger) {
            var secrets: [String] = []
            switch credentials {
            case .basic(_, let password)?:
                secrets.append(password)
            case .encoded, nil:
                break
            }
            if let encoded = credentials?.encodedValue { secrets.append(encoded) }
            secrets += dataSources.map(\.password)
            if let token = session.withLock({ $0.validToken(now: .distantPast) }) { secrets.append(token.token) }
            return secrets
        }
    }

    /// A description with credentials and tokens redacted.
    public var description: String { "DataAPI(\(configuration))" }

    /// Sends `endpoint` and calls `completion` exactly once, on ``callbackQueue``.
    @discardableResult
    func perform<Value>(_ endpoint: Endpoint<Value>, completion: @escaping (Result<Value, FMError>) -> Void) -> FMRequest {
        perform(endpoint, acceptingStatus: { $0 == 200 }, attachingTo: nil, completion: completion)
    }
}

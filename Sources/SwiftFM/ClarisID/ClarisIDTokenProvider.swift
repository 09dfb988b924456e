import Foundation

/// Supplies the Claris ID token of a ``FMCredentials/clarisID(_:)`` login.
///
/// SwiftFM calls it before a login with `refresh: false` (a cached token is fine), and with `refresh: true`
/// after the server rejected the token it gave (Claris ID tokens expire after an hour). Two providers are
/// equal only when they are the same instance's copies.
public struct FMClarisIDTokenProvider: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// Delivers a token, or the error to report to the calls waiting for the login.
    public typealias Fetch = @Sendable (_ refresh: Bool, _ completion: @escaping @Sendable (Result<String, FMError>) -> Void) -> Void

    private let id = UUID()
    let fetch: Fetch
    /// The secrets it holds (password, tokens), scrubbed from log lines.
    let secrets: @Sendable () -> [String]
    /// The warnings it has for the log of the client whose login asked it for a token (its refresh-token store's),
    /// each given once.
    let warnings: @Sendable () -> [String]

    /// A provider that calls `fetch` (callback style).
    public init(_ fetch: @escaping Fetch) {
        self.fetch = fetch
        self.secrets = { [] }
        self.warnings = { [] }
    }

    /// A provider that knows its secrets (``signIn(username:password:configuration:)``).
    init(fetch: @escaping Fetch, secrets: @escaping @Sendable () -> [String],
         warnings: @escaping @Sendable () -> [String] = { [] }) {
        self.fetch = fetch
        self.secrets = secrets
        self.warnings = warnings
    }

    /// A provider with an `async` body.
    public init(async body: @escaping @Sendable (_ refresh: Bool) async throws -> String) {
        self.secrets = { [] }
        self.warnings = { [] }
        self.fetch = { refresh, completion in
            Task {
                do {
                    completion(.success(try await body(refresh)))
                } catch let error as FMError {
                    completion(.failure(error))
                } catch {
                    completion(.failure(FMError(code: FMError.ClientCode.invalidConfiguration,
                                                message: "The Claris ID token provider failed", underlying: String(describing: error))))
                }
            }
        }
    }

    /// A provider of one fixed token (it cannot be renewed: a rejected token fails the login).
    public init(token: String) {
        self.fetch = { _, completion in completion(.success(token)) }
        self.secrets = { [token] }
        self.warnings = { [] }
    }

    /// Providers are equal when they are copies of the same provider.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }

    /// `"FMClarisIDTokenProvider(<redacted>)"`.
    public var description: String { "FMClarisIDTokenProvider(<redacted>)" }

    /// A mirror that shows no secret.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

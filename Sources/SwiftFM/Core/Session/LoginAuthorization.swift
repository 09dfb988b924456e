import Foundation

/// The credentials seam of the session stage: how one login attempt is authorised, and what to do when
/// the server rejects it. It knows nothing of the Data API's session shape (the stage builds the login
/// request and reads the token); a provider of another scheme (Claris ID, OAuth, a future FileMaker API)
/// only produces headers.
struct LoginAuthorization: Sendable {
    /// Produces the headers of one login attempt (`Authorization` and any others); `refresh` is `true` when
    /// the server rejected the previous attempt's credentials (HTTP 401) and fresh ones are wanted. The
    /// completion may run on any queue; only its first call counts.
    let headers: @Sendable (_ refresh: Bool, _ completion: @escaping @Sendable (Result<[String: String], FMError>) -> Void) -> Void
    /// Whether a rejected login asks ``headers`` once more with `refresh: true` and logs in again.
    let renewsOnRejection: Bool

    /// Fixed headers, never renewed.
    static func fixed(_ result: Result<[String: String], FMError>) -> LoginAuthorization {
        LoginAuthorization(headers: { _, completion in completion(result) }, renewsOnRejection: false)
    }

    /// A token provider's answer sent as `"<scheme> <token>"` in `Authorization`, asked again once on a rejection. Each
    /// token it gives is a secret of `logger`'s lines from then on (``Logger/remember(_:)``: a provider of the caller's
    /// own names none; nothing is kept without a hook). The provider's `warnings` (its refresh-token store's:
    /// ``ClarisIDSignIn/takeWarnings()``) are logged as it answers, at `warning`.
    static func provider(scheme: String, _ fetch: @escaping FMClarisIDTokenProvider.Fetch,
                         warnings: @escaping @Sendable () -> [String] = { [] }, logger: Logger) -> LoginAuthorization {
        LoginAuthorization(headers: { refresh, completion in
            // A provider is the caller's code: only its first answer counts (a second would log in again).
            let answered = Once()
            fetch(refresh) { fetched in
                guard answered.claim() else { return }
                if case .success(let token) = fetched { logger.remember(token) }
                for warning in warnings() { logger.log(.warning, warning) }
                completion(fetched.map { ["Authorization": scheme + " " + $0] })
            }
        }, renewsOnRejection: true)
    }
}

extension LoginAuthorization {
    /// The authorization of a login with `credentials`, or with Basic `encoded` when given; what it sends that the
    /// configuration does not name (a provider's token, an explicit Basic value) becomes a secret of `logger`'s lines.
    static func of(_ credentials: FMCredentials?, encoded: String?, logger: Logger) -> LoginAuthorization {
        if let encoded {
            for secret in Redaction.basicSecrets(encoded) { logger.remember(secret) }
        } else {
            switch credentials {
            case .clarisID(let provider)?:
                return .provider(scheme: "FMID", provider.fetch, warnings: provider.warnings, logger: logger)
            case .oauth(let requestId, let identifier)?:
                return .fixed(.success(["X-FM-Data-OAuth-Request-Id": requestId, "X-FM-Data-OAuth-Identifier": identifier]))
            default:
                break
            }
        }
        return .fixed(RequestBuilder.basicAuthorization(encoded, credentials: credentials).map { ["Authorization": $0] })
    }
}

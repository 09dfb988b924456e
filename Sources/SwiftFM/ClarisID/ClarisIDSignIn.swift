import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FMCrypto

/// One Claris ID account's tokens: signs in with Cognito's `USER_SRP_AUTH`, keeps the ID token and the
/// refresh token, renews with `REFRESH_TOKEN_AUTH` before the ID token's `exp` (or when asked after a
/// rejection), falls back to SRP when the refresh token is refused. Single-flight: every caller waiting
/// while a renewal runs gets its result.
final class ClarisIDSignIn: Sendable {
    typealias Completion = @Sendable (Result<String, FMError>) -> Void

    struct Tokens {
        var idToken: String
        var expiry: Date
        var refreshToken: String?
        /// When it arrived, on the local clock.
        var received: Date
    }

    private struct State {
        var idToken: String?
        /// When a fetch stops reusing `idToken` and renews it (see ``renewal(expiry:received:)``).
        var renewAt: Date = .distantPast
        var refreshToken: String?
        var loadedStore = false
        var running = false
        var waiters: [Completion] = []
        var srpSignIns = 0
        var refreshes = 0
        /// The refresh-token store's warnings not yet logged (``takeWarnings()``): one per distinct problem.
        var warnings: [String] = []
    }

    /// Renew this long before the ID token's `exp` (clock skew, the login's own time).
    static let margin: TimeInterval = 60
    /// A new ID token is reused at least this long unless the server rejects it, even when it states a
    /// lifetime shorter than ``margin`` or one already over: such a token would otherwise cost a Cognito
    /// renewal on every fetch, and with ``FMOData`` on every request.
    static let shortestReuse: TimeInterval = 30
    /// A refresh token kept in a token store is given this lifetime (Claris: one year).
    static let refreshTokenLifetime: TimeInterval = 365 * 24 * 3600

    private let username: String
    private let password: String
    private let configuration: FMClarisIDConfiguration
    private let mfa: FMClarisIDMFAHandler?
    /// The refresh-token store, called as a Data API token store is (``ReportedTokenStore``).
    private let store: ReportedTokenStore?
    private let now: @Sendable () -> Date
    private let timeout: TimeInterval
    /// Where the Cognito requests go.
    private let transport: any FMTransport
    private let state = Locked(State())

    init(username: String, password: String, configuration: FMClarisIDConfiguration, mfa: FMClarisIDMFAHandler?,
         refreshTokenStore: (any FMTokenStore)?, timeout: TimeInterval = 60, transport: (any FMTransport)? = nil,
         now: @escaping @Sendable () -> Date = { Date() }) {
        self.username = username
        self.password = password
        self.configuration = configuration
        self.mfa = mfa
        self.store = refreshTokenStore.map { ReportedTokenStore($0, wording: .refreshToken) }
        self.timeout = timeout
        self.transport = transport ?? Self.sharedTransport
        self.now = now
    }

    /// SRP sign-ins and refreshes completed (for tests and fm-bench).
    var counts: (srpSignIns: Int, refreshes: Int) { state.withLock { ($0.srpSignIns, $0.refreshes) } }

    /// The secrets to scrub from log lines: the password and the tokens held.
    var secrets: [String] {
        state.withLock { s in [password] + [s.idToken, s.refreshToken].compactMap { $0 } }
    }

    /// The refresh-token store's warnings since the last call (a store that could not read or write: once per distinct
    /// problem, the refresh token redacted), for the client whose login asked for a token to log
    /// (``LoginAuthorization/provider(scheme:_:warnings:logger:)``).
    func takeWarnings() -> [String] {
        state.withLock { s in
            defer { s.warnings.removeAll() }
            return s.warnings
        }
    }

    /// Delivers a valid ID token: the cached one unless `refresh` (the server rejected it) or it is about
    /// to expire; else joins or starts one renewal.
    func fetch(refresh: Bool, completion: @escaping Completion) {
        let current = now()
        enum Step { case cached(String), wait, start }
        let step = state.withLock { s -> Step in
            if !refresh, !s.running, let token = s.idToken, current < s.renewAt { return .cached(token) }
            if refresh, !s.running { s.idToken = nil }
            s.waiters.append(completion)
            if s.running { return .wait }
            s.running = true
            return .start
        }
        switch step {
        case .cached(let token): completion(.success(token))
        case .wait: break
        case .start:
            Task { [self] in
                let result: Result<Tokens, FMError>
                do {
                    result = .success(try await renew())
                } catch let error as FMError {
                    result = .failure(error)
                } catch {
                    result = .failure(FMError(code: FMError.ClientCode.signInFailed, message: "The Claris ID sign-in failed",
                                              underlying: String(describing: error)))
                }
                let waiters = state.withLock { s -> [Completion] in
                    if case .success(let tokens) = result {
                        s.idToken = tokens.idToken
                        s.renewAt = Self.renewal(expiry: tokens.expiry, received: tokens.received)
                        if let refresh = tokens.refreshToken { s.refreshToken = refresh }
                    }
                    s.running = false
                    defer { s.waiters.removeAll() }
                    return s.waiters
                }
                for waiter in waiters { waiter(result.map(\.idToken)) }
            }
        }
    }

    /// Refresh when a refresh token is known (from memory or the store), SRP otherwise or when refused.
    private func renew() async throws -> Tokens {
        // The store is read once, with no lock held (it is the caller's code); one renewal runs at a time.
        let load = state.withLock { s -> Bool in
            defer { s.loadedStore = true }
            return !s.loadedStore && s.refreshToken == nil
        }
        let loaded = load ? store?.load() : nil
        let known = state.withLock { s -> String? in
            if let warning = loaded?.warning { s.warnings.append(warning) }
            if s.refreshToken == nil, let stored = loaded?.stored, stored.expiry > now() { s.refreshToken = stored.token }
            return s.refreshToken
        }
        if let refreshToken = known {
            do {
                let tokens = try await refreshWith(refreshToken)
                state.withLock { $0.refreshes += 1 }
                return tokens
            } catch let error as CognitoError where error.type == "NotAuthorizedException" {
                // Refused (revoked or expired): forget it and sign in again.
                state.withLock { if $0.refreshToken == refreshToken { $0.refreshToken = nil } }
                save(nil)
            } catch let error as CognitoError {
                throw error.fmError(hiding: secrets)
            }
        }
        do {
            let tokens = try await signInWithSRP()
            state.withLock { $0.srpSignIns += 1 }
            if let refresh = tokens.refreshToken {
                save(FMStoredToken(token: refresh, expiry: now().addingTimeInterval(Self.refreshTokenLifetime)))
            }
            return tokens
        } catch let error as CognitoError {
            throw error.fmError(hiding: secrets)
        }
    }

    /// Writes the refresh-token store (no lock held), keeping its warning, if any, for ``takeWarnings()``.
    private func save(_ token: FMStoredToken?) {
        guard let warning = store?.save(token) else { return }
        state.withLock { $0.warnings.append(warning) }
    }

    private func refreshWith(_ refreshToken: String) async throws -> Tokens {
        let answer = try await call("InitiateAuth", [
            "AuthFlow": "REFRESH_TOKEN_AUTH", "ClientId": configuration.clientID,
            "AuthParameters": ["REFRESH_TOKEN": refreshToken],
        ])
        // Cognito's refresh answer carries no refresh token: the one we have stays.
        return try tokens(from: answer, keeping: refreshToken)
    }

    /// `USER_SRP_AUTH`: InitiateAuth → PASSWORD_VERIFIER → RespondToAuthChallenge, then any MFA challenge.
    private func signInWithSRP() async throws -> Tokens {
        let a = CognitoSRP.randomSecret()
        let A = CognitoSRP.publicKey(secret: a)
        let first = try await call("InitiateAuth", [
            "AuthFlow": "USER_SRP_AUTH", "ClientId": configuration.clientID,
            "AuthParameters": ["USERNAME": username, "SRP_A": A.hex],
        ])
        guard first["ChallengeName"] as? String == "PASSWORD_VERIFIER" else {
            throw CognitoError.unexpected("InitiateAuth answered \(first["ChallengeName"] as? String ?? "no challenge"), not PASSWORD_VERIFIER")
        }
        let parameters = first["ChallengeParameters"] as? [String: Any] ?? [:]
        guard let saltHex = parameters["SALT"] as? String, let salt = BigUInt(hex: saltHex),
              let bHex = parameters["SRP_B"] as? String, let B = BigUInt(hex: bHex),
              let secretBlock = parameters["SECRET_BLOCK"] as? String, let blockBytes = Data(base64Encoded: secretBlock),
              let userID = parameters["USER_ID_FOR_SRP"] as? String, !userID.isEmpty else {
            throw CognitoError.unexpected("PASSWORD_VERIFIER lacks SALT, SRP_B, SECRET_BLOCK or USER_ID_FOR_SRP")
        }
        let poolName = CognitoSRP.poolName(configuration.userPoolID)
        guard let key = CognitoSRP.clientKey(a: a, A: A, B: B, salt: salt, poolName: poolName, userID: userID, password: password) else {
            throw CognitoError.unexpected("Cognito sent an unusable SRP_B")
        }
        let timestamp = Self.timestamp(now())
        let signature = CognitoSRP.claimSignature(key: key, poolName: poolName, userID: userID, secretBlock: Array(blockBytes), timestamp: timestamp)
        let challengeUser = parameters["USERNAME"] as? String ?? userID
        var request: [String: Any] = [
            "ChallengeName": "PASSWORD_VERIFIER", "ClientId": configuration.clientID,
            "ChallengeResponses": ["USERNAME": challengeUser, "PASSWORD_CLAIM_SECRET_BLOCK": secretBlock, "TIMESTAMP": timestamp,
                                   "PASSWORD_CLAIM_SIGNATURE": Data(signature).base64EncodedString()],
        ]
        if let session = first["Session"] as? String { request["Session"] = session }
        var answer = try await call("RespondToAuthChallenge", request)
        // At most a few more challenges (MFA); never a loop.
        for _ in 0..<3 {
            guard let challenge = answer["ChallengeName"] as? String else { return try tokens(from: answer, keeping: nil) }
            guard challenge == "SOFTWARE_TOKEN_MFA" || challenge == "SMS_MFA" else {
                throw CognitoError(type: challenge, message: challenge == "NEW_PASSWORD_REQUIRED"
                                   ? "The Claris ID sign-in stopped at the NEW_PASSWORD_REQUIRED challenge: set a new password for this account (Claris customer console), then sign in again"
                                   : "The Claris ID sign-in stopped at the \(challenge) challenge, which SwiftFM does not answer", status: nil)
            }
            guard let mfa else {
                throw CognitoError(type: challenge, message: "The Claris ID sign-in needs an answer to the \(challenge) challenge: pass an mfa handler to FMClarisIDTokenProvider.signIn", status: nil)
            }
            let challengeParameters = (answer["ChallengeParameters"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
            let code: String
            do {
                code = try await mfa(FMClarisIDChallenge(name: challenge, parameters: challengeParameters))
            } catch let error as FMError {
                throw error
            } catch {
                throw CognitoError(type: challenge, message: "The MFA handler failed: \(error)", status: nil)
            }
            var responses = ["USERNAME": challengeParameters["USER_ID_FOR_SRP"] ?? challengeUser]
            responses[challenge == "SMS_MFA" ? "SMS_MFA_CODE" : "SOFTWARE_TOKEN_MFA_CODE"] = code
            var next: [String: Any] = ["ChallengeName": challenge, "ClientId": configuration.clientID, "ChallengeResponses": responses]
            if let session = answer["Session"] as? String { next["Session"] = session }
            answer = try await call("RespondToAuthChallenge", next)
        }
        throw CognitoError.unexpected("Cognito kept asking challenges")
    }

    private func tokens(from answer: [String: Any], keeping refreshToken: String?) throws -> Tokens {
        guard let result = answer["AuthenticationResult"] as? [String: Any], let idToken = result["IdToken"] as? String, !idToken.isEmpty else {
            throw CognitoError.unexpected("the answer has no AuthenticationResult.IdToken")
        }
        // Kept and sent as `Authorization: FMID <token>`: one that cannot be (a space, CR, LF, a control
        // character) would fail every login until its `exp`, never renewed.
        guard RequestBuilder.isValidToken(idToken) else {
            throw CognitoError.unexpected("AuthenticationResult.IdToken cannot be sent as a header value")
        }
        let expiresIn = (result["ExpiresIn"] as? NSNumber)?.doubleValue ?? 3600
        let received = now()
        let expiry = Self.expiry(ofJWT: idToken, received: received, expiresIn: expiresIn)
        // An empty refresh token is none: kept, it would only cost a refused refresh later.
        let newRefreshToken = (result["RefreshToken"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        return Tokens(idToken: idToken, expiry: expiry, refreshToken: newRefreshToken ?? refreshToken, received: received)
    }

    // MARK: Wire

    /// A Cognito error (`__type` and `message`), or a failure to reach or read Cognito.
    struct CognitoError: Error {
        var type: String
        var message: String
        var status: Int?
        var code: String = FMError.ClientCode.signInFailed

        static func unexpected(_ message: String) -> CognitoError {
            CognitoError(type: "MalformedResponse", message: "Unexpected Cognito answer: " + message, status: nil,
                         code: FMError.ClientCode.malformedResponse)
        }

        /// The error the waiting calls get. Its text may be Cognito's (an exception, its message, a challenge's
        /// name): `secrets` are removed from it, and it is made printable and short (``FMError/serverText(_:limit:)``).
        func fmError(hiding secrets: [String]) -> FMError {
            FMError(code: code, message: FMError.serverText(Redaction.scrub(message, secrets: secrets)), httpStatus: status,
                    underlying: "Cognito " + FMError.serverText(Redaction.scrub(type, secrets: secrets), limit: 100))
        }
    }

    /// POSTs one Cognito JSON request (`X-Amz-Target: AWSCognitoIdentityProviderService.<target>`).
    private func call(_ target: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: configuration.cognitoURL, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/x-amz-json-1.1", forHTTPHeaderField: "Content-Type")
        request.setValue("AWSCognitoIdentityProviderService." + target, forHTTPHeaderField: "X-Amz-Target")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let host = configuration.cognitoURL.host ?? "?"
        let (data, status) = try await exchange(request, host: host)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        guard (200..<300).contains(status) else {
            let rawType = object?["__type"] as? String ?? "HTTP \(status)"
            // `__type` may carry a namespace: `com.amazonaws…#NotAuthorizedException`.
            let type = rawType.split(separator: "#").last.map(String.init) ?? rawType
            let message = object?["message"] as? String ?? object?["Message"] as? String ?? "Cognito answered HTTP \(status)"
            throw CognitoError(type: type, message: message, status: status)
        }
        guard let object else { throw CognitoError.unexpected("not a JSON object") }
        return object
    }

    /// The most bytes a Cognito answer may have (its answers are a few KB): past it the sign-in fails with `-1011`.
    static let maxAnswerBytes = 1 << 20

    /// What one Cognito exchange gathered.
    private struct Gathered {
        var status = 0
        var body = Data()
        var failure: CognitoError?
        /// The exchange's timer until the exchange ends (cancelled then, so that it lets go of the exchange at
        /// once instead of holding it, its answer included, for the rest of the timeout).
        var timer: Deadline?
        var ended = false
    }

    /// Sends one Cognito request through ``transport``, as every other request: bounded by `timeout` (`-1004`),
    /// by ``maxAnswerBytes`` (`-1011`), and never redirected (a 3xx is an error naming it, `-1003`).
    private func exchange(_ request: URLRequest, host: String) async throws -> (Data, Int) {
        let gathered = Locked(Gathered())
        let finished = Once()
        let timeout = self.timeout
        let transport = self.transport
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Int), Error>) in
            let finish: @Sendable (CognitoError?) -> Void = { failure in
                guard finished.claim() else { return }
                let (outcome, timer) = gathered.withLock { g -> (Result<(Data, Int), CognitoError>, Deadline?) in
                    defer { g = Gathered(ended: true) }
                    if let failure = g.failure ?? failure { return (.failure(failure), g.timer) }
                    return (.success((g.body, g.status)), g.timer)
                }
                timer?.cancel()
                continuation.resume(with: outcome.mapError { $0 as Error })
            }
            let task = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
                response: { response in
                    let status = response.statusCode
                    if (300..<400).contains(status) {
                        let location = response.value(forHTTPHeaderField: "Location") ?? "nowhere"
                        gathered.withLock {
                            $0.failure = CognitoError(type: "Redirect", message: "Cognito at \(host) answered HTTP \(status) to \(location): "
                                                      + "a redirect is never followed (check FMClarisIDConfiguration.cognitoURL)",
                                                      status: status, code: FMError.ClientCode.transport)
                        }
                        return false
                    }
                    gathered.withLock { $0.status = status }
                    return true
                },
                data: { data in
                    gathered.withLock { g in
                        g.body.append(data)
                        guard g.body.count > Self.maxAnswerBytes else { return true }
                        g.failure = CognitoError(type: "TooLarge", message: "Cognito at \(host) answered more than \(Self.maxAnswerBytes) bytes",
                                                 status: g.status, code: FMError.ClientCode.responseTooLarge)
                        g.body = Data()
                        return false
                    }
                },
                complete: { error in
                    finish(error.map { error in
                        CognitoError(type: "Transport", message: "Cannot reach Cognito at \(host): \(error.localizedDescription)",
                                     status: nil, code: FMError.ClientCode.transport)
                    })
                }))
            let seconds = min(Deadline.clamped(timeout), 86_400)   // the one clamp, then at most a day for Cognito
            let timer = Deadline.after(seconds: seconds) {
                finish(CognitoError(type: "Timeout", message: "Cognito at \(FMError.address(of: request.url)) did not answer within \(timeout) s",
                                    status: nil, code: FMError.ClientCode.timeout))
                task.cancel()
            }
            // An exchange that ended already (the transport answered before this line) cancels its timer here.
            if gathered.withLock({ g in g.timer = g.ended ? nil : timer; return g.ended }) { timer.cancel() }
        }
    }

    /// The transport of every sign-in that is given none: on Linux ``FMCurlTransport`` where libcurl loads,
    /// else ``FMURLSessionTransport`` (no cookies, no cache, no redirects followed).
    static let sharedTransport: any FMTransport = {
        #if os(Linux)
        if FMCurlTransport.isAvailable { return FMCurlTransport(idleTimeout: 60, maxConnectionsPerHost: 8) }
        #endif
        return FMURLSessionTransport(idleTimeout: 60, maxConnectionsPerHost: 8)
    }()

    /// Cognito's TIMESTAMP: `Sat Sep 5 09:03:07 UTC 2026` (English, UTC, day not zero-padded).
    static func timestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE MMM d HH:mm:ss 'UTC' yyyy"
        return formatter.string(from: date)
    }

    /// The longest an ID token is taken to live, whatever it says: Cognito's longest (a day).
    static let longestLifetime: TimeInterval = 24 * 3600

    /// When a fetch renews an ID token that arrived at `received` and expires at `expiry` (local clock):
    /// ``margin`` before `expiry`, but not sooner than ``shortestReuse`` after it arrived.
    static func renewal(expiry: Date, received: Date) -> Date {
        max(expiry.addingTimeInterval(-margin), received.addingTimeInterval(shortestReuse))
    }

    /// When an ID token received at `received` (the local clock) expires, on the local clock:
    /// - with `iat` and `exp` claims, its lifetime as the token states it (`exp` − `iat`, at most
    ///   ``longestLifetime``) counted from `received`, so a local clock that is off by hours neither renews the
    ///   token on every call (fast) nor keeps it past its end (slow);
    /// - with `exp` alone, that moment;
    /// - otherwise (not a JWT, no `exp`) `expiresIn` seconds (Cognito's `ExpiresIn`) from `received`.
    static func expiry(ofJWT token: String, received: Date, expiresIn: TimeInterval) -> Date {
        let (exp, iat) = claims(ofJWT: token)
        guard let exp else { return received.addingTimeInterval(expiresIn) }
        guard let iat else { return Date(timeIntervalSince1970: exp) }
        let lifetime = exp - iat
        guard lifetime.isFinite else { return received.addingTimeInterval(lifetime > 0 ? longestLifetime : 0) }
        return received.addingTimeInterval(min(max(0, lifetime), longestLifetime))
    }

    /// The `exp` and `iat` claims of a JWT (read, not verified), each `nil` when absent or not a number.
    static func claims(ofJWT token: String) -> (exp: Double?, iat: Double?) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return (nil, nil) }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload),
              let claims = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return (nil, nil) }
        return ((claims["exp"] as? NSNumber)?.doubleValue, (claims["iat"] as? NSNumber)?.doubleValue)
    }
}

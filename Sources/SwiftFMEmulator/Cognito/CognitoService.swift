import Foundation
import FMCrypto

/// The emulator playing Amazon Cognito for Claris ID (FileMaker Cloud) sign-in, when enabled
/// (``Emulator/clarisID``): every schema account is a user of the `.fileMakerCloud` pool with the same
/// username and password. It answers the Cognito JSON protocol at the emulator's base URL
/// (`X-Amz-Target: AWSCognitoIdentityProviderService.InitiateAuth` / `.RespondToAuthChallenge`), verifies
/// SRP for real, issues RS256 ID and access tokens with `exp`, refreshes with `REFRESH_TOKEN_AUTH`, and
/// lets the Data API log in with `Authorization: FMID <IdToken>` while the token has not expired.
///
/// The SRP arithmetic is FMCrypto's, shared with the client; the independent check of this side is
/// pycognito in CI (`Tests/python/clarisid_check.py`).
final class CognitoService: Sendable {
    /// The pool and app client a client must name (those of FileMaker Cloud, so that defaults match).
    static let userPoolID = "us-west-2_NqkuZcXQY"
    static let clientID = "4l9rvl4mv5es1eep1qe97cautn"
    static let region = "us-west-2"
    static let issuer = "https://cognito-idp.us-west-2.amazonaws.com/us-west-2_NqkuZcXQY"
    /// SRP exchanges and MFA sessions older than this are forgotten (Cognito's session lasts 3 minutes).
    static let pendingLifetime: TimeInterval = 180
    /// At most this many exchanges are kept waiting (the oldest go first).
    static let maxPending = 10_000

    // Bounds: a request's fields are capped before anything is parsed or computed, and every token is
    // forgotten when it expires or is revoked, so a long-running emulator keeps no memory per sign-in.

    /// The largest Cognito request body read, in bytes (Cognito's requests are a few KB).
    static let maxBodyBytes = 64 * 1024
    /// The most hex digits of `SRP_A` (the 3072-bit group: 768 digits, with room for leading zeros).
    static let maxSRPADigits = 1024
    /// The longest `USERNAME`, `ClientId`, `AuthFlow` and `ChallengeName` (Cognito's limit for each is 128).
    static let maxNameLength = 128
    /// The longest `Session` (Cognito's limit).
    static let maxSessionLength = 2048
    /// The longest other value of `AuthParameters` or `ChallengeResponses`.
    static let maxParameterLength = 4096
    /// The most entries of `AuthParameters` or `ChallengeResponses`.
    static let maxParameters = 32
    /// The most ID tokens and refresh tokens remembered (each map); past it the soonest to expire go first.
    static let maxTokens = 10_000
    /// How long a refresh token is honoured (Cognito's default: 30 days).
    static let refreshTokenLifetime: TimeInterval = 30 * 86_400
    /// Expired tokens, exchanges and MFA sessions are swept at most this often (emulator clock), and at once
    /// when a map reaches its cap.
    static let sweepInterval: TimeInterval = 60
    /// The most accounts with a behaviour (``Emulator/setClarisIDBehavior(_:username:)``); past it the
    /// behaviour set longest ago is dropped.
    static let maxBehaviors = 1_000

    struct User {
        var userID: String
        var password: String
        var salt: BigUInt
        var verifier: BigUInt
    }

    struct Pending {
        var username: String
        var userID: String
        var b: BigUInt
        var B: BigUInt
        var A: BigUInt
        var verifier: BigUInt
        var created: Date
    }

    struct MFASession {
        var username: String
        var userID: String
        /// `SOFTWARE_TOKEN_MFA` or `SMS_MFA`: the challenge this session must be answered with.
        var challenge: String
        var code: String
        var created: Date
    }

    struct State {
        var enabled = false
        var tokenLifetime: TimeInterval = 3600
        /// Per lower-cased username: the id, salt and verifier of its current password.
        var users: [String: User] = [:]
        /// SRP exchanges waiting for their `PASSWORD_VERIFIER` answer, by SECRET_BLOCK.
        var pending: [String: Pending] = [:]
        var mfaSessions: [String: MFASession] = [:]
        /// Lower-cased username → the challenge or error its sign-in gets (none: signed in on the password).
        var behaviors: [String: EmulatorClarisIDBehavior] = [:]
        /// Lower-cased username → when its behaviour was set (a sequence number), to drop the oldest past the cap.
        var behaviorOrder: [String: UInt64] = [:]
        var behaviorSequence: UInt64 = 0
        /// Refresh token → username and expiry.
        var refreshTokens: [String: RefreshGrant] = [:]
        /// ID tokens issued → their `exp`.
        var idTokens: [String: Date] = [:]
        /// When expired entries were last swept.
        var sweptAt: Date = .distantPast

        /// Forgets expired ID and refresh tokens, exchanges and MFA sessions, at most every ``sweepInterval``
        /// unless `force`; then drops the soonest-expiring tokens past ``maxTokens``.
        mutating func sweep(now: Date, force: Bool = false) {
            guard force || now.timeIntervalSince(sweptAt) >= CognitoService.sweepInterval || now < sweptAt else { return }
            sweptAt = now
            idTokens = idTokens.filter { $0.value > now }
            refreshTokens = refreshTokens.filter { $0.value.expires > now }
            pending = pending.filter { now.timeIntervalSince($0.value.created) < CognitoService.pendingLifetime }
            mfaSessions = mfaSessions.filter { now.timeIntervalSince($0.value.created) < CognitoService.pendingLifetime }
            if idTokens.count >= CognitoService.maxTokens {
                for (token, _) in idTokens.sorted(by: { $0.value < $1.value }).prefix(idTokens.count - CognitoService.maxTokens + 1) {
                    idTokens[token] = nil
                }
            }
            if refreshTokens.count >= CognitoService.maxTokens {
                for (token, _) in refreshTokens.sorted(by: { $0.value.expires < $1.value.expires })
                    .prefix(refreshTokens.count - CognitoService.maxTokens + 1) {
                    refreshTokens[token] = nil
                }
            }
        }

        /// Sets or removes the behaviour of `key`, dropping the one set longest ago past ``maxBehaviors``.
        mutating func setBehavior(_ behavior: EmulatorClarisIDBehavior?, for key: String) {
            guard let behavior else {
                behaviors[key] = nil
                behaviorOrder[key] = nil
                return
            }
            if behaviors[key] == nil, behaviors.count >= CognitoService.maxBehaviors,
               let oldest = behaviorOrder.min(by: { $0.value < $1.value })?.key {
                behaviors[oldest] = nil
                behaviorOrder[oldest] = nil
            }
            behaviorSequence += 1
            behaviors[key] = behavior
            behaviorOrder[key] = behaviorSequence
        }
        var signIns = 0
        var failedSignIns = 0
        var refreshes = 0
        /// Cognito JSON requests received (any target, any outcome).
        var requests = 0
        /// When set, every sign-in and refresh is refused with NotAuthorizedException and this message.
        var refusal: String?
    }

    let state = Locked(State())

    /// A refresh token's owner and expiry.
    struct RefreshGrant {
        var username: String
        var expires: Date
    }

    struct Failure: Error {
        var type: String
        var message: String
    }

    // MARK: Routing

    /// The answer to a Cognito request, the JWKS or the pool configuration; `nil` when `request` is none
    /// of them (or the service is off). Runs outside the emulator's state lock (SRP costs milliseconds).
    func answer(_ request: HTTPRequest, now: Date, accounts: () -> [(username: String, password: String)]) -> HTTPResponse? {
        guard state.withLock({ $0.enabled }) else { return nil }
        if let target = request.header("X-Amz-Target") {
            guard request.method == "POST" else { return nil }
            state.withLock { $0.requests += 1 }
            return cognito(target: target, body: request.body, now: now, accounts: accounts)
        }
        guard request.method == "GET" || request.method == "HEAD" else { return nil }
        switch request.rawPath {
        case "/\(Self.userPoolID)/.well-known/jwks.json":
            return Self.json(EmulatorTokenKey.jwks, type: "application/json")
        case "/endpoint/userpool/2.2.0.my.claris.com.json":
            return Self.json(["errcode": "Ok", "errmessage": NSNull(), "csrid": NSNull(),
                              "data": ["Region": Self.region, "UserPool_ID": Self.userPoolID, "Client_ID": Self.clientID,
                                       "API_Host": "api-cp-global.ifmcloud.com/2-2", "FCC_Host": "console.claris.com"]],
                             type: "application/json")
        default:
            return nil
        }
    }

    /// What the Data API login does with `Authorization: FMID <token>`: `.reject` for a token this
    /// service issued that has expired (FileMaker Cloud's 401 with an HTML body), `.accept` for one it
    /// issued that has not, `.unknown` otherwise (the emulator's own rules decide).
    enum FMIDVerdict: Equatable { case accept(until: Date), reject, unknown }

    func verdict(forFMID token: String, now: Date) -> FMIDVerdict {
        let (enabled, known) = state.withLock { s in (s.enabled, s.idTokens[token]) }
        guard enabled else { return .unknown }
        if let exp = known {
            if exp > now { return .accept(until: exp) }
            state.withLock { _ = $0.idTokens.removeValue(forKey: token) }   // expired: forgotten
            return .reject
        }
        // Not remembered (expired and forgotten, or revoked): a token this service signed whose `exp` has
        // passed still gets FileMaker Cloud's rejection, read from the token itself.
        if let exp = Self.signedExpiry(of: token), exp <= now { return .reject }
        return .unknown
    }

    /// The `exp` of an ID token this service signed (its RS256 signature checked by signing again:
    /// PKCS#1 v1.5 is deterministic), or `nil` for any other text.
    static func signedExpiry(of token: String) -> Date? {
        guard token.utf8.count <= 8192 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        guard EmulatorTokenKey.base64URL(EmulatorTokenKey.sign(Array("\(parts[0]).\(parts[1])".utf8))) == parts[2] else { return nil }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let payload = Data(base64Encoded: text),
              let claims = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any],
              claims["token_use"] as? String == "id", let exp = (claims["exp"] as? NSNumber)?.doubleValue else { return nil }
        return Date(timeIntervalSince1970: exp)
    }

    /// Forgets the ID token `token` (revoked): a later FMID login with it is refused.
    func revoke(idToken token: String) {
        state.withLock { _ = $0.idTokens.removeValue(forKey: token) }
    }

    /// FileMaker Cloud's answer to an expired Claris ID token: 401 with an HTML body.
    static func expiredTokenResponse() -> HTTPResponse {
        HTTPResponse(status: 401, headers: [("Content-Type", "text/html; charset=utf-8")],
                     body: Data("<html><head><title>401 Authorization Required</title></head><body><h1>401 Authorization Required</h1></body></html>\n".utf8))
    }

    private func cognito(target: String, body: Data, now: Date, accounts: () -> [(username: String, password: String)]) -> HTTPResponse {
        do {
            guard body.count <= Self.maxBodyBytes else {
                throw Failure(type: "InvalidParameterException", message: "The request body is larger than \(Self.maxBodyBytes) bytes.")
            }
            guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
                throw Failure(type: "SerializationException", message: "The request body is not a JSON object.")
            }
            try Self.checkBounds(object)
            // Swept after the request, so a token that expired since the last sweep is still told apart
            // ("Refresh Token has expired") from one never issued.
            defer { state.withLock { $0.sweep(now: now) } }
            if let client = object["ClientId"] as? String, client != Self.clientID {
                throw Failure(type: "ResourceNotFoundException", message: "User pool client \(client) does not exist.")
            }
            if object["ClientId"] == nil { throw Failure(type: "InvalidParameterException", message: "1 validation error detected: Value null at 'clientId' failed to satisfy constraint: Member must not be null") }
            switch target {
            case "AWSCognitoIdentityProviderService.InitiateAuth":
                return Self.json(try initiateAuth(object, now: now, accounts: accounts))
            case "AWSCognitoIdentityProviderService.RespondToAuthChallenge":
                return Self.json(try respond(object, now: now))
            default:
                throw Failure(type: "UnknownOperationException", message: "The emulator's Cognito answers InitiateAuth and RespondToAuthChallenge only.")
            }
        } catch let failure as Failure {
            return Self.json(["__type": failure.type, "message": failure.message], status: 400)
        } catch {
            return Self.json(["__type": "InternalErrorException", "message": "\(error)"], status: 500)
        }
    }

    /// Cognito's validation error for a value past its length limit.
    static func tooLong(_ field: String, limit: Int) -> Failure {
        Failure(type: "InvalidParameterException",
                message: "1 validation error detected: Value at '\(field)' failed to satisfy constraint: Member must have length less than or equal to \(limit)")
    }

    /// Refuses a request whose fields pass their caps, before any of them is parsed or used.
    static func checkBounds(_ object: [String: Any]) throws {
        for (key, limit) in [("ClientId", maxNameLength), ("AuthFlow", maxNameLength), ("ChallengeName", maxNameLength),
                             ("Session", maxSessionLength)] {
            if let text = object[key] as? String, text.utf8.count > limit {
                throw tooLong(key.prefix(1).lowercased() + key.dropFirst(), limit: limit)
            }
        }
        for mapKey in ["AuthParameters", "ChallengeResponses"] {
            guard let value = object[mapKey] else { continue }
            guard let map = value as? [String: Any] else {
                throw Failure(type: "SerializationException", message: "\(mapKey) must be a map of strings.")
            }
            let field = mapKey.prefix(1).lowercased() + mapKey.dropFirst()
            guard map.count <= maxParameters else {
                throw Failure(type: "InvalidParameterException",
                              message: "1 validation error detected: Value at '\(field)' failed to satisfy constraint: Member must have at most \(maxParameters) entries")
            }
            for (name, entry) in map {
                guard name.utf8.count <= maxNameLength else { throw tooLong(field, limit: maxNameLength) }
                guard let text = entry as? String else { continue }
                let limit = switch name {
                case "SRP_A": maxSRPADigits
                case "USERNAME": maxNameLength
                default: maxParameterLength
                }
                if text.utf8.count > limit { throw tooLong("\(field).\(name)", limit: limit) }
            }
        }
    }

    // MARK: InitiateAuth

    private func initiateAuth(_ object: [String: Any], now: Date, accounts: () -> [(username: String, password: String)]) throws -> [String: Any] {
        let flow = object["AuthFlow"] as? String ?? ""
        let parameters = object["AuthParameters"] as? [String: Any] ?? [:]
        switch flow {
        case "USER_SRP_AUTH":
            guard let username = parameters["USERNAME"] as? String, !username.isEmpty else {
                throw Failure(type: "InvalidParameterException", message: "Missing required parameter USERNAME")
            }
            guard let aHex = parameters["SRP_A"] as? String, let A = BigUInt(hex: aHex), !(A % CognitoSRP.N).isZero else {
                throw Failure(type: "InvalidParameterException", message: "Missing or invalid required parameter SRP_A")
            }
            if let refusal = state.withLock({ $0.refusal }) { throw Failure(type: "NotAuthorizedException", message: refusal) }
            let key = username.lowercased()
            if let failure = Self.failure(state.withLock { $0.behaviors[key] }, atPasswordCheck: false) {
                if failure.type == "UserNotFoundException" { state.withLock { $0.failedSignIns += 1 } }
                throw failure
            }
            guard let account = accounts().first(where: { $0.username.lowercased() == key }) else {
                state.withLock { $0.failedSignIns += 1 }
                throw Failure(type: "UserNotFoundException", message: "User does not exist.")
            }
            let user = self.user(key, password: account.password)
            let b = CognitoSRP.randomSecret()
            let B = CognitoSRP.serverPublicKey(b: b, verifier: user.verifier)
            var blockBytes = [UInt8](repeating: 0, count: 48)
            var generator = SystemRandomNumberGenerator()
            for i in blockBytes.indices { blockBytes[i] = generator.next() }
            let secretBlock = Data(blockBytes).base64EncodedString()
            state.withLock { s in
                s.pending = s.pending.filter { now.timeIntervalSince($0.value.created) < Self.pendingLifetime }
                if s.pending.count >= Self.maxPending, let oldest = s.pending.min(by: { $0.value.created < $1.value.created }) {
                    s.pending[oldest.key] = nil
                }
                s.pending[secretBlock] = Pending(username: key, userID: user.userID, b: b, B: B, A: A, verifier: user.verifier, created: now)
            }
            return ["ChallengeName": "PASSWORD_VERIFIER",
                    "ChallengeParameters": ["SALT": user.salt.hex, "SRP_B": B.hex, "SECRET_BLOCK": secretBlock,
                                            "USERNAME": user.userID, "USER_ID_FOR_SRP": user.userID]]
        case "REFRESH_TOKEN_AUTH", "REFRESH_TOKEN":
            guard let token = parameters["REFRESH_TOKEN"] as? String, !token.isEmpty else {
                throw Failure(type: "InvalidParameterException", message: "Missing required parameter REFRESH_TOKEN")
            }
            let found = state.withLock { s -> (String, String?)?? in
                guard let grant = s.refreshTokens[token] else { return nil }
                guard grant.expires > now else {
                    s.refreshTokens[token] = nil
                    return .some(nil)
                }
                return (grant.username, s.refusal)
            }
            guard let found else { throw Failure(type: "NotAuthorizedException", message: "Invalid Refresh Token") }
            guard let (username, refusal) = found else { throw Failure(type: "NotAuthorizedException", message: "Refresh Token has expired") }
            if let refusal { throw Failure(type: "NotAuthorizedException", message: refusal) }
            if let failure = Self.failure(state.withLock { $0.behaviors[username] }, atPasswordCheck: false)
                ?? Self.failure(state.withLock { $0.behaviors[username] }, atPasswordCheck: true) {
                throw failure
            }
            let userID = state.withLock { $0.users[username]?.userID } ?? UUID().uuidString.lowercased()
            state.withLock { $0.refreshes += 1 }
            // Cognito's refresh answer carries no new refresh token.
            return ["ChallengeParameters": [String: Any](), "AuthenticationResult": issue(username: username, userID: userID, now: now, refresh: false)]
        case "USER_PASSWORD_AUTH":
            throw Failure(type: "InvalidParameterException", message: "USER_PASSWORD_AUTH flow not enabled for this client")
        default:
            throw Failure(type: "InvalidParameterException", message: "Unsupported AuthFlow \(flow)")
        }
    }

    /// The stored user for `key`, (re)made when the password changed: a stable id, a salt, a verifier.
    private func user(_ key: String, password: String) -> User {
        if let known = state.withLock({ $0.users[key] }), known.password == password { return known }
        let userID = state.withLock { $0.users[key]?.userID } ?? UUID().uuidString.lowercased()
        var generator = SystemRandomNumberGenerator()
        // 16 bytes, the first in 0x01…0x7f: the same padHex whether a client reads SALT as a string or a number.
        let saltBytes = [UInt8.random(in: 1...0x7f, using: &generator)] + (0..<15).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let salt = BigUInt(bytes: saltBytes)
        let verifier = CognitoSRP.verifier(salt: salt, poolName: CognitoSRP.poolName(Self.userPoolID), userID: userID, password: password)
        let user = User(userID: userID, password: password, salt: salt, verifier: verifier)
        state.withLock { $0.users[key] = user }
        return user
    }

    // MARK: RespondToAuthChallenge

    private func respond(_ object: [String: Any], now: Date) throws -> [String: Any] {
        let challenge = object["ChallengeName"] as? String ?? ""
        let responses = object["ChallengeResponses"] as? [String: Any] ?? [:]
        switch challenge {
        case "PASSWORD_VERIFIER":
            guard let block = responses["PASSWORD_CLAIM_SECRET_BLOCK"] as? String,
                  let signature = responses["PASSWORD_CLAIM_SIGNATURE"] as? String,
                  let timestamp = responses["TIMESTAMP"] as? String else {
                throw Failure(type: "InvalidParameterException", message: "Missing required parameter PASSWORD_CLAIM_SIGNATURE, PASSWORD_CLAIM_SECRET_BLOCK or TIMESTAMP")
            }
            let pending = state.withLock { s -> Pending? in
                defer { s.pending[block] = nil }
                return s.pending[block].flatMap { now.timeIntervalSince($0.created) < Self.pendingLifetime ? $0 : nil }
            }
            guard let pending else { throw Failure(type: "NotAuthorizedException", message: "Invalid session for the user, session is expired.") }
            guard Self.isCognitoTimestamp(timestamp) else {
                throw Failure(type: "InvalidParameterException", message: "TIMESTAMP format should be EEE MMM d HH:mm:ss z yyyy in english.")
            }
            let poolName = CognitoSRP.poolName(Self.userPoolID)
            guard let secretBlock = Data(base64Encoded: block),
                  let key = CognitoSRP.serverKey(b: pending.b, B: pending.B, A: pending.A, verifier: pending.verifier),
                  let given = Data(base64Encoded: signature),
                  Self.constantTimeEqual(Array(given), CognitoSRP.claimSignature(key: key, poolName: poolName, userID: pending.userID,
                                                                                 secretBlock: Array(secretBlock), timestamp: timestamp)) else {
                state.withLock { $0.failedSignIns += 1 }
                throw Failure(type: "NotAuthorizedException", message: "Incorrect username or password.")
            }
            let behavior = state.withLock { $0.behaviors[pending.username] }
            if let failure = Self.failure(behavior, atPasswordCheck: true) { throw failure }
            switch behavior {
            case .softwareTokenMFA(let code), .smsMFA(let code):
                let name = behavior == .softwareTokenMFA(code: code) ? "SOFTWARE_TOKEN_MFA" : "SMS_MFA"
                let session = Self.randomToken(bytes: 48)
                state.withLock { s in
                    s.mfaSessions = s.mfaSessions.filter { now.timeIntervalSince($0.value.created) < Self.pendingLifetime }
                    if s.mfaSessions.count >= Self.maxPending { s.mfaSessions.removeAll() }
                    s.mfaSessions[session] = MFASession(username: pending.username, userID: pending.userID, challenge: name, code: code, created: now)
                }
                var parameters = ["USER_ID_FOR_SRP": pending.userID]
                if name == "SMS_MFA" {
                    parameters["CODE_DELIVERY_DELIVERY_MEDIUM"] = "SMS"
                    parameters["CODE_DELIVERY_DESTINATION"] = "+*******0100"
                }
                return ["ChallengeName": name, "Session": session, "ChallengeParameters": parameters]
            case .newPasswordRequired:
                // Cognito's shape; the emulator does not take a new password (the answer is refused).
                return ["ChallengeName": "NEW_PASSWORD_REQUIRED", "Session": Self.randomToken(bytes: 48),
                        "ChallengeParameters": ["USER_ID_FOR_SRP": pending.userID, "requiredAttributes": "[]",
                                                "userAttributes": "{\"email_verified\":\"true\"}"]]
            default:
                break
            }
            state.withLock { $0.signIns += 1 }
            return ["ChallengeParameters": [String: Any](), "AuthenticationResult": issue(username: pending.username, userID: pending.userID, now: now, refresh: true)]
        case "SOFTWARE_TOKEN_MFA", "SMS_MFA":
            guard let session = object["Session"] as? String else {
                throw Failure(type: "InvalidParameterException", message: "Missing required parameter Session")
            }
            let codeKey = challenge == "SMS_MFA" ? "SMS_MFA_CODE" : "SOFTWARE_TOKEN_MFA_CODE"
            let given = responses[codeKey] as? String ?? ""
            let found = state.withLock { s -> MFASession? in
                defer { s.mfaSessions[session] = nil }
                guard let m = s.mfaSessions[session], now.timeIntervalSince(m.created) < Self.pendingLifetime else { return nil }
                return m
            }
            guard let mfa = found, mfa.challenge == challenge else {
                throw Failure(type: "NotAuthorizedException", message: "Invalid session for the user, session is expired.")
            }
            guard Self.constantTimeEqual(Array(mfa.code.utf8), Array(given.utf8)) else {
                state.withLock { $0.failedSignIns += 1 }
                throw Failure(type: "CodeMismatchException", message: "Invalid code received for user")
            }
            state.withLock { $0.signIns += 1 }
            return ["ChallengeParameters": [String: Any](), "AuthenticationResult": issue(username: mfa.username, userID: mfa.userID, now: now, refresh: true)]
        default:
            throw Failure(type: "InvalidParameterException", message: "Unsupported ChallengeName \(challenge)")
        }
    }

    /// The error `behavior` makes Cognito answer at InitiateAuth (`atPasswordCheck` false: unknown user,
    /// throttling, the security refusal) or after a correct password claim (true: reset required).
    static func failure(_ behavior: EmulatorClarisIDBehavior?, atPasswordCheck: Bool) -> Failure? {
        switch (behavior, atPasswordCheck) {
        case (.userNotFound, false): return Failure(type: "UserNotFoundException", message: "User does not exist.")
        case (.tooManyRequests, false): return Failure(type: "TooManyRequestsException", message: "Rate exceeded")
        case (.securityRefusal, false): return Failure(type: "NotAuthorizedException", message: "Unable to login because of security reasons.")
        case (.passwordResetRequired, true): return Failure(type: "PasswordResetRequiredException", message: "Password reset required for the user")
        default: return nil
        }
    }

    // MARK: Tokens

    /// An AuthenticationResult: RS256 ID and access tokens expiring after the token lifetime, and a
    /// refresh token when `refresh`.
    private func issue(username: String, userID: String, now: Date, refresh: Bool) -> [String: Any] {
        let lifetime = state.withLock { $0.tokenLifetime }
        let iat = Int(now.timeIntervalSince1970)
        let expDate = now.addingTimeInterval(lifetime)
        let exp = Int(expDate.timeIntervalSince1970.rounded(.down))
        let email = username.contains("@") ? username : "\(username)@example.com"
        let idToken = Self.jwt(["sub": userID, "aud": Self.clientID, "email_verified": true, "token_use": "id", "auth_time": iat,
                                "iss": Self.issuer, "cognito:username": userID, "exp": exp, "iat": iat, "email": email,
                                "jti": UUID().uuidString.lowercased()])
        let accessToken = Self.jwt(["sub": userID, "client_id": Self.clientID, "token_use": "access", "scope": "aws.cognito.signin.user.admin",
                                    "auth_time": iat, "iss": Self.issuer, "exp": exp, "iat": iat, "username": userID,
                                    "jti": UUID().uuidString.lowercased()])
        var result: [String: Any] = ["AccessToken": accessToken, "ExpiresIn": Int(lifetime), "IdToken": idToken, "TokenType": "Bearer"]
        let refreshToken = refresh ? Self.randomToken(bytes: 96) : nil
        state.withLock { s in
            // Bounded memory for a long-running emulator: expired tokens go at the sweep, the soonest to
            // expire when a map is full.
            s.sweep(now: now, force: s.idTokens.count >= Self.maxTokens || s.refreshTokens.count >= Self.maxTokens)
            s.idTokens[idToken] = expDate
            if let refreshToken {
                s.refreshTokens[refreshToken] = RefreshGrant(username: username, expires: now.addingTimeInterval(Self.refreshTokenLifetime))
            }
        }
        if let refreshToken { result["RefreshToken"] = refreshToken }
        return result
    }

    static func jwt(_ claims: [String: Any]) -> String {
        let header = ["alg": "RS256", "kid": EmulatorTokenKey.keyID]
        func part(_ object: [String: Any]) -> String {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
            return EmulatorTokenKey.base64URL(Array(data))
        }
        let signingInput = part(header) + "." + part(claims)
        return signingInput + "." + EmulatorTokenKey.base64URL(EmulatorTokenKey.sign(Array(signingInput.utf8)))
    }

    static func randomToken(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return EmulatorTokenKey.base64URL((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// `Sat Sep 5 09:03:07 UTC 2026`: weekday, month, day (not zero-padded), time, `UTC`, year.
    static func isCognitoTimestamp(_ text: String) -> Bool {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].count == 3, parts[1].count == 3, let day = Int(parts[2]), (1...31).contains(day),
              parts[3].count == 8, parts[4] == "UTC", Int(parts[5]) != nil else { return false }
        return true
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    static func json(_ object: [String: Any], status: Int = 200, type: String = "application/x-amz-json-1.1") -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var headers: [(name: String, value: String)] = [("Content-Type", type), ("x-amzn-RequestId", UUID().uuidString.lowercased())]
        if status >= 400, let type = object["__type"] as? String { headers.append(("x-amzn-ErrorType", type)) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}

import Foundation

extension Emulator {
    /// Whether the emulator also plays Amazon Cognito for Claris ID (FileMaker Cloud) sign-in
    /// (`fm-emulator --claris-id`); off by default.
    ///
    /// When on, every schema account is also a Claris ID user with the same username and password, in
    /// FileMaker Cloud's user pool `us-west-2_NqkuZcXQY` and app client `4l9rvl4mv5es1eep1qe97cautn` (the
    /// defaults of SwiftFM's `FMClarisIDConfiguration.fileMakerCloud`, python-fmrest and pycognito). The
    /// emulator then answers, at its base URL:
    /// - the Cognito JSON protocol (`POST /` with `X-Amz-Target: AWSCognitoIdentityProviderService.InitiateAuth`
    ///   or `.RespondToAuthChallenge`, `Content-Type: application/x-amz-json-1.1`): `USER_SRP_AUTH` verified
    ///   for real (salt and verifier stored; a wrong password or signature is `NotAuthorizedException`),
    ///   `REFRESH_TOKEN_AUTH` (answered, as Cognito does, without a new refresh token), and
    ///   `SOFTWARE_TOKEN_MFA` for accounts given a code with ``requireClarisIDMFA(username:code:)``, and the
    ///   other challenges and errors of ``EmulatorClarisIDBehavior`` set with ``setClarisIDBehavior(_:username:)``;
    /// - `GET /us-west-2_NqkuZcXQY/.well-known/jwks.json`, the public key of the RS256 tokens;
    /// - `GET /endpoint/userpool/2.2.0.my.claris.com.json`, the pool configuration FileMaker Cloud publishes.
    ///
    /// The Data API login accepts `Authorization: FMID <IdToken>` for an ID token it issued until the token's
    /// `exp` (``clarisIDTokenLifetime`` on the emulator's clock); after that it answers FileMaker Cloud's
    /// rejection, HTTP 401 with an HTML body. The claim's `TIMESTAMP` is checked for its format only (not
    /// against the clock, which tests move).
    public var clarisID: Bool {
        get { core.cognito.state.withLock { $0.enabled } }
        set { core.cognito.state.withLock { $0.enabled = newValue } }
    }

    /// How long the ID and access tokens of ``clarisID`` stay valid, in seconds (3600 by default, as on
    /// FileMaker Cloud); applies to tokens issued afterwards. At least one second.
    public var clarisIDTokenLifetime: TimeInterval {
        get { core.cognito.state.withLock { $0.tokenLifetime } }
        set { core.cognito.state.withLock { $0.tokenLifetime = max(1, newValue.isFinite ? newValue : 3600) } }
    }

    /// Claris ID sign-ins completed (SRP, with MFA when required) since the emulator was created or
    /// ``resetClarisIDCounters()``.
    public var clarisIDSignInCount: Int { core.cognito.state.withLock { $0.signIns } }

    /// Claris ID sign-ins refused (unknown user, wrong password or signature, wrong MFA code).
    public var clarisIDFailedSignInCount: Int { core.cognito.state.withLock { $0.failedSignIns } }

    /// `REFRESH_TOKEN_AUTH` requests answered with new tokens.
    public var clarisIDRefreshCount: Int { core.cognito.state.withLock { $0.refreshes } }

    /// Sets the Claris ID counters (sign-ins, failed sign-ins, refreshes, requests) back to zero.
    public func resetClarisIDCounters() {
        core.cognito.state.withLock {
            $0.requests = 0
            $0.signIns = 0
            $0.failedSignIns = 0
            $0.refreshes = 0
        }
    }

    /// Revokes every refresh token issued so far: a later `REFRESH_TOKEN_AUTH` with one of them is
    /// refused with `NotAuthorizedException` ("Invalid Refresh Token"), as when a refresh token expires.
    public func revokeClarisIDRefreshTokens() {
        core.cognito.state.withLock { $0.refreshTokens.removeAll() }
    }

    /// Requires a `SOFTWARE_TOKEN_MFA` answer of `code` after the password of `username` (any case);
    /// `nil` removes the requirement. The same as ``setClarisIDBehavior(_:username:)`` with
    /// ``EmulatorClarisIDBehavior/softwareTokenMFA(code:)``.
    public func requireClarisIDMFA(username: String, code: String?) {
        setClarisIDBehavior(code.map { .softwareTokenMFA(code: $0) }, username: username)
    }

    /// Makes the Claris ID sign-in of `username` (any case) meet a challenge or an error, to test how a
    /// client copes; `nil` puts the account back to a plain sign-in on its password. Replaces any earlier
    /// behaviour of the account, including one set by ``requireClarisIDMFA(username:code:)``.
    ///
    /// At most 1,000 accounts keep a behaviour: setting one more drops the behaviour set longest ago. A
    /// username longer than 128 bytes (Cognito's limit, so no sign-in can name it) is ignored.
    public func setClarisIDBehavior(_ behavior: EmulatorClarisIDBehavior?, username: String) {
        guard username.utf8.count <= CognitoService.maxNameLength else { return }
        core.cognito.state.withLock { $0.setBehavior(behavior, for: username.lowercased()) }
    }

    /// The behaviour set for `username` (any case) with ``setClarisIDBehavior(_:username:)``, or `nil`.
    public func clarisIDBehavior(username: String) -> EmulatorClarisIDBehavior? {
        core.cognito.state.withLock { $0.behaviors[username.lowercased()] }
    }

    /// Cognito JSON requests received (`X-Amz-Target` POSTs: InitiateAuth, RespondToAuthChallenge, any
    /// other target, answered or refused) since the emulator was created or ``resetClarisIDCounters()``.
    public var clarisIDRequestCount: Int { core.cognito.state.withLock { $0.requests } }

    /// When set, every Claris ID sign-in and refresh is refused with `NotAuthorizedException` and this
    /// message (FileMaker Cloud users see "Unable to login because of security reasons." from some
    /// networks); `nil` to accept again.
    public var clarisIDRefusal: String? {
        get { core.cognito.state.withLock { $0.refusal } }
        set { core.cognito.state.withLock { $0.refusal = newValue } }
    }
}

extension EmulatorState {
    /// Lets the FMID login of a token the emulator's Cognito issued through until `until` (its `exp`). Entries
    /// past their `exp` are swept here (at most every ``CognitoService/sweepInterval``, at once when
    /// ``CognitoService/maxTokens`` are held), so no per-sign-in memory outlives its token.
    mutating func admitIssuedClarisIDToken(_ token: String, until: Date, now: Date) {
        if issuedClarisIDTokens.count >= CognitoService.maxTokens || now.timeIntervalSince(issuedClarisIDTokensSweptAt) >= CognitoService.sweepInterval
            || now < issuedClarisIDTokensSweptAt {
            issuedClarisIDTokensSweptAt = now
            issuedClarisIDTokens = issuedClarisIDTokens.filter { $0.value > now }
            if issuedClarisIDTokens.count >= CognitoService.maxTokens,
               let soonest = issuedClarisIDTokens.min(by: { $0.value < $1.value })?.key {
                issuedClarisIDTokens[soonest] = nil
            }
        }
        issuedClarisIDTokens[token] = until
    }

    /// Whether an FMID login with `token` is let through: accepted by hand, or issued by the emulator's
    /// Cognito and not expired.
    func admitsClarisIDToken(_ token: String, now: Date) -> Bool {
        clarisIDTokens.contains(token) || issuedClarisIDTokens[token].map { $0 > now } == true
    }
}

extension EmulatorCore {
    /// The Cognito part of ``handle(_:)``: answers Cognito requests, and lets an FMID login with an ID
    /// token the service issued through (accepted) or not (expired: 401 HTML). `nil` to route as usual.
    func answerClarisID(_ request: HTTPRequest) -> HTTPResponse? {
        guard cognito.state.withLock({ $0.enabled }) else { return nil }
        let now = state.withLock { clock().addingTimeInterval($0.clockOffset) }
        if let auth = request.header("Authorization").map(trimSpaces), request.method == "POST" {
            let parts = auth.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "fmid" {
                let token = trimSpaces(String(parts[1]))
                switch cognito.verdict(forFMID: token, now: now) {
                case .reject: return CognitoService.expiredTokenResponse()
                case .accept(let until): state.withLock { $0.admitIssuedClarisIDToken(token, until: until, now: now) }
                case .unknown: break
                }
                return nil
            }
        }
        return cognito.answer(request, now: now) {
            state.withLock { $0.schema.accounts.map { (username: $0.username, password: $0.password) } }
        }
    }
}

/// A challenge or an error the emulator's Cognito plays for one account's Claris ID sign-in
/// (``Emulator/setClarisIDBehavior(_:username:)``, or `POST /v1/claris-id/behavior` on the control API).
///
/// Challenges come after a correct password claim (`RespondToAuthChallenge` with `PASSWORD_VERIFIER`);
/// the errors are HTTP 400 with Cognito's `__type` and `message`.
public enum EmulatorClarisIDBehavior: Sendable, Hashable {
    /// `SOFTWARE_TOKEN_MFA` after the password, to be answered with `code` (`SOFTWARE_TOKEN_MFA_CODE`);
    /// another code is `CodeMismatchException`.
    case softwareTokenMFA(code: String)
    /// `SMS_MFA` after the password (with `CODE_DELIVERY_DESTINATION` `+*******0100`), to be answered
    /// with `code` (`SMS_MFA_CODE`); another code is `CodeMismatchException`.
    case smsMFA(code: String)
    /// `NEW_PASSWORD_REQUIRED` after the password (an account created by an administrator); the emulator
    /// does not take a new password.
    case newPasswordRequired
    /// `PasswordResetRequiredException` "Password reset required for the user" after a correct password
    /// claim, and at `REFRESH_TOKEN_AUTH`.
    case passwordResetRequired
    /// `TooManyRequestsException` "Rate exceeded" at `InitiateAuth` (sign-in and refresh).
    case tooManyRequests
    /// `UserNotFoundException` "User does not exist." at `InitiateAuth` (sign-in and refresh), as if the
    /// account were gone.
    case userNotFound
    /// `NotAuthorizedException` "Unable to login because of security reasons." at `InitiateAuth` (sign-in
    /// and refresh), FileMaker Cloud's refusal from some networks.
    case securityRefusal
}

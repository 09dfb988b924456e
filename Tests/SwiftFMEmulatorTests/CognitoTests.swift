import Foundation
import Testing
import FMCrypto
@testable import SwiftFMEmulator

/// The emulator's Cognito (`Emulator.clarisID`) over raw HTTP: the SRP exchange, refused signatures,
/// token expiry at the Data API login, refresh, revocation, and every behaviour the control API sets.
/// The SRP arithmetic is FMCrypto's on both sides here; pycognito checks it independently in CI.
@Suite struct CognitoTests {
    /// A running emulator with Claris ID on (the contacts schema: `admin` / `admin`) and its control API.
    final class Cloud {
        let controlled: ControlledEmulator
        var raw: RawEmulator { controlled.data }
        var emulator: Emulator { controlled.emulator }

        init() throws {
            controlled = try ControlledEmulator()
            controlled.emulator.clarisID = true
        }

        /// One Cognito JSON request: status, `__type` (errors) and the parsed answer.
        func cognito(_ target: String, _ body: [String: Any]) throws -> (status: Int, type: String?, json: [String: Any]) {
            let data = try JSONSerialization.data(withJSONObject: body)
            let c = try raw.client()
            try c.send("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.1\r\n"
                       + "X-Amz-Target: AWSCognitoIdentityProviderService.\(target)\r\nContent-Length: \(data.count)\r\n\r\n"
                       + String(decoding: data, as: UTF8.self))
            let r = try c.readResponse()
            #expect(r.header("Content-Type") == "application/x-amz-json-1.1")
            let json = try #require(try JSONSerialization.jsonObject(with: r.body) as? [String: Any])
            if r.status != 200 { #expect(r.header("x-amzn-ErrorType") == json["__type"] as? String) }
            return (r.status, json["__type"] as? String, json)
        }

        /// InitiateAuth with `USER_SRP_AUTH`; returns the secret `a`, `A` and the answer.
        func initiate(_ username: String = "admin") throws -> (a: BigUInt, A: BigUInt, answer: (status: Int, type: String?, json: [String: Any])) {
            let a = CognitoSRP.randomSecret()
            let A = CognitoSRP.publicKey(secret: a)
            let answer = try cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID,
                                                      "AuthParameters": ["USERNAME": username, "SRP_A": A.hex]])
            return (a, A, answer)
        }

        /// The whole PASSWORD_VERIFIER exchange; `tamper` flips a bit of the signature.
        func signIn(_ username: String = "admin", password: String = "admin", tamper: Bool = false) throws
            -> (status: Int, type: String?, json: [String: Any]) {
            let (a, A, first) = try initiate(username)
            try #require(first.status == 200, "\(first.json)")
            #expect(first.json["ChallengeName"] as? String == "PASSWORD_VERIFIER")
            let parameters = try #require(first.json["ChallengeParameters"] as? [String: String])
            let salt = try #require(parameters["SALT"].flatMap { BigUInt(hex: $0) })
            let B = try #require(parameters["SRP_B"].flatMap { BigUInt(hex: $0) })
            let block = try #require(parameters["SECRET_BLOCK"])
            let userID = try #require(parameters["USER_ID_FOR_SRP"])
            let pool = CognitoSRP.poolName(CognitoService.userPoolID)
            let key = try #require(CognitoSRP.clientKey(a: a, A: A, B: B, salt: salt, poolName: pool, userID: userID, password: password))
            let timestamp = "Wed Nov 25 01:02:03 UTC 2026"
            var signature = CognitoSRP.claimSignature(key: key, poolName: pool, userID: userID,
                                                      secretBlock: Array(try #require(Data(base64Encoded: block))), timestamp: timestamp)
            if tamper { signature[0] ^= 1 }
            return try cognito("RespondToAuthChallenge", [
                "ChallengeName": "PASSWORD_VERIFIER", "ClientId": CognitoService.clientID,
                "ChallengeResponses": ["USERNAME": userID, "PASSWORD_CLAIM_SECRET_BLOCK": block, "TIMESTAMP": timestamp,
                                       "PASSWORD_CLAIM_SIGNATURE": Data(signature).base64EncodedString()],
            ])
        }

        func refresh(_ token: String) throws -> (status: Int, type: String?, json: [String: Any]) {
            try cognito("InitiateAuth", ["AuthFlow": "REFRESH_TOKEN_AUTH", "ClientId": CognitoService.clientID,
                                         "AuthParameters": ["REFRESH_TOKEN": token]])
        }

        /// The Data API login with `Authorization: FMID <token>`.
        func fmidLogin(_ token: String) throws -> HTTPRawResponse {
            try raw.send("POST", "\(raw.base)/sessions", body: "{}", headers: ["Authorization: FMID \(token)"])
        }
    }

    private static func result(_ answer: (status: Int, type: String?, json: [String: Any])) throws -> [String: Any] {
        try #require(answer.status == 200, "\(answer.json)")
        return try #require(answer.json["AuthenticationResult"] as? [String: Any])
    }

    @Test func aWrongSignatureIsNotAuthorizedAndTheExchangeIsSpent() throws {
        let cloud = try Cloud()
        let wrong = try cloud.signIn(tamper: true)
        #expect(wrong.status == 400 && wrong.type == "NotAuthorizedException")
        #expect(wrong.json["message"] as? String == "Incorrect username or password.")
        let wrongPassword = try cloud.signIn(password: "Admin")
        #expect(wrongPassword.type == "NotAuthorizedException")
        #expect(cloud.emulator.clarisIDFailedSignInCount == 2 && cloud.emulator.clarisIDSignInCount == 0)
        #expect(cloud.emulator.clarisIDRequestCount == 4)
        let unknown = try cloud.initiate("nobody").answer
        #expect(unknown.status == 400 && unknown.type == "UserNotFoundException")
        #expect(cloud.emulator.loginCount == 0)
    }

    @Test func theIDTokenLogsInUntilItExpiresThenGetsFileMakerCloudsRejection() throws {
        let cloud = try Cloud()
        cloud.emulator.clarisIDTokenLifetime = 600
        let tokens = try Self.result(try cloud.signIn())
        #expect(tokens["ExpiresIn"] as? Int == 600 && tokens["TokenType"] as? String == "Bearer")
        let idToken = try #require(tokens["IdToken"] as? String)
        #expect(tokens["RefreshToken"] is String && tokens["AccessToken"] is String)
        let login = try cloud.fmidLogin(idToken)
        #expect(login.status == 200 && login.header("X-FM-Data-Access-Token") != nil)

        cloud.emulator.advanceClock(by: 601)
        let expired = try cloud.fmidLogin(idToken)
        #expect(expired.status == 401)
        #expect(expired.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: expired.body, as: UTF8.self).contains("401 Authorization Required"))
        // A token the emulator never issued: the Data API's own 401 (212), not the HTML page.
        let forged = try cloud.fmidLogin("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
        #expect(forged.status == 401 && forged.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(cloud.emulator.loginCount == 1)
    }

    @Test func refreshAnswersWithoutANewRefreshTokenAndRevocationRefusesIt() throws {
        let cloud = try Cloud()
        let tokens = try Self.result(try cloud.signIn())
        let refreshToken = try #require(tokens["RefreshToken"] as? String)
        let first = try #require(tokens["IdToken"] as? String)
        cloud.emulator.advanceClock(by: 3601)
        let refreshed = try Self.result(try cloud.refresh(refreshToken))
        #expect(refreshed["RefreshToken"] == nil)          // as Cognito: the refresh token stays the same
        let second = try #require(refreshed["IdToken"] as? String)
        #expect(second != first)
        #expect(try cloud.fmidLogin(first).status == 401)
        #expect(try cloud.fmidLogin(second).status == 200)
        #expect(try Self.result(try cloud.refresh(refreshToken))["IdToken"] is String)   // usable again
        #expect(cloud.emulator.clarisIDRefreshCount == 2)

        #expect(try cloud.controlled.control("POST", "/v1/claris-id/revoke-refresh-tokens", "{}").status == 200)
        let revoked = try cloud.refresh(refreshToken)
        #expect(revoked.status == 400 && revoked.type == "NotAuthorizedException")
        #expect(revoked.json["message"] as? String == "Invalid Refresh Token")
        #expect(try cloud.refresh("never-issued").type == "NotAuthorizedException")
        #expect(cloud.emulator.clarisIDRefreshCount == 2)
        // The ID token already issued still logs in until its exp.
        #expect(try cloud.fmidLogin(second).status == 200)
    }

    @Test func mfaChallengesThroughTheControlAPI() throws {
        let cloud = try Cloud()
        #expect(try cloud.controlled.control("POST", "/v1/claris-id/behavior", #"{"username":"Admin","behavior":"sms-mfa","code":"246810"}"#).status == 200)
        #expect(cloud.emulator.clarisIDBehavior(username: "admin") == .smsMFA(code: "246810"))

        func challenge() throws -> (session: String, parameters: [String: String]) {
            let answer = try cloud.signIn()
            try #require(answer.status == 200)
            #expect(answer.json["ChallengeName"] as? String == "SMS_MFA")
            #expect(answer.json["AuthenticationResult"] == nil)
            return (try #require(answer.json["Session"] as? String), try #require(answer.json["ChallengeParameters"] as? [String: String]))
        }
        func answer(_ session: String, name: String = "SMS_MFA", code: String) throws -> (status: Int, type: String?, json: [String: Any]) {
            try cloud.cognito("RespondToAuthChallenge", [
                "ChallengeName": name, "ClientId": CognitoService.clientID, "Session": session,
                "ChallengeResponses": ["USERNAME": "admin", name == "SMS_MFA" ? "SMS_MFA_CODE" : "SOFTWARE_TOKEN_MFA_CODE": code],
            ])
        }
        var (session, parameters) = try challenge()
        #expect(parameters["CODE_DELIVERY_DELIVERY_MEDIUM"] == "SMS" && parameters["CODE_DELIVERY_DESTINATION"] == "+*******0100")
        #expect(parameters["USER_ID_FOR_SRP"]?.isEmpty == false)
        let mismatch = try answer(session, code: "000000")
        #expect(mismatch.type == "CodeMismatchException" && mismatch.json["message"] as? String == "Invalid code received for user")
        #expect(try answer(session, code: "246810").type == "NotAuthorizedException")   // a session answers once
        (session, _) = try challenge()
        #expect(try answer(session, name: "SOFTWARE_TOKEN_MFA", code: "246810").type == "NotAuthorizedException")   // the wrong challenge
        (session, _) = try challenge()
        #expect(try Self.result(try answer(session, code: "246810"))["RefreshToken"] is String)
        #expect(cloud.emulator.clarisIDSignInCount == 1 && cloud.emulator.clarisIDFailedSignInCount == 1)

        // The older endpoint sets SOFTWARE_TOKEN_MFA; null clears.
        #expect(try cloud.controlled.control("POST", "/v1/claris-id/mfa", #"{"username":"admin","code":"135790"}"#).status == 200)
        #expect(cloud.emulator.clarisIDBehavior(username: "admin") == .softwareTokenMFA(code: "135790"))
        let software = try cloud.signIn()
        #expect(software.json["ChallengeName"] as? String == "SOFTWARE_TOKEN_MFA")
        let session2 = try #require(software.json["Session"] as? String)
        #expect(try Self.result(try answer(session2, name: "SOFTWARE_TOKEN_MFA", code: "135790"))["IdToken"] is String)
        #expect(try cloud.controlled.control("POST", "/v1/claris-id/behavior", #"{"username":"admin","behavior":null}"#).status == 200)
        #expect(try Self.result(try cloud.signIn())["IdToken"] is String)
        let counters = try cloud.controlled.control("GET", "/v1/claris-id")
        #expect(counters.json["requests"] as? Int == cloud.emulator.clarisIDRequestCount)
        #expect(counters.json["signIns"] as? Int == 3)
    }

    @Test func newPasswordRequiredAndTheErrorsThroughTheControlAPI() throws {
        let cloud = try Cloud()
        func set(_ behavior: String) throws {
            #expect(try cloud.controlled.control("POST", "/v1/claris-id/behavior", #"{"username":"admin","behavior":"\#(behavior)"}"#).status == 200)
        }
        // Signed in first, to have a refresh token for the refresh-time errors.
        let refreshToken = try #require(try Self.result(try cloud.signIn())["RefreshToken"] as? String)

        try set("new-password-required")
        let newPassword = try cloud.signIn()
        #expect(newPassword.status == 200 && newPassword.json["ChallengeName"] as? String == "NEW_PASSWORD_REQUIRED")
        #expect((newPassword.json["Session"] as? String)?.isEmpty == false)
        #expect((newPassword.json["ChallengeParameters"] as? [String: String])?["requiredAttributes"] == "[]")

        try set("password-reset-required")
        let reset = try cloud.signIn()
        #expect(reset.type == "PasswordResetRequiredException" && reset.json["message"] as? String == "Password reset required for the user")
        #expect(try cloud.signIn(password: "wrong").type == "NotAuthorizedException")   // the password is checked first
        #expect(try cloud.refresh(refreshToken).type == "PasswordResetRequiredException")

        for (behavior, type, message) in [("too-many-requests", "TooManyRequestsException", "Rate exceeded"),
                                          ("user-not-found", "UserNotFoundException", "User does not exist."),
                                          ("security-refusal", "NotAuthorizedException", "Unable to login because of security reasons.")] {
            try set(behavior)
            let before = cloud.emulator.clarisIDRequestCount
            let initiate = try cloud.initiate().answer
            #expect(initiate.status == 400 && initiate.type == type && initiate.json["message"] as? String == message, "\(behavior)")
            let refresh = try cloud.refresh(refreshToken)
            #expect(refresh.type == type && refresh.json["message"] as? String == message, "\(behavior)")
            #expect(cloud.emulator.clarisIDRequestCount == before + 2)
        }
        try set("none")
        #expect(cloud.emulator.clarisIDBehavior(username: "admin") == nil)
        #expect(try Self.result(try cloud.refresh(refreshToken))["IdToken"] is String)
        #expect(cloud.emulator.clarisIDSignInCount == 1)
    }

    @Test func theBehaviorEndpointRefusesBadBodies() throws {
        let cloud = try Cloud()
        for body in [#"{"username":"admin","behavior":"sms-mfa"}"#, #"{"username":"admin","behavior":"software-token-mfa","code":""}"#,
                     #"{"username":"admin","behavior":"user-not-found","code":"1"}"#, #"{"username":"admin","behavior":"sleepy"}"#,
                     #"{"behavior":"user-not-found"}"#, #"{"username":"admin","behavior":"user-not-found","extra":1}"#,
                     #"{"username":"admin","behavior":3}"#] {
            let answer = try cloud.controlled.control("POST", "/v1/claris-id/behavior", body)
            #expect(answer.status == 400, "\(body)")
            #expect((answer.json["error"] as? String)?.isEmpty == false, "\(body): \(answer.json)")
        }
        #expect(cloud.emulator.clarisIDBehavior(username: "admin") == nil)
        let unknown = try cloud.controlled.control("POST", "/v1/claris-id/behavior", #"{"username":"admin","behavior":"sleepy"}"#)
        #expect((unknown.json["error"] as? String)?.contains("security-refusal") == true)
    }
}

import Foundation
import Testing
import FMCrypto
@testable import SwiftFMEmulator

/// The emulator's Claris ID mode is bounded like the rest of it. Every field of a Cognito request
/// is capped (Cognito's validation error, before any arithmetic); tokens are forgotten when they expire or
/// are revoked; behaviours are capped.
@Suite struct CognitoBoundsTests {
    typealias Cloud = CognitoTests.Cloud

    static func validation(_ answer: (status: Int, type: String?, json: [String: Any]), _ field: String,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.status == 400 && answer.type == "InvalidParameterException", "\(answer.json)", sourceLocation: sourceLocation)
        let message = answer.json["message"] as? String ?? ""
        #expect(message.hasPrefix("1 validation error detected: Value at '\(field)' failed to satisfy constraint"), "\(message)",
                sourceLocation: sourceLocation)
    }

    /// An `SRP_A` past 1,024 hex digits is refused as Cognito refuses a value too long (it was parsed and
    /// reduced, whatever its length: 16M digits took 12 s); one of 768 digits still signs in.
    @Test func srpAAndEveryFieldAreCapped() throws {
        let cloud = try Cloud()
        let long = String(repeating: "f", count: CognitoService.maxSRPADigits + 1)
        Self.validation(try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID,
                                                           "AuthParameters": ["USERNAME": "admin", "SRP_A": long]]),
                        "authParameters.SRP_A")
        // The largest valid A, with leading zeros up to the cap, is still taken.
        let padded = String(repeating: "0", count: CognitoService.maxSRPADigits - 768) + CognitoSRP.publicKey(secret: CognitoSRP.randomSecret()).hex
        #expect(padded.count <= CognitoService.maxSRPADigits)
        let accepted = try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID,
                                                          "AuthParameters": ["USERNAME": "admin", "SRP_A": padded]])
        #expect(accepted.status == 200, "\(accepted.json)")
        Self.validation(try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID,
                                                           "AuthParameters": ["USERNAME": String(repeating: "u", count: 129), "SRP_A": "02"]]),
                        "authParameters.USERNAME")
        Self.validation(try cloud.cognito("InitiateAuth", ["AuthFlow": "REFRESH_TOKEN_AUTH", "ClientId": CognitoService.clientID,
                                                           "AuthParameters": ["REFRESH_TOKEN": String(repeating: "r", count: 4097)]]),
                        "authParameters.REFRESH_TOKEN")
        Self.validation(try cloud.cognito("InitiateAuth", ["AuthFlow": String(repeating: "A", count: 129), "ClientId": CognitoService.clientID]),
                        "authFlow")
        Self.validation(try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": String(repeating: "c", count: 129)]),
                        "clientId")
        Self.validation(try cloud.cognito("RespondToAuthChallenge", ["ChallengeName": "SMS_MFA", "ClientId": CognitoService.clientID,
                                                                     "Session": String(repeating: "s", count: 2049)]),
                        "session")
        Self.validation(try cloud.cognito("RespondToAuthChallenge", [
            "ChallengeName": "PASSWORD_VERIFIER", "ClientId": CognitoService.clientID,
            "ChallengeResponses": ["PASSWORD_CLAIM_SIGNATURE": String(repeating: "A", count: 4097)],
        ]), "challengeResponses.PASSWORD_CLAIM_SIGNATURE")
        var many: [String: String] = [:]
        for i in 0...CognitoService.maxParameters { many["K\(i)"] = "v" }
        let tooMany = try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID, "AuthParameters": many])
        #expect(tooMany.status == 400 && tooMany.type == "InvalidParameterException")
        let notAMap = try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID, "AuthParameters": ["a", "b"]])
        #expect(notAMap.status == 400 && notAMap.type == "SerializationException")
        // A body past the cap is refused before it is parsed.
        let huge = try cloud.cognito("InitiateAuth", ["AuthFlow": "USER_SRP_AUTH", "ClientId": CognitoService.clientID,
                                                      "ClientMetadata": ["x": String(repeating: "x", count: CognitoService.maxBodyBytes)]])
        #expect(huge.status == 400 && huge.type == "InvalidParameterException")
        #expect((huge.json["message"] as? String)?.contains("larger than \(CognitoService.maxBodyBytes) bytes") == true)
        // None of these signed anyone in, and a normal sign-in still works.
        #expect(cloud.emulator.clarisIDSignInCount == 0)
        #expect(try cloud.signIn().status == 200)
    }

    /// ID and refresh tokens are forgotten once they expire (at the next sweep, on the emulator's clock),
    /// and the ID token an FMID login presented is forgotten by the Data API side too: no memory per sign-in
    /// outlives its tokens. An expired ID token still gets FileMaker Cloud's rejection, read from the token.
    @Test func tokensAreForgottenWhenTheyExpire() throws {
        let cloud = try Cloud()
        cloud.emulator.clarisIDTokenLifetime = 600
        var idTokens: [String] = []
        var refreshTokens: [String] = []
        for _ in 0..<3 {
            let result = try #require(try cloud.signIn().json["AuthenticationResult"] as? [String: Any])
            let idToken = try #require(result["IdToken"] as? String)
            idTokens.append(idToken)
            refreshTokens.append(try #require(result["RefreshToken"] as? String))
            #expect(try cloud.fmidLogin(idToken).status == 200)
        }
        let cognito = cloud.emulator.core.cognito
        #expect(cognito.state.withLock { ($0.idTokens.count, $0.refreshTokens.count) } == (3, 3))
        #expect(cloud.emulator.core.state.withLock { $0.issuedClarisIDTokens.count } == 3)

        // Past the ID tokens' exp and a sweep: the ID tokens are gone on both sides, the refresh tokens
        // (30 days) stay; an expired token is still rejected the FileMaker Cloud way (401, HTML).
        cloud.emulator.advanceClock(by: 601 + CognitoService.sweepInterval)
        let refreshed = try #require(try cloud.refresh(refreshTokens[0]).json["AuthenticationResult"] as? [String: Any])
        let fresh = try #require(refreshed["IdToken"] as? String)
        #expect(try cloud.fmidLogin(fresh).status == 200)
        #expect(cognito.state.withLock { Set($0.idTokens.keys) } == [fresh])
        #expect(cloud.emulator.core.state.withLock { Set($0.issuedClarisIDTokens.keys) } == [fresh])
        let expired = try cloud.fmidLogin(idTokens[1])
        #expect(expired.status == 401 && expired.header("Content-Type")?.hasPrefix("text/html") == true)

        // Past the refresh tokens' lifetime: refused ("Refresh Token has expired") and forgotten.
        cloud.emulator.advanceClock(by: CognitoService.refreshTokenLifetime)
        let late = try cloud.refresh(refreshTokens[2])
        #expect(late.status == 400 && late.type == "NotAuthorizedException" && late.json["message"] as? String == "Refresh Token has expired")
        #expect(cognito.state.withLock { ($0.idTokens.count, $0.refreshTokens.count) } == (0, 0))
        #expect(try cloud.refresh(refreshTokens[0]).json["message"] as? String == "Invalid Refresh Token")
    }

    /// A revoked ID token is forgotten on both sides and no longer logs in (it did log in again before:
    /// the next FMID login put it back).
    @Test func aRevokedIDTokenIsForgottenAndRefused() throws {
        let cloud = try Cloud()
        let result = try #require(try cloud.signIn().json["AuthenticationResult"] as? [String: Any])
        let idToken = try #require(result["IdToken"] as? String)
        #expect(try cloud.fmidLogin(idToken).status == 200)
        cloud.emulator.revokeClarisIDToken(idToken)
        #expect(cloud.emulator.core.cognito.state.withLock { $0.idTokens[idToken] } == nil)
        #expect(cloud.emulator.core.state.withLock { $0.issuedClarisIDTokens[idToken] } == nil)
        let refused = try cloud.fmidLogin(idToken)
        #expect(refused.status == 401 && refused.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(cloud.emulator.loginCount == 1)
    }

    /// At most `maxBehaviors` accounts keep a behaviour: one more drops the one set longest ago; a username
    /// longer than Cognito's limit is refused by the control API and ignored by the Swift API.
    @Test func behavioursAreCapped() throws {
        let cloud = try Cloud()
        let emulator = cloud.emulator
        for i in 0..<CognitoService.maxBehaviors { emulator.setClarisIDBehavior(.tooManyRequests, username: "user\(i)") }
        emulator.setClarisIDBehavior(.userNotFound, username: "user0")   // set again: now the newest
        emulator.setClarisIDBehavior(.securityRefusal, username: "one-more")
        #expect(emulator.core.cognito.state.withLock { $0.behaviors.count } == CognitoService.maxBehaviors)
        #expect(emulator.clarisIDBehavior(username: "user0") == .userNotFound)
        #expect(emulator.clarisIDBehavior(username: "user1") == nil)
        #expect(emulator.clarisIDBehavior(username: "one-more") == .securityRefusal)
        emulator.setClarisIDBehavior(nil, username: "one-more")
        #expect(emulator.core.cognito.state.withLock { ($0.behaviors.count, $0.behaviorOrder.count) }
                == (CognitoService.maxBehaviors - 1, CognitoService.maxBehaviors - 1))

        let long = String(repeating: "n", count: CognitoService.maxNameLength + 1)
        emulator.setClarisIDBehavior(.tooManyRequests, username: long)
        #expect(emulator.clarisIDBehavior(username: long) == nil)
        #expect(try cloud.controlled.control("POST", "/v1/claris-id/behavior", #"{"username":"\#(long)","behavior":"too-many-requests"}"#).status == 400)
        #expect(try cloud.controlled.control("POST", "/v1/claris-id/behavior",
                                             #"{"username":"admin","behavior":"sms-mfa","code":"\#(String(repeating: "1", count: 65))"}"#).status == 400)
    }
}

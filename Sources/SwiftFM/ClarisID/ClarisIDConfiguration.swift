import Foundation

/// Where a Claris ID (FileMaker Cloud) sign-in goes: the Amazon Cognito user pool, its app client and
/// the Cognito endpoint.
///
/// ``fileMakerCloud`` is the pool every FileMaker Cloud account signs in to. Tests point ``cognitoURL``
/// at an emulator on loopback (`fm-emulator --claris-id` serves the same pool and client).
public struct FMClarisIDConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The user pool id, `region_name` (the part after `_` is what the SRP claim signs).
    public var userPoolID: String
    /// The app client id.
    public var clientID: String
    /// The Cognito endpoint the JSON requests are posted to.
    public var cognitoURL: URL

    /// A pool, client and endpoint.
    public init(userPoolID: String, clientID: String, cognitoURL: URL) {
        self.userPoolID = userPoolID
        self.clientID = clientID
        self.cognitoURL = cognitoURL
    }

    /// FileMaker Cloud's published pool `us-west-2_NqkuZcXQY`, client `4l9rvl4mv5es1eep1qe97cautn`, at
    /// `https://cognito-idp.us-west-2.amazonaws.com/` (Claris publishes them at
    /// `https://www.ifmcloud.com/endpoint/userpool/2.2.0.my.claris.com.json`).
    public static let fileMakerCloud = FMClarisIDConfiguration(
        userPoolID: "us-west-2_NqkuZcXQY", clientID: "4l9rvl4mv5es1eep1qe97cautn",
        cognitoURL: URL(string: "https://cognito-idp.us-west-2.amazonaws.com/") ?? URL(fileURLWithPath: "/"))

    /// The pool, client and endpoint (none of them is a secret).
    public var description: String {
        Redaction.oneLine("FMClarisIDConfiguration(userPoolID: \(userPoolID), clientID: \(clientID), cognitoURL: \(cognitoURL.absoluteString))")
    }
}

/// A challenge Cognito asks after the password: a one-time code from an authenticator app
/// (`SOFTWARE_TOKEN_MFA`) or a text message (`SMS_MFA`).
public struct FMClarisIDChallenge: Sendable, Equatable {
    /// `"SOFTWARE_TOKEN_MFA"` or `"SMS_MFA"`.
    public var name: String
    /// Cognito's `ChallengeParameters` (for `SMS_MFA`, `CODE_DELIVERY_DESTINATION` names the phone).
    public var parameters: [String: String]

    /// A challenge and its parameters.
    public init(name: String, parameters: [String: String] = [:]) {
        self.name = name
        self.parameters = parameters
    }
}

/// Answers an MFA challenge of a Claris ID sign-in with the code the user reads from their authenticator
/// app or text message; throwing ends the sign-in with that error.
public typealias FMClarisIDMFAHandler = @Sendable (FMClarisIDChallenge) async throws -> String

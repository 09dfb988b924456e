import Foundation

extension FMClarisIDTokenProvider {
    /// A provider that signs in to Claris ID itself: Amazon Cognito's `USER_SRP_AUTH` (the password never
    /// leaves the process), keeping the ID token and the refresh token.
    ///
    /// It renews the ID token with `REFRESH_TOKEN_AUTH` a minute before the end of the lifetime the token states
    /// (`exp` − `iat`, counted on the local clock from its arrival; a token stating less is kept 30 s) and
    /// whenever the server rejects it, and signs in with SRP again when the refresh token is refused. Calls waiting at the same time share
    /// one sign-in, also across several ``DataAPI``s given this provider. A wrong password fails the waiting
    /// calls once, with Cognito's message (code ``FMError/ClientCode/signInFailed``), and no Data API login.
    /// A sign-in that Cognito answers with an MFA challenge fails at once with an error naming it; use
    /// ``signIn(username:password:configuration:mfa:refreshTokenStore:)`` to answer it.
    public static func signIn(username: String, password: String,
                              configuration: FMClarisIDConfiguration = .fileMakerCloud) -> FMClarisIDTokenProvider {
        signIn(username: username, password: password, configuration: configuration, mfa: nil, refreshTokenStore: nil)
    }

    /// ``signIn(username:password:configuration:)`` with an answer to MFA challenges and a store for the
    /// refresh token.
    /// - Parameters:
    ///   - username: the Claris ID (an e-mail address).
    ///   - password: its password (used only to compute the SRP proof; never sent).
    ///   - configuration: the user pool, app client and Cognito endpoint.
    ///   - mfa: asked for the code of a `SOFTWARE_TOKEN_MFA` or `SMS_MFA` challenge; without it such a
    ///     sign-in fails at once.
    ///   - refreshTokenStore: where the refresh token is kept (for instance an ``FMFileTokenStore``, written
    ///     0600, of its own), so that a restarted daemon refreshes instead of running SRP again.
    public static func signIn(username: String, password: String, configuration: FMClarisIDConfiguration = .fileMakerCloud,
                              mfa: FMClarisIDMFAHandler?, refreshTokenStore: (any FMTokenStore)?) -> FMClarisIDTokenProvider {
        signIn(ClarisIDSignIn(username: username, password: password, configuration: configuration, mfa: mfa,
                              refreshTokenStore: refreshTokenStore))
    }

    /// A provider over `signIn` (tests inject a clock there).
    static func signIn(_ signIn: ClarisIDSignIn) -> FMClarisIDTokenProvider {
        FMClarisIDTokenProvider(fetch: { refresh, completion in signIn.fetch(refresh: refresh, completion: completion) },
                                secrets: { signIn.secrets }, warnings: { signIn.takeWarnings() })
    }
}

extension FMCredentials {
    /// A Claris ID (FileMaker Cloud) login in one line: `.clarisID(.signIn(username:password:configuration:))`.
    public static func clarisID(username: String, password: String,
                                configuration: FMClarisIDConfiguration = .fileMakerCloud) -> FMCredentials {
        .clarisID(.signIn(username: username, password: password, configuration: configuration))
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Contract: the refresh-token store of a Claris ID sign-in
/// (``FMClarisIDTokenProvider/signIn(username:password:configuration:mfa:refreshTokenStore:)``) is called as a Data API
/// token store is, through ``FMTokenStore/tryLoad()`` and ``FMTokenStore/trySave(_:)``, and a store that cannot read or
/// write is reported the same way: one `warning` per distinct problem, logged by the client whose login asked for the
/// Claris ID token, naming why, with the refresh token redacted; the sign-in goes on (the refresh token in memory, or a
/// sign-in with the password instead of a stored refresh token). On main the sign-in called `load()` and `save(_:)`,
/// which cannot fail: a refresh-token store that could not write was silent, and every restart signed in again unseen.
@Suite("A Claris ID refresh-token store can report a failed save or load")
struct AClarisIDRefreshTokenStoreCanReportAFailedSaveOrLoadTests {
    typealias C = HostileCognito
    typealias Keychain = AnyTokenStoreCanReportAFailedSaveOrLoadTests

    static let refreshToken = "refresh-SECRET-0123456789abcdef"
    static let idToken = C.jwt(#"{"exp":4102444800}"#)

    /// A Cognito that signs in with SRP and gives ``refreshToken``.
    static func cognito() -> HostileServer {
        C.server { target, _ in
            target == "InitiateAuth" ? C.passwordVerifier() : C.tokens(idToken, refreshToken: refreshToken)
        }
    }

    /// A client whose login asks `signIn` for its token, its log lines kept in `lines`.
    static func client(_ signIn: ClarisIDSignIn, lines: KeptEvents) -> DataAPI {
        // A deadline no loaded machine reaches: the sign-in runs in a task, which a busy cooperative pool may run late.
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts",
                                            credentials: .clarisID(.signIn(signIn)))
        configuration.timeout = 3600
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        return DataAPI(configuration: configuration, transport: stub, logger: { lines.keep($0) })
    }

    static func warnings(_ lines: KeptEvents) -> [String] {
        lines.all.filter { $0.level == .warning && $0.message.contains("refresh-token store") }.map(\.message)
    }

    /// Failed on main: no warning (the sign-in called `save`, which cannot fail).
    @Test func aStoreWhoseSaveFailsIsWarnedAboutOnceWithTheRefreshTokenRedacted() async throws {
        let server = Self.cognito()
        defer { server.stop() }
        let store = Keychain.FailingKeychainStore()
        store.fail(with: -25308)
        let lines = KeptEvents()
        let api = Self.client(C.signIn(server, store: store), lines: lines)

        await onOwnThread {
            Keychain.call(api)    // signs in to Claris ID (the save fails), then logs in
            Keychain.login(api)   // the ID token is reused: no sign-in, no save
        }
        #expect(store.saves == 1)
        let warnings = Self.warnings(lines)
        #expect(warnings.count == 1, "\(warnings)")
        let warning = try #require(warnings.first)
        #expect(warning.contains("cannot write"), "\(warning)")
        #expect(warning.contains("-25308"), "the warning does not say why: \(warning)")
        #expect(warning.contains(Redaction.placeholder), "\(warning)")
        let shown = lines.all.filter { ($0.message + $0.metadata.values.joined()).contains("SECRET") }
        #expect(shown.isEmpty, "the refresh token is shown: \(shown.map(\.message))")
    }

    /// Failed on main: no warning (the sign-in called `load`, which cannot fail), and the sign-in with the password went
    /// on unseen.
    @Test func aStoreWhoseLoadFailsIsWarnedAboutAndTheSignInGoesOn() async throws {
        let server = Self.cognito()
        defer { server.stop() }
        let store = Keychain.UnreachableStore()
        let lines = KeptEvents()
        let signIn = C.signIn(server, store: store)
        let api = Self.client(signIn, lines: lines)

        await onOwnThread { Keychain.call(api) }
        #expect(store.loads == 1)
        #expect(signIn.counts.srpSignIns == 1)
        let warnings = Self.warnings(lines)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("cannot read") == true, "\(warnings)")
        #expect(warnings.first?.contains("redis://cache:6379 refused the connection") == true, "\(warnings)")
    }
}

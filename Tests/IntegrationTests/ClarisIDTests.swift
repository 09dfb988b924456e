import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// Claris ID (FileMaker Cloud) sign-in against the emulator's Cognito (`Emulator.clarisID`): SRP verified
/// by the emulator, refresh, fallback to SRP, single-flight, MFA, errors, secrets.
@Suite struct ClarisIDTests {
    /// An emulator with Claris ID on, and the configuration pointing the client's Cognito at it.
    private func withCloud<T>(_ body: (Emulator, URL, FMClarisIDConfiguration) async throws -> T) async throws -> T {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        emulator.clarisID = true
        let url = try emulator.start()
        defer { emulator.stop() }
        let cloud = FMClarisIDConfiguration.fileMakerCloud
        let configuration = FMClarisIDConfiguration(userPoolID: cloud.userPoolID, clientID: cloud.clientID, cognitoURL: url)
        return try await body(emulator, url, configuration)
    }

    private func api(_ url: URL, _ credentials: FMCredentials, poolSize: Int = 1, logger: FMLogHandler? = nil) -> DataAPI {
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "", password: "")
        configuration.credentials = credentials
        configuration.sessionPoolSize = poolSize
        configuration.timeout = 600   // a generous bound: a loaded 2-core machine runs many suites at once
        return DataAPI(configuration: configuration, logger: logger)
    }

    @Test func signsInReadsSurvivesExpiryByRefreshAndFallsBackToSRPAfterRevocation() async throws {
        try await withCloud { emulator, url, configuration in
            let lines = LogLines()
            let api = api(url, .clarisID(username: "admin", password: "admin", configuration: configuration), logger: lines.handler)
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDSignInCount == 1 && emulator.loginCount == 1)
            let login = try #require(emulator.requestLog.first { $0.decodedPath.hasSuffix("/sessions") })
            #expect(login.header("Authorization")?.hasPrefix("FMID ey") == true)

            // Two hours later on the server's clock the ID token has expired; the session is gone too.
            emulator.advanceClock(by: 7200)
            emulator.restart()
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDSignInCount == 1)      // one SRP sign-in in all
            #expect(emulator.clarisIDRefreshCount == 1)     // the rejected token was refreshed
            #expect(emulator.loginCount == 2)

            // The refresh token revoked: the next renewal falls back to SRP.
            emulator.revokeClarisIDRefreshTokens()
            emulator.advanceClock(by: 7200)
            emulator.restart()
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDSignInCount == 2 && emulator.clarisIDRefreshCount == 1)
            #expect(emulator.loginCount == 3)

            let tokens = emulator.requestLog.compactMap { $0.header("Authorization") }.filter { $0.hasPrefix("FMID ") }.map { String($0.dropFirst(5)) }
            #expect(!tokens.isEmpty)
            for line in lines.all {
                #expect(!line.contains("admin:") && tokens.allSatisfy { !line.contains($0) }, "a secret in \(line)")
            }
        }
    }

    @Test func wrongPasswordIsOneFailedSignInAndNoDataAPILogin() async throws {
        try await withCloud { emulator, url, configuration in
            let credentials = FMCredentials.clarisID(username: "admin", password: "not-the-password", configuration: configuration)
            let api = api(url, credentials)
            do {
                _ = try await api.getRecords(layout: "Bands")
                Issue.record("expected a failure")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.signInFailed)
                #expect(error.message == "Incorrect username or password.")
                #expect(!String(describing: error).contains("not-the-password"))
            }
            #expect(emulator.clarisIDFailedSignInCount == 1)
            #expect(emulator.clarisIDSignInCount == 0)
            #expect(emulator.loginCount == 0)
            #expect(!emulator.requestLog.contains { $0.decodedPath.hasSuffix("/sessions") })
            for text in [String(describing: credentials), String(reflecting: credentials), { var s = ""; dump(credentials, to: &s); return s }()] {
                #expect(!text.contains("not-the-password"))
            }
        }
    }

    @Test func aThousandConcurrentCallsCauseOneSignIn() async throws {
        try await withCloud { emulator, url, configuration in
            let api = api(url, .clarisID(username: "admin", password: "admin", configuration: configuration), poolSize: 4)
            let codes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<1000 {
                    group.addTask { await callback(api) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }.1 }
                }
                var codes: [String] = []
                for await code in group { codes.append(code) }
                return codes
            }
            #expect(codes.allSatisfy { $0 == "0" }, "\(Set(codes))")
            #expect(emulator.clarisIDSignInCount == 1)
            #expect(emulator.clarisIDRequestCount == 2)                   // one InitiateAuth, one PASSWORD_VERIFIER
            #expect(emulator.clarisIDRefreshCount == 0 && emulator.clarisIDFailedSignInCount == 0)
            #expect(emulator.loginCount == emulator.activeSessionCount)   // one Data API login per pool session
            #expect(emulator.loginCount <= 4)
            let logins = emulator.requestLog.filter { $0.decodedPath.hasSuffix("/sessions") }
            #expect(logins.count == emulator.loginCount)
            #expect(Set(logins.compactMap { $0.header("Authorization") }).count == 1)   // every login with the one ID token
        }
    }

    @Test func oneProviderSharedByTwoDataAPIsSignsInOnce() async throws {
        try await withCloud { emulator, url, configuration in
            let provider = FMClarisIDTokenProvider.signIn(username: "admin", password: "admin", configuration: configuration)
            let first = api(url, .clarisID(provider)), second = api(url, .clarisID(provider))
            async let a = first.getRecords(layout: "Bands")
            async let b = second.getRecords(layout: "Bands")
            let (ra, rb) = try await (a, b)
            #expect(ra.records.count == 4 && rb.records.count == 4)
            #expect(emulator.clarisIDSignInCount == 1 && emulator.loginCount == 2)
        }
    }

    @Test func mfaIsAnsweredByTheHandlerAndFailsAtOnceWithoutOne() async throws {
        try await withCloud { emulator, url, configuration in
            emulator.requireClarisIDMFA(username: "admin", code: "135790")
            let asked = LogLines()
            let provider = FMClarisIDTokenProvider.signIn(username: "admin", password: "admin", configuration: configuration, mfa: { challenge in
                asked.append(challenge.name)
                return "135790"
            }, refreshTokenStore: nil)
            #expect(try await api(url, .clarisID(provider)).getRecords(layout: "Bands").records.count == 4)
            #expect(asked.all == ["SOFTWARE_TOKEN_MFA"])
            #expect(emulator.clarisIDSignInCount == 1)

            do {
                _ = try await api(url, .clarisID(username: "admin", password: "admin", configuration: configuration)).getRecords(layout: "Bands")
                Issue.record("expected a failure")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.signInFailed)
                #expect(error.message.contains("SOFTWARE_TOKEN_MFA"))
            }
            #expect(emulator.loginCount == 1)
        }
    }

    @Test func cognitoRefusalCarriesTheServersMessage() async throws {
        try await withCloud { emulator, url, configuration in
            emulator.clarisIDRefusal = "Unable to login because of security reasons."
            do {
                _ = try await api(url, .clarisID(username: "admin", password: "admin", configuration: configuration)).getRecords(layout: "Bands")
                Issue.record("expected a failure")
            } catch let error as FMError {
                #expect(error.message == "Unable to login because of security reasons.")
                #expect(error.underlying == "Cognito NotAuthorizedException")
            }
            #expect(emulator.loginCount == 0)
        }
    }

    @Test func refreshesBeforeExpOnItsClockAndKeepsTheRefreshTokenInTheStore() async throws {
        try await withCloud { emulator, url, configuration in
            let clock = TestClock()
            let store = FMMemoryTokenStore()
            let signIn = ClarisIDSignIn(username: "admin", password: "admin", configuration: configuration, mfa: nil,
                                        refreshTokenStore: store, now: { clock.now })
            let first = try await fetch(signIn)
            #expect(signIn.counts.srpSignIns == 1 && signIn.counts.refreshes == 0)
            #expect(try await fetch(signIn) == first)            // cached while valid
            #expect(store.load()?.token.isEmpty == false)      // the refresh token is in the store
            clock.advance(3600)                                 // past exp on the client's clock
            let renewed = try await fetch(signIn)
            #expect(renewed != first)
            #expect(signIn.counts.srpSignIns == 1 && signIn.counts.refreshes == 1)

            // A new provider (a restarted daemon) with the same store refreshes instead of running SRP.
            let restarted = ClarisIDSignIn(username: "admin", password: "admin", configuration: configuration, mfa: nil,
                                           refreshTokenStore: store, now: { clock.now })
            _ = try await fetch(restarted)
            #expect(restarted.counts.srpSignIns == 0 && restarted.counts.refreshes == 1)
            #expect(emulator.clarisIDSignInCount == 1 && emulator.clarisIDRefreshCount == 2)
        }
    }

    /// FileMakerCloud.md, "Testing offline": the same lines against the emulator.
    @Test func fileMakerCloudArticleTestingOffline() async throws {
        let emulator = Emulator()
        emulator.clarisID = true
        let emulatorURL = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: emulatorURL.absoluteString, database: "Music", username: "", password: "")
        let cloud = FMClarisIDConfiguration.fileMakerCloud
        let local = FMClarisIDConfiguration(userPoolID: cloud.userPoolID, clientID: cloud.clientID, cognitoURL: emulatorURL)
        configuration.credentials = .clarisID(username: "admin", password: "admin", configuration: local)
        configuration.timeout = 600
        #expect(try await DataAPI(configuration: configuration).layouts().isEmpty == false)
        #expect(emulator.clarisIDSignInCount == 1)
    }

    private func fetch(_ signIn: ClarisIDSignIn) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            signIn.fetch(refresh: false) { continuation.resume(with: $0) }
        }
    }
}

/// Collects log lines.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var handler: FMLogHandler { { [self] event in lock.withLock { lines.append(event.description) } } }
    var all: [String] { lock.withLock { lines } }
    func append(_ line: String) { lock.withLock { lines.append(line) } }
}

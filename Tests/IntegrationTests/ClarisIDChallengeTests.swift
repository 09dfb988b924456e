import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// The Claris ID client driven through every challenge and Cognito error the emulator can play
/// (``Emulator/setClarisIDBehavior(_:username:)``): the SMS handler answered, a clear immediate error
/// naming a challenge nobody answers, each exception an `FMError` with the server's message, and the
/// Cognito requests counted at the emulator so that nothing loops. Also: secrets stay out of every text.
@Suite struct ClarisIDChallengeTests {
    private static let cloudUser = "cloud.user@example.com"
    private static let cloudPassword = "Zq9-secret-PASSWORD-4711"

    /// The integration schema with one more account whose password occurs nowhere else.
    private static var schema: Data {
        let text = String(decoding: integrationSchema, as: UTF8.self).replacingOccurrences(
            of: #"{ "username": "admin", "password": "admin" }"#,
            with: #"{ "username": "admin", "password": "admin" }, { "username": "\#(cloudUser)", "password": "\#(cloudPassword)" }"#)
        return Data(text.utf8)
    }

    private func withCloud<T>(_ body: (Emulator, URL, FMClarisIDConfiguration) async throws -> T) async throws -> T {
        let emulator = try Emulator(schemaJSON: Self.schema)
        emulator.clarisID = true
        let url = try emulator.start()
        defer { emulator.stop() }
        let cloud = FMClarisIDConfiguration.fileMakerCloud
        let configuration = FMClarisIDConfiguration(userPoolID: cloud.userPoolID, clientID: cloud.clientID, cognitoURL: url)
        return try await body(emulator, url, configuration)
    }

    private func api(_ url: URL, _ credentials: FMCredentials, logger: FMLogHandler? = nil) -> DataAPI {
        var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "", password: "")
        configuration.credentials = credentials
        configuration.timeout = 600   // a generous bound: a loaded 2-core machine runs many suites at once
        return DataAPI(configuration: configuration, logger: logger)
    }

    /// The error a read through `api` ends with (a recorded issue when it succeeds).
    private func failure(_ api: DataAPI, sourceLocation: SourceLocation = #_sourceLocation) async -> FMError? {
        do {
            _ = try await api.getRecords(layout: "Bands")
            Issue.record("expected a failure", sourceLocation: sourceLocation)
            return nil
        } catch let error as FMError {
            return error
        } catch {
            Issue.record("not an FMError: \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    @Test func smsMFAIsAnsweredByTheHandler() async throws {
        try await withCloud { emulator, url, configuration async throws in
            emulator.setClarisIDBehavior(.smsMFA(code: "246810"), username: "ADMIN")
            #expect(emulator.clarisIDBehavior(username: "admin") == .smsMFA(code: "246810"))
            let asked = LogLines()
            let provider = FMClarisIDTokenProvider.signIn(username: "admin", password: "admin", configuration: configuration, mfa: { challenge in
                asked.append("\(challenge.name) \(challenge.parameters["CODE_DELIVERY_DESTINATION"] ?? "-")")
                return "246810"
            }, refreshTokenStore: nil)
            #expect(try await api(url, .clarisID(provider)).getRecords(layout: "Bands").records.count == 4)
            #expect(asked.all == ["SMS_MFA +*******0100"])
            // InitiateAuth, PASSWORD_VERIFIER, SMS_MFA: three requests, one sign-in, one Data API login.
            #expect(emulator.clarisIDRequestCount == 3)
            #expect(emulator.clarisIDSignInCount == 1 && emulator.loginCount == 1)
        }
    }

    @Test func aWrongMFACodeFailsOnceWithTheServersMessage() async throws {
        try await withCloud { emulator, url, configuration async throws in
            emulator.setClarisIDBehavior(.smsMFA(code: "246810"), username: "admin")
            let asked = LogLines()
            let provider = FMClarisIDTokenProvider.signIn(username: "admin", password: "admin", configuration: configuration, mfa: { challenge in
                asked.append(challenge.name)
                return "000000"
            }, refreshTokenStore: nil)
            let error = await failure(api(url, .clarisID(provider)))
            #expect(error?.code == FMError.ClientCode.signInFailed)
            #expect(error?.message == "Invalid code received for user")
            #expect(error?.underlying == "Cognito CodeMismatchException")
            #expect(asked.all == ["SMS_MFA"])           // asked once, never again
            #expect(emulator.clarisIDRequestCount == 3)
            #expect(emulator.clarisIDFailedSignInCount == 1 && emulator.clarisIDSignInCount == 0)
            #expect(emulator.loginCount == 0)
        }
    }

    @Test(arguments: [("SMS_MFA", EmulatorClarisIDBehavior.smsMFA(code: "112233")),
                      ("SOFTWARE_TOKEN_MFA", EmulatorClarisIDBehavior.softwareTokenMFA(code: "112233"))])
    func anMFAChallengeWithoutAHandlerFailsAtOnceNamingIt(challenge: String, behavior: EmulatorClarisIDBehavior) async throws {
        try await withCloud { emulator, url, configuration async throws in
            emulator.setClarisIDBehavior(behavior, username: "admin")
            let api = api(url, .clarisID(username: "admin", password: "admin", configuration: configuration))
            let error = await failure(api)
            #expect(error?.code == FMError.ClientCode.signInFailed)
            #expect(error?.message.contains(challenge) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("mfa handler") == true, "\(error?.message ?? "")")
            #expect(emulator.clarisIDRequestCount == 2)   // InitiateAuth and PASSWORD_VERIFIER, no answer tried
            #expect(emulator.clarisIDSignInCount == 0 && emulator.loginCount == 0)
            // The next call tries once more, the same way: a failure is not cached, nor retried in a loop.
            #expect(await failure(api)?.message == error?.message)
            #expect(emulator.clarisIDRequestCount == 4 && emulator.loginCount == 0)
        }
    }

    @Test func newPasswordRequiredFailsAtOnceWithAClearError() async throws {
        try await withCloud { emulator, url, configuration async throws in
            emulator.setClarisIDBehavior(.newPasswordRequired, username: "admin")
            let asked = LogLines()
            let provider = FMClarisIDTokenProvider.signIn(username: "admin", password: "admin", configuration: configuration, mfa: { challenge in
                asked.append(challenge.name)
                return "123456"
            }, refreshTokenStore: nil)
            let error = await failure(api(url, .clarisID(provider)))
            #expect(error?.code == FMError.ClientCode.signInFailed)
            #expect(error?.message.contains("NEW_PASSWORD_REQUIRED") == true)
            #expect(error?.message.contains("set a new password") == true)
            #expect(asked.all.isEmpty)                   // not an MFA challenge: the handler is not asked
            #expect(emulator.clarisIDRequestCount == 2)
            #expect(emulator.clarisIDSignInCount == 0 && emulator.loginCount == 0)
        }
    }

    /// Each Cognito exception ends the waiting calls with one `FMError` carrying the server's message, after
    /// one attempt (20 calls waiting together share it).
    @Test(arguments: [
        (EmulatorClarisIDBehavior.passwordResetRequired, "PasswordResetRequiredException", "Password reset required for the user", 2),
        (EmulatorClarisIDBehavior.tooManyRequests, "TooManyRequestsException", "Rate exceeded", 1),
        (EmulatorClarisIDBehavior.userNotFound, "UserNotFoundException", "User does not exist.", 1),
        (EmulatorClarisIDBehavior.securityRefusal, "NotAuthorizedException", "Unable to login because of security reasons.", 1),
    ])
    func cognitoExceptionsBecomeFMErrorsWithTheServersMessage(behavior: EmulatorClarisIDBehavior, type: String, message: String,
                                                              requests: Int) async throws {
        try await withCloud { emulator, url, configuration async throws in
            emulator.setClarisIDBehavior(behavior, username: "admin")
            let api = api(url, .clarisID(username: "admin", password: "admin", configuration: configuration))
            let errors = await withTaskGroup(of: FMError?.self) { group in
                for _ in 0..<20 { group.addTask { await self.failure(api) } }
                var errors: [FMError?] = []
                for await error in group { errors.append(error) }
                return errors
            }
            #expect(errors.count == 20)
            for error in errors {
                #expect(error?.code == FMError.ClientCode.signInFailed)
                #expect(error?.message == message)
                #expect(error?.underlying == "Cognito \(type)")
                #expect(error?.httpStatus == 400)
            }
            #expect(emulator.clarisIDRequestCount == requests)
            #expect(emulator.clarisIDSignInCount == 0 && emulator.loginCount == 0)
        }
    }

    /// Errors at REFRESH_TOKEN_AUTH: throttling ends the call after the one refresh; the security refusal
    /// (a NotAuthorizedException, like a refused refresh token) falls back to one SRP attempt, refused
    /// too; with the account cleared, SRP signs in again.
    @Test func errorsAtRefreshEndTheCallWithoutLooping() async throws {
        try await withCloud { emulator, url, configuration async throws in
            let api = api(url, .clarisID(username: "admin", password: "admin", configuration: configuration))
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDRequestCount == 2 && emulator.loginCount == 1)

            // The ID token expires on the server's clock and its session is gone.
            emulator.setClarisIDBehavior(.tooManyRequests, username: "admin")
            emulator.advanceClock(by: 7200)
            emulator.restart()
            var error = await failure(api)
            #expect(error?.message == "Rate exceeded" && error?.underlying == "Cognito TooManyRequestsException")
            #expect(emulator.clarisIDRequestCount == 3)              // one refresh
            #expect(emulator.clarisIDRefreshCount == 0)

            emulator.setClarisIDBehavior(.securityRefusal, username: "admin")
            error = await failure(api)
            #expect(error?.message == "Unable to login because of security reasons.")
            #expect(emulator.clarisIDRequestCount == 5)              // the refresh, then one InitiateAuth
            #expect(emulator.clarisIDSignInCount == 1)

            emulator.setClarisIDBehavior(nil, username: "admin")
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDRequestCount == 7 && emulator.clarisIDSignInCount == 2)
            #expect(emulator.loginCount == 2)
        }
    }

    /// The password, the refresh token and every ID token stay out of log lines, descriptions, `dump` and
    /// errors, through a sign-in, a refresh after expiry, an MFA failure and a wrong password.
    @Test func secretsNeverAppearInLogsDescriptionsDumpsOrErrors() async throws {
        try await withCloud { emulator, url, configuration async throws in
            let lines = LogLines()
            let store = FMMemoryTokenStore()
            let provider = FMClarisIDTokenProvider.signIn(username: Self.cloudUser, password: Self.cloudPassword, configuration: configuration,
                                                          mfa: nil, refreshTokenStore: store)
            let credentials = FMCredentials.clarisID(provider)
            let api = api(url, credentials, logger: lines.handler)
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            emulator.advanceClock(by: 7200)
            emulator.restart()
            #expect(try await api.getRecords(layout: "Bands").records.count == 4)
            #expect(emulator.clarisIDSignInCount == 1 && emulator.clarisIDRefreshCount == 1)

            var texts: [String] = []
            func add(_ value: Any) {
                texts.append(String(describing: value))
                texts.append(String(reflecting: value))
                var dumped = ""
                dump(value, to: &dumped)
                texts.append(dumped)
            }
            add(credentials)
            add(provider)
            add(api)
            add(configuration)

            // Errors: an MFA challenge nobody answers, then a wrong password (its text a secret too).
            emulator.setClarisIDBehavior(.softwareTokenMFA(code: "424242"), username: Self.cloudUser)
            let fresh = self.api(url, .clarisID(username: Self.cloudUser, password: Self.cloudPassword, configuration: configuration),
                                 logger: lines.handler)
            if let error = await failure(fresh) { add(error) }
            emulator.setClarisIDBehavior(nil, username: Self.cloudUser)
            let wrongPassword = "Wrong-\(Self.cloudPassword)"
            let wrong = self.api(url, .clarisID(username: Self.cloudUser, password: wrongPassword, configuration: configuration),
                                 logger: lines.handler)
            if let error = await failure(wrong) { add(error) }
            add(wrong)

            let refreshToken = try #require(store.load()?.token)
            let idTokens = emulator.requestLog.compactMap { $0.header("Authorization") }.filter { $0.hasPrefix("FMID ") }.map { String($0.dropFirst(5)) }
            #expect(Set(idTokens).count == 2)                         // the first ID token and the refreshed one
            let secrets = [Self.cloudPassword, wrongPassword, refreshToken] + idTokens
            texts += lines.all
            #expect(lines.all.count > 0)
            for text in texts {
                for secret in secrets {
                    #expect(!text.contains(secret), "a secret (\(secret.prefix(4))…) in \(text.prefix(300))")
                }
            }
        }
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Contract: every token SwiftFM sends in an `Authorization` header is a known secret of its client, however it was
/// obtained: a Claris ID token from a provider of the caller's own (`FMClarisIDTokenProvider { … }` or
/// `FMClarisIDTokenProvider(async:)`) as much as one from SwiftFM's own sign-in. A server that echoes it (in a login's
/// error, in the error of a later call, in an OData error) shows it in no log line (message or metadata) and in no
/// error's description.
@Suite("Every token sent in an Authorization header is a known secret")
struct EveryTokenSentInAnAuthorizationHeaderIsAKnownSecretTests {
    static let first = "custom-fmid-token-one"
    static let second = "custom-fmid-token-two"

    static func providers() -> [(String, FMClarisIDTokenProvider)] {
        [("callback", FMClarisIDTokenProvider { refresh, done in done(.success(refresh ? second : first)) }),
         ("async", FMClarisIDTokenProvider(async: { refresh in refresh ? second : first }))]
    }

    /// A configuration with `provider`, and a deadline no loaded machine reaches (an async provider runs in a task).
    static func configuration(_ provider: FMClarisIDTokenProvider) -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: .clarisID(provider))
        configuration.timeout = 3600
        return configuration
    }

    static func leaks(_ logs: [FMLogEvent]) -> [String] {
        logs.flatMap { [$0.message] + $0.metadata.keys + $0.metadata.values }.filter { $0.contains("custom-fmid-token") }
    }

    /// Failed before: the `←` lines of the rejected logins showed both tokens (the login's error itself hid the one it
    /// sent only because the engine reads the call's own Basic header, not an FMID one).
    @Test(arguments: [0, 1])
    func aRejectedLoginThatEchoesTheTokenShowsItNowhere(which: Int) async {
        let (name, provider) = Self.providers()[which]
        let h = Harness(configuration: Self.configuration(provider)) { request in
            let sent = request.header("Authorization") ?? "none"
            return .json(401, #"{"messages":[{"code":"212","message":"Rejected \#(sent)"}],"response":{}}"#)
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        let error = await done.value().first?.testError
        #expect(error?.code == "212", "\(name): \(String(describing: error))")
        #expect(!(error?.description.contains("custom-fmid-token") ?? true), "\(name): \(String(describing: error))")
        #expect(h.stub.requests.compactMap { $0.header("Authorization") } == ["FMID \(Self.first)", "FMID \(Self.second)"])
        #expect(Self.leaks(h.logs.values).isEmpty, "\(name): \(Self.leaks(h.logs.values))")
    }

    /// Failed before: after a login with the provider's token, a server that echoed it in a later call's error showed it
    /// in that call's `←` line and in its failure line.
    @Test(arguments: [0, 1])
    func aLaterCallsErrorThatEchoesTheTokenShowsItNowhere(which: Int) async {
        let (name, provider) = Self.providers()[which]
        let h = Harness(configuration: Self.configuration(provider)) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(500, #"{"messages":[{"code":"10","message":"Your token FMID \#(Self.first) is odd"}],"response":{}}"#)
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        let error = await done.value().first?.testError
        #expect(error?.code == "10", "\(name): \(String(describing: error))")
        #expect(!(error?.description.contains("custom-fmid-token") ?? true), "\(name): \(String(describing: error))")
        #expect(Self.leaks(h.logs.values).isEmpty, "\(name): \(Self.leaks(h.logs.values))")
    }

    /// Failed before: an OData error that echoed the token sent with the request showed it in the `←` line and in the
    /// error of the call.
    @Test(arguments: [0, 1])
    func anODataErrorThatEchoesTheTokenShowsItNowhere(which: Int) async {
        let (name, provider) = Self.providers()[which]
        let h = Harness(configuration: Self.configuration(provider)) { request in
            let sent = request.header("Authorization") ?? "none"
            return .json(400, #"{"error":{"code":"8309","message":"Bad request with \#(sent)"}}"#)
        }
        let odata = FMOData(sharing: h.api)
        do {
            _ = try await odata.records(from: "contacts")
            Issue.record("\(name): the call must fail")
        } catch {
            #expect(!String(describing: error).contains("custom-fmid-token"), "\(name): \(error)")
        }
        #expect(Self.leaks(h.logs.values).isEmpty, "\(name): \(Self.leaks(h.logs.values))")
    }

    /// Held: without a logging hook nothing is remembered (no cost per call), and an error still hides the token sent.
    @Test func withoutALoggerNothingIsRemembered() async {
        let provider = FMClarisIDTokenProvider { _, done in done(.success(Self.first)) }
        let stub = StubTransport { request in
            let sent = request.header("Authorization") ?? "none"
            return .json(401, #"{"messages":[{"code":"212","message":"Rejected \#(sent)"}],"response":{}}"#)
        }
        let api = DataAPI(configuration: Self.configuration(provider), transport: stub)
        let done = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { done.record($0) }
        let error = await done.value().first?.testError
        #expect(error?.code == "212")
        #expect(!(error?.description.contains("custom-fmid-token") ?? true), "\(String(describing: error))")
        #expect(!api.logger.secrets().contains(Self.first))
    }
}

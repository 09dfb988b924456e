import Foundation
import Testing
@testable import SwiftFM

/// The calls of a new-session hook (``DataAPI/onNewSession``, through ``FMNewSession/api``) carry the new session's
/// token, which the pool does not hold yet while the hook runs: a server that echoes it (a gateway quoting the
/// `Authorization` header, a script returning the token) must not get it into the hook's error, into the error of the
/// calls waiting for the session, nor into any log line (`the new-session hook failed: CODE MESSAGE`, the hook call's
/// own answer line). `FMError.description` promises no tokens; the logging hook scrubs the tokens it knows.
/// Before, the token went out whole: the redaction knew the pool's tokens only.
@Suite("A new-session hook's calls hide their token")
struct NewSessionHookCallsHideTheirTokenTests {
    private static let token = "hooktok-0123456789abcdef0123456789abcdef0123456789"

    @Test func anEchoedTokenReachesNoLineAndNoError() async {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login(Self.token)) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            if request.url?.path.contains("/script/") == true {
                // A gateway that quotes the request's Authorization header in its error.
                let echoed = "got \(request.header("Authorization") ?? "") for token \(Self.token)"
                return .json(500, String(decoding: ServerWordsTests.dataAPI(code: #""10""#, message: echoed), as: UTF8.self))
            }
            return .json(200, Bodies.value("ok"))
        }
        let hookError = Recorder<FMError>()
        h.api.onNewSession = { session, done in
            session.api.runScript(layout: "Contacts", script: "Setup") { _, _ in
                let error = FMError.current ?? FMError(code: "?", message: "no error bound")
                hookError.record(error)
                done(error)
            }
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        let result = await done.value().first
        #expect(result?.testFailureCode == "10", "\(String(describing: result))")
        if case .failure(let error)? = result {
            #expect(!error.description.contains(Self.token), "the waiting call's error: \(error)")
        }
        let seen = await hookError.value().first
        #expect(seen?.message.hasPrefix("got ") == true, "\(String(describing: seen))")
        #expect(seen.map { !$0.description.contains(Self.token) } == true, "the hook call's error: \(String(describing: seen))")
        let leaking = h.logs.values.filter { event in
            (event.message + event.metadata.values.joined(separator: " ")).contains(Self.token)
        }
        #expect(leaking.isEmpty, "\(leaking.map(\.description))")
        #expect(h.logs.values.contains { $0.level == .error && $0.message.hasPrefix("the new-session hook failed: 10 got ") },
                "\(h.logs.values.map(\.description))")
    }
}

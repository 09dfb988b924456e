import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A header value with control characters (CR, LF, NUL) fails the call before anything is sent: `URLRequest`
/// would silently drop such a header, and the call would go out without `Authorization`.
@Suite("Header values")
struct HeaderValueTests {
    typealias Outcome = Result<String, FMError>

    func run(_ harness: Harness, _ endpoint: Endpoint<String>) -> Outcome? {
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        harness.api.perform(endpoint) { recorder.record($0) }
        let values = recorder.wait()
        harness.drain()
        #expect(recorder.values.count == 1)
        return values.first
    }

    /// A login answer whose token holds CR/LF is malformed (-1007); the token is neither used nor stored.
    @Test(arguments: [#"abcd\r\nX-Injected: 1"#, #"abcd\u0000efgh"#, "abcd efgh", #"abcd\tefgh"#])
    func aTokenThatCannotBeAHeaderIsMalformed(token: String) {
        let harness = Harness { request in
            isLogin(request) ? .json(200, Bodies.login(token)) : .json(200, Bodies.value("x"))
        }
        #expect(run(harness, TestEndpoints.records())?.testFailureCode == FMError.ClientCode.malformedResponse)
        #expect(harness.stub.requests.count == 1, "only the login went out")
        #expect(harness.store.load() == nil)
        #expect(harness.api.currentToken == nil)
    }

    /// Configured base64 credentials with a line break inside: -1001, nothing sent.
    @Test func encodedCredentialsWithALineBreakAreAConfigurationError() {
        let harness = Harness(configuration: FMConfiguration(host: "fms.example.com", database: "Contacts",
                                                             encodedCredentials: "YWRtaW46\r\nX-Injected: 1"))
        #expect(run(harness, TestEndpoints.records())?.testFailureCode == FMError.ClientCode.invalidConfiguration)
        #expect(harness.stub.requests.isEmpty)
    }

    /// Base64 credentials passed to a call (`refreshToken(encodedCredentials:)`): -1002, nothing sent.
    @Test func passedCredentialsWithALineBreakAreAnArgumentError() {
        let harness = Harness()
        let recorder = Recorder<String>(queueKey: Harness.key)
        harness.api.refreshToken(encodedCredentials: "YWRtaW46\nX-Injected: 1") { _, _, code in recorder.record(code) }
        #expect(recorder.wait() == [FMError.ClientCode.invalidArgument])
        #expect(harness.stub.requests.isEmpty)
    }

    /// An explicit token (legacy calls pass their own) with a line break: -1002, nothing sent.
    @Test func anExplicitTokenWithALineBreakIsAnArgumentError() {
        let harness = Harness()
        #expect(run(harness, TestEndpoints.records(auth: .token("abcd\r\nX-Injected: 1")))?.testFailureCode
                == FMError.ClientCode.invalidArgument)
        #expect(harness.stub.requests.isEmpty)
    }

    /// Ordinary tokens and credentials still go out in the header.
    @Test func ordinaryValuesAreSent() {
        let harness = Harness { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("x"))
        }
        #expect(run(harness, TestEndpoints.records())?.testValue == "x")
        #expect(harness.stub.requests.last?.header("Authorization") == "Bearer " + Bodies.token)
    }
}

/// A token store holding a value that cannot be a `Bearer` token (a corrupted file, a legacy app writing
/// `fm-token` by hand) is treated as empty: the managed session logs in instead of failing every call.
@Suite("Unusable stored tokens")
struct StoredTokenTests {
    @Test(arguments: ["bad\r\ntoken", "bad token", ""])
    func anUnusableStoredTokenIsIgnored(stored: String) {
        let store = FMMemoryTokenStore(FMStoredToken(token: stored, expiry: .distantFuture))
        let harness = Harness(store: store) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("x"))
        }
        #expect(!harness.api.isActiveToken())
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "x")
        #expect(harness.stub.count("POST", "/sessions") == 1)
        #expect(harness.stub.requests.last?.header("Authorization") == "Bearer " + Bodies.token)
        #expect(store.load()?.token == Bodies.token)
    }
}

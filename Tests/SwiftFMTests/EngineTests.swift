import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The engine completes every call exactly once, on the callback queue (never main): a decoder error is -1007, a bad
// endpoint or configuration reaches the completion unsent, credentials are checked, an explicit token never logs
// in, cancel works at every stage, nothing secret is logged; the same over the real URLSession transport.

@Suite("Engine: completions, errors, cancel, redaction")
struct EngineTests {
    typealias Outcome = Result<String, FMError>

    /// Runs `endpoint` once and returns the single outcome, checking it arrived once and on the callback queue.
    func run(_ harness: Harness, _ endpoint: Endpoint<String>, sourceLocation: SourceLocation = #_sourceLocation) -> Outcome? {
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        harness.api.perform(endpoint) { recorder.record($0) }
        let values = recorder.wait(sourceLocation: sourceLocation)
        harness.drain()
        #expect(recorder.values.count == 1, sourceLocation: sourceLocation)
        #expect(recorder.offQueue == 0, "completion ran off the callback queue", sourceLocation: sourceLocation)
        return values.first
    }

    func loggedIn(retry: FMRetryPolicy = .standard, _ answer: @escaping @Sendable (URLRequest) -> StubAnswer?) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.retry = retry
        return Harness(configuration: configuration) { request in isLogin(request) ? .json(200, Bodies.login()) : answer(request) }
    }

    @Test func successDecodesOnTheCallbackQueue() {
        let harness = loggedIn { _ in .json(200, Bodies.value("hello")) }
        #expect(run(harness, TestEndpoints.records())?.testValue == "hello")
    }

    @Test(arguments: [
        (StubAnswer.failure(.cannotConnectToHost), "-1003"),
        (StubAnswer.failure(.networkConnectionLost), "-1003"),
        (StubAnswer.failure(.timedOut), "-1004"),
        (StubAnswer.failure(.cancelled), "-1005"),
        (StubAnswer.body(502, Data("<html>Bad Gateway</html>".utf8), contentType: "text/html"), "-1006"),
        (StubAnswer.body(200, Data("<html>maintenance</html>".utf8), contentType: "text/html"), "-1006"),
        (StubAnswer.json(500, #"{"messages":[{"code":"105","mess"#), "-1007"),
        (StubAnswer.json(200, #"{"response":{"value":"x"},"mess"#), "-1007"),
        (StubAnswer.json(200, #"{"response":{"value":"x"}}"#), "-1007"),
        (StubAnswer.json(500, #"{"response":{}}"#), "-1007"),
        (StubAnswer.json(500, Bodies.noRecords), "401"),
        (StubAnswer.json(400, #"{"messages":[{"code":"1708","message":"Parameter value is invalid"}],"response":{}}"#), "1708"),
    ])
    func everyFailureCompletesOnce(answer: StubAnswer, code: String) {
        // Three attempts (the default before reads rode out a restart): a refused read completes with -1003.
        let harness = loggedIn(retry: FMRetryPolicy(maxAttempts: 3)) { _ in answer }
        let outcome = run(harness, TestEndpoints.records())
        #expect(outcome?.testFailureCode == code)
    }

    @Test func decoderErrorsThatAreNotFMErrorBecomeMinus1007() {
        struct Odd: Error {}
        let harness = loggedIn { _ in .json(200, Bodies.ok) }
        let endpoint = Endpoint<String>(.get, .database, ["x"]) { _ in throw Odd() }
        #expect(run(harness, endpoint)?.testFailureCode == "-1007")
    }

    @Test func invalidEndpointIsReportedWithoutSending() {
        let harness = Harness()
        var endpoint = TestEndpoints.records()
        endpoint.invalid = .invalidArgument("null in fieldData")
        #expect(run(harness, endpoint)?.testFailureCode == "-1002")
        #expect(harness.stub.requests.isEmpty)
    }

    @Test(arguments: ["", "not a url://", "ftp://host"])
    func invalidConfigurationIsReportedThroughTheCompletion(host: String) {
        let harness = Harness(configuration: FMConfiguration(host: host, database: "Contacts", username: "a", password: "b"))
        #expect(run(harness, TestEndpoints.records())?.testFailureCode == "-1001")
        #expect(harness.stub.requests.isEmpty)
    }

    @Test func missingCredentialsAreMinus1001() {
        let harness = Harness(configuration: FMConfiguration(host: "h", database: "Contacts", credentials: nil))
        #expect(run(harness, TestEndpoints.records())?.testFailureCode == "-1001")
        #expect(run(harness, TestEndpoints.records(auth: .basic(encoded: nil)))?.testFailureCode == "-1001")
        #expect(harness.stub.requests.isEmpty)
    }

    @Test func basicAuthUsesConfiguredOrGivenCredentials() {
        let harness = Harness { _ in .json(200, Bodies.value("ok")) }
        _ = run(harness, TestEndpoints.records(auth: .basic(encoded: nil)))
        _ = run(harness, TestEndpoints.records(auth: .basic(encoded: "ZW5jb2RlZA==")))
        _ = run(harness, TestEndpoints.records(auth: .none))
        let headers = harness.stub.requests.map { $0.header("Authorization") }
        #expect(headers == ["Basic \(basicValue("admin", "s3cret-pass"))", "Basic ZW5jb2RlZA==", nil])
    }

    @Test func explicitTokenNeverLogsInNorReplays() {
        let harness = Harness { _ in .json(401, Bodies.expired) }
        #expect(run(harness, TestEndpoints.records(auth: .token("mine")))?.testFailureCode == "952")
        #expect(harness.stub.requests.count == 1)
        #expect(harness.stub.requests.first?.header("Authorization") == "Bearer mine")
    }

    @Test func cancelBeforeTheAnswerCompletesOnceWithMinus1005() {
        let harness = loggedIn { _ in .hold }
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        let request = harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        // Wait until the data request is held by the transport.
        let login = Recorder<Void>()
        harness.api.callbackQueue.async { login.record(()) }
        login.wait()
        let concurrent = DispatchGroup()
        for _ in 0..<8 {
            DispatchQueue.global().async(group: concurrent) { request.cancel() }
        }
        request.cancel()
        concurrent.wait()
        recorder.wait()
        harness.drain()
        #expect(recorder.values.count == 1)
        #expect(recorder.values.first?.testFailureCode == "-1005")
        #expect(recorder.offQueue == 0)
        #expect(request.isCancelled)
    }

    @Test func cancelAfterDeliveryChangesNothing() {
        let harness = loggedIn { _ in .json(200, Bodies.value("done")) }
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        let request = harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        recorder.wait()
        request.cancel()
        request.cancel()
        harness.drain()
        #expect(recorder.values.count == 1)
        #expect(recorder.values.first?.testValue == "done")
    }

    @Test func cancelWhileHeldCancelsTheTransportTask() throws {
        let harness = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in .hold }
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        let request = harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let task = try #require(harness.stub.tasks.first)
        #expect(!task.isCancelled)
        request.cancel()
        recorder.wait()
        #expect(task.isCancelled)
        #expect(recorder.values.first?.testFailureCode == "-1005")
    }

    @Test func cancelWhileWaitingForLoginDoesNotSendTheCall() {
        let gate = DispatchSemaphore(value: 0)
        let loginStarted = Recorder<Void>()
        let harness = Harness { request in
            if isLogin(request) {
                loginStarted.record(())
                gate.wait()
                return .json(200, Bodies.login())
            }
            return .json(200, Bodies.value("late"))
        }
        let recorder = Recorder<Outcome>(expecting: 2, queueKey: Harness.key)
        // The first call starts the login (blocked in the stub on another thread); the second waits for it.
        DispatchQueue.global().async { harness.api.perform(TestEndpoints.records()) { recorder.record($0) } }
        loginStarted.wait()
        #expect(harness.api.pool.isLoggingIn(slot: 0))
        let request = harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        request.cancel()
        gate.signal()
        let outcomes = recorder.wait()
        harness.drain()
        #expect(outcomes.count == 2)
        #expect(outcomes.filter { $0.testFailureCode == "-1005" }.count == 1)
        #expect(outcomes.filter { $0.testValue == "late" }.count == 1)
        #expect(harness.stub.count("GET", "/records") == 1)
    }

    @Test func defaultCallbackQueueIsNotMain() {
        let api = DataAPI(configuration: FMConfiguration(host: "h", database: "d", username: "u", password: "p"), transport: StubTransport())
        #expect(api.callbackQueue !== DispatchQueue.main)
        #expect(api.callbackQueue.label.hasPrefix("SwiftFM"))
    }

    @Test func logsAreRedacted() {
        let harness = Harness(configuration: FMConfiguration(
            host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass",
            dataSources: [FMDataSource(database: "Other", username: "u2", password: "other-secret")]
        )) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(401, Bodies.expired)
        }
        _ = run(harness, TestEndpoints.records())
        let logout = Recorder<Result<Bool, FMError>>()
        harness.api.logoutResult(token: Bodies.token) { logout.record($0) }
        logout.wait()
        let lines = harness.logs.values.map(\.message)
        #expect(!lines.isEmpty)
        for line in lines {
            for secret in ["s3cret-pass", "other-secret", basicValue("admin", "s3cret-pass"), Bodies.token] {
                #expect(!line.contains(secret), "log line leaks a secret: \(line)")
            }
        }
        #expect(lines.contains { $0.contains("POST /fmi/data/vLatest/databases/Contacts/sessions 200") })
        #expect(lines.contains { $0.contains("DELETE /fmi/data/vLatest/databases/Contacts/sessions/<token>") })
        #expect(lines.contains { $0.contains("401 code 952") })
    }

    /// A container's streaming URL is a capability: while the streaming session lives, its key downloads the
    /// file for anyone who has it. The request and answer lines name the file by its extension only. Failed
    /// before: `→ GET /Streaming_SSL/MainDB/6A4A2F0C1B9E.png?…` (found by the companion package's review).
    @Test func containerKeysStayOutOfTheLog() throws {
        let key = "6A4A2F0C1B9E77D0"
        let harness = Harness(configuration: FMConfiguration(host: "fms.example.com", database: "Contacts",
                                                             username: "admin", password: "s3cret-pass")) { request in
            guard let url = request.url?.absoluteString else { return nil }
            if url.contains("/streaming/mainDB/second") { return .body(200, Data([7]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": "https://fms.example.com/streaming/mainDB/second\(key).png",
                                             "Set-Cookie": "X-FMS-Session-Key=k1; Path=/"])
        }
        let recorder = Recorder<(Data?, String)>()
        let start = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/\(key).png?RCType=EmbeddedRCFileProcessor"))
        harness.api.downloadContainer(url: start) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first?.1 == "0")
        let lines = harness.logs.values.map { $0.message + " " + $0.metadata.values.joined(separator: " ") }
        #expect(lines.contains { $0.contains("/Streaming_SSL/MainDB/<container>.png") }, "\(lines)")
        for line in lines {
            #expect(!line.contains(key), "a log line holds a container's key: \(line)")
        }
    }

    @Test func descriptionsAreRedacted() {
        let configuration = FMConfiguration(host: "h", database: "d", credentials: .basic(username: "admin", password: "s3cret-pass"),
                                            dataSources: [FMDataSource(database: "o", username: "u", password: "other-secret")])
        let encoded = FMCredentials.encoded("YWRtaW46czNjcmV0")
        let stored = FMStoredToken(token: Bodies.token, expiry: Date())
        let api = DataAPI(configuration: configuration, transport: StubTransport())
        let texts = [
            String(describing: configuration), String(reflecting: configuration),
            String(describing: configuration.credentials!), String(describing: encoded), String(reflecting: encoded),
            String(describing: stored), String(reflecting: stored), String(describing: api),
            String(describing: configuration.dataSources[0]),
        ]
        for text in texts {
            for secret in ["s3cret-pass", "other-secret", "YWRtaW46czNjcmV0", Bodies.token, basicValue("admin", "s3cret-pass")] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect(String(describing: configuration).contains("admin"))
    }

    @Test func credentialsEncoding() {
        #expect(FMCredentials.basic(username: "admin", password: "pässwörd:x").encodedValue == basicValue("admin", "pässwörd:x"))
        #expect(FMCredentials.basic(username: "", password: "x").encodedValue == nil)
        #expect(FMCredentials.encoded("  abc= \n").encodedValue == "abc=")
        #expect(FMCredentials.encoded("").encodedValue == nil)
        #expect(FMConfiguration(host: "fms.example.com", database: "d", credentials: nil).baseURL?.absoluteString == "https://fms.example.com")
        #expect(FMConfiguration(host: "", database: "d", credentials: nil).baseURL == nil)
    }

    @Test func transportErrorMapping() {
        #expect(FMError.fromTransport(URLError(.timedOut)).code == "-1004")
        #expect(FMError.fromTransport(URLError(.cancelled)).code == "-1005")
        #expect(FMError.fromTransport(URLError(.cannotFindHost)).code == "-1003")
        #expect(FMError.fromTransport(CocoaError(.fileReadUnknown)).code == "-1003")
    }

    @Test func acceptedStatusesReachTheDecoder() {
        let harness = Harness { _ in .json(302, "", headers: ["Location": "https://x/y", "Set-Cookie": "c=1"]) }
        let endpoint = Endpoint<String>(.get, .absolute(URL(string: "https://fms.example.com/Streaming/x.jpg")!), [], auth: .none) { response in
            "\(response.status) \(response.header("location") ?? "-")"
        }
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        harness.api.perform(endpoint, options: CallOptions(accepting: { $0 == 200 || $0 == 302 })) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "302 https://x/y")
    }

    @Test func attachingToAnExistingHandle() {
        let harness = Harness { _ in .hold }
        let handle = FMRequest()
        handle.cancel()
        let recorder = Recorder<Outcome>(queueKey: Harness.key)
        let returned = harness.api.perform(TestEndpoints.records(auth: .none), options: CallOptions(accepting: { $0 == 200 }, handle: handle)) { recorder.record($0) }
        #expect(returned === handle)
        #expect(recorder.wait().first?.testFailureCode == "-1005")
        #expect(harness.stub.requests.isEmpty || harness.stub.tasks.allSatisfy(\.isCancelled))
        // Failed before the fix (the wait ran out): the call ended in its init, before it was admitted, so the
        // admission registered a call that had ended and that nothing would release; a shutdown waited for it
        // forever. (An OData call cancelled while its Claris ID token was fetched came here.)
        let shutdown = Recorder<Bool>(queueKey: Harness.key)
        harness.api.shutdown(grace: 0) { shutdown.record(true) }
        #expect(shutdown.wait() == [true])
    }
}

@Suite("Engine over the real URLSession transport")
struct EngineURLSessionTests {
    /// A loopback port nothing listens on: bound (so no other test gets it) but not listening.
    /// The caller closes the returned descriptor when done.
    func closedPort() -> (fd: Int32, port: Int) {
        bindLoopback(reuseAddress: false)
    }

    @Test func connectionRefusedIsMinus1003OnTheCallbackQueue() {
        let (fd, port) = closedPort()
        defer { close(fd) }
        let queue = DispatchQueue(label: "refused.callbacks")
        queue.setSpecific(key: Harness.key, value: "callbacks")
        let api = DataAPI(
            // The hang bound, not 10 s: the refusal comes at once, and a loaded machine could pass 10 s first (-1004).
            configuration: FMConfiguration(host: "http://127.0.0.1:\(port)", database: "Contacts", username: "u", password: "p",
                                           timeout: TestBound.seconds),
            callbackQueue: queue
        )
        let recorder = Recorder<(String?, String)>(queueKey: Harness.key)
        api.login { recorder.record(($0, $1)) }
        let outcome = recorder.wait().first
        #expect(outcome?.0 == nil)
        #expect(outcome?.1 == "-1003")
        #expect(recorder.offQueue == 0)
    }

    @Test func nsErrorsOfTheURLDomainAreMapped() {
        #expect(FMError.fromTransport(NSError(domain: NSURLErrorDomain, code: URLError.timedOut.rawValue)).code == "-1004")
        #expect(FMError.fromTransport(NSError(domain: NSURLErrorDomain, code: URLError.cancelled.rawValue)).code == "-1005")
        #expect(FMError.fromTransport(NSError(domain: NSURLErrorDomain, code: URLError.cannotConnectToHost.rawValue)).code == "-1003")
    }

    @Test func legacyDatabasePathAsHost() throws {
        let configuration = FMConfiguration(host: "https://fms.example.com/fmi/data/v1/databases/Contacts", database: "Contacts", credentials: nil, version: .v1)
        let endpoint = Endpoint<Void>(.get, .database, ["layouts"]) { _ in }
        let url = try RequestBuilder.url(for: endpoint, configuration: configuration).get()
        #expect(url.absoluteString == "https://fms.example.com/fmi/data/v1/databases/Contacts/layouts")
    }

    @Test func hostWithUserInfoIsNotEchoed() {
        let configuration = FMConfiguration(host: "https://admin:hunter2@fms.example.com", database: "d", credentials: nil)
        let endpoint = Endpoint<Void>(.get, .database, ["layouts"]) { _ in }
        guard case .failure(let error) = RequestBuilder.url(for: endpoint, configuration: configuration) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == "-1001")
        #expect(!error.description.contains("hunter2"))
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A read rides out a server restart (refused, reset, 502/503/504) until its deadline under the default policy,
/// with its back-off drawn from the documented ranges; a write does not, other failures keep to maxAttempts,
/// and libcurl's TLS failures are never retried.
@Suite("Retry: reads ride out a restart, writes do not")
struct ReadRideOutTests {
    private static func valid(_ token: String) -> FMStoredToken { FMStoredToken(token: token, expiry: .distantFuture) }

    // MARK: reads ride out a restart

    @Test(arguments: [URLError.Code.cannotConnectToHost, .networkConnectionLost])
    func aReadRidesOutARestartAndAWriteDoesNot(_ failure: URLError.Code) async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0, retriesReadsUntilDeadline: true)
        let down = Locked(0)
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            let refused = down.withLock { left -> Bool in
                guard left > 0 else { return false }
                left -= 1
                return true
            }
            if refused { return .failure(failure) }
            return request.httpMethod == "GET" ? .json(200, Bodies.value("ok")) : .json(200, Bodies.ok)
        }
        // The host answers once (only a host that answered this client is ridden out).
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        // Callback surface: eight refused requests, more than maxAttempts, fewer than the deadline allows.
        down.withLock { $0 = 8 }
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(await read.value().first?.testValue == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 9)
        // Async surface.
        down.withLock { $0 = 5 }
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 15)
        // A write that met a refused connection is not retried.
        down.withLock { $0 = 5 }
        let create = Endpoint<String>(.post, .database, ["layouts", "Contacts", "records"], body: .json(Data("{}".utf8))) { _ in "" }
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(create) { write.record($0) }
        #expect(await write.value().first?.testError?.code == FMError.ClientCode.transport)
        #expect(h.stub.count("POST", "/records") == 1)
    }

    @Test func theDefaultPolicyRidesOutARestartAndIsDocumentedByItsValues() {
        let policy = FMRetryPolicy.standard
        #expect(FMConfiguration(host: "h", database: "d", username: "u", password: "p").retry == .standard)
        #expect(policy.retriesReadsUntilDeadline && !policy.retriesWrites)
        #expect(policy.maxAttempts == 3 && policy.initialDelay == 0.25 && policy.maxDelay == 2)
        #expect(FMRetryPolicy.untilDeadline == .standard)
        #expect(FMRetryPolicy.none.maxAttempts == 1 && !FMRetryPolicy.none.retriesReadsUntilDeadline)
        // The earlier default, for whoever wants it back.
        let old = FMRetryPolicy(maxAttempts: 3)
        #expect(!old.retriesReadsUntilDeadline && old.initialDelay == 0.25 && old.maxDelay == 8)
    }

    // MARK: the default policy rides out a restart

    /// A server that is away (every request answered `failure`) until the test's event: the `upAfter`-th
    /// back-off drawn. It records the range of every back-off (the engine's random source, so no call waits).
    final class Restart: @unchecked Sendable {
        private let lock = NSLock()
        private var up = false
        private var ranges: [ClosedRange<Double>] = []
        let upAfter: Int
        init(upAfter: Int) { self.upAfter = upAfter }

        var isUp: Bool { lock.withLock { up } }
        var drawn: [ClosedRange<Double>] { lock.withLock { ranges } }
        func goDown() { lock.withLock { up = false; ranges = [] } }
        func comeUp() { lock.withLock { up = true } }

        /// The engine's jitter: records the range, comes back up at the `upAfter`-th draw, waits 0 s.
        func draw(_ range: ClosedRange<Double>) -> Double {
            lock.withLock {
                ranges.append(range)
                if ranges.count == upAfter { up = true }
            }
            return range.lowerBound
        }
    }

    static let away: [StubAnswer] = [
        .failure(.cannotConnectToHost), .failure(.networkConnectionLost),
        .body(502, Data("<html>Bad Gateway</html>".utf8), contentType: "text/html"),
        .body(503, Data("<html>Service Unavailable</html>".utf8), contentType: "text/html"),
        .json(504, "{}"),
    ]

    /// Under the default policy (no retry setting at all), a read that meets a refused or reset connection or
    /// a 502/503/504 keeps retrying past `maxAttempts` (3) until the server is back, through the callback
    /// and the async surfaces; the back-off ceilings double from 0.25 s and stop at the 2 s cap, each wait
    /// drawn from `0 … ceiling`; a write is sent once.
    @Test(arguments: away)
    func theDefaultPolicyRidesOutARestartAndAWriteDoesNot(_ failure: StubAnswer) async throws {
        let restart = Restart(upAfter: 6)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            guard restart.isUp else { return failure }
            return request.httpMethod == "GET" ? .json(200, Bodies.value("ok")) : .json(200, Bodies.ok)
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        #expect(h.api.configuration.retry == .standard)
        // The host answers once (only a host that answered this client is ridden out).
        restart.comeUp()
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        restart.goDown()
        // Callback surface: six refused attempts, then the seventh answers.
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(await read.value().first?.testValue == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 7)
        #expect(restart.drawn == [0...0.25, 0...0.5, 0...1, 0...2, 0...2, 0...2])
        // Async surface.
        restart.goDown()
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(h.stub.count("GET", "/records") == 1 + 14)
        #expect(restart.drawn.count == 6)
        // A find (a POST that cannot change data) rides it out too.
        restart.goDown()
        let find = Endpoint<String>(.post, .database, ["layouts", "Contacts", "_find"], body: .json(Data(#"{"query":[{"a":"1"}]}"#.utf8))) { _ in "found" }
        #expect(try await h.api.bridge(find) == "found")
        #expect(h.stub.count("POST", "/_find") == 7)
        // A write is not retried: one request, the failure reported, no back-off drawn.
        restart.goDown()
        let create = Endpoint<String>(.post, .database, ["layouts", "Contacts", "records"], body: .json(Data("{}".utf8))) { _ in "" }
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(create) { write.record($0) }
        #expect(await write.value().first?.testError != nil)
        #expect(h.stub.count("POST", "/records") == 1)
        #expect(restart.drawn.isEmpty)
    }

    /// A restart forgets the sessions: a read whose token the server no longer knows after it came back
    /// logs in again and replays; one whose login meets the restart rides that out too.
    @Test func aRestartThatForgetsTheSessionAndRefusesTheLoginIsRiddenOut() async throws {
        let restart = Restart(upAfter: 5)
        let logins = Locked(0)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("old"))) { request in
            guard restart.isUp else { return .failure(.cannotConnectToHost) }
            if isLogin(request) {
                let n = logins.withLock { $0 += 1; return $0 }
                return .json(200, Bodies.login("new\(n)"))
            }
            if request.header("Authorization") == "Bearer old" { return .json(401, Bodies.expired) }
            return .json(200, Bodies.value("ok"))
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        // The host answers once (only a host that answered this client is ridden out).
        restart.comeUp()
        #expect(try await h.api.bridge(Self.productInfo) == "ok")
        restart.goDown()
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(await read.value().first?.testValue == "ok")
        #expect(logins.value == 1)
        // A read that must log in first while the server is away.
        _ = h.api.sessions.resetSession()
        restart.goDown()
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { second.record($0) }
        #expect(await second.value().first?.testValue == "ok")
        #expect(h.stub.count("POST", "/sessions") >= 5 + 2)
        #expect(logins.value == 2)
    }

    /// A call without a session (`GET /productInfo`): answered "ok" by the stubs above when the host is up.
    static let productInfo = Endpoint<String>(.get, .host, ["productInfo"], auth: .none) { response in
        (try Envelope.response(from: response.body, status: response.status))["value"] as? String ?? ""
    }

    /// What `maxAttempts` still bounds under the default policy, and what is never retried.
    @Test(arguments: [
        (StubAnswer.json(500, #"{"messages":[{"code":"812","message":"Exceeded host's capacity"}],"response":{}}"#), "812", 3),
        (StubAnswer.json(500, #"{"messages":[{"code":"956","message":"Maximum number of sessions exceeded"}],"response":{}}"#), "956", 3),
        (StubAnswer.failure(.cannotFindHost), FMError.ClientCode.transport, 3),
        (StubAnswer.failure(.serverCertificateUntrusted), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.serverCertificateHasUnknownRoot), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.secureConnectionFailed), FMError.ClientCode.transport, 1),
        (StubAnswer.failure(.timedOut), FMError.ClientCode.timeout, 1),
    ])
    func theDefaultPolicyKeepsOtherFailuresToMaxAttempts(_ answer: StubAnswer, code: String, attempts: Int) {
        let restart = Restart(upAfter: .max)
        let h = Harness(store: FMMemoryTokenStore(Self.valid("tok"))) { request in
            if (request.url?.path ?? "").hasSuffix("/productInfo") { return .json(200, Bodies.value("ok")) }
            return isLogin(request) ? .json(200, Bodies.login("tok")) : answer
        }
        h.api.retryJitter.withLock { $0 = { restart.draw($0) } }
        // The host answered once: a failed name lookup then keeps to maxAttempts.
        let primed = Recorder<Result<String, FMError>>()
        h.api.perform(Self.productInfo) { primed.record($0) }
        #expect(primed.wait().first?.testValue == "ok")
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        #expect(read.wait().first?.testError?.code == code)
        #expect(h.stub.count("GET", "/records") == attempts)
        #expect(restart.drawn.count == attempts - 1)
    }

    /// libcurl's OpenSSL failures (code -1 naming SSL or a certificate) are TLS failures too: never retried.
    @Test func libcurlTLSFailuresAreNeverRetried() {
        let untrusted = NSError(domain: NSURLErrorDomain, code: -1,
                                userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: unable to get local issuer certificate"])
        let error = FMError.fromTransport(untrusted, url: URL(string: "https://fms.example.com"))
        #expect(error.isTLSFailure && !Classifier.serverAway(error))
        #expect(Classifier.verdict(for: error, beforeAnswer: true, usedSession: true, headers: [:]) == .final)
        let refused = FMError.fromTransport(URLError(.cannotConnectToHost), url: URL(string: "https://fms.example.com"))
        #expect(!refused.isTLSFailure && Classifier.serverAway(refused) && refused.urlErrorCode == -1004)
        let lookup = FMError.fromTransport(URLError(.cannotFindHost), url: URL(string: "https://fms.example.com"))
        #expect(!Classifier.serverAway(lookup))
        #expect(Classifier.verdict(for: lookup, beforeAnswer: true, usedSession: true, headers: [:]) == .transient(retryAfter: nil))
    }

    /// An answer that broke off after its head: a call that cannot change data is sent again, under maxAttempts (the
    /// server is there, not away); a write never. An answer that could not be read (a corrupt coding) is final.
    @Test func anAnswerThatBrokeOffIsRetriedForReadsOnly() {
        let url = URL(string: "https://fms.example.com")
        let brokeOff = FMError.fromTransport(URLError(.networkConnectionLost), url: url, answerStarted: true)
        #expect(Classifier.isAnswerBrokeOff(brokeOff) && !Classifier.serverAway(brokeOff))
        #expect(Classifier.verdict(for: brokeOff, beforeAnswer: false, usedSession: true, headers: [:], mayBeSentAgain: true) == .transient(retryAfter: nil))
        #expect(Classifier.verdict(for: brokeOff, beforeAnswer: false, usedSession: true, headers: [:], mayBeSentAgain: false) == .final)
        let unreadable = FMError.fromTransport(URLError(.cannotDecodeContentData), url: url, answerStarted: true)
        #expect(!Classifier.isAnswerBrokeOff(unreadable))
        // Only a lost connection: any other failure after the head (corelibs' raw-data decoding) is not sent again.
        let undecodable = FMError.fromTransport(URLError(.cannotDecodeRawData), url: url, answerStarted: true)
        #expect(!Classifier.isAnswerBrokeOff(undecodable))
        #expect(Classifier.verdict(for: undecodable, beforeAnswer: false, usedSession: true, headers: [:], mayBeSentAgain: true) == .final)
        // Corelibs' URLSession: libcurl's failures as code -1, told apart by curl's words.
        func corelibs(_ words: String) -> FMError {
            FMError.fromTransport(NSError(domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: words]), url: url, answerStarted: true)
        }
        let cut = corelibs("transfer closed with 3996 bytes remaining to read")
        #expect(Classifier.isAnswerBrokeOff(cut) && cut.message.contains("broke off"))
        let coding = corelibs("Unrecognized content encoding type. libcurl understands deflate, gzip, br, zstd content encodings.")
        #expect(!Classifier.isAnswerBrokeOff(coding) && coding.message.contains("could not be read"), "\(coding.message)")
        #expect(!Classifier.isAnswerBrokeOff(corelibs("SSL read: error:0A000126:SSL routines::unexpected eof while reading")))
        #expect(Classifier.verdict(for: unreadable, beforeAnswer: false, usedSession: true, headers: [:], mayBeSentAgain: true) == .final)
        // A server's own -1003 whose message happens to read alike is no answer that broke off.
        let servers = ODataEnvelope.error(status: 500, body: Data(#"{"error":{"code":"-1003","message":"The answer from x broke off: y"}}"#.utf8))
        #expect(servers.code == "-1003" && servers.message.contains("broke off"))
        #expect(!Classifier.isAnswerBrokeOff(servers))
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Fail fast on first contact, ride out what was alive. A connection failure (refused, a name that
/// does not resolve) is retried only for a host that answered this client before and has not been away for
/// longer than `Reachability.window`; a TLS failure never is. Every connection failure names the host, the
/// port and the cause, and, when retried, how many times and for how long. The clock is the harness's.
@Suite("First contact: fail fast, ride out what was alive")
struct FirstContactRuleTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "tok", expiry: .distantFuture)) }

    /// A server that is down (every request answers `failure`) until it is brought up, by the test or at the
    /// `upAfter`-th back-off drawn (the engine's random source, so no call waits).
    final class Server: @unchecked Sendable {
        private let lock = NSLock()
        private var up = true
        private var draws = 0
        private var upAfter = Int.max
        var isUp: Bool { lock.withLock { up } }
        var drawn: Int { lock.withLock { draws } }
        func goDown(upAfter: Int = .max) { lock.withLock { up = false; draws = 0; self.upAfter = upAfter } }
        func comeUp() { lock.withLock { up = true } }
        func draw(_ range: ClosedRange<Double>) -> Double {
            lock.withLock {
                draws += 1
                if draws == upAfter { up = true }
            }
            return range.lowerBound
        }
    }

    static func harness(_ server: Server, failure: URLError.Code = .cannotConnectToHost, store: FMTokenStore = loggedIn,
                        configuration: FMConfiguration? = nil) -> Harness {
        let h = Harness(configuration: configuration ?? FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw"),
                        store: store) { request in
            guard server.isUp else { return .failure(failure) }
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            return request.httpMethod == "GET" ? .json(200, Bodies.value("ok")) : .json(200, Bodies.ok)
        }
        h.api.retryJitter.withLock { $0 = { server.draw($0) } }
        return h
    }

    static let create = Endpoint<String>(.post, .database, ["layouts", "Contacts", "records"], body: .json(Data("{}".utf8))) { _ in "" }

    // MARK: first contact

    /// Nothing listening, on first contact: one request, no back-off, through the callback and async
    /// surfaces; the message names host, port, cause, and why it was not retried.
    @Test(arguments: [URLError.Code.cannotConnectToHost, .networkConnectionLost])
    func aRefusedFirstContactFailsAtOnce(_ failure: URLError.Code) async throws {
        let server = Server()
        server.goDown()
        let h = Self.harness(server, failure: failure)
        let callback = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { callback.record($0) }
        let error = try #require(await callback.value().first?.testError)
        #expect(error.code == FMError.ClientCode.transport)
        #expect(error.message.contains("fms.example.com:443"), "\(error)")
        #expect(error.message.contains(failure == .cannotConnectToHost ? "connection refused" : "closed before an answer"), "\(error)")
        #expect(error.message.contains("not retried: fms.example.com:443 has not answered this client yet"), "\(error)")
        #expect(h.stub.count("GET", "/records") == 1 && server.drawn == 0)
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        #expect(h.stub.count("GET", "/records") == 2 && server.drawn == 0)
        #expect(!h.logs.values.contains { $0.message.contains("retry") })
    }

    /// A first call that must log in first: the refused login is the answer (once), not retried.
    @Test func aRefusedFirstLoginFailsAtOnce() throws {
        let server = Server()
        server.goDown()
        let h = Self.harness(server, store: FMMemoryTokenStore())
        let callback = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { callback.record($0) }
        let error = try #require(callback.wait().first?.testError)
        #expect(error.code == FMError.ClientCode.transport && error.message.contains("connection refused"), "\(error)")
        #expect(h.stub.count("POST", "/sessions") == 1 && server.drawn == 0)
        #expect(h.stub.count("GET", "/records") == 0)
    }

    /// A name that does not resolve, on first contact: once, "no such host".
    @Test func anUnresolvableFirstContactFailsAtOnce() async throws {
        let server = Server()
        server.goDown()
        let h = Self.harness(server, failure: .cannotFindHost)
        do {
            _ = try await h.api.bridge(TestEndpoints.records())
            Issue.record("a host that does not resolve answered")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport)
            #expect(error.message.contains("fms.example.com:443") && error.message.contains("no such host"), "\(error)")
        }
        #expect(h.stub.count("GET", "/records") == 1 && server.drawn == 0)
    }

    /// A certificate the client does not trust: once, "certificate not trusted: …" with the remedy (the
    /// system trust store), whether or not the host answered before.
    @Test(arguments: [URLError.Code.serverCertificateUntrusted, .serverCertificateHasUnknownRoot])
    func anUntrustedCertificateFailsAtOnceAndNamesTheRemedy(_ failure: URLError.Code) throws {
        let server = Server()
        server.goDown()
        let h = Self.harness(server, failure: failure)
        let callback = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { callback.record($0) }
        let error = try #require(callback.wait().first?.testError)
        #expect(error.code == FMError.ClientCode.transport && error.isTLSFailure)
        #expect(error.message.contains("fms.example.com:443") && error.message.contains("certificate not trusted: "), "\(error)")
        #expect(error.message.contains("system trust store"), "\(error)")
        #expect(h.stub.count("GET", "/records") == 1 && server.drawn == 0)
    }

    /// libcurl's words for an untrusted certificate (code -1) read the same way.
    @Test func libcurlsCertificateProblemNamesTheRemedy() {
        let failure = NSError(domain: NSURLErrorDomain, code: -1,
                              userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"])
        let error = FMError.fromTransport(failure, url: URL(string: "https://fms.example.com:8443/fmi/data/vLatest/productInfo"))
        #expect(error.message.hasPrefix("The request to fms.example.com:8443 failed before FileMaker answered: certificate not trusted: "))
        #expect(error.message.contains("SSL certificate problem: self-signed certificate"))
        #expect(error.message.contains("system trust store"))
        #expect(error.isTLSFailure)
    }

    // MARK: riding out what was alive

    /// A host that answered is ridden out through the callback and async surfaces; a write is not retried.
    @Test func aHostThatAnsweredIsRiddenOut() async throws {
        let server = Server()
        let h = Self.harness(server)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown(upAfter: 5)
        let callback = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { callback.record($0) }
        #expect(await callback.value().first?.testValue == "ok")
        #expect(server.drawn == 5 && h.stub.count("GET", "/records") == 1 + 6)
        server.goDown(upAfter: 4)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(server.drawn == 4)
        server.goDown(upAfter: 1)
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(Self.create) { write.record($0) }
        #expect(await write.value().first?.testError?.code == FMError.ClientCode.transport)
        #expect(h.stub.count("POST", "/records") == 1 && server.drawn == 0)
    }

    /// Away for longer than the window (the harness's clock moved past it): connection failures fail fast
    /// again, until the host answers; within the window they are ridden out.
    @Test func afterALongOutageConnectionFailuresFailFastAgain() async throws {
        let server = Server()
        let h = Self.harness(server)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        // Down: a write meets it (not retried) — the outage starts now.
        server.goDown()
        let write = Recorder<Result<String, FMError>>()
        h.api.perform(Self.create) { write.record($0) }
        #expect(await write.value().first?.testError != nil)
        // Just inside the window: ridden out.
        h.clock.advance(Reachability.window - 1)
        server.goDown(upAfter: 2)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(server.drawn == 2)
        // Down again, and past the window: one request, no back-off, and the message says why.
        server.goDown()
        let second = Recorder<Result<String, FMError>>()
        h.api.perform(Self.create) { second.record($0) }
        #expect(await second.value().first?.testError != nil)
        h.clock.advance(Reachability.window + 1)
        let before = h.stub.count("GET", "/records")
        let late = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { late.record($0) }
        let error = try #require(await late.value().first?.testError)
        #expect(error.message.contains("connection refused; not retried: fms.example.com:443 has not answered for more than 5 minutes"), "\(error)")
        #expect(h.stub.count("GET", "/records") == before + 1 && server.drawn == 0)
        // Back: it answers, and is ridden out again.
        server.comeUp()
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown(upAfter: 3)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        #expect(server.drawn == 3)
    }

    /// A call that was retried and still failed says how many times and for how long.
    @Test func aRetriedConnectionFailureSaysHowOftenAndHowLong() async throws {
        let server = Server()
        let h = Self.harness(server, failure: .cannotFindHost)
        #expect(try await h.api.bridge(TestEndpoints.records()) == "ok")
        server.goDown()
        do {
            _ = try await h.api.bridge(TestEndpoints.records())
            Issue.record("a host that does not resolve answered")
        } catch let error as FMError {
            // A failed name lookup keeps to maxAttempts (3) for a host that answered.
            #expect(error.message.contains("fms.example.com:443 failed before FileMaker answered: no such host; retried 2 times over "), "\(error)")
            #expect(error.message.hasSuffix(" s"), "\(error)")
        }
        #expect(server.drawn == 2)
    }

    /// Reachability is per origin (`host:port`), and bounded.
    @Test func reachabilityIsPerOriginAndBounded() {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        let a = URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo")
        #expect(reachability.standing(a) == .neverAnswered)
        reachability.answered(a)
        #expect(reachability.standing(URL(string: "https://FMS.example.com:443/x")) == .rideOut)
        #expect(reachability.standing(URL(string: "https://fms.example.com:8443/x")) == .neverAnswered)
        #expect(reachability.standing(URL(string: "http://fms.example.com/x")) == .neverAnswered)
        reachability.unreachable(a)
        clock.advance(Reachability.window)
        #expect(reachability.standing(a) == .awayTooLong)
        for port in 1...(Reachability.maxOrigins * 2) { reachability.answered(URL(string: "http://127.0.0.1:\(port)")) }
        let remembered = (1...(Reachability.maxOrigins * 2)).filter {
            reachability.standing(URL(string: "http://127.0.0.1:\($0)")) == .rideOut
        }
        #expect(remembered.count <= Reachability.maxOrigins)
    }

    /// The configured host's URLs are matched by their first bytes, not parsed: the origin found that way is the
    /// one their parsed URL has (host in lower case, the scheme's port), whichever way the host was written (each
    /// `sameOrigin` is written otherwise than the configured host's URLs, so that it is parsed).
    @Test(arguments: [
        ("https://FMS.Example.com/filemaker", "https://fms.example.com:443/x", "https://fms.example.com:8443/x"),
        ("http://127.0.0.1:3000", "HTTP://127.0.0.1:3000/x", "http://127.0.0.1:30000/x"),
        ("http://[::1]:8080/", "HTTP://[::1]:8080/x", "http://[::1]/x"),
        ("fms.example.com", "https://fms.example.com:443/x", "http://fms.example.com/x"),
    ])
    func theConfiguredHostsOriginIsTheOneItsURLsParseTo(host: String, sameOrigin: String, otherOrigin: String) throws {
        let configuration = FMConfiguration(host: host, database: "Contacts", username: "admin", password: "pw")
        let base = try configuration.resolvedBase().get()
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now }, home: base)
        let url = try RequestBuilder.url(for: Endpoints.productInfo(), configuration: configuration).get()
        reachability.answered(url)
        #expect(reachability.standing(URL(string: sameOrigin)) == .rideOut)
        #expect(reachability.standing(URL(string: otherOrigin)) == .neverAnswered)
        // And the other way round: an answer at the parsed origin counts for the configured host's URLs.
        let other = Reachability(now: { clock.now }, home: base)
        other.answered(URL(string: sameOrigin))
        #expect(other.standing(url) == .rideOut)
    }

    // MARK: messages that point the right way

    static let containerURL = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/6A4F4C0D.png?RCType=EmbeddedRCFileProcessor")!

    /// A container URL that answers 404 says the container was not found (it said "not JSON (HTTP 404)").
    @Test func aContainerURLAnswering404SaysTheContainerWasNotFound() async throws {
        let h = Harness { _ in .body(404, Data("<html><body>Not Found</body></html>".utf8), contentType: "text/html") }
        let done = Recorder<(String, FMError?)>()
        h.api.downloadContainer(url: Self.containerURL) { _, code in done.record((code, FMError.current)) }
        let (code, error) = try #require(await done.value().first)
        #expect(code != "0" && error?.httpStatus == 404)
        #expect(error?.message.hasPrefix("The container was not found at fms.example.com:443 (HTTP 404)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("not JSON") == false)
    }

    /// A host given with a path that answers 404 pages says to give the host only.
    @Test func aHostWithAPathAnswering404SaysToGiveTheHostOnly() async throws {
        let configuration = FMConfiguration(host: "https://fms.example.com/filemaker", database: "Contacts", username: "admin", password: "pw")
        let h = Harness(configuration: configuration, store: Self.loggedIn) { _ in
            .body(404, Data("<html><body>Not Found</body></html>".utf8), contentType: "text/html")
        }
        do {
            _ = try await h.api.bridge(TestEndpoints.records())
            Issue.record("a 404 page was a value")
        } catch let error as FMError {
            #expect(error.httpStatus == 404)
            #expect(error.message.contains("the host was given with a path (/filemaker); give the host only (https://fms.example.com)"), "\(error)")
        }
        // Without a path, a 404 page gets no path hint (it names the host and port to check: FirstContactHintTests).
        let bare = Harness(store: Self.loggedIn) { _ in .body(404, Data("<html>Not Found</html>".utf8), contentType: "text/html") }
        await #expect { try await bare.api.bridge(TestEndpoints.records()) } throws: { error in
            guard let error = error as? FMError else { return false }
            return error.code == FMError.ClientCode.notJSON && error.httpStatus == 404 && !error.message.contains("give the host only")
        }
    }

    /// FileMaker's own 404 (a JSON envelope) under a path prefix is FileMaker's answer, not a hint.
    @Test func aFileMakerAnswerUnderAPathIsNotHinted() async throws {
        let configuration = FMConfiguration(host: "https://proxy.example.com/fm", database: "Contacts", username: "admin", password: "pw")
        let h = Harness(configuration: configuration, store: Self.loggedIn) { _ in
            .json(404, #"{"messages":[{"code":"105","message":"Layout is missing"}],"response":{}}"#)
        }
        // FileMaker's words, with the layout named (a 105 is), and no path hint ("give the host only").
        await #expect(throws: FMError(code: "105", message: "Layout is missing; no layout \"Contacts\" in database Contacts: check the "
                                      + "layout's name (layouts() lists the ones this account can use)", httpStatus: 404)) {
            try await h.api.bridge(TestEndpoints.records())
        }
    }

    /// An expected 306 (modId conflict) and 401 (no records match) are logged at debug like any answer, not as
    /// warnings; another FileMaker error still is a warning.
    @Test(arguments: [("306", "Record modification ID does not match", FMLogEvent.Level.debug),
                      ("401", "No records match the request", .debug),
                      ("105", "Layout is missing", .warning)])
    func expectedOutcomesAreNotWarnings(code: String, message: String, level: FMLogEvent.Level) async throws {
        let h = Harness(store: Self.loggedIn) { _ in .json(500, #"{"messages":[{"code":"\#(code)","message":"\#(message)"}],"response":{}}"#) }
        await #expect(throws: FMError.self) { try await h.api.bridge(TestEndpoints.records()) }
        let answers = h.logs.values.filter { $0.message.hasPrefix("← GET") }
        #expect(answers.count == 1 && answers.first?.level == level, "\(answers.map { "\($0.level) \($0.message)" })")
        #expect(answers.first?.message.contains("code \(code)") == true)
    }
}

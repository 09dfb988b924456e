import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A host whose port is out of range (`host:99999`, `:0`, `:65536`, a 20-digit port) is a configuration
/// error (-1001) reported without sending anything, not a transport error (-1003) from the network.
@Suite("Malformed hosts")
struct HostPortTests {
    func outcome(host: String) -> (Result<String, FMError>?, Int) {
        let harness = Harness(configuration: FMConfiguration(host: host, database: "D", username: "a", password: "b")) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("x"))
        }
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let values = recorder.wait()
        harness.drain()
        #expect(values.count == 1)
        return (values.first, harness.stub.requests.count)
    }

    @Test(arguments: ["host:99999", "https://host:0", "http://h:65536", "http://h:18446744073709551617",
                      "http://127.0.0.1:99999999999999999999999", "http://", ":::", "ho st", "host:-1", "http://[::1"])
    func invalidHostsAreConfigurationErrors(host: String) {
        let (result, sent) = outcome(host: host)
        #expect(result?.testFailureCode == FMError.ClientCode.invalidConfiguration)
        #expect(sent == 0)
        #expect(FMConfiguration(host: host, database: "D", credentials: nil).baseURL == nil)
    }

    @Test(arguments: ["host:1", "host:65535", "http://127.0.0.1:3000", "[::1]:3000", "fms.example.com", "https://proxy.example.com/prefix"])
    func validPortsStillWork(host: String) {
        let (result, sent) = outcome(host: host)
        #expect(result?.testValue == "x")
        #expect(sent == 2)
    }
}

/// Where a connection goes is one rule (`URL.connectionOrigin`): the host lowercased, the port written or the
/// scheme's (in any letter case). The first-contact table, a container download's cookies, the spans' server
/// port and the curl transport's per-host limit all read it, so none disagrees with another about one URL.
@Suite("The port and origin a connection goes to")
struct ConnectionOriginTests {
    @Test(arguments: [
        ("https://FMS.Example.com/fmi", "fms.example.com:443"), ("HTTP://Host/x", "host:80"), ("Http://h:8080/", "h:8080"),
        ("https://h:80/", "h:80"), ("http://h:443/", "h:443"), ("HTTPS://h/", "h:443"), ("http://127.0.0.1:3000/x", "127.0.0.1:3000"),
    ])
    func theOriginIsTheLowercasedHostAndTheWrittenOrSchemesPort(url: String, origin: String) throws {
        let url = try #require(URL(string: url))
        #expect(url.connectionOrigin == origin)
        #expect(Endpoints.origin(of: url) == "\(url.scheme?.lowercased() ?? "")://\(origin)")
        #expect(FMError.address(of: url).lowercased() == origin)
        #expect(try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)).connectionPort == url.connectionPort)
    }

    @Test func aURLWithoutAHostHasNoOrigin() throws {
        #expect(try #require(URL(string: "file:///tmp/x")).connectionOrigin == nil)
        #expect(try #require(URL(string: "x")).connectionOrigin == nil)
    }

    /// A span names the port the call's connection went to, however the configured scheme is written.
    @Test(arguments: [("HTTP://fms.example.com", 80), ("Https://fms.example.com", 443), ("http://fms.example.com:8080", 8080),
                      ("fms.example.com", 443)])
    func aSpanNamesThePortTheConnectionGoesTo(host: String, port: Int) {
        final class Spans: FMInstrumentation, FMCallSpan, @unchecked Sendable {
            private let lock = NSLock()
            private var starts: [FMCallStart] = []
            func startCall(_ call: FMCallStart) -> any FMCallSpan {
                lock.withLock { starts.append(call) }
                return self
            }
            func record(_ event: FMCallEvent) {}
            func end(_ outcome: FMCallOutcome) {}
            var ports: [Int?] { lock.withLock { starts.map(\.serverPort) } }
        }
        let spans = Spans()
        var configuration = FMConfiguration(host: host, database: "D", username: "a", password: "b")
        configuration.instrumentation = spans
        let harness = Harness(configuration: configuration) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("x"))
        }
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "x")
        harness.drain()
        #expect(!spans.ports.isEmpty)
        #expect(spans.ports.allSatisfy { $0 == port }, "\(spans.ports)")
    }
}

/// A URL whose text begins with a known `scheme://authority/` has that prefix's origin (`OriginPrefix`): the first-
/// contact table and the curl transport's per-host limit find it by comparing bytes, and must find what parsing finds.
@Suite("The origin found from a URL's first bytes")
struct OriginPrefixTests {
    static let texts = [
        "https://fms.example.com/fmi/data/vLatest/x", "https://FMS.example.com/x", "https://fms.example.com:443/x", "http://fms.example.com/x",
        "https://fms.example.com./x", "https://fms.example.com:8443/", "https://user:pw@fms.example.com/x", "https://fms.example.com@evil.example/x",
        "https://fms.example.com?x=/y", "https://fms.example.com#a/b", "https://h/x", "https://h:0443/x", "http://127.0.0.1:3000/x",
        "http://[::1]:8080/x", "https://[::1]/x", "https://[fe80::1%25eth0]:8443/x", "https://fms%2Eexample.com/x", "HTTPS://h/x",
        "https://h//x", "https://hx/y", "https://h:8443/x", "https://h/", "https://h", "https:/h/x", "https:///x", "file:///tmp/x", "x-y+z.1://h:9/x",
    ]

    @Test func theOriginOfAMatchingURLIsTheParsedOne() throws {
        let urls = Self.texts.compactMap(URL.init(string:))
        #expect(urls.count > 20)
        for known in urls {
            guard let prefix = OriginPrefix(known) else {
                // No prefix: no host, or no `/` after the authority.
                #expect(known.connectionOrigin == nil || Self.length(known.absoluteString) == nil, "\(known.absoluteString)")
                continue
            }
            #expect(prefix.origin == known.connectionOrigin, "\(known.absoluteString)")
            for other in urls {
                if let found = prefix.origin(of: other) {
                    #expect(found == other.connectionOrigin, "known \(known.absoluteString), asked \(other.absoluteString)")
                }
            }
        }
    }

    static func length(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { OriginPrefix.prefixLength(of: $0) }
    }

    @Test func thePrefixEndsAtTheFirstSlashAfterTheScheme() {
        let length = Self.length
        #expect(length("https://h/x/y") == "https://h/".utf8.count)
        #expect(length("https://h?q=/x") == "https://h?q=/".utf8.count)
        #expect(length("https://h") == nil)
        #expect(length("https:/h/x") == nil)
        #expect(length("://h/x") == nil)
        #expect(length("") == nil)
        #expect(length("h:x://y/") == nil)
    }

    /// The curl transport keeps the last prefix: URLs of several hosts, interleaved, each get their own origin.
    @Test func theCurlEnginesOriginFollowsEveryHost() throws {
        let transport = FMCurlTransport(maxConnectionsPerHost: 2)
        let engine = try #require(transport.engine)
        let urls = Self.texts.compactMap(URL.init(string:)).filter { $0.connectionOrigin != nil }
        for url in urls + urls.reversed() + urls {
            #expect(engine.origin(of: url) == url.connectionOrigin, "\(url.absoluteString)")
        }
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The container download carries the streaming-session cookie only to the host that set it, a redirect to a
/// non-HTTP URL is an unusable answer (-1007), not the caller's fault (-1002), and the 302 that starts every
/// download is part of it: logged at debug, never as a warning.
@Suite("Container redirects")
struct ContainerRedirectTests {
    static let start = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor")!

    @Test func theSessionCookieNeverGoesToAnotherOrigin() throws {
        let harness = Harness { request in
            guard let url = request.url else { return nil }
            if url.host == "elsewhere.example.net" { return .body(200, Data([1]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": "https://elsewhere.example.net/file.png",
                                             "Set-Cookie": "X-FMS-Session-Key=k1; HttpOnly; Path=/"])
        }
        let recorder = Recorder<(Data?, String)>(queueKey: Harness.key)
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code)) }
        let value = try #require(recorder.wait().first)
        #expect(value.0 == Data([1]) && value.1 == "0")
        let second = try #require(harness.stub.requests.last)
        #expect(second.url?.host == "elsewhere.example.net")
        #expect(second.header("Cookie") == nil, "the FileMaker streaming cookie must not leave its origin")
    }

    @Test func cookiesGoBackToTheSameOrigin() throws {
        let harness = Harness { request in
            guard let url = request.url?.absoluteString else { return nil }
            if url.contains("second") { return .body(200, Data([2]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": "https://fms.example.com/second", "Set-Cookie": "X-FMS-Session-Key=k1; Path=/"])
        }
        let recorder = Recorder<(Data?, String)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first?.1 == "0")
        #expect(harness.stub.requests.last?.header("Cookie") == "X-FMS-Session-Key=k1")
    }

    @Test(arguments: ["ftp://fms.example.com/x", "file:///etc/passwd", "javascript:alert(1)"])
    func aRedirectToANonHTTPURLIsAMalformedAnswer(location: String) {
        let harness = Harness { _ in .json(302, "", headers: ["Location": location]) }
        let recorder = Recorder<(Data?, String)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first?.1 == FMError.ClientCode.malformedResponse)
        #expect(harness.stub.requests.count == 1)
    }
}

extension ContainerRedirectTests {
    /// The 302 that starts every container download is part of the download: logged at debug, never as a
    /// warning with a code (it was "302 code -1006" at warning).
    @Test func aContainerRedirectIsLoggedAtDebug() async throws {
        let h = Harness(EndpointsSurfaceTests.redirectingStub())
        let done = Recorder<String>()
        h.api.downloadContainer(url: EndpointsSurfaceTests.containerURL) { _, code in done.record(code) }
        #expect(await done.value() == ["0"])
        let events = h.logs.values
        #expect(events.contains { $0.level == .debug && $0.message.hasPrefix("← GET") && $0.message.contains(" 302 ") })
        #expect(!events.contains { $0.level >= .warning }, "\(events.filter { $0.level >= .warning }.map(\.message))")
    }
}

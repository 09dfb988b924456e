import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a container streaming URL that has expired — FileMaker answers it with a redirect loop — ends with
// `-1014` (FMError.ClientCode.containerURLExpired), a client-side code whose message says the URL expired and to read
// the record again, through the Data API (in memory, to a file) and its async surface; a long chain of redirects that
// never comes back is still `-1007`. Before, the loop ended as -1007 "too many redirects downloading a container".

@Suite("A stale container URL says it expired")
struct StaleContainerURLSaysItExpiredTests {
    static let start = ContainerRedirectTests.start

    enum Loop: String, CaseIterable, CustomTestStringConvertible {
        /// 302 back to the same URL, no cookie.
        case sameURLNoCookie
        /// 302 back to the same URL with a new cookie every time.
        case sameURLNewCookie
        /// 302 to a second URL, which sends back to the first.
        case twoURLs
        var testDescription: String { rawValue }
    }

    static func harness(_ loop: Loop) -> Harness {
        let turns = Locked(0)
        return Harness { request in
            guard let url = request.url else { return nil }
            let turn = turns.withLock { $0 += 1; return $0 }
            switch loop {
            case .sameURLNoCookie:
                return .json(302, "", headers: ["Location": url.absoluteString])
            case .sameURLNewCookie:
                return .json(302, "", headers: ["Location": url.absoluteString, "Set-Cookie": "X-FMS-Session-Key=k\(turn); Path=/"])
            case .twoURLs:
                let next = url.path.hasSuffix("ABC.png") ? "https://fms.example.com/Streaming_SSL/MainDB/other" : start.absoluteString
                return .json(302, "", headers: ["Location": next])
            }
        }
    }

    static func expectExpired(_ code: String?, _ message: String?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(code == FMError.ClientCode.containerURLExpired, "\(String(describing: code))", sourceLocation: sourceLocation)
        #expect(code == "-1014", sourceLocation: sourceLocation)
        let text = message ?? ""
        #expect(text.contains("expired") && text.contains("read the record again"), "\(text)", sourceLocation: sourceLocation)
    }

    /// Failed before: -1007 "Unexpected response: too many redirects downloading a container".
    @Test(arguments: Loop.allCases)
    func aRedirectLoopIsAnExpiredURL(_ loop: Loop) throws {
        let harness = Self.harness(loop)
        let recorder = Recorder<(Data?, String, FMError?)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code, FMError.current)) }
        let value = try #require(recorder.wait().first)
        #expect(value.0 == nil)
        Self.expectExpired(value.1, value.2?.message)
        #expect(value.2?.isClientSide == true)
        #expect(harness.stub.requests.count <= Endpoints.maxContainerRedirects + 1, "the loop is not followed for ever")
    }

    /// Failed before: -1007, thrown by the async surface.
    @Test func theAsyncSurfaceThrowsTheExpiredURL() async {
        let harness = Self.harness(.sameURLNoCookie)
        do {
            _ = try await harness.api.downloadContainer(url: Self.start)
            Issue.record("an expired URL downloaded")
        } catch {
            let error = error as? FMError
            Self.expectExpired(error?.code, error?.message)
        }
    }

    /// Failed before: -1007, and nothing is left beside the destination.
    @Test func aDownloadToAFileSaysItExpired() throws {
        let harness = Self.harness(.sameURLNewCookie)
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.png")
        let recorder = Recorder<(URL?, String, FMError?)>()
        harness.api.downloadContainer(url: Self.start, to: target) { url, code in recorder.record((url, code, FMError.current)) }
        let value = try #require(recorder.wait().first)
        #expect(value.0 == nil)
        Self.expectExpired(value.1, value.2?.message)
        #expect(DownloadLeavesNoPartialFileTests.contents(directory).isEmpty)
    }

    /// Held: redirects that run out without coming back to a URL are a malformed answer, not an expired URL.
    @Test func aLongChainThatNeverComesBackIsStillTooManyRedirects() throws {
        let harness = Harness { request in
            let n = Int(request.url?.lastPathComponent.dropFirst("hop".count) ?? "") ?? 0
            return .json(302, "", headers: ["Location": "https://fms.example.com/Streaming_SSL/MainDB/hop\(n + 1)"])
        }
        let recorder = Recorder<(Data?, String, FMError?)>()
        harness.api.downloadContainer(url: Self.start) { data, code in recorder.record((data, code, FMError.current)) }
        let value = try #require(recorder.wait().first)
        #expect(value.1 == FMError.ClientCode.malformedResponse, "\(value.1)")
        #expect(value.2?.message.contains("too many redirects") == true)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract: the one error line of a container download that its redirects end (`GET {container} failed: …`: an
// expired URL's loop, `-1014`, or too many redirects, `-1007`) carries the metadata every call's error line carries:
// `fm.request_id`, the number of the hop whose redirect ended the download (the one on that hop's own `→` and `←`
// lines and its span), beside `fm.endpoint` and `fm.code`.

@Suite("Log metadata: a failed container download's error line names its request")
struct AFailedContainerDownloadLineNamesItsRequestTests {
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        /// The redirect leads back to the URL asked for: `-1014`.
        case loop
        /// A chain of redirects that never comes back: `-1007`.
        case tooManyRedirects
        var testDescription: String { rawValue }

        var code: String { self == .loop ? FMError.ClientCode.containerURLExpired : FMError.ClientCode.malformedResponse }
    }

    /// Failed before: the line had `fm.endpoint` and `fm.code` and no `fm.request_id`.
    @Test(arguments: Ending.allCases)
    func theErrorLineCarriesTheLastHopsRequestID(_ ending: Ending) async throws {
        let h = Harness { request in
            guard let url = request.url else { return nil }
            let n = Int(url.lastPathComponent.dropFirst("hop".count)) ?? 0
            let next = ending == .loop ? url.absoluteString : "https://fms.example.com/Streaming_SSL/MainDB/hop\(n + 1)"
            return .json(302, "", headers: ["Location": next])
        }
        let done = Recorder<String>()
        h.api.downloadContainer(url: URL(string: "https://fms.example.com/Streaming_SSL/MainDB/hop0")!) { _, code in done.record(code) }
        #expect(await done.value().first == ending.code)
        let lines = h.logs.values
        let errors = lines.filter { $0.level == .error }
        #expect(errors.count == 1, "\(errors.map(\.message))")
        let line = try #require(errors.first)
        #expect(line.message.hasPrefix("GET {container} failed: "), "\(line.message)")
        #expect(line.metadata["fm.code"] == ending.code)
        let id = try #require(line.metadata["fm.request_id"], "\(line.metadata)")
        // The last hop's: the last request line (`→`) sent before the download failed.
        let sent = lines.filter { $0.level == .debug && $0.message.hasPrefix("→ ") }
        #expect(sent.count == (ending == .loop ? 1 : Endpoints.maxContainerRedirects + 1), "\(sent.map(\.message))")
        #expect(sent.last?.metadata["fm.request_id"] == id, "\(sent.map(\.metadata))")
        #expect(Set(sent.compactMap { $0.metadata["fm.request_id"] }).count == sent.count, "each hop is a request of its own")
    }
}

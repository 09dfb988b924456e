import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a streamed container download's `progress` callback may cancel the download it reports on (its
// handle's `cancel()`, "too big, stop"): the download completes once with -1005 and leaves no partial file, over
// both transports and through the Data API and OData. Before, over URLSession on Linux the process crashed: the
// callback runs on URLSession's work queue, and `URLSessionTask.cancel()` waits for that very queue.

@Suite("A progress callback may cancel its download")
struct ProgressCallbackMayCancelItsDownloadTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// Failed before (over URLSession: "Illegal instruction" in `__DISPATCH_WAIT_FOR_QUEUE__`, from
    /// `URLSessionTaskHandle.cancel()` called on the work queue).
    @Test(arguments: Route.allCases, Wire.allCases)
    func cancellingFromTheProgressCallbackEndsTheDownload(_ route: Route, _ wire: Wire) async throws {
        let server = HostileServer { _, _ in
            .drip(head: HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "100000"]),
                  body: Data(repeating: 1, count: 100_000), interval: 0.05)
        }
        defer { server.stop() }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        let api = DownloadLeavesNoPartialFileTests.api(server, wire)
        let (url, code) = await DownloadLeavesNoPartialFileTests.download(api, server, route, to: target) { $0.cancel() }
        #expect(url == nil && code == FMError.ClientCode.cancelled, "\(code)")
        #expect(DownloadLeavesNoPartialFileTests.contents(directory).isEmpty)
        #expect(await server.waitForEnds(1))
        #expect(server.clientLeft(0), "the transfer was stopped")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A container download its caller cancelled ends with `-1005` and logs no error (a cancel is the caller's doing), also
/// when the cancel comes between a redirect's answer and the next hop and that redirect closes a loop (an expired URL,
/// `-1014`) or runs the redirects out (`-1007`): a hop's answer delivered before the cancel must not turn the cancelled
/// download into `GET {container} failed: …` at error. Before, the loop's check came first: `-1014` and an error line
/// for a download the caller had cancelled (a next hop would have been refused with `-1005`).
@Suite("A cancelled container loop is a cancel")
struct ACancelledContainerLoopIsACancelTests {
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        /// The redirect comes back to the URL asked for: an expired URL.
        case loop
        /// The sixth redirect of a chain: too many redirects.
        case tooManyRedirects
        var testDescription: String { rawValue }
    }

    @Test(arguments: Ending.allCases)
    func aCancelBeforeTheNextHopEndsTheDownloadAsCancelled(_ ending: Ending) async {
        let start = ending == .loop ? StaleContainerURLSaysItExpiredTests.start : URL(string: "https://fms.example.com/Streaming_SSL/MainDB/hop0")!
        let callbacks = Locked<DispatchQueue?>(nil)
        let download = Locked<FMRequest?>(nil)
        let handed = DispatchSemaphore(value: 0)
        let h = Harness { request in
            guard let url = request.url else { return nil }
            let n = Int(url.lastPathComponent.dropFirst("hop".count)) ?? 0
            if ending == .loop || n == Endpoints.maxContainerRedirects {
                // The hop whose redirect ends the download is answered inside send, and its completion is queued on the
                // callback queue after this: the caller's cancel, queued first, comes after the hop delivered its
                // redirect and before that completion runs (once the test has the download's handle).
                callbacks.withLock { $0 }?.async {
                    _ = handed.wait(timeout: TestBound.deadline)
                    download.withLock { $0 }?.cancel()
                }
            }
            let next = ending == .loop ? url.absoluteString : "https://fms.example.com/Streaming_SSL/MainDB/hop\(n + 1)"
            return .atOnceWith(302, "", headers: ["Location": next])
        }
        callbacks.withLock { $0 = h.queue }
        let done = Recorder<(Data?, String)>()
        let handle = h.api.downloadContainer(url: start) { data, code in done.record((data, code)) }
        download.withLock { $0 = handle }
        handed.signal()
        let value = await done.value().first
        #expect(value?.1 == FMError.ClientCode.cancelled, "\(String(describing: value?.1))")
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.isEmpty, "\(errors.map(\.message))")
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a streamed container download's `progress` callback runs on a serial queue SwiftFM owns for the
// download (labelled `SwiftFM.progress`), as the doc comments say, over every transport and through the Data API and
// OData: never on the transport's thread, so a callback that waits (here: for the download's own completion) never
// holds the transfer back; one report at a time, bytes never decreasing, the last count (the whole body) reported.
// Before, it ran on the transport's thread (URLSession's work queue, curl's hand-on): a waiting callback stalled the
// download, which never completed.

@Suite("Progress runs on its own serial queue")
struct ProgressRunsOnItsOwnSerialQueueTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// What the callback saw.
    final class Reports: @unchecked Sendable {
        private let lock = NSLock()
        private var reports: [Int64] = []
        private var labels: Set<String> = []
        private var running = 0
        private(set) var overlapped = false
        func begin(_ written: Int64, label: String) -> Bool {
            lock.withLock {
                running += 1
                if running > 1 { overlapped = true }
                reports.append(written)
                labels.insert(label)
                return reports.count == 1
            }
        }
        func end() { lock.withLock { running -= 1 } }
        var written: [Int64] { lock.withLock { reports } }
        var queueLabels: Set<String> { lock.withLock { labels } }
        var didOverlap: Bool { lock.withLock { overlapped } }
    }

    static let size = 1 << 20

    /// Failed before: the first report waited on the transport's thread for a completion that never came (the hang
    /// guard's bound), over both transports and both routes.
    @Test(arguments: Route.allCases, Wire.allCases)
    func aCallbackThatWaitsForTheCompletionDoesNotStallTheDownload(_ route: Route, _ wire: Wire) async throws {
        let server = HostileServer { _, _ in
            .answerAndClose(HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "\(Self.size)"])
                            + String(repeating: "x", count: Self.size))
        }
        defer { server.stop() }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        let api = HostileServerTests().makeAPI(server, wire, timeout: 3600) { $0.containerTimeout = 3600 }
        let reports = Reports()
        let completed = DispatchSemaphore(value: 0)
        let completedInTime = Locked<Bool?>(nil)
        let lastReported = DispatchSemaphore(value: 0)
        let progress: @Sendable (Int64, Int64) -> Void = { written, _ in
            let label = DispatchQueue.getSpecific(key: ProgressReports.queueKey) == true ? "SwiftFM.progress"
                : DispatchQueue.getSpecific(key: Harness.key) ?? "another queue"   // Harness.key: the callback queue's
            let first = reports.begin(written, label: label)
            defer {
                reports.end()
                if written == Int64(Self.size) { lastReported.signal() }
            }
            // The first report waits until the download completed: it can only if the transfer goes on without it.
            if first {
                let waited = completed.wait(timeout: TestBound.deadline)
                completedInTime.withLock { $0 = waited == .success }
            }
        }
        let recorder = Recorder<(URL?, String)>()
        switch route {
        case .dataAPI:
            api.downloadContainer(url: URL(string: server.url + "/Streaming/photo.bin")!, to: target, progress: progress) { url, code in
                recorder.record((url, code))
                completed.signal()
            }
        case .odata:
            FMOData(sharing: api).downloadContainer(from: "contacts", key: .number(1), field: "photo", to: target, progress: progress) { url, code in
                recorder.record((url, code))
                completed.signal()
            }
        }
        let outcome = await recorder.value().first
        #expect(outcome?.1 == "0" && outcome?.0 == target, "\(String(describing: outcome))")
        #expect((try? Data(contentsOf: target))?.count == Self.size)
        // The reports after the first ran once it returned, on the same queue: wait for the last one.
        #expect(await onOwnThread { lastReported.wait(timeout: TestBound.deadline) } == .success,
                "the last count is reported: \(reports.written.suffix(3))")
        #expect(completedInTime.value == true, "the download completed while its first progress report waited")
        #expect(reports.queueLabels == ["SwiftFM.progress"], "\(reports.queueLabels)")
        #expect(!reports.didOverlap, "one report at a time")
        #expect(reports.written == reports.written.sorted(), "the bytes written never decrease")
    }
}

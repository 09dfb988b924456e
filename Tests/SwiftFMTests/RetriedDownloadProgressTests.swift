import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a streamed container download's `progress` callback runs one report at a time, in order, for the whole
// call — its redirects' hops and the attempts its retry policy sends again (an answer that broke off mid-body) share one
// report queue — and a download that completed reported its whole answer last. No report of an attempt that broke off
// runs beside, or after, those of the attempt that completed. Through the Data API and OData, over both real transports.

@Suite("A retried download's progress runs one report at a time and ends at its whole answer")
struct RetriedDownloadProgressTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// What the progress callback saw: every report in the order it began, how many ran at once at most, and whether
    /// the first one (held until the download completed) has returned.
    struct Seen {
        var reports: [(written: Int64, expected: Int64)] = []
        var running = 0
        var mostAtOnce = 0
        var firstReturned = false
    }

    /// Failed before (each attempt reported through a queue of its own: the report of the attempt that completed ran
    /// while the broken-off attempt's first report was still running — two at once — and that attempt's latest count,
    /// half the file, was reported after it). The first attempt sends half of a 400 000-byte answer and closes; its
    /// first report is held until the download has completed (from the second attempt's whole answer).
    @Test(arguments: Route.allCases, Wire.allCases)
    func aRetriedDownloadsReportsRunOneAtATimeAndEndWhole(_ route: Route, _ wire: Wire) async throws {
        let size = 400_000
        let answered = Locked(0)
        let server = HostileServer { _, _ in
            let first = answered.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            let head = HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "\(size)"])
            return .answerAndClose(head + String(repeating: first ? "x" : "w", count: first ? size / 2 : size))
        }
        defer { server.stop() }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")

        let seen = Locked(Seen())
        let reported = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0)
        let progress: @Sendable (Int64, Int64) -> Void = { written, expected in
            let first = seen.withLock { seen -> Bool in
                seen.reports.append((written, expected))
                seen.running += 1
                seen.mostAtOnce = max(seen.mostAtOnce, seen.running)
                return seen.reports.count == 1
            }
            // The first report (of the attempt that breaks off) runs until the download has completed.
            if first { _ = completed.wait(timeout: TestBound.deadline) }
            seen.withLock { seen in
                seen.running -= 1
                if first { seen.firstReturned = true }
            }
            reported.signal()
        }
        let api = DownloadLeavesNoPartialFileTests.api(server, wire)
        let recorder = Recorder<(URL?, String)>()
        switch route {
        case .dataAPI:
            api.downloadContainer(url: URL(string: server.url + "/Streaming/photo.bin")!, to: target, progress: progress) { url, code in
                recorder.record((url, code))
            }
        case .odata:
            FMOData(sharing: api).downloadContainer(from: "contacts", key: .number(1), field: "photo", to: target,
                                                    progress: progress) { url, code in recorder.record((url, code)) }
        }
        let outcome = await recorder.value().first
        #expect(outcome?.0 != nil && outcome?.1 == "0", "\(outcome?.1 ?? "no completion")")
        #expect(answered.value == 2)
        completed.signal()
        // The reports still to come: at least the held one's return and the whole answer's count.
        let settled = await onOwnThread {
            while !seen.withLock({ $0.firstReturned && $0.reports.contains { $0.written == Int64(size) } }) {
                guard reported.wait(timeout: TestBound.deadline) == .success else { return false }
            }
            return true
        }
        #expect(settled, "the whole answer was reported")
        let final = seen.value
        #expect(final.mostAtOnce == 1, "reports ran at once: \(final.reports.map(\.written))")
        #expect(final.reports.last.map { $0.written == Int64(size) && $0.expected == Int64(size) } == true, "\(final.reports.map(\.written))")
        #expect(try Data(contentsOf: target).count == size)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: SwiftFM 2.x's `setContainer(recordId:layout:container:filePath:inferType:token:)` reads its file only
// when it is a regular file: anything else (a FIFO, a device, a directory) is "cannot read", `nil`, as for a
// missing file — it never blocks the task's thread on a FIFO without a writer, and sends nothing.

@Suite("Legacy setContainer reads only a regular file")
struct LegacySetContainerReadsOnlyARegularFileTests {
    /// Held: Foundation's `Data(contentsOf:)` does not open a FIFO for a blocking read; kept so that it stays so.
    @Test func aFIFOIsNilWithoutBlocking() async throws {
        let fifo = UploadSourceMustBeARegularFileTests.temporary("legacy-fifo")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        defer { UploadSourceMustBeARegularFileTests.removeFIFO(fifo) }
        let server = TestServer(respond: { _ in TestServer.json(#"{"response":{"modId":"2"},"messages":[{"code":"0","message":"OK"}]}"#) })
        defer { server.stop() }
        try await LegacyAttackTests.legacySetting(server) { defaults in
            // The call runs in the test's own task (a task of its own could wait behind a loaded pool's queue); a
            // watchdog thread releases a read blocked on the FIFO after a generous bound, so a regression fails
            // the test instead of hanging the suite.
            let watchdog = FIFOWatchdog(fifo, bound: 300)
            let name = await DataAPI.withLegacyDefaults(defaults) {
                await SwiftFM.setContainer(recordId: 1, layout: "L", container: "photo", filePath: fifo, inferType: true, token: Bodies.token)
            }
            #expect(!watchdog.finish(), "setContainer blocked on the FIFO until the watchdog released it")
            #expect(name == nil, "\(String(describing: name))")
            #expect(server.heads.isEmpty, "nothing is sent")
        }
    }
}

/// Opens `fifo` for writing if ``finish()`` was not called within `bound` seconds, releasing a reader blocked in
/// `open` on it; ``finish()`` tells whether it had to.
private final class FIFOWatchdog: @unchecked Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let fired = Locked(false)
    private let done = DispatchSemaphore(value: 0)

    init(_ fifo: URL, bound: TimeInterval) {
        Thread { [finished, fired, done] in
            if finished.wait(timeout: .now() + bound) == .timedOut {
                fired.withLock { $0 = true }
                let fd = open(fifo.path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
            done.signal()
        }.start()
    }

    /// Stops the watchdog; `true` when it had fired.
    func finish() -> Bool {
        finished.signal()
        done.wait()
        return fired.value
    }
}

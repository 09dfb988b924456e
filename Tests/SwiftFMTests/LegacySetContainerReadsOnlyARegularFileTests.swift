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
            let box = UncheckedBox(defaults)
            let done = DispatchSemaphore(value: 0)
            let result = Locked<String??>(nil)
            Task {
                let name = await DataAPI.withLegacyDefaults(box.value) {
                    await SwiftFM.setContainer(recordId: 1, layout: "L", container: "photo", filePath: fifo, inferType: true, token: Bodies.token)
                }
                result.withLock { $0 = .some(name) }
                done.signal()
            }
            let returned = await onOwnThread { done.wait(timeout: .now() + 120) == .success }
            #expect(returned, "setContainer returned")
            #expect(result.value == .some(nil), "\(String(describing: result.value))")
            #expect(server.heads.isEmpty, "nothing is sent")
        }
    }
}

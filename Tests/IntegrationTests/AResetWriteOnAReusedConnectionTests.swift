import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: a write whose kept-alive (reused) connection is reset after the server ran it and before any byte of its
// answer fails at once with `-1003`, and is never sent again, by SwiftFM or by the transport below it: libcurl, which
// sends a request again on a new connection when a reused one dies before any answer, must not send a write's head
// again without its body (a copy that never completes, leaving the call to wait out its whole deadline, `-1004`).

@Suite("A write on a reused connection that is reset fails at once")
struct AResetWriteOnAReusedConnectionTests {
    @Test(arguments: BoundsSurface.allCases)
    func aResetWriteOnAReusedConnectionFailsAtOnce(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(timeout: 300) { api, emulator, _ in  // the hang bound: -1004 would mean a copy was sent
            _ = try await api.login()
            // The read opens the connection the write then reuses (its own first connection reset: sent again).
            emulator.inject(.resetConnection, count: 1, matching: "/records")
            #expect(await readCode(api, surface) == "0")
            emulator.inject(.resetConnection, count: 1, matching: "/records")
            let code = await createCode(api, surface)
            #expect(code == FMError.ClientCode.transport, "got \(code)")
            #expect(emulator.count("POST", "/records") == 1)
            #expect(emulator.recordCount(inTable: "Bands") == 5)
        }
    }
}

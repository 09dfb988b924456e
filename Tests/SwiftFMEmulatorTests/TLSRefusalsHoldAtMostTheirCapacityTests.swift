#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator

/// Contract: ``TLSRefusals`` holds at most ``TLSRefusals/capacity`` refused connections at once (queued or under way,
/// counted together at every moment), however fast they arrive: one more is closed at once. A flood over the cap then
/// costs at most that many descriptors and TLS sessions, as documented (``HTTPServer/tls``). Before, the connections the
/// worker had taken from the queue were counted by neither side until it had advanced them all, so a burst arriving
/// meanwhile was taken too (up to about twice the capacity).
@Suite("TLS refusals hold at most their capacity", .serialized)
struct TLSRefusalsHoldAtMostTheirCapacityTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    /// Failed before: a burst of silent connections (their handshakes never end before the bound) was taken beyond 64.
    @Test func aBurstOfSilentConnectionsIsTakenUpToTheCapacity() throws {
        let context = try TLSContext(EmulatorTLS(certificateFile: Self.fixtures.appendingPathComponent("server.pem"),
                                                 keyFile: Self.fixtures.appendingPathComponent("server-key.pem")))
        for round in 0..<4 {
            // Long enough that none ends during the burst: each stays held.
            let refusals = TLSRefusals(context: context, answer: Array("HTTP/1.1 503 x\r\n\r\n".utf8), seconds: 300)
            var peers: [Int32] = []
            var taken = 0
            for _ in 0..<400 {
                var ends: [Int32] = [-1, -1]
                try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
                if refusals.take(ends[0]) {
                    taken += 1
                    peers.append(ends[1])
                } else {
                    _ = close(ends[1])
                }
            }
            refusals.stop()
            // Every peer of a connection taken sees it closed by the stop.
            for peer in peers {
                var timeout = timeval(tv_sec: 120, tv_usec: 0)
                _ = setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var byte: UInt8 = 0
                #expect(recv(peer, &byte, 1, 0) == 0)
                _ = close(peer)
            }
            #expect(taken == TLSRefusals.capacity, "round \(round): \(taken) taken")
        }
    }
}
#endif

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Which origin the first-contact table (``Reachability``) forgets once it holds ``Reachability/maxOrigins``.
@Suite("First contact: the table forgets the least recently answered origin")
struct FirstContactEvictionTests {
    static func origin(_ index: Int) -> URL? { URL(string: "https://host\(index).example.com/fmi/data/vLatest/productInfo") }

    /// The client's own host answers again after the others; a new origin past the bound then forgets the one that
    /// answered longest ago, never the host that keeps answering. (Before: an arbitrary origin, often that host, whose
    /// next restart then failed fast as if it had never answered.)
    @Test(arguments: 0..<8)
    func aNewOriginForgetsTheLeastRecentlyAnswered(_ refreshed: Int) {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        let limit = Reachability.maxOrigins
        for index in 0..<limit { reachability.answered(Self.origin(index)) }
        // The host `refreshed` answers again: it is now the most recent; the least recent is the next one in order.
        reachability.answered(Self.origin(refreshed))
        let oldest = refreshed == 0 ? 1 : 0
        reachability.answered(Self.origin(limit))
        #expect(reachability.standing(Self.origin(oldest)) == .neverAnswered, "the least recently answered origin was kept")
        for index in 0...limit where index != oldest {
            #expect(reachability.standing(Self.origin(index)) == .rideOut, "origin \(index) was forgotten")
        }
    }

    /// Many new origins, one after another, with the client's host answering between each: it is never forgotten.
    @Test func aHostAnsweringBetweenManyNewOriginsStays() {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        let home = URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo")
        reachability.answered(home)
        for index in 0..<(4 * Reachability.maxOrigins) {
            reachability.answered(Self.origin(index))
            if index % 16 == 0 { reachability.answered(home) }
        }
        #expect(reachability.standing(home) == .rideOut)
        // The latest maxOrigins - 1 others are remembered; the earliest are not.
        #expect(reachability.standing(Self.origin(4 * Reachability.maxOrigins - 1)) == .rideOut)
        #expect(reachability.standing(Self.origin(0)) == .neverAnswered)
    }

    /// The order is the order of answers, not the wall clock: a clock set back does not make the newest answer look
    /// oldest.
    @Test func aClockSetBackDoesNotChangeTheOrder() {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        for index in 0..<Reachability.maxOrigins { reachability.answered(Self.origin(index)) }
        clock.advance(-86_400)
        reachability.answered(Self.origin(0))
        reachability.answered(Self.origin(Reachability.maxOrigins))
        #expect(reachability.standing(Self.origin(0)) == .rideOut, "the latest answer was forgotten because the clock went back")
        #expect(reachability.standing(Self.origin(1)) == .neverAnswered)
    }
}

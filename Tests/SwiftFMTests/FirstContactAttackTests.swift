import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// An adversarial review of the first-contact table (``Reachability``): clock jumps, many origins, concurrent updates.
@Suite("First contact under attack")
struct FirstContactAttackTests {
    static let host = URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo")

    /// The wall clock goes back a day during an outage: the host is not ridden out for that day plus the window,
    /// only for the window (the time it stays away counts from when the clock went back, at the latest).
    @Test func aClockThatGoesBackDoesNotStretchTheWindow() {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        reachability.answered(Self.host)
        reachability.unreachable(Self.host)
        #expect(reachability.standing(Self.host) == .rideOut)
        clock.advance(-86_400)
        #expect(reachability.standing(Self.host) == .rideOut)
        clock.advance(Reachability.window + 1)
        #expect(reachability.standing(Self.host) == .awayTooLong, "a clock set back a day rode the host out for a day")
    }

    /// Even when nobody asked while the clock was set back, the host is ridden out at most one more window.
    @Test func aClockThatWentBackUnseenStillEndsTheRide() {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        reachability.answered(Self.host)
        reachability.unreachable(Self.host)
        clock.advance(-86_400)
        reachability.unreachable(Self.host)
        clock.advance(Reachability.window + 1)
        #expect(reachability.standing(Self.host) == .awayTooLong)
    }

    /// Concurrent answers and failures from many threads, over more origins than are remembered: never more than
    /// the bound, and an origin that answered last is ridden out.
    @Test func concurrentUpdatesStayBoundedAndConsistent() async {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<500 {
                        let url = URL(string: "http://10.0.\(worker).\(step % 100):80/x")
                        if step % 3 == 0 { reachability.unreachable(url) } else { reachability.answered(url) }
                        _ = reachability.standing(url)
                    }
                }
            }
        }
        reachability.answered(Self.host)
        #expect(reachability.standing(Self.host) == .rideOut)
        let remembered = (0..<8).flatMap { worker in (0..<100).map { URL(string: "http://10.0.\(worker).\($0):80/x") } }
            .filter { reachability.standing($0) != .neverAnswered }
        #expect(remembered.count < Reachability.maxOrigins)
    }

    /// Odd URLs never crash the table and never share an entry with the plain host.
    @Test(arguments: ["http://[::1]:8080/x", "http://user:pw@127.0.0.1:8080/x", "http://127.0.0.1:99999/x",
                      "http://xn--fm-ija.example/x", "file:///etc/passwd", "http:///nohost", "HTTP://127.0.0.1/x"])
    func oddURLs(_ text: String) {
        let clock = TestClock()
        let reachability = Reachability(now: { clock.now })
        let url = URL(string: text)
        reachability.unreachable(url)
        reachability.answered(url)
        reachability.unreachable(url)
        let standing = reachability.standing(url)
        if url?.connectionOrigin == nil { #expect(standing == .neverAnswered) } else { #expect(standing == .rideOut) }
        #expect(reachability.standing(Self.host) == .neverAnswered)
    }
}

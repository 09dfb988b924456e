import Foundation
import Testing
@testable import SwiftFM

/// The package's one FIFO (`WaitQueue`): work runs in the order it came, a place that left is never run and
/// lets go of its work at once, and taking the head or leaving does not walk the queue. The trampoline's
/// held-back hand-overs queue in it too.
@Suite("The wait queue")
struct WaitQueueTests {
    final class Payload: Sendable {}

    @Test func workRunsInArrivalOrderAndWithdrawnPlacesNeverRun() {
        var queue = WaitQueue()
        let ran = Locked<[Int]>([])
        var numbers: [UInt64] = []
        for index in 0..<5_000 {
            let number = queue.nextPlace()
            numbers.append(number)
            queue.append(number) { ran.withLock { $0.append(index) } }
        }
        #expect(queue.count == 5_000)
        // Two places in three leave, from the back: most of the queue is places that left (the queue drops their
        // numbers while others still wait).
        let withdrawn = Set((0..<5_000).filter { $0 % 3 != 0 })
        for index in withdrawn.sorted(by: >) { queue.remove(numbers[index]) }
        #expect(queue.count == 5_000 - withdrawn.count)
        for _ in 0..<1_000 { queue.popFirst()?() }
        // Leaving again, or after being let through, changes nothing.
        queue.remove(numbers[4_999])
        queue.remove(numbers[3])
        queue.remove(numbers[0])
        // Later arrivals queue behind the ones still waiting.
        for index in 5_000..<5_010 { queue.append(queue.nextPlace()) { ran.withLock { $0.append(index) } } }
        while let run = queue.popFirst() { run() }
        #expect(queue.isEmpty && queue.count == 0)
        #expect(ran.value == (0..<5_010).filter { !withdrawn.contains($0) })
        #expect(queue.popFirst() == nil)
    }

    @Test func aWithdrawnPlaceLetsGoOfItsWorkAtOnce() {
        var queue = WaitQueue()
        weak var captured: Payload?
        let first = queue.nextPlace()
        queue.append(first) {}
        let second = queue.nextPlace()
        do {
            let payload = Payload()
            captured = payload
            queue.append(second) { _ = payload }
        }
        queue.append(queue.nextPlace()) {}
        #expect(captured != nil, "waiting: the queue holds its work")
        queue.remove(second)
        #expect(captured == nil, "withdrawn: the work went with it, before the head reached its place")
        #expect(queue.count == 2)
    }

    @Test func aQueueEmptiedByWithdrawalsTakesNewWorkInOrder() {
        var queue = WaitQueue()
        var numbers: [UInt64] = []
        for _ in 0..<300 {
            let number = queue.nextPlace()
            numbers.append(number)
            queue.append(number) { Issue.record("a withdrawn place ran") }
        }
        for number in numbers.reversed() { queue.remove(number) }
        #expect(queue.isEmpty)
        let ran = Locked<[Int]>([])
        for index in 0..<3 { queue.append(queue.nextPlace()) { ran.withLock { $0.append(index) } } }
        while let run = queue.popFirst() { run() }
        #expect(ran.value == [0, 1, 2])
        #expect(queue.nextPlace() == 304, "numbers keep rising")
    }

    /// The admission gate lets waiters through in FIFO order, skipping those that withdrew.
    @Test func theGateLetsWaitersThroughInOrderSkippingWithdrawn() {
        let gate = AdmissionGate(limit: 1)
        let releases = Locked<[@Sendable () -> Void]>([])
        let order = Locked<[Int]>([])
        var tickets: [QueueTicket?] = []
        for index in 0..<50 {
            tickets.append(gate.enter { release in
                order.withLock { $0.append(index) }
                releases.withLock { $0.append(release) }
            })
        }
        #expect(tickets[0] == nil && tickets.dropFirst().allSatisfy { $0 != nil }, "the first runs at once: no place to withdraw")
        for index in stride(from: 1, to: 50, by: 2) { tickets[index]?.withdraw() }
        while let release = releases.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { release() }
        #expect(order.value == Array(stride(from: 0, to: 50, by: 2)))
    }

    /// Hand-overs nested past the trampoline's depth wait for the outermost one and then run in the order they
    /// were asked for; the stack never holds more than `maximumDepth` of them.
    @Test func theTrampolineRunsALongChainInOrderWithABoundedStack() {
        final class Chain: @unchecked Sendable {   // touched on this one thread only
            var ran: [Int] = []
            var depth = 0
            var deepest = 0
        }
        let chain = Chain()
        let length = 5_000
        @Sendable func step(_ index: Int) {
            chain.depth += 1
            chain.deepest = max(chain.deepest, chain.depth)
            chain.ran.append(index)
            if index + 1 < length { Trampoline.run { step(index + 1) } }
            chain.depth -= 1
        }
        Trampoline.run { step(0) }
        #expect(chain.ran == Array(0..<length))
        #expect(chain.deepest <= Trampoline.maximumDepth)
        #expect(chain.depth == 0)
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// ``WaitQueue`` against a plain array, over long random mixes of appends, takes and withdrawals (a fixed seed):
/// the same work comes out, in the same order, and the counts agree after every step.
@Suite("WaitQueue matches a plain FIFO")
struct WaitQueueModelTests {
    /// A small deterministic generator (SplitMix64).
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func randomMixes(seed: UInt64) {
        var random = Seeded(state: seed)
        var queue = WaitQueue()
        var model: [UInt64] = []
        let ran = Locked<[UInt64]>([])
        var expected: [UInt64] = []
        for step in 0..<40_000 {
            // Phases: bursts of appends, of withdrawals, of takes, so the compaction paths all run.
            let phase = (step / 2_000) % 3
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < (phase == 0 ? 70 : 20) {
                let number = queue.nextPlace()
                queue.append(number) { ran.withLock { $0.append(number) } }
                model.append(number)
            } else if roll < (phase == 1 ? 90 : 60), !model.isEmpty {
                let index = Int.random(in: 0..<model.count, using: &random)
                queue.remove(model.remove(at: index))
                // Withdrawing a place that already left (taken or withdrawn) changes nothing.
                let stale = UInt64.random(in: 1...UInt64(step + 1), using: &random)
                if Bool.random(using: &random), !model.contains(stale) { queue.remove(stale) }
            } else {
                let work = queue.popFirst()
                if model.isEmpty {
                    #expect(work == nil)
                } else {
                    expected.append(model.removeFirst())
                    work?()
                }
            }
            if queue.count != model.count || queue.isEmpty != model.isEmpty {
                Issue.record("step \(step): the queue holds \(queue.count), the model \(model.count)")
                return
            }
        }
        while let work = queue.popFirst() { work() }
        expected += model
        #expect(ran.value == expected)
    }

    /// With places put at the front as well (the session pool's replays): the walk from the head, the head
    /// taken, and emptying all at once agree with an array that inserts at index 0.
    @Test(arguments: [11, 12, 13, 14])
    func randomMixesWithFrontInsertions(seed: UInt64) {
        var random = Seeded(state: seed)
        var queue = WaitQueue<UInt64>()
        var model: [UInt64] = []
        for step in 0..<20_000 {
            let phase = (step / 1_000) % 3
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < (phase == 0 ? 70 : 20) {
                let number = queue.nextPlace()
                if Int.random(in: 0..<4, using: &random) == 0 {
                    queue.prepend(number, number * 10)
                    model.insert(number, at: 0)
                } else {
                    queue.append(number, number * 10)
                    model.append(number)
                }
            } else if roll < (phase == 1 ? 90 : 60), !model.isEmpty {
                let number = model.remove(at: Int.random(in: 0..<model.count, using: &random))
                queue.remove(number)
                queue.remove(number)   // gone already: changes nothing
            } else if roll < 97 {
                #expect(queue.popFirst() == (model.isEmpty ? nil : model.removeFirst() * 10))
            } else {
                #expect(queue.removeAll() == model.map { $0 * 10 })
                model = []
            }
            if queue.count != model.count || step % 97 == 0 && queue.map(\.number) != model
                || queue.map(\.item) != queue.map({ $0.number * 10 }) {
                Issue.record("step \(step): the queue walks \(queue.map(\.number)), the model \(model)")
                return
            }
        }
        #expect(queue.map(\.number) == model)
    }
}

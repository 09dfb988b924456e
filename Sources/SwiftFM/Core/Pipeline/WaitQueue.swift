import Foundation

/// Work waiting for its turn, first in, first out: the package's one FIFO. The queue of the concurrency cap
/// (``AdmissionGate``), of the rate limit (``RateLimiter``) and of the hand-overs the ``Trampoline`` holds back.
/// Each place has a number, so a call that ended while waiting can leave (``QueueTicket/withdraw()``) and is
/// never run. Appending, taking the head and leaving all cost O(1) (amortised). Not thread-safe: its owner
/// keeps it under its lock.
struct WaitQueue {
    private var nextNumber: UInt64 = 0
    /// The work still waiting, by number: taking it or leaving is one removal, and what it captured goes with it.
    private var waiting: [UInt64: @Sendable () -> Void] = [:]
    /// The numbers in the order they came; a number whose work left meanwhile is skipped when it reaches the head.
    private var order: [UInt64] = []
    /// The index in `order` of the next number to look at: taking the head costs O(1), not a shift of the array.
    private var head = 0

    /// Nobody waits.
    var isEmpty: Bool { waiting.isEmpty }

    /// How many places wait.
    var count: Int { waiting.count }

    /// A new number, for a place that waits or is let through at once.
    mutating func nextPlace() -> UInt64 {
        nextNumber += 1
        return nextNumber
    }

    /// `run` waits at the back, under `number`.
    mutating func append(_ number: UInt64, _ run: @escaping @Sendable () -> Void) {
        waiting[number] = run
        order.append(number)
    }

    /// The head's work, taken out of the queue; `nil` when nobody waits.
    mutating func popFirst() -> (@Sendable () -> Void)? {
        var run: (@Sendable () -> Void)?
        while run == nil, head < order.count {
            run = waiting.removeValue(forKey: order[head])
            head += 1
        }
        compact()
        return run
    }

    /// The place under `number` leaves the queue; nothing happens when it is not waiting.
    mutating func remove(_ number: UInt64) {
        guard waiting.removeValue(forKey: number) != nil else { return }
        compact()
    }

    /// Drops what `order` no longer needs: the numbers before the head, and those of places that left, once
    /// they are at least half of it (so each number is moved O(1) times in all).
    private mutating func compact() {
        if waiting.isEmpty {
            // Emptied: start again small after a burst, rather than keep its storage.
            if waiting.capacity > 1_024 { waiting = [:] }
            order.removeAll(keepingCapacity: order.count <= 1_024)
            head = 0
        } else if head >= 64, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        } else if order.count - head >= 64, (order.count - head) > 2 * waiting.count {
            order = order[head...].filter { waiting[$0] != nil }
            head = 0
        }
    }
}

/// A place in a ``WaitQueue``: ``withdraw()`` gives it up when the call ended while waiting.
final class QueueTicket: Sendable {
    private let leave: @Sendable () -> Void

    init(leave: @escaping @Sendable () -> Void) { self.leave = leave }

    /// Leaves the queue without running. Does nothing once the work was let through.
    func withdraw() { leave() }
}

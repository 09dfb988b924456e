import Foundation

/// Work waiting for its turn, first in, first out: the queue of the concurrency cap (``AdmissionGate``) and of
/// the rate limit (``RateLimiter``). Each place has a number, so a call that ended while waiting can leave
/// (``QueueTicket/withdraw()``) and is never run. Not thread-safe: its owner keeps it under its lock.
struct WaitQueue {
    private var nextNumber: UInt64 = 0
    /// A taken place keeps its number but not its work (`nil`), so what the work captured goes with it.
    private var places: [(number: UInt64, run: (@Sendable () -> Void)?)] = []
    /// The index of the first place still waiting: taking the head costs O(1), not a shift of the array.
    private var head = 0

    /// Nobody waits.
    var isEmpty: Bool { head == places.count }

    /// A new number, for a place that waits or is let through at once.
    mutating func nextPlace() -> UInt64 {
        nextNumber += 1
        return nextNumber
    }

    /// `run` waits at the back, under `number`.
    mutating func append(_ number: UInt64, _ run: @escaping @Sendable () -> Void) {
        places.append((number, run))
    }

    /// The head's work, taken out of the queue; `nil` when nobody waits.
    mutating func popFirst() -> (@Sendable () -> Void)? {
        guard !isEmpty else { return nil }
        let run = places[head].run
        places[head].run = nil
        head += 1
        if head == places.count {
            places.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= places.count {
            places.removeFirst(head)
            head = 0
        }
        return run
    }

    /// The place under `number` leaves the queue; nothing happens when it is not waiting.
    mutating func remove(_ number: UInt64) {
        guard let index = places[head...].firstIndex(where: { $0.number == number }) else { return }
        places.remove(at: index)
    }
}

/// A place in a ``WaitQueue``: ``withdraw()`` gives it up when the call ended while waiting.
final class QueueTicket: Sendable {
    private let leave: @Sendable () -> Void

    init(leave: @escaping @Sendable () -> Void) { self.leave = leave }

    /// Leaves the queue without running. Does nothing once the work was let through.
    func withdraw() { leave() }
}

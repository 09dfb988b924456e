import Foundation

/// Places waiting for their turn, first in, first out: the package's one FIFO. The queue of the concurrency cap
/// (``AdmissionGate``), of the rate limit (``RateLimiter``), of the hand-overs the ``Trampoline`` holds back
/// (their `Item` is the work to run), of the calls waiting for a session (``SessionPool``, whose replays
/// go to the front with ``prepend(_:_:)``) and of the requests waiting for a connection to their origin
/// (``FMCurlTransport``'s engine). Each place has a number, so a call that ended while waiting can
/// leave (``remove(_:)``, ``QueueTicket/withdraw()``) and is never served. Appending, prepending, taking the
/// head and leaving all cost O(1) (amortised). Not thread-safe: its owner keeps it under its lock.
struct WaitQueue<Item> {
    private var nextNumber: UInt64 = 0
    /// The items still waiting, by number: taking one or leaving is one removal, and what it captured goes with it.
    private var waiting: [UInt64: Item] = [:]
    /// The numbers put at the front, the first in line last; a number whose item left meanwhile is skipped.
    private var front: [UInt64] = []
    /// The numbers in the order they came (behind `front`); a number whose item left meanwhile is skipped
    /// when it reaches the head.
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

    /// `item` waits at the back, under `number`.
    mutating func append(_ number: UInt64, _ item: Item) {
        waiting[number] = item
        order.append(number)
    }

    /// `item` waits at the front, before every place waiting now, under `number`.
    mutating func prepend(_ number: UInt64, _ item: Item) {
        waiting[number] = item
        front.append(number)
    }

    /// The head's item, taken out of the queue; `nil` when nobody waits.
    mutating func popFirst() -> Item? {
        var item: Item?
        while item == nil, let number = front.popLast() {
            item = waiting.removeValue(forKey: number)
        }
        while item == nil, head < order.count {
            item = waiting.removeValue(forKey: order[head])
            head += 1
        }
        compact()
        return item
    }

    /// Whether the place under `number` is waiting.
    func contains(_ number: UInt64) -> Bool { waiting[number] != nil }

    /// The place under `number` leaves the queue; nothing happens when it is not waiting.
    mutating func remove(_ number: UInt64) {
        guard waiting.removeValue(forKey: number) != nil else { return }
        compact()
    }

    /// Every place leaves the queue; returns their items in order.
    mutating func removeAll() -> [Item] {
        let items = map { $0.item }
        waiting = [:]
        front = []
        order = []
        head = 0
        return items
    }

    /// Drops what `front` and `order` no longer need: the numbers before the head, and those of places that
    /// left, once they are at least half of it (so each number is moved O(1) times in all).
    private mutating func compact() {
        if waiting.isEmpty {
            // Emptied: start again small after a burst, rather than keep its storage.
            if waiting.capacity > 1_024 { waiting = [:] }
            order.removeAll(keepingCapacity: order.count <= 1_024)
            front.removeAll(keepingCapacity: front.count <= 1_024)
            head = 0
            return
        }
        while let last = front.last, waiting[last] == nil { front.removeLast() }
        if front.count >= 64, front.count > 2 * waiting.count {
            front.removeAll { waiting[$0] == nil }
        }
        if head >= 64, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        } else if order.count - head >= 64, (order.count - head) > 2 * waiting.count {
            order = order[head...].filter { waiting[$0] != nil }
            head = 0
        }
    }
}

extension WaitQueue where Item == @Sendable () -> Void {
    /// A queue of work to run in turn (the gate's, the rate limiter's, the trampoline's).
    init() {}
}

extension WaitQueue: Sequence {
    /// The places waiting, head first, with their numbers (reading; the queue does not change).
    struct Iterator: IteratorProtocol {
        fileprivate let queue: WaitQueue
        fileprivate var frontIndex: Int
        fileprivate var orderIndex: Int

        mutating func next() -> (number: UInt64, item: Item)? {
            while frontIndex > 0 {
                frontIndex -= 1
                let number = queue.front[frontIndex]
                if let item = queue.waiting[number] { return (number, item) }
            }
            while orderIndex < queue.order.count {
                let number = queue.order[orderIndex]
                orderIndex += 1
                if let item = queue.waiting[number] { return (number, item) }
            }
            return nil
        }
    }

    /// Walks the waiting places from the head.
    func makeIterator() -> Iterator {
        Iterator(queue: self, frontIndex: front.count, orderIndex: head)
    }

    /// How many places wait.
    var underestimatedCount: Int { waiting.count }
}

/// A place in a ``WaitQueue``: ``withdraw()`` gives it up when the call ended while waiting.
final class QueueTicket: Sendable {
    private let leave: @Sendable () -> Void

    init(leave: @escaping @Sendable () -> Void) { self.leave = leave }

    /// Leaves the queue without running. Does nothing once the work was let through.
    func withdraw() { leave() }
}

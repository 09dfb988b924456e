import Foundation

/// How Data API requests pass through the emulator in time: the service time each one is held, the
/// number in flight (and the most at once), and per-session serialisation. It has its own lock, so
/// holding or queueing a request never holds the emulator's state lock.
final class EmulatorTraffic: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var serviceTime: TimeInterval = 0
    private var serializes = false
    private var inFlight = 0
    private var maxInFlight = 0
    /// Requests waiting for their session's turn.
    private var waiting = 0
    /// Per token: the next ticket to hand out and the ticket being served (FIFO per session).
    private var tickets: [String: (next: Int, serving: Int)] = [:]
    /// Bumped by ``interruptHolds()``: a hold that started under another generation ends at once.
    private var generation = 0

    /// The settings and counters that a reset restores.
    func reset() {
        condition.lock()
        serviceTime = 0
        serializes = false
        maxInFlight = inFlight
        condition.unlock()
    }

    var currentServiceTime: TimeInterval {
        get { condition.lock(); defer { condition.unlock() }; return serviceTime }
        set {
            condition.lock()
            serviceTime = newValue.isFinite ? max(0, newValue) : 0
            // Held requests re-read it: a shorter service time ends their hold sooner.
            condition.broadcast()
            condition.unlock()
        }
    }

    var serializesSessions: Bool {
        get { condition.lock(); defer { condition.unlock() }; return serializes }
        set {
            condition.lock()
            serializes = newValue
            condition.broadcast()
            condition.unlock()
        }
    }

    var mostInFlight: Int {
        condition.lock()
        defer { condition.unlock() }
        return maxInFlight
    }

    func resetMaxInFlight() {
        condition.lock()
        maxInFlight = inFlight
        condition.unlock()
    }

    /// Waits until `inFlight` requests are in flight and `waiting` wait for their session's turn, or
    /// `timeout` seconds pass; returns whether that state was reached. For tests and the control API.
    func waitFor(inFlight expectedInFlight: Int, waiting expectedWaiting: Int = 0, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while inFlight != expectedInFlight || waiting != expectedWaiting {
            if !condition.wait(until: deadline) { return inFlight == expectedInFlight && waiting == expectedWaiting }
        }
        return true
    }

    /// Wakes every held request (the emulator is stopping).
    func interruptHolds() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Runs `body` as one Data API request carrying `token`: waits for the session's turn when
    /// serialising (FIFO), counts it in flight, holds it for the service time, then runs `body`.
    func pass<R>(token: String?, _ body: () -> R) -> R {
        condition.lock()
        // A request that arrived before a stop is not held, even if its turn comes after it.
        let arrivalGeneration = generation
        var ticket: Int?
        if serializes, let token {
            var entry = tickets[token] ?? (next: 0, serving: 0)
            let mine = entry.next
            entry.next += 1
            tickets[token] = entry
            ticket = mine
            waiting += 1
            condition.broadcast()
            while let entry = tickets[token], entry.serving != mine { condition.wait() }
            waiting -= 1
        }
        inFlight += 1
        if inFlight > maxInFlight { maxInFlight = inFlight }
        condition.broadcast()
        let started = Date()
        while generation == arrivalGeneration, serviceTime > 0 {
            let deadline = started.addingTimeInterval(serviceTime)
            if deadline.timeIntervalSinceNow <= 0 { break }
            _ = condition.wait(until: deadline)
        }
        condition.unlock()

        let result = body()

        condition.lock()
        inFlight -= 1
        condition.broadcast()
        if let ticket, let token, var entry = tickets[token], entry.serving == ticket {
            entry.serving += 1
            if entry.serving == entry.next { tickets[token] = nil } else { tickets[token] = entry }
            condition.broadcast()
        }
        condition.unlock()
        return result
    }
}

import Dispatch
import Foundation

/// How Data API requests pass through the emulator in time: the service time each one is held, the
/// number in flight (and the most at once), and per-session serialisation. It has its own locks, so
/// holding or queueing a request never holds the emulator's state lock.
final class EmulatorTraffic: @unchecked Sendable {
    /// Guards the counters and the session queues; broadcast when a count changes (for ``waitFor``).
    private let condition = NSCondition()
    private var serializes = false
    private var inFlight = 0
    private var maxInFlight = 0
    /// Requests waiting for their session's turn.
    private var waiting = 0
    /// Per token being served: the requests waiting for it, first come first served. A token is in
    /// the dictionary while one of its requests is being served.
    private var queues: [String: [DispatchSemaphore]] = [:]

    /// Guards the service time and the stop generation; held requests wait on it.
    private let holdCondition = NSCondition()
    private var serviceTime: TimeInterval = 0
    /// Bumped by ``interruptHolds()``: a request that arrived under an older generation is not held.
    private var generation = 0

    /// The settings and counters that a reset restores.
    func reset() {
        currentServiceTime = 0
        condition.lock()
        serializes = false
        maxInFlight = inFlight
        condition.unlock()
    }

    var currentServiceTime: TimeInterval {
        get { holdCondition.lock(); defer { holdCondition.unlock() }; return serviceTime }
        set {
            holdCondition.lock()
            serviceTime = newValue.isFinite ? max(0, newValue) : 0
            // Held requests re-read it: a shorter service time ends their hold sooner.
            holdCondition.broadcast()
            holdCondition.unlock()
        }
    }

    var serializesSessions: Bool {
        get { condition.lock(); defer { condition.unlock() }; return serializes }
        set { condition.lock(); serializes = newValue; condition.unlock() }
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

    /// Ends every hold under way (the emulator is stopping).
    func interruptHolds() {
        holdCondition.lock()
        generation += 1
        holdCondition.broadcast()
        holdCondition.unlock()
    }

    /// Waits until `inFlight` requests are in flight and `waiting` wait for their session's turn, or
    /// `timeout` seconds pass; returns whether that state was reached. For tests.
    func waitFor(inFlight expectedInFlight: Int, waiting expectedWaiting: Int = 0, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while inFlight != expectedInFlight || waiting != expectedWaiting {
            if !condition.wait(until: deadline) { return inFlight == expectedInFlight && waiting == expectedWaiting }
        }
        return true
    }

    /// Runs `body` as one Data API request carrying `token`: waits for the session's turn when
    /// serialising (FIFO), counts it in flight, holds it for the service time, then runs `body`.
    func pass<R>(token: String?, _ body: () -> R) -> R {
        holdCondition.lock()
        let arrival = generation
        holdCondition.unlock()

        condition.lock()
        var queued: String?
        if serializes, let token {
            queued = token
            if queues[token] == nil {
                queues[token] = []
            } else {
                // Someone is being served: wait in line; the one before hands the turn over.
                let turn = DispatchSemaphore(value: 0)
                queues[token, default: []].append(turn)
                waiting += 1
                condition.broadcast()
                condition.unlock()
                turn.wait()
                condition.lock()
                waiting -= 1
            }
        }
        inFlight += 1
        if inFlight > maxInFlight { maxInFlight = inFlight }
        condition.broadcast()
        condition.unlock()

        hold(arrival: arrival)
        let result = body()

        condition.lock()
        inFlight -= 1
        if let token = queued, var line = queues[token] {
            if line.isEmpty {
                queues[token] = nil
            } else {
                line.removeFirst().signal()
                queues[token] = line
            }
        }
        condition.broadcast()
        condition.unlock()
        return result
    }

    /// Waits out the service time (re-read when it changes), unless the emulator stopped since the
    /// request arrived.
    private func hold(arrival: Int) {
        let started = Date()
        holdCondition.lock()
        defer { holdCondition.unlock() }
        while generation == arrival, serviceTime > 0 {
            let deadline = started.addingTimeInterval(serviceTime)
            if deadline.timeIntervalSinceNow <= 0 { return }
            _ = holdCondition.wait(until: deadline)
        }
    }
}

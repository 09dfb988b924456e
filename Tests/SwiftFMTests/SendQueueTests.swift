import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The send stage's queues: the wait queue keeps FIFO order across withdrawals and lets go of the work it took
/// out; a gate or a rate limiter whose last waiter withdrew is freed with its work; the rate limit spaces
/// requests in order (by the injected clock) and every rate-limited call completes, its login included.
@Suite("Send stage queues: wait queue, concurrency gate, rate limit")
struct SendQueueTests {
    // MARK: rate limit

    @Test func theWaitQueueKeepsOrderAcrossWithdrawalsAndCompaction() {
        var queue = WaitQueue()
        let ran = Locked<[Int]>([])
        var numbers: [UInt64] = []
        for index in 0..<300 {
            let number = queue.nextPlace()
            numbers.append(number)
            queue.append(number) { ran.withLock { $0.append(index) } }
        }
        queue.remove(numbers[5])
        queue.remove(numbers[5])          // twice: nothing more happens
        queue.remove(UInt64.max)          // never issued: nothing happens
        for _ in 0..<150 { queue.popFirst()?() }   // past the point where the taken head is compacted away
        queue.remove(numbers[0])          // already taken: nothing happens
        queue.remove(numbers[200])
        while let run = queue.popFirst() { run() }
        #expect(queue.isEmpty)
        #expect(ran.value == (0..<300).filter { $0 != 5 && $0 != 200 })
        let later = queue.nextPlace()
        #expect(later == 301, "numbers keep rising after the queue emptied")
    }

    /// A waiter let through is no longer held by the queue: what its work captured (the call, its request body,
    /// the caller's completion) goes with it, even while others still wait behind it.
    @Test func theWaitQueueLetsGoOfTheWorkItTookOut() {
        final class Payload: Sendable {}
        let gate = AdmissionGate(limit: 1)
        let releases = Locked<[@Sendable () -> Void]>([])
        gate.enter { release in releases.withLock { $0.append(release) } }        // holds the one slot
        weak var captured: Payload?
        do {
            let payload = Payload()
            captured = payload
            gate.enter { release in _ = payload; releases.withLock { $0.append(release) } }
        }
        gate.enter { release in releases.withLock { $0.append(release) } }        // still waits behind it
        #expect(captured != nil, "queued: the gate holds its work")
        let first = releases.withLock { $0.removeFirst() }
        first()                                                                     // the second work runs
        #expect(releases.value.count == 1, "the second work ran and holds the slot")
        #expect(captured == nil, "the work that ran is not kept by the queue while the third waits")
        var queue = WaitQueue()
        do {
            let payload = Payload()
            captured = payload
            queue.append(queue.nextPlace()) { _ = payload }
        }
        queue.append(queue.nextPlace()) {}
        queue.popFirst()?()
        #expect(captured == nil, "popFirst lets go of the work it returned")
        #expect(!queue.isEmpty)
    }

    /// The last waiter withdraws while the one before it runs, and nobody comes after: the queue is empty, and
    /// holds nothing. A gate that kept the taken work kept itself (the work holds its `release`, which holds
    /// the gate) and, in a client, the call and its DataAPI: a cycle nothing breaks once nobody waits.
    @Test func aGateWhoseLastWaiterWithdrewIsFreedWithItsWork() {
        final class Payload: Sendable {}
        weak var weakGate: AdmissionGate?
        weak var captured: Payload?
        do {
            let gate = AdmissionGate(limit: 1)
            weakGate = gate
            let releases = Locked<[@Sendable () -> Void]>([])
            gate.enter { release in releases.withLock { $0.append(release) } }
            do {
                let payload = Payload()
                captured = payload
                gate.enter { release in _ = payload; releases.withLock { $0.append(release) } }
            }
            let last = gate.enter { _ in Issue.record("a withdrawn waiter ran") }
            releases.withLock { $0.removeFirst() }()     // the second runs
            last?.withdraw()                                // the third leaves: nobody waits
            releases.withLock { $0.removeFirst() }()     // the second ends: its slot is freed
            #expect(releases.value.isEmpty)
        }
        #expect(captured == nil, "the work that ran is not kept")
        #expect(weakGate == nil, "the gate is freed once nothing holds it")
    }

    /// The rate limit's queue too: a waiter let through by the timer, then the last one withdraws. Once the
    /// timer ran out and the caller let go, nothing holds the limiter (nor the work that ran, which in a client
    /// holds its call, the client and so the limiter).
    @Test func aRateLimiterWhoseLastWaiterWithdrewIsFreedWithItsWork() {
        final class Payload: Sendable {}
        weak var weakLimiter: RateLimiter?
        weak var captured: Payload?
        let now = Locked(100.0)
        let timers = Locked<[@Sendable () -> Void]>([])
        let ran = Locked(0)
        do {
            let limiter = RateLimiter(rate: 1, clock: { now.value }, schedule: { _, work in
                timers.withLock { $0.append(work) }
                return nil   // fired by hand: nothing to cancel
            })
            weakLimiter = limiter
            limiter.enter { ran.withLock { $0 += 1 } }                  // leaves at once
            do {
                let payload = Payload()
                captured = payload
                // waits for the timer; holds the limiter, as a call's work does (call → client → limiter)
                limiter.enter { [limiter] in _ = payload; _ = limiter; ran.withLock { $0 += 1 } }
            }
            let last = limiter.enter { Issue.record("a withdrawn waiter ran") }
            now.withLock { $0 += 1 }
            timers.withLock { $0.removeFirst() }()                      // the second leaves; the timer re-arms
            last?.withdraw()                                              // nobody waits
            now.withLock { $0 += 1 }
            while let timer = timers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { timer() }
            #expect(ran.value == 2)
        }
        #expect(captured == nil, "the work that ran is not kept")
        #expect(weakLimiter == nil, "the limiter is freed once nothing holds it")
    }

    @Test func theRateLimitSpacesRequestsInOrderWithTheInjectedClock() {
        final class FakeTime: @unchecked Sendable {
            let lock = NSLock()
            var now = 100.0
            var timers: [(at: Double, work: @Sendable () -> Void)] = []
            func schedule(_ delay: Double, _ work: @escaping @Sendable () -> Void) { lock.withLock { timers.append((now + delay, work)) } }
            /// Moves to the next timer and runs it; `false` when none is armed.
            func step() -> Bool {
                let next: (at: Double, work: @Sendable () -> Void)? = lock.withLock {
                    guard let index = timers.indices.min(by: { timers[$0].at < timers[$1].at }) else { return nil }
                    let timer = timers.remove(at: index)
                    now = max(now, timer.at)
                    return timer
                }
                next?.work()
                return next != nil
            }
        }
        let time = FakeTime()
        let limiter = RateLimiter(rate: 4, clock: { time.lock.withLock { time.now } }, schedule: { time.schedule($0, $1); return nil })
        let sent = Locked<[(Int, Double)]>([])
        var tickets: [QueueTicket?] = []
        for index in 0..<6 {
            tickets.append(limiter.enter { sent.withLock { $0.append((index, time.now)) } })
        }
        #expect(sent.value.map(\.0) == [0], "the first request leaves at once")
        #expect(tickets.map { $0 != nil } == [false, true, true, true, true, true], "a place in the queue only for those that wait")
        tickets[3]?.withdraw()   // its call ended while waiting: never sent, its turn goes to the next
        while time.step() {}
        #expect(sent.value.map(\.0) == [0, 1, 2, 4, 5])
        #expect(sent.value.map(\.1) == [100, 100.25, 100.5, 100.75, 101])
        // After a quiet second, one request leaves at once again.
        time.lock.withLock { time.now = 110 }
        limiter.enter { sent.withLock { $0.append((6, time.now)) } }
        #expect(sent.value.last?.0 == 6 && sent.value.last?.1 == 110)
    }

    @Test func rateLimitedCallsAllCompleteLoginIncluded() {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.maxRequestsPerSecond = 1_000
        let h = Harness(configuration: configuration) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        #expect(h.api.rateLimiter?.interval == 0.001)
        let results = Recorder<Result<String, FMError>>(expecting: 20)
        for _ in 0..<20 { h.api.perform(TestEndpoints.records()) { results.record($0) } }
        #expect(results.wait().allSatisfy { $0.testValue == "ok" })
        #expect(h.stub.count("POST", "/sessions") == 1)
    }
}

/// Records metrics; waits (bounded, on the event) for what a test expects.
final class MetricsRecorder: FMMetricsObserver, @unchecked Sendable {
    private let condition = NSCondition()
    private var calls: [FMCallMetrics] = []
    private var events: [FMPoolEvent] = []

    func callFinished(_ call: FMCallMetrics) {
        condition.lock(); calls.append(call); condition.broadcast(); condition.unlock()
    }

    func poolEvent(_ event: FMPoolEvent) {
        condition.lock(); events.append(event); condition.broadcast(); condition.unlock()
    }

    func waitForCalls(sourceLocation: SourceLocation = #_sourceLocation, _ done: ([FMCallMetrics]) -> Bool) -> [FMCallMetrics] {
        wait(sourceLocation: sourceLocation, fallback: { self.calls }) { done(self.calls) ? self.calls : nil }
    }

    func waitForEvents(sourceLocation: SourceLocation = #_sourceLocation, _ done: ([FMPoolEvent]) -> Bool) -> [FMPoolEvent] {
        wait(sourceLocation: sourceLocation, fallback: { self.events }) { done(self.events) ? self.events : nil }
    }

    private func wait<T>(sourceLocation: SourceLocation, fallback: () -> T, _ check: () -> T?) -> T {
        condition.lock()
        defer { condition.unlock() }
        let limit = Date().addingTimeInterval(TestBound.seconds)
        while true {
            if let value = check() { return value }
            if !condition.wait(until: limit) {
                Issue.record("timed out waiting for metrics", sourceLocation: sourceLocation)
                return check() ?? fallback()
            }
        }
    }
}

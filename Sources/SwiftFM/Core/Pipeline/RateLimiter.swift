import Foundation

/// The rate limit (``FMConfiguration/maxRequestsPerSecond``): requests, logins included, leave at most one
/// every `1 / rate` seconds (a token bucket holding one token), in FIFO order. A waiter whose call ended
/// meanwhile (cancelled, deadline passed) is skipped and gives its turn to the next one, so it is never sent.
///
/// Time is injected: `clock` reads a monotonic time in seconds and `schedule` runs work after a delay (the
/// tests' fake clock records the delays instead of waiting).
final class RateLimiter: Sendable {
    private struct State {
        /// The earliest time the next request may leave.
        var next: Double = -.infinity
        var waiting = WaitQueue()
        var timerArmed = false
    }

    /// Seconds between two requests.
    let interval: Double
    private let clock: @Sendable () -> Double
    private let schedule: @Sendable (_ after: Double, _ work: @escaping @Sendable () -> Void) -> Void
    private let state = Locked(State())

    /// A limiter of `rate` requests per second, or `nil` when `rate` is `nil`, not positive or not finite.
    static func make(rate: Double?) -> RateLimiter? {
        guard let rate, rate.isFinite, rate > 0 else { return nil }
        return RateLimiter(rate: rate)
    }

    init(rate: Double,
         clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
         schedule: @escaping @Sendable (_ after: Double, _ work: @escaping @Sendable () -> Void) -> Void = { delay, work in
             _ = Deadline.after(seconds: delay, fire: work)
         }) {
        interval = 1 / max(rate, 1e-9)
        self.clock = clock
        self.schedule = schedule
    }

    /// Runs `work` when its turn comes (at once when the limit allows it and nobody waits). Returns the place in
    /// the queue (to withdraw it when the call ends first), or `nil` when `work` ran at once.
    @discardableResult
    func enter(_ work: @escaping @Sendable () -> Void) -> QueueTicket? {
        let now = clock()
        let (place, arm) = state.withLock { state -> (UInt64?, Double?) in
            if state.waiting.isEmpty, now >= state.next {
                state.next = now + interval
                return (nil, nil)
            }
            let place = state.waiting.nextPlace()
            state.waiting.append(place, work)
            guard !state.timerArmed else { return (place, nil) }
            state.timerArmed = true
            return (place, max(0, state.next - now))
        }
        if let arm { schedule(arm) { [self] in fire() } }
        guard let place else {
            work()
            return nil
        }
        return QueueTicket { [self] in state.withLock { $0.waiting.remove(place) } }
    }

    /// The timer: lets the head of the queue through when its time came, and re-arms for the next.
    private func fire() {
        let now = clock()
        let (run, arm) = state.withLock { state -> ((@Sendable () -> Void)?, Double?) in
            state.timerArmed = false
            var run: (@Sendable () -> Void)?
            if !state.waiting.isEmpty, now >= state.next {
                run = state.waiting.popFirst()
                state.next = max(now, state.next) + interval
            }
            guard !state.waiting.isEmpty else { return (run, nil) }
            state.timerArmed = true
            return (run, max(0, state.next - now))
        }
        run?()
        if let arm { schedule(arm) { [self] in fire() } }
    }
}

import Foundation

/// The rate limit (``FMConfiguration/maxRequestsPerSecond``): requests, logins included, leave at most one
/// every `1 / rate` seconds (a token bucket holding one token), in FIFO order. A waiter whose call ended
/// meanwhile (cancelled, deadline passed) is skipped and gives its turn to the next one, so it is never sent.
///
/// Its timer is armed for the calls that wait and ends with the last of them: once every waiter has left the queue
/// (its call ended), the timer is cancelled and lets go of the limiter, which a dropped client then frees at once, not
/// up to `1 / rate` seconds later.
///
/// Time is injected: `clock` reads a monotonic time in seconds and `schedule` arms a timer (the tests' fake clock
/// records the delays instead of waiting, and returns no timer to cancel).
final class RateLimiter: Sendable {
    private struct State {
        /// The earliest time the next request may leave.
        var next: Double = -.infinity
        var waiting = WaitQueue()
        /// The armed timer's key (``OwnedTimers``), while one is armed: a timer whose key it is not is stale.
        var timer: OwnedTimers.Key?
    }

    /// Seconds between two requests.
    let interval: Double
    private let clock: @Sendable () -> Double
    private let schedule: OwnedTimers.Arm
    private let state = Locked(State())
    /// The armed timer (one at a time), cancelled when the last waiter leaves.
    private let timers = OwnedTimers()

    /// A limiter of `rate` requests per second, or `nil` when `rate` is `nil`, not positive or not finite.
    static func make(rate: Double?) -> RateLimiter? {
        guard let rate, rate.isFinite, rate > 0 else { return nil }
        return RateLimiter(rate: rate)
    }

    init(rate: Double,
         clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
         schedule: @escaping OwnedTimers.Arm = { Deadline.after(seconds: $0, fire: $1) }) {
        interval = 1 / max(rate, 1e-9)
        self.clock = clock
        self.schedule = schedule
    }

    /// Runs `work` when its turn comes (at once when the limit allows it and nobody waits). Returns the place in
    /// the queue (to withdraw it when the call ends first), or `nil` when `work` ran at once.
    @discardableResult
    func enter(_ work: @escaping @Sendable () -> Void) -> QueueTicket? {
        let now = clock()
        let (place, arm) = state.withLock { state -> (UInt64?, (Double, OwnedTimers.Key)?) in
            if state.waiting.isEmpty, now >= state.next {
                state.next = now + interval
                return (nil, nil)
            }
            let place = state.waiting.nextPlace()
            state.waiting.append(place, work)
            guard state.timer == nil else { return (place, nil) }
            return (place, armed(&state, after: max(0, state.next - now)))
        }
        if let arm { start(arm) }
        guard let place else {
            work()
            return nil
        }
        return QueueTicket { [self] in withdraw(place) }
    }

    /// Records a timer to arm (its key reserved here, under the limiter's lock, so its firing can tell it is the current one).
    private func armed(_ state: inout State, after delay: Double) -> (Double, OwnedTimers.Key) {
        let key = timers.reserve()
        state.timer = key
        return (delay, key)
    }

    /// Arms the timer `armed` recorded. It holds the limiter while it is armed: the waiters' turns depend on it.
    private func start(_ timer: (Double, OwnedTimers.Key)) {
        let (delay, key) = timer
        timers.arm(key, after: delay, using: schedule) { [self] in fire(key) }
    }

    /// A waiter leaves without running; the last one to leave cancels the timer, which has nobody left to let through.
    private func withdraw(_ place: UInt64) {
        let stale = state.withLock { state -> OwnedTimers.Key? in
            state.waiting.remove(place)
            return state.waiting.isEmpty ? state.timer.take() : nil
        }
        if let stale { timers.cancel(stale) }
    }

    /// The timer of `key`: lets the head of the queue through when its time came, and re-arms for the next. A stale
    /// timer (cancelled as it fired) does nothing.
    private func fire(_ key: OwnedTimers.Key) {
        let now = clock()
        let (run, arm) = state.withLock { state -> ((@Sendable () -> Void)?, (Double, OwnedTimers.Key)?) in
            guard state.timer == key else { return (nil, nil) }
            state.timer = nil
            var run: (@Sendable () -> Void)?
            if !state.waiting.isEmpty, now >= state.next {
                run = state.waiting.popFirst()
                state.next = max(now, state.next) + interval
            }
            guard !state.waiting.isEmpty else { return (run, nil) }
            return (run, armed(&state, after: max(0, state.next - now)))
        }
        run?()
        if let arm { start(arm) }
    }
}

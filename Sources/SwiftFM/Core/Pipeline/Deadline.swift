import Foundation

/// A one-shot timer, and the package's one reading of a deadline: the clamp of a number of seconds to
/// something a `DispatchTime` can hold, and the seconds left until a `DispatchTime`.
///
/// Every timer of the package (a call's deadline, a back-off, a session's wake-up, the rate limiter's
/// delay, a shutdown's bound) waits on one ``DeadlineClock`` thread, in one heap: arming and cancelling one
/// takes a lock and touches the heap, and wakes that thread only when the new timer is the earliest.
/// (A `DispatchSourceTimer` per call woke libdispatch's manager thread twice per call, to arm and to cancel:
/// two thread wake-ups on every call's critical path.) A timer that fires runs `fire` on a global queue. A timer that
/// serves an owner rather than one call (a pool's wake-up and idle sweep, the rate limiter's turn) is kept in that
/// owner's ``OwnedTimers`` and cancelled with it.
final class Deadline: @unchecked Sendable {
    // @unchecked: `slot` and `fire` are read and written only under the clock's lock.
    /// When it fires, in `DispatchTime` uptime nanoseconds.
    fileprivate let due: UInt64
    /// Where it sits in the clock's heap; `nil` once due or cancelled.
    fileprivate var slot: Int?
    /// `nil` once it started running or was cancelled: what a cancel and a queued fire race for.
    fileprivate var fire: (@Sendable () -> Void)?

    private init(due: UInt64, fire: @escaping @Sendable () -> Void) {
        self.due = due
        self.fire = fire
    }

    /// The longest wait: ten years. A non-finite or larger value means this (a timer that never fires).
    static let longest: TimeInterval = 10 * 365 * 86_400

    /// `seconds` as a wait: negative → 0, non-finite or past ``longest`` → ``longest``.
    static func clamped(_ seconds: TimeInterval) -> TimeInterval {
        seconds.isFinite ? min(max(0, seconds), longest) : longest
    }

    /// The moment `seconds` (clamped) from now.
    static func fromNow(_ seconds: TimeInterval) -> DispatchTime {
        .now() + clamped(seconds)
    }

    /// The seconds left until `moment` (0 once it has passed).
    static func remaining(until moment: DispatchTime) -> TimeInterval {
        let now = DispatchTime.now().uptimeNanoseconds
        return Double(moment.uptimeNanoseconds &- min(moment.uptimeNanoseconds, now)) / 1e9
    }

    /// Calls `fire` once, on a global queue, after `seconds` (a non-finite or huge value never fires),
    /// unless cancelled first.
    static func after(seconds: TimeInterval, fire: @escaping @Sendable () -> Void) -> Deadline {
        let deadline = Deadline(due: fromNow(seconds).uptimeNanoseconds, fire: fire)
        DeadlineClock.shared.arm(deadline)
        return deadline
    }

    /// Stops the timer: once this returns, `fire` does not start (it may be running already). Cancelling again
    /// does nothing.
    func cancel() { DeadlineClock.shared.disarm(self) }
}

/// The timers an owner arms and keeps track of, so that they end with it (the session stage's wake-ups and idle sweeps,
/// the rate limiter's turns): each is recorded from the moment it is armed until it fires or is cancelled, and a fired
/// one is dropped at once, so a long-lived owner keeps only the timers still armed. ``cancelAll()`` (the owner's
/// `deinit`) and ``cancel(_:)`` cancel them, and a cancelled ``Deadline`` lets go of its closure at once.
///
/// The record is right in any interleaving: a timer that fires, or is cancelled, before its arming has returned is not
/// recorded afterwards (it is cancelled then, which does nothing to one that fired), so a timer armed later is never
/// lost under an older one.
final class OwnedTimers: Sendable {
    /// A timer's place in the record.
    typealias Key = UInt64
    /// Arms a timer: ``Deadline/after(seconds:fire:)``, or a test's seam. `nil`: a timer with nothing to cancel (a test
    /// fires it by hand).
    typealias Arm = @Sendable (_ seconds: TimeInterval, _ fire: @escaping @Sendable () -> Void) -> Deadline?

    private struct State {
        var last: Key = 0
        /// The timers reserved or armed and neither fired nor cancelled; `.some(nil)`: its ``Deadline`` is not back yet.
        var armed: [Key: Deadline?] = [:]
    }
    private let state = Locked(State())

    init() {}

    /// How many timers are recorded (armed, or being armed).
    var count: Int { state.withLock { $0.armed.count } }

    /// Reserves the key of a timer to arm next with ``arm(_:after:using:fire:)``: an owner that must know a timer's key
    /// before it can fire (to tell a stale one) reserves it under its own lock. Every key reserved must be armed.
    func reserve() -> Key {
        state.withLock { state in
            state.last += 1
            state.armed[state.last] = .some(nil)
            return state.last
        }
    }

    /// Arms a timer that runs `fire` after `seconds` (through `arm`) and records it until it fires or is cancelled.
    func arm(after seconds: TimeInterval, using arm: Arm, fire: @escaping @Sendable () -> Void) {
        self.arm(reserve(), after: seconds, using: arm, fire: fire)
    }

    /// Arms the timer of `key` (``reserve()``): as ``arm(after:using:fire:)``. Cancelled (``cancel(_:)``,
    /// ``cancelAll()``) before it is armed, it is cancelled as soon as it is.
    func arm(_ key: Key, after seconds: TimeInterval, using arm: Arm, fire: @escaping @Sendable () -> Void) {
        let timer = arm(seconds) { [weak self] in
            self?.forget(key)
            fire()
        }
        guard let timer else { return }
        let kept = state.withLock { state -> Bool in
            guard state.armed.index(forKey: key) != nil else { return false }   // fired or cancelled meanwhile
            state.armed[key] = timer
            return true
        }
        if !kept { timer.cancel() }
    }

    /// Cancels the timer of `key`, if it is still armed (or being armed).
    func cancel(_ key: Key) {
        let timer = state.withLock { $0.armed.removeValue(forKey: key) }
        timer??.cancel()
    }

    /// Cancels every timer still armed (or being armed).
    func cancelAll() {
        let timers = state.withLock { state -> [Deadline?] in
            defer { state.armed = [:] }
            return Array(state.armed.values)
        }
        for timer in timers { timer?.cancel() }
    }

    /// A timer fired: it is no longer recorded.
    private func forget(_ key: Key) {
        _ = state.withLock { $0.armed.removeValue(forKey: key) }
    }
}

/// The thread every ``Deadline`` waits on: a min-heap of the armed timers by due time, each knowing its
/// place (so a cancel removes it at once, in O(log n), and lets go of its `fire`). The thread sleeps until
/// the earliest is due; arming an earlier one wakes it. It is started on the first timer and lives as
/// long as the process, like libdispatch's own manager thread.
final class DeadlineClock: @unchecked Sendable {
    // @unchecked: `heap` and `sleepsUntil` are behind `lock`; the alarm is thread-safe.
    static let shared = DeadlineClock()

    private let lock = NSLock()
    private var heap: [Deadline] = []
    /// The due time the thread waits for (`UInt64.max`: none): arming one earlier must wake it.
    private var sleepsUntil = UInt64.max
    private let alarm = ClockAlarm()

    private init() {
        let thread = Thread { [self] in run() }
        thread.name = Self.kernelName
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Puts `deadline` in the heap; wakes the thread when it is due before what the thread waits for.
    fileprivate func arm(_ deadline: Deadline) {
        let wakeUp = lock.withLock { () -> Bool in
            deadline.slot = heap.count
            heap.append(deadline)
            siftUp(heap.count - 1)
            guard deadline.due < sleepsUntil else { return false }
            sleepsUntil = deadline.due
            return true
        }
        if wakeUp { alarm.wake() }
    }

    /// Takes `deadline` out of the heap (if it is still there) and lets go of its `fire`, which a fire queued
    /// already then finds gone. The thread is not woken: if it waits for this one, it wakes at that time,
    /// finds it gone, and waits again.
    fileprivate func disarm(_ deadline: Deadline) {
        let fire = lock.withLock { () -> (@Sendable () -> Void)? in
            if let slot = deadline.slot { remove(at: slot) }
            defer { deadline.fire = nil }
            return deadline.fire
        }
        _ = fire   // released here, outside the lock (its captures may run deinits)
    }

    /// The thread's name as the kernel knows it (`top -H`, `perf`, `gdb`, `/proc`): 15 bytes at most.
    static let kernelName = "SwiftFM.clock"

    /// Names the calling thread ``kernelName`` for the kernel: Foundation's `Thread.name` does not reach it on
    /// Linux (the clock thread showed as whatever thread started it).
    private static func nameThisThread() {
        #if os(Linux)
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        defer { close(file) }
        _ = kernelName.withCString { write(file, $0, strlen($0)) }
        #endif
    }

    /// The thread: fires what is due (each on a global queue, where it runs unless cancelled meanwhile), then
    /// sleeps until the earliest of the rest.
    private func run() {
        Self.nameThisThread()
        while true {
            let (due, next) = lock.withLock { () -> ([Deadline], UInt64) in
                let now = DispatchTime.now().uptimeNanoseconds
                var due: [Deadline] = []
                while let first = heap.first, first.due <= now {
                    remove(at: 0)
                    due.append(first)
                }
                sleepsUntil = heap.first?.due ?? .max
                return (due, sleepsUntil)
            }
            for deadline in due { DispatchQueue.global().async { [self] in fire(deadline) } }
            alarm.sleep(until: next)
        }
    }

    /// Runs a due timer's `fire`, on a global queue, unless it was cancelled since the thread took it from the heap.
    private func fire(_ deadline: Deadline) {
        let fire = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { deadline.fire = nil }
            return deadline.fire
        }
        fire?()
    }

    // MARK: the heap (under `lock`)

    private func remove(at slot: Int) {
        let removed = heap[slot]
        removed.slot = nil
        let last = heap.removeLast()
        guard slot < heap.count else { return }
        heap[slot] = last
        last.slot = slot
        if slot > 0, last.due < heap[(slot - 1) / 2].due { siftUp(slot) } else { siftDown(slot) }
    }

    private func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < heap.count, heap[left].due < heap[least].due { least = left }
            if right < heap.count, heap[right].due < heap[least].due { least = right }
            guard least != parent else { return }
            swapAt(parent, least)
            parent = least
        }
    }

    private func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        heap[a].slot = a
        heap[b].slot = b
    }
}

/// Where the clock thread sleeps: until a moment or until woken, whichever comes first. Wakes asked while the
/// thread was awake count once (it re-reads the heap when it wakes).
///
/// On Linux a condition variable timed on `CLOCK_MONOTONIC`: a `DispatchSemaphore`'s timed wait is
/// `sem_timedwait`, an absolute time on the wall clock, so setting the wall clock back (NTP stepping it, a
/// virtual machine resumed) made every timer of the process that much late. Elsewhere a `DispatchSemaphore`
/// (Darwin's timed waits are on the monotonic clock).
final class ClockAlarm: @unchecked Sendable {
    #if os(Linux)
    // @unchecked: `woken` is behind `mutex`; the mutex and the condition live at fixed addresses for good.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var woken = false

    init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Wakes the sleeper now, or at once when it next sleeps.
    func wake() {
        pthread_mutex_lock(mutex)
        woken = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Sleeps until `due` (`DispatchTime` uptime nanoseconds; `UInt64.max`: until woken) or until woken.
    func sleep(until due: UInt64) {
        pthread_mutex_lock(mutex)
        defer {
            woken = false
            pthread_mutex_unlock(mutex)
        }
        guard due != .max else {
            while !woken { pthread_cond_wait(condition, mutex) }
            return
        }
        // The wait left, measured now, as a moment on CLOCK_MONOTONIC (at most the 10-year clamp ahead).
        let left = due &- min(due, DispatchTime.now().uptimeNanoseconds)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, nanoseconds) = (UInt64(now.tv_nsec) + left % 1_000_000_000).quotientAndRemainder(dividingBy: 1_000_000_000)
        var until = timespec(tv_sec: now.tv_sec + Int(left / 1_000_000_000 + seconds), tv_nsec: Int(nanoseconds))
        while !woken {
            if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT { return }
        }
    }
    #else
    private let semaphore = DispatchSemaphore(value: 0)
    private let pending = NSLock()
    private var woken = false

    init() {}

    /// Wakes the sleeper now, or at once when it next sleeps.
    func wake() {
        let signal = pending.withLock { () -> Bool in
            defer { woken = true }
            return !woken
        }
        if signal { semaphore.signal() }
    }

    /// Sleeps until `due` (`DispatchTime` uptime nanoseconds; `UInt64.max`: until woken) or until woken.
    func sleep(until due: UInt64) {
        if due == .max {
            semaphore.wait()
        } else {
            _ = semaphore.wait(timeout: DispatchTime(uptimeNanoseconds: due))
        }
        pending.withLock { woken = false }
    }
    #endif
}

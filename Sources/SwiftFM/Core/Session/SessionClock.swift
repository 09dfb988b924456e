import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One reading of the two clocks a session is judged on.
///
/// FileMaker closes a session 15 minutes after its last use on the server's clock. The client's best estimate of that
/// idle time is ``elapsed``: a clock that keeps counting while the machine is suspended (the server kept running) and
/// that no wall-clock step moves. ``wall`` is what the token store holds (an expiry shared with other processes and
/// later launches, which only a wall clock can carry).
struct SessionTime: Sendable, Equatable {
    /// The wall clock (the injected `now`).
    var wall: Date
    /// Seconds on the elapsed clock, from an arbitrary origin: only differences mean anything.
    var elapsed: TimeInterval

    init(wall: Date, elapsed: TimeInterval) {
        self.wall = wall
        self.elapsed = elapsed
    }

    /// A wall reading alone (an injected clock without an elapsed one): the elapsed clock follows it, so a test that
    /// moves the wall clock moves both.
    init(wall: Date) {
        self.init(wall: wall, elapsed: SessionClock.following(wall))
    }

    /// The moment on the elapsed clock when a session whose wall-clock expiry is `expiry` ends: as much later than now as
    /// the expiry is (`+∞` for `.distantFuture`, a pinned session), but never more than a session lifetime (a store's
    /// expiry further ahead is another clock's, or this one's before it went back).
    func deadline(for expiry: Date, lifetime: TimeInterval) -> TimeInterval {
        if expiry == .distantFuture { return .infinity }
        // The offset between the clocks first: 0 exactly when the elapsed clock follows the wall clock, so the deadline is
        // then the expiry's own reading (no rounding moves it a hair from the wall clock's moment).
        let offset = elapsed - SessionClock.following(wall)
        return min(elapsed + lifetime, offset + SessionClock.following(expiry))
    }
}

/// Where a session stage reads its clocks: the wall clock (`now`, injectable) and the elapsed clock.
///
/// By default the elapsed clock is the system's: `CLOCK_BOOTTIME` on Linux, `CLOCK_MONOTONIC` on Darwin (which, there,
/// keeps counting while the machine sleeps, as Apple's `clock_gettime(3)` says). `DispatchTime` does not count a
/// suspend on Linux, so it is not used. With an injected wall clock and no elapsed one, the elapsed clock follows the
/// wall clock (the tests' clock drives expiry as it always did). One reading is one closure call per clock: a
/// `clock_gettime` (vDSO), no lock, no allocation.
struct SessionClock: Sendable {
    /// The wall clock.
    let wall: @Sendable () -> Date
    /// The elapsed clock, or `nil` when it follows ``wall``.
    private let elapsedClock: (@Sendable () -> TimeInterval)?

    /// A clock pair: `elapsed` `nil` makes the elapsed clock follow `wall`.
    init(wall: @escaping @Sendable () -> Date, elapsed: (@Sendable () -> TimeInterval)?) {
        self.wall = wall
        self.elapsedClock = elapsed
    }

    /// The system's clocks: `Date()` and ``systemElapsed()``.
    static var system: SessionClock { SessionClock(wall: { Date() }, elapsed: { SessionClock.systemElapsed() }) }

    /// The clocks of a ``DataAPI`` given `now` (or not): an injected wall clock alone drives both, none is the system's.
    static func of(_ now: (@Sendable () -> Date)?) -> SessionClock {
        guard let now else { return .system }
        return SessionClock(wall: now, elapsed: nil)
    }

    /// Both clocks, now.
    var now: SessionTime {
        let wall = wall()
        return SessionTime(wall: wall, elapsed: elapsedClock?() ?? Self.following(wall))
    }

    /// The elapsed clock alone, now.
    var elapsed: TimeInterval {
        elapsedClock?() ?? Self.following(wall())
    }

    /// The elapsed reading of a clock that follows the wall clock.
    static func following(_ wall: Date) -> TimeInterval {
        wall.timeIntervalSinceReferenceDate
    }

    /// The system's elapsed clock, in seconds: counts while the machine is suspended, never steps.
    static func systemElapsed() -> TimeInterval {
        var time = timespec()
        #if canImport(Darwin)
        // Darwin's CLOCK_MONOTONIC keeps counting while the machine sleeps (CLOCK_UPTIME_RAW is the one that stops).
        guard clock_gettime(CLOCK_MONOTONIC, &time) == 0 else { return uptimeFallback }
        #else
        // CLOCK_BOOTTIME: CLOCK_MONOTONIC plus the time suspended.
        guard clock_gettime(CLOCK_BOOTTIME, &time) == 0 else { return uptimeFallback }
        #endif
        return TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1_000_000_000
    }

    /// A monotonic clock that may not count a suspend, should the one above be refused (a kernel without it).
    private static var uptimeFallback: TimeInterval {
        TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
    }
}

import Foundation

/// A one-shot timer on a global queue, and the package's one reading of a deadline: the clamp of a number
/// of seconds to something a `DispatchTime` can hold, and the seconds left until a `DispatchTime`.
final class Deadline: @unchecked Sendable {
    // @unchecked: a dispatch source is thread-safe; it is not `Sendable`-annotated.
    private let timer: DispatchSourceTimer

    private init(timer: DispatchSourceTimer) { self.timer = timer }

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

    /// Calls `fire` once after `seconds` (a non-finite or huge value never fires), unless cancelled.
    static func after(seconds: TimeInterval, fire: @escaping @Sendable () -> Void) -> Deadline {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: fromNow(seconds))
        timer.setEventHandler {
            timer.cancel()
            fire()
        }
        timer.resume()
        return Deadline(timer: timer)
    }

    /// Stops the timer; `fire` will not run (unless it is running already).
    func cancel() { timer.cancel() }
}

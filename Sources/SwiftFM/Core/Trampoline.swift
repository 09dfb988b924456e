import Foundation

/// Keeps chains of hand-overs on one thread from growing the stack without bound.
///
/// A session given back goes to the next waiting call, whose request a transport may answer at once, on the
/// same thread (an in-memory ``FMTransport``); that call then gives the session back to the next one, and so
/// on. Called directly, each hand-over runs inside the previous one: one more level of stack per waiting
/// call, a crash with thousands waiting. Through ``run(_:)`` a hand-over still runs at once, inside the one
/// that asked for it, up to ``maximumDepth`` levels; deeper, it runs right after the outermost one returns,
/// in order.
enum Trampoline {
    /// Hand-overs nested deeper than this on one thread wait for the outermost one. Eight levels of a
    /// hand-over (the engine's frames, a synchronous transport's answer) take about 215 KB of stack in a debug
    /// build, well inside the 512 KiB of a secondary thread (sixteen took 429 KB).
    static let maximumDepth = 8

    /// The hand-overs running on one thread, and those waiting for the outermost one.
    private final class Frame {
        var depth = 0
        var pending = WaitQueue()
    }

    /// The frame of this thread, while a hand-over runs on it.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `work` now, or, nested too deep, right after the outermost hand-over of this thread returns.
    static func run(_ work: @escaping @Sendable () -> Void) {
        if let running = pthread_getspecific(key) {
            let frame = Unmanaged<Frame>.fromOpaque(running).takeUnretainedValue()
            guard frame.depth < maximumDepth else {
                frame.pending.append(frame.pending.nextPlace(), work)
                return
            }
            frame.depth += 1
            work()
            frame.depth -= 1
            return
        }
        let frame = Frame()
        frame.depth = 1
        pthread_setspecific(key, Unmanaged.passUnretained(frame).toOpaque())
        defer { pthread_setspecific(key, nil) }
        work()
        while let next = frame.pending.popFirst() { next() }
    }
}

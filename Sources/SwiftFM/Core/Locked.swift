import Foundation

/// A value guarded by a lock. Closures passed to ``withLock(_:)`` must be short and must not call out
/// (no completions, no transport, no logging): everything the engine calls happens after the lock is released.
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// A copy of the current value.
    var value: State { withLock { $0 } }
}

/// An exactly-once latch: the first ``claim()`` wins, every later one loses. The one place the package
/// decides "only the first of these counts" (a lease given back, a hold released, a provider's first answer).
final class Once: Sendable {
    private let done = Locked(false)

    init() {}

    /// `true` for the first caller only; `false` for every caller after it, from any thread.
    func claim() -> Bool {
        done.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
    }

    /// `true` once some caller has claimed it.
    var isClaimed: Bool { done.value }
}

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

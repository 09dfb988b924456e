import Foundation

/// A value guarded by a recursive lock (recursive so that script closures run while a request is
/// being handled may call back into the ``Emulator``).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSRecursiveLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

import Foundation

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

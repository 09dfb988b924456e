import Foundation
@testable import SwiftFM

/// What a call waiting in a ``SessionPool`` is given: a lease or a failure (the pool tests' stand-in for a call).
final class PoolTaker: @unchecked Sendable {
    private let lock = NSLock()
    private var _lease: SessionLease?
    private var _error: FMError?
    var lease: SessionLease? { lock.withLock { _lease } }
    var error: FMError? { lock.withLock { _error } }
    func deliver(_ result: Result<SessionLease, FMError>) {
        lock.withLock {
            switch result {
            case .success(let lease): _lease = lease
            case .failure(let error): _error = error
            }
        }
    }
}

extension SessionPool.Plan {
    /// Hands the plan's grants and failures to the waiting calls (what the session stage does).
    func deliverToWaiters() {
        for (waiter, lease) in grants { waiter.deliver(.success(lease)) }
        for (waiter, error) in failures { waiter.deliver(.failure(error)) }
    }
}

/// The tests' view of a pool (the pool itself keeps no accessor for them).
extension SessionPool {
    /// How many calls hold a lease on each slot.
    var busyCounts: [Int] { state.withLock { $0.slots.map(\.busy) } }

    /// Calls waiting for a session.
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Sessions open by the local clock, slots leased, logins in flight, calls waiting.
    func occupancy(now: Date) -> (open: Int, leased: Int, loggingIn: Int, waiting: Int) {
        state.withLock { state in
            (state.slots.filter { $0.machine.validToken(now: now) != nil }.count,
             state.slots.filter { $0.busy > 0 }.count,
             state.slots.filter { $0.machine.isLoggingIn }.count,
             state.waiters.count)
        }
    }
}

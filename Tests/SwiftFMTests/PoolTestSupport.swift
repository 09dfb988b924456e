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

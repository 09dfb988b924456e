import Foundation

// TEMPORARY STAND-IN owned by stream core: replaced by core's Async/AsyncBridge.swift at merge.
extension DataAPI {
    func bridge<Value>(_ endpoint: Endpoint<Value>) async throws -> Value {
        let box = UncheckedBox(endpoint)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedBox<Value>, any Error>) in
            perform(box.value) { result in
                switch result {
                case .success(let value): continuation.resume(returning: UncheckedBox(value))
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        }.value
    }
}

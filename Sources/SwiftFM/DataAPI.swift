import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which Data API version a ``DataAPI`` speaks (the `{version}` of `/fmi/data/{version}`).
public enum FMAPIVersion: String, Sendable, CaseIterable {
    /// FileMaker Server 17 and later.
    case v1
    /// FileMaker Server 19 and later.
    case v2
    /// The newest version the server supports.
    case vLatest
}

/// A cancel handle returned by every callback method.
///
/// Cancelling is idempotent and thread-safe; the completion is still called exactly once, with
/// ``FMError/ClientCode/cancelled`` unless the answer had already been delivered.
public final class FMRequest: Sendable {
    // PLACEHOLDER: implemented by the engine work.
    init() {}
    /// Cancels the request.
    public func cancel() {}
}

/// The FileMaker Data API service class (placeholder shell: the engine work fills it in).
public final class DataAPI: Sendable {
    /// The queue every completion runs on.
    public let callbackQueue: DispatchQueue

    /// Creates a service.
    public init(callbackQueue: DispatchQueue? = nil) {
        self.callbackQueue = callbackQueue ?? DispatchQueue(label: "SwiftFM.callbacks")
    }

    /// Sends `endpoint` and calls `completion` exactly once, on ``callbackQueue``.
    @discardableResult
    func perform<Value>(_ endpoint: Endpoint<Value>, completion: @escaping (Result<Value, FMError>) -> Void) -> FMRequest {
        let box = UncheckedBox(completion)
        callbackQueue.async { box.value(.failure(.invalidConfiguration("engine not implemented yet"))) }
        return FMRequest()
    }
}

/// Carries a non-`Sendable` value (a caller's completion, a raw JSON dictionary) across queues.
///
/// Completions of the legacy and callback surfaces are deliberately not `@Sendable` (old callers capture
/// view controllers and daemon objects); the library guarantees it calls each one exactly once, on one queue.
struct UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

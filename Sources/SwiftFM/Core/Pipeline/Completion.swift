import Foundation

/// A cancel handle returned by every callback method.
///
/// Cancelling is idempotent and thread-safe; the completion is still called exactly once, with
/// ``FMError/ClientCode/cancelled`` (`"-1005"`) unless the answer had already been delivered.
public final class FMRequest: Sendable, CustomStringConvertible {
    private struct State {
        var cancelled = false
        var handler: (@Sendable () -> Void)?
    }
    private let state = Locked(State())

    init() {}

    /// Cancels the request: the transport task is cancelled and the completion runs with `"-1005"`,
    /// unless it already ran (or was already scheduled). Calling it again does nothing.
    public func cancel() {
        let handler: (@Sendable () -> Void)? = state.withLock { state in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.handler = nil }
            return state.handler
        }
        handler?()
    }

    /// `true` once ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// `"FMRequest(cancelled: …)"`.
    public var description: String { "FMRequest(cancelled: \(isCancelled))" }

    /// Sets what ``cancel()`` does (replacing the previous action). When the handle is already cancelled the
    /// action runs at once. Composite operations (a download following a redirect) set one action per step.
    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.handler = handler
            return false
        }
        if runNow { handler() }
    }
}

/// Work in flight that a call can stop (a transport task attached to a ``OneShot``).
protocol CancellableTask: Sendable {
    func cancel()
}

/// How one call hands its result over: on the callback queue, or inline (the async bridge). It keeps no
/// state: ``CallState`` decides when it runs, once.
///
/// The result is handed over, not shared: the completion receives the only reference SwiftFM held (the
/// parameter is `consuming` all the way from the engine), so a found set the caller drops is freed by the
/// caller, at that moment, never later on one of SwiftFM's threads (where freeing 10,000 records would hold
/// up the transport's other transfers).
struct Delivery<Value>: @unchecked Sendable {
    // @unchecked: the completion is not `Sendable` (legacy callers capture anything); it runs once, on `queue`.
    /// Where the completion runs; `nil`: at once, on the thread that finishes the call (the async bridge,
    /// whose continuation hops to its task's executor anyway).
    let queue: DispatchQueue?
    /// Told the outcome's error (`nil` on success) as it is delivered (metrics, the span), before the queue hop.
    let observe: (@Sendable (FMError?) -> Void)?
    let completion: (consuming Result<Value, FMError>) -> Void

    /// Hands `result` to the completion, on the queue.
    ///
    /// While the completion runs, ``FMError/current`` is the result's error (`nil` on success), so the
    /// `(value?, code)` completions built on top of it, legacy ones included, can read the whole error.
    func deliver(_ result: consuming Result<Value, FMError>) {
        let failure = result.failure
        observe?(failure)
        guard let queue else {
            var pending = Optional(result)
            FMError.withCurrent(failure) { completion(pending.take()!) }
            return
        }
        let handoff = Handoff(completion, result, failure)
        queue.async { handoff.run() }
    }

    /// A result on its way to the callback queue: taken out as the completion runs, so the block that carried
    /// it holds nothing once the completion has it.
    private final class Handoff: @unchecked Sendable {
        // @unchecked: written once here, taken once on the queue.
        let completion: (consuming Result<Value, FMError>) -> Void
        var result: Result<Value, FMError>?
        let failure: FMError?

        init(_ completion: @escaping (consuming Result<Value, FMError>) -> Void, _ result: consuming Result<Value, FMError>,
             _ failure: FMError?) {
            self.completion = completion
            self.result = Optional(result)
            self.failure = failure
        }

        func run() {
            guard result != nil else { return }
            FMError.withCurrent(failure) { completion(result.take()!) }
        }
    }
}

/// A call outside the pipeline (a login asked for directly, a shutdown, an answer known at once): its
/// result, a cancel, and the transport task to stop, through a ``CallState`` that never leases a session
/// nor backs off. The completion runs exactly once, on the callback queue.
final class OneShot<Value>: @unchecked Sendable {
    // @unchecked: the state is behind its lock; the rest is immutable.
    private typealias State = CallState<Value, Never, any CancellableTask, Never>
    private let state = Locked(State())
    private let delivery: Delivery<Value>
    let handle: FMRequest

    init(queue: DispatchQueue?, handle: FMRequest = FMRequest(), observe: (@Sendable (FMError?) -> Void)? = nil,
         completion: @escaping (consuming Result<Value, FMError>) -> Void) {
        delivery = Delivery(queue: queue, observe: observe, completion: completion)
        self.handle = handle
        handle.onCancel { [weak self] in self?.cancel() }
    }

    /// Delivers `result` unless something was delivered already. Returns whether this call delivered.
    @discardableResult
    func finish(_ result: consuming Result<Value, FMError>) -> Bool {
        run(.answered(result))
    }

    /// Records the task in flight; cancels it at once when the call already finished.
    func attach(_ task: any CancellableTask) {
        run(.sent(task, attempt: 0))
    }

    /// Delivers `error` (if nothing was delivered yet), then stops the transport task.
    func stop(with error: FMError) {
        run(.shutdown(error))
    }

    /// Cancel: deliver -1005 (if nothing was delivered yet), then stop the transport task.
    func cancel() {
        run(.cancelled)
    }

    /// Carries out what the state decided for `event`; `true` when it delivered.
    ///
    /// As ``EngineCall`` does, the result is delivered once the event and the actions are gone (the
    /// completion gets the only reference), and the stops that followed the delivery run after it.
    @discardableResult
    private func run(_ event: consuming State.Event) -> Bool {
        var delivering: Result<Value, FMError>?
        var stops: [any CancellableTask] = []
        do {
            for action in decide(event) {
                switch action {
                case .deliver(let result):
                    delivering = result
                case .stop(let task, _):
                    if delivering == nil { task.cancel() } else { stops.append(task) }
                case .startAttempt, .send, .armBackoff, .cancelTimer, .withdrawFromPool, .releaseLease, .unregister:
                    break   // a OneShot never leases, backs off nor registers
                }
            }
        }
        guard let result = delivering.take() else { return false }
        delivery.deliver(consume result)
        for task in stops { task.cancel() }
        return true
    }

    /// What the state decides for `event` (which ends here).
    private func decide(_ event: consuming State.Event) -> [State.Action] {
        state.withLock { $0.handle(event) }
    }
}

/// Carries a non-`Sendable` value (a caller's completion, a raw JSON dictionary) across queues.
///
/// Completions of the legacy and callback surfaces are `sending`, deliberately not `@Sendable` (old callers capture
/// view controllers and daemon objects); the library guarantees it calls each one exactly once, on one queue.
struct UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

// MARK: - The `(value?, code)` pair, and the whole error behind its code
//
// The whole error of a failed call, for completions that only get `(value?, code)`.
//
// Why a value scoped to the running completion, and not new completion shapes: every callback method
// (and all 49 legacy overloads) keeps its `(value?, code)` signature, so no call site and no overload
// resolution changes, and a legacy completion called from inside a core completion sees the same error.
// The value is bound only while the completion runs, on the thread that runs it, so concurrent calls on
// other queues never see each other's errors (a shared "last error" property would race).

extension FMError {
    /// The error of the callback completion now running on this thread: its FileMaker or client code,
    /// message, HTTP status and underlying error. `nil` when the call succeeded (code `"0"`) and outside
    /// a completion.
    ///
    /// Read it synchronously inside a `(value?, code)` completion, of the callback methods and of the
    /// legacy `DataAPI.swift` and SwiftFM 2.x surfaces alike:
    ///
    /// ```swift
    /// api.getRecords(layout: "Artists") { found, code in
    ///     guard code == "0", let found else {
    ///         let error = FMError.current   // code, message, httpStatus, underlying
    ///         return log("getRecords failed: \(error?.description ?? code)")
    ///     }
    ///     use(found)
    /// }
    /// ```
    ///
    /// It is bound for the duration of the completion only: copy it before hopping to another queue.
    /// The async methods throw the same ``FMError``; there, use the thrown error.
    public static var current: FMError? { CompletionContext.$error.get() }

    /// Runs `body` with ``current`` bound to `error` (`nil` for a success) on this thread.
    static func withCurrent<R>(_ error: FMError?, _ body: () throws -> R) rethrows -> R {
        // Nothing to unbind and nothing to bind: the common success path costs one thread-local read.
        if error == nil, CompletionContext.$error.get() == nil { return try body() }
        return try CompletionContext.$error.withValue(error, operation: body)
    }
}

/// Where ``FMError/current`` lives: a task-local, which outside a task is bound on the current thread.
enum CompletionContext {
    @TaskLocal static var error: FMError?
}

extension Result where Failure == FMError {
    /// The error of a failure, `nil` on success.
    var failure: FMError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The value on success, `nil` on failure.
    var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }

    /// `"0"` on success, else the FileMaker or client code of the error.
    var code: String {
        switch self {
        case .success: return "0"
        case .failure(let error): return error.code
        }
    }

    /// The `(value?, code)` pair the callback surfaces complete with.
    var legacyPair: (Success?, String) { (value, code) }
}

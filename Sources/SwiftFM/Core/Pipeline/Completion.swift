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

/// Work in flight that a call can stop: its exchange (``Flight``).
protocol CancellableTask: Sendable {
    func cancel()
}

/// The delivery side of one call: calls the caller's completion exactly once, on the callback queue, and
/// remembers the transport task so a cancel can stop it.
final class OneShot<Value>: @unchecked Sendable {
    // @unchecked: every mutable field is behind `state`'s lock; the completion is only called once, on `queue`.
    private struct State {
        var completion: ((Result<Value, FMError>) -> Void)?
        var task: CancellableTask?
        var cleanup: (@Sendable () -> Void)?
    }
    private let state: Locked<State>
    /// Where the completion runs; `nil`: at once, on the thread that finishes the call (the async bridge,
    /// whose continuation hops to its task's executor anyway).
    private let queue: DispatchQueue?
    let handle: FMRequest
    /// Told the outcome's code as it is delivered (metrics), before the queue hop.
    private let observe: (@Sendable (String) -> Void)?

    init(queue: DispatchQueue?, handle: FMRequest = FMRequest(), observe: (@Sendable (String) -> Void)? = nil,
         completion: @escaping (Result<Value, FMError>) -> Void) {
        self.queue = queue
        self.observe = observe
        self.handle = handle
        self.state = Locked(State(completion: completion))
        handle.onCancel { [weak self] in self?.cancel() }
    }

    /// `true` once the result was handed to the queue (or the call was cancelled).
    var isFinished: Bool { state.withLock { $0.completion == nil } }

    /// Delivers `result` unless something was delivered already. Returns whether this call delivered.
    @discardableResult
    func finish(_ result: Result<Value, FMError>) -> Bool {
        deliver(result, taking: take().completion)
    }

    /// Records the task in flight; cancels it at once when the call already finished.
    func attach(_ task: CancellableTask) {
        let finished = state.withLock { state -> Bool in
            if state.completion == nil { return true }
            state.task = task
            return false
        }
        if finished { task.cancel() }
    }

    /// Runs `cleanup` once the call finished (at once when it has): timers, leases, the shutdown registry.
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state -> Bool in
            if state.completion == nil { return true }
            state.cleanup = cleanup
            return false
        }
        if finished { cleanup() }
    }

    /// Delivers `error` (if nothing was delivered yet) and stops the transport task: a deadline, a shutdown.
    func stop(with error: FMError) {
        let (completion, task) = take()
        deliver(.failure(error), taking: completion)
        task?.cancel()
    }

    /// Cancel: deliver -1005 (if nothing was delivered yet), then stop the transport task.
    ///
    /// The completion and the task are taken in one critical section: a task attached after it sees the
    /// call finished and cancels itself in ``attach(_:)``, so none is left running.
    func cancel() {
        let (completion, task) = take()
        deliver(.failure(.cancelled), taking: completion)
        task?.cancel()
    }

    /// Takes the completion and the task out of the state, atomically.
    private func take() -> (completion: ((Result<Value, FMError>) -> Void)?, task: CancellableTask?) {
        let (completion, task, cleanup) = state.withLock { state in
            defer { state.completion = nil; state.task = nil; state.cleanup = nil }
            return (state.completion, state.task, state.completion == nil ? nil : state.cleanup)
        }
        cleanup?()
        return (completion, task)
    }

    /// Hands `result` to `completion` on the queue; `false` when there was no completion left.
    ///
    /// While the completion runs, ``FMError/current`` is the result's error (`nil` on success), so the
    /// `(value?, code)` completions built on top of it, legacy ones included, can read the whole error.
    @discardableResult
    private func deliver(_ result: Result<Value, FMError>, taking completion: ((Result<Value, FMError>) -> Void)?) -> Bool {
        guard let completion else { return false }
        if let observe {
            switch result {
            case .success: observe("0")
            case .failure(let error): observe(error.code)
            }
        }
        guard let queue else {
            FMError.withCurrent(result.failure) { completion(result) }
            return true
        }
        let box = UncheckedBox((completion, result))
        queue.async { FMError.withCurrent(box.value.1.failure) { box.value.0(box.value.1) } }
        return true
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

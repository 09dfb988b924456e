import Foundation

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
}

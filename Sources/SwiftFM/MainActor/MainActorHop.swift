import Foundation

/// What a main-actor twin hands from SwiftFM's queue to the main actor: the values a completion (or a paging
/// walk's `page`) is called with.
///
/// The twins (`Sources/SwiftFM/MainActor/*+MainActor.swift`, written by `Scripts/generate-mainactor-twins.py`)
/// take `@escaping @MainActor` closures, the overload Swift picks for a closure written `{ @MainActor … in }` or
/// a `@MainActor` function value. Each forwards to the `sending` original and calls the caller's closure here.
/// `@unchecked`: the values are the ones the pipeline delivers once and keeps no reference to (the `sending`
/// original hands them over the same way); after the hop only the main actor touches them.
struct MainActorHop<Values>: @unchecked Sendable {
    private let values: Values

    init(_ values: Values) { self.values = values }

    /// Calls `body` with the values on the main actor, later (the main queue, in the order of the calls).
    func deliver(_ body: @escaping @MainActor (Values) -> Void) {
        DispatchQueue.main.async { MainActor.assumeIsolated { body(self.values) } }
    }

    /// Calls `body` with the values on the main actor and returns its answer (a walk's "go on?"): at once when
    /// already on the main thread (a ``DataAPI`` whose `callbackQueue` is `.main`), else waiting for the main queue.
    func call(_ body: @MainActor (Values) -> Bool) -> Bool {
        if Thread.isMainThread { return MainActor.assumeIsolated { body(values) } }
        return DispatchQueue.main.sync { MainActor.assumeIsolated { body(values) } }
    }
}

import Foundation

/// What a main-actor twin hands from SwiftFM's queue to the main actor: the values a completion (or a paging
/// walk's `page`) is called with.
///
/// The twins (`Sources/SwiftFM/MainActor/*+MainActor.swift`, written by `Scripts/generate-mainactor-twins.py`)
/// take `@escaping @MainActor` closures, the overload Swift picks for a closure written `{ @MainActor … in }` or
/// a `@MainActor` function value. Each forwards to the `sending` original and calls the caller's closure here.
/// `@unchecked`: the values are the ones the pipeline delivers once and keeps no reference to (the `sending`
/// original hands them over the same way); after the hop only the main actor touches them.
///
/// ``FMError/current`` goes along: it is read where the hop is made (inside the original completion, where it is
/// bound) and bound again around the caller's closure on the main actor.
struct MainActorHop<Values>: @unchecked Sendable {
    private let values: Values
    private let error: FMError?

    init(_ values: Values) {
        self.values = values
        error = FMError.current
    }

    /// Calls `body` with the values on the main actor, later (the main queue, in the order of the calls).
    func deliver(_ body: @escaping @MainActor (Values) -> Void) {
        DispatchQueue.main.async { MainActor.assumeIsolated { FMError.withCurrent(self.error) { body(self.values) } } }
    }

    /// Calls `body` with the values on the main actor and returns its answer (a walk's "go on?"): at once when
    /// already on the main queue or the main thread (a ``DataAPI`` whose `callbackQueue` is `.main`), else
    /// waiting for the main queue.
    func call(_ body: @MainActor (Values) -> Bool) -> Bool {
        // The main queue is not always served by the main thread: on Linux, once `dispatchMain()` runs (an async
        // entry point), a worker thread drains it, and a `DispatchQueue.main.sync` from there traps.
        if Thread.isMainThread || MainQueueCheck.isCurrent {
            return MainActor.assumeIsolated { FMError.withCurrent(error) { body(values) } }
        }
        return DispatchQueue.main.sync { MainActor.assumeIsolated { FMError.withCurrent(error) { body(values) } } }
    }
}

/// Whether code runs on the main queue, whichever thread serves it: the queue carries a mark of SwiftFM's own.
enum MainQueueCheck {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()

    /// `true` on the main queue (or a queue that targets it).
    static var isCurrent: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: key) == true
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// A transport task attached while `cancel()` runs is cancelled too.
@Suite("Cancel versus attach")
struct CancelAttachRaceTests {
    /// A task that only records whether it was cancelled.
    final class FlagTask: CancellableTask, @unchecked Sendable {
        private let lock = NSLock()
        private var cancelled = false
        var isCancelled: Bool { lock.withLock { cancelled } }
        func cancel() { lock.withLock { cancelled = true } }
    }

    /// `cancel()` on one thread and `attach(_:)` (a request going out after a login or for a 952 replay) on
    /// another: whichever runs first, the attached task must end up cancelled, since the caller was told
    /// `-1005`. Taking the task and delivering happen in one critical section: a task attached in between
    /// would otherwise be dropped and keep running (a write the caller believes cancelled reaching the
    /// server).
    @Test func aTaskAttachedDuringCancelIsCancelled() {
        let queue = DispatchQueue(label: "cancel.attach.callbacks")
        let iterations = 200_000
        let leaked = Locked(0)
        let delivered = Locked(0)
        for _ in 0..<iterations {
            let delivery = OneShot<Int>(queue: queue) { result in
                #expect(result.testFailureCode == FMError.ClientCode.cancelled)
                delivered.withLock { $0 += 1 }
            }
            let task = FlagTask()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 { delivery.handle.cancel() } else { delivery.attach(task) }
            }
            if !task.isCancelled { leaked.withLock { $0 += 1 } }
        }
        queue.sync {}
        #expect(leaked.value == 0, "attached tasks left running after cancel")
        #expect(delivered.value == iterations)
    }
}

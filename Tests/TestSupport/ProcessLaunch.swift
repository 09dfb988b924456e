import Foundation

/// One child process started at a time across the whole test run: corelibs' `Process.run()` is not safe to call
/// from two threads at once (it crashed in `memcpy` inside `run()` while parallel tests each started a child).
private let launching = NSLock()

extension Process {
    /// `run()`, with every other test's launch held back until this one has started.
    public func runOneAtATime() throws {
        launching.lock()
        defer { launching.unlock() }
        try run()
    }
}

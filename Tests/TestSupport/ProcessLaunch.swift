import Foundation

/// One child process started at a time across the whole test run: corelibs' `Process.run()` is not safe to call
/// from two threads at once (it crashed in `memcpy` inside `run()` while parallel tests each started a child).
///
/// A crash of the same shape remains possible, rarely, with one launch at a time: on Linux `run()` reads
/// `/proc/self/fd` to find the highest open descriptor and copies each `dirent` whole, which can read past the end
/// of glibc's `readdir` buffer once the entries fill it (about 1,365 descriptors; swift-corelibs-foundation #5472,
/// fixed after the toolchain this project builds with). The suite holds up to about 2,400 descriptors at its peak.
private let launching = NSLock()

extension Process {
    /// `run()`, with every other test's launch held back until this one has started.
    public func runOneAtATime() throws {
        launching.lock()
        defer { launching.unlock() }
        try run()
    }
}

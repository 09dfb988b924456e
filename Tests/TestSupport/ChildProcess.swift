import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process for the tests (an `fm-emulator`, `fm-codegen`, `swiftc`, a Python relay), started with
/// `posix_spawn` directly instead of Foundation's `Process`.
///
/// On Linux, corelibs' `Process.run()` reads `/proc/self/fd` to find the highest open descriptor and copies each
/// `dirent` whole, reading past the end of glibc's `readdir` buffer; once enough descriptors are open (this suite
/// holds up to about 2,400 at its peak) that read can cross into an unmapped page and the whole test process dies
/// with SIGSEGV (swift-corelibs-foundation #5472, fixed after the toolchain this project builds with). Serialising
/// the launches does not help: the over-read needs only the descriptor table's shape. Here the child closes every
/// descriptor above 2 itself (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34 and later), so nothing reads
/// `/proc/self/fd`; where that action is missing, the parent's pipe ends are close-on-exec and the other
/// descriptors the child inherits stay open in it until it ends.
public final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// A pipe whose other end this object holds.
        case pipe
        /// `/dev/null`.
        case discard
        /// This process's own stream (standard output and error only).
        case inherit
        /// Standard error only: the same pipe as standard output.
        case sameAsOutput
    }

    /// Why a child could not be started.
    public struct LaunchFailed: Error, CustomStringConvertible {
        public let description: String
    }

    /// The child's process id.
    public let processIdentifier: pid_t
    /// The write end of the child's standard input, when it was asked for.
    public let standardInput: FileHandle?
    /// The read end of the child's standard output, when it is a pipe.
    public let standardOutput: FileHandle?
    /// The read end of the child's standard error, when it is a pipe of its own.
    public let standardError: FileHandle?

    private let lock = NSLock()
    private var status: Int32?
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `executable` (an absolute path) with `arguments` and this process's environment.
    public init(_ executable: URL, _ arguments: [String], input: Bool = false,
                output: Stream = .pipe, error: Stream = .pipe) throws {
        Self.launching.lock()
        defer { Self.launching.unlock() }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { childEnds.forEach { _ = close($0) } }
        func pipePair() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else {
                parentEnds.forEach { _ = close($0) }
                throw LaunchFailed(description: "pipe: \(String(cString: strerror(errno)))")
            }
            // Close-on-exec, so that no other child inherits this one's pipes (launches are one at a time).
            ends.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) }
            return (ends[0], ends[1])
        }
        var inputHandle: FileHandle?
        if input {
            let ends = try pipePair()
            parentEnds.append(ends.write)
            childEnds.append(ends.read)
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
            inputHandle = FileHandle(fileDescriptor: ends.write, closeOnDealloc: true)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        var outputHandle: FileHandle?
        var outputWriteEnd: Int32 = -1
        switch output {
        case .pipe, .sameAsOutput:
            let ends = try pipePair()
            parentEnds.append(ends.read)
            childEnds.append(ends.write)
            outputWriteEnd = ends.write
            posix_spawn_file_actions_adddup2(&actions, ends.write, 1)
            outputHandle = FileHandle(fileDescriptor: ends.read, closeOnDealloc: true)
        case .discard:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .inherit:
            break
        }
        var errorHandle: FileHandle?
        switch error {
        case .pipe:
            let ends = try pipePair()
            parentEnds.append(ends.read)
            childEnds.append(ends.write)
            posix_spawn_file_actions_adddup2(&actions, ends.write, 2)
            errorHandle = FileHandle(fileDescriptor: ends.read, closeOnDealloc: true)
        case .sameAsOutput where outputWriteEnd >= 0:
            posix_spawn_file_actions_adddup2(&actions, outputWriteEnd, 2)
        case .sameAsOutput, .discard:
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .inherit:
            break
        }
        _ = Self.closeFrom3?(&actions, 3)

        // The calling thread's blocked signals and this process's ignored ones (SIGPIPE) would be the child's too:
        // a Dispatch thread blocks SIGTERM, so the child would not end on `terminate()`. It starts with neither.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = (argv + [nil]).withUnsafeBufferPointer { arguments in
            posix_spawn(&pid, executable.path, &actions, &attributes,
                        arguments.baseAddress!, environ)
        }
        guard result == 0 else {
            parentEnds.forEach { _ = close($0) }
            throw LaunchFailed(description: "posix_spawn \(executable.path): \(String(cString: strerror(result)))")
        }
        let child = pid
        processIdentifier = child
        standardInput = inputHandle
        standardOutput = outputHandle
        standardError = errorHandle
        // One thread waits for the child from the start, so that it is reaped (never a zombie) even if nobody asks.
        Thread.detachNewThread { [self] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) == -1 && errno == EINTR {}
            let code = raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f   // exit status, or the signal's number
            lock.withLock { status = code }
            exited.signal()
        }
    }

    /// Held while a child's pipes are made and it is started, so that no other child is started in between.
    private static let launching = NSLock()

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run time because the
    /// toolchain's Glibc module does not declare it.
    private static let closeFrom3: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Whether the child has not ended yet.
    public var isRunning: Bool { lock.withLock { status == nil } }

    /// Sends the child SIGTERM, unless it has already ended.
    public func terminate() { signal(SIGTERM) }

    /// Sends the child `number`, unless it has already ended (its id may then belong to another process).
    public func signal(_ number: Int32) {
        lock.withLock {
            if status == nil { _ = kill(processIdentifier, number) }
        }
    }

    /// Waits for the child to end.
    public func waitUntilExit() {
        exited.wait()
        exited.signal()
    }

    /// Waits at most `seconds` for the child to end: whether it did.
    public func waitUntilExit(seconds: Double) -> Bool {
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()
        return true
    }

    /// The child's exit status, or the number of the signal that ended it; waits for it to end.
    public var terminationStatus: Int32 {
        waitUntilExit()
        return lock.withLock { status ?? -1 }
    }
}

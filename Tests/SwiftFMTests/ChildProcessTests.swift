#if os(Linux)
import Foundation
import Testing
import TestSupport
import Glibc

/// The tests' child processes (`ChildProcess`): output and status come back; the child inherits no descriptor of
/// the test process but its three standard streams, however many the test process holds; a terminated child ends.
@Suite("Child processes of the tests")
struct ChildProcessTests {
    private let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("Standard output, standard error and the exit status come back, each from its own stream")
    func outputAndStatus() throws {
        let child = try ChildProcess(shell, ["-c", "echo out; echo err >&2; exit 7"])
        let output = String(decoding: try #require(child.standardOutput).readAllRetryingInterrupts(), as: UTF8.self)
        let error = String(decoding: try #require(child.standardError).readAllRetryingInterrupts(), as: UTF8.self)
        #expect(output == "out\n")
        #expect(error == "err\n")
        #expect(child.terminationStatus == 7)
        #expect(!child.isRunning)
    }

    @Test("Standard error can share standard output's pipe; standard input is a pipe when asked for")
    func sharedOutputAndInput() throws {
        let child = try ChildProcess(shell, ["-c", "read line; echo \"got $line\"; echo err >&2"], input: true, error: .sameAsOutput)
        #expect(child.standardError == nil)
        let input = try #require(child.standardInput)
        input.write(Data("hello\n".utf8))
        input.closeFile()
        let output = String(decoding: try #require(child.standardOutput).readAllRetryingInterrupts(), as: UTF8.self)
        #expect(output == "got hello\nerr\n")
        #expect(child.terminationStatus == 0)
    }

    @Test("With 3,000 descriptors open here, the child starts and holds only its standard streams")
    func noDescriptorIsInherited() throws {
        var extra: [Int32] = []
        defer { extra.forEach { _ = close($0) } }
        for _ in 0..<3_000 {
            let descriptor = open("/dev/null", O_RDONLY)   // not close-on-exec
            try #require(descriptor >= 0, "open: \(errno)")
            extra.append(descriptor)
        }
        // The shell lists its own descriptors; the listing's directory is the only one beyond 0, 1 and 2.
        let child = try ChildProcess(shell, ["-c", "ls /proc/self/fd"])
        let listing = String(decoding: try #require(child.standardOutput).readAllRetryingInterrupts(), as: UTF8.self)
        #expect(child.terminationStatus == 0)
        let descriptors = listing.split(separator: "\n").compactMap { Int($0) }.filter { $0 > 2 }
        #expect(descriptors.count <= 1, "the child inherited \(descriptors.count) descriptors: \(descriptors.prefix(10))…")
    }

    @Test("A terminated child ends, and its status is the signal's number")
    func terminate() throws {
        let child = try ChildProcess(shell, ["-c", "exec sleep 600"], output: .discard, error: .discard)
        #expect(child.isRunning)
        child.terminate()
        #expect(child.waitUntilExit(seconds: 300))
        #expect(child.terminationStatus == SIGTERM)
        child.terminate()   // once ended, nothing is signalled
    }

    @Test("A missing executable is an error, not a child")
    func missingExecutable() {
        #expect(throws: ChildProcess.LaunchFailed.self) {
            try ChildProcess(URL(fileURLWithPath: "/nonexistent/binary"), [])
        }
    }
}
#endif

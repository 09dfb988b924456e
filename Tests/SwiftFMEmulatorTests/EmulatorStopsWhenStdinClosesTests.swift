#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

// `fm-emulator --stop-on-stdin-close` stops (exit 0, a line on stderr) when its standard input reaches end of file:
// a harness in any language that starts it with a pipe on stdin never leaves it running, even when the harness is
// killed (SIGKILL, os._exit, a crashed pytest-xdist worker), because the kernel closes the pipe then; also when its
// stderr is a full pipe that nobody reads.

@Suite("fm-emulator --stop-on-stdin-close stops when its standard input closes",
       .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct EmulatorStopsWhenStdinClosesTests {
    /// The first line of `handle`, or nil when it ends (or 300 s pass) first.
    static func firstLine(of handle: FileHandle) -> String? {
        let result = HTTPOrderLog()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var bytes = Data()
            while !bytes.contains(0x0A) {
                let chunk = handle.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            if let newline = bytes.firstIndex(of: 0x0A) { result.append(String(decoding: bytes[..<newline], as: UTF8.self)) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 300) == .success else { return nil }
        return result.entries.first
    }

    #if os(Linux)
    /// Fills the child's stderr pipe (through /proc, as a harness that never reads it would after enough lines):
    /// every later write to it would block.
    static func fillStandardError(of process: ChildProcess) throws {
        let pipe = open("/proc/\(process.processIdentifier)/fd/2", O_WRONLY | O_NONBLOCK)
        try #require(pipe >= 0, "cannot open the child's stderr: \(errno)")
        defer { close(pipe) }
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        var filled = 0
        while true {
            let written = chunk.withUnsafeBytes { write(pipe, $0.baseAddress, $0.count) }
            if written > 0 { filled += written; continue }
            if written < 0 && errno == EINTR { continue }
            break
        }
        try #require(errno == EAGAIN && filled > 0, "the pipe did not fill (\(filled) bytes, errno \(errno))")
    }
    #endif

    @Test("It serves while stdin is open, and exits 0 once it is closed")
    func stopsOnEndOfFile() async throws {
        let executable = try #require(fmEmulatorExecutable)
        let process = try ChildProcess(executable, ["--port", "0", "--control", "--stop-on-stdin-close"], input: true)
        let stdin = try #require(process.standardInput)
        let stdout = try #require(process.standardOutput)
        let stderr = try #require(process.standardError)
        defer { if process.isRunning { process.signal(SIGKILL) } }

        let line = await onOwnThread { Self.firstLine(of: stdout) }
        let listening = try #require(line, "no listening line; stderr: \(String(decoding: stderr.readAllRetryingInterrupts(), as: UTF8.self))")
        #expect(listening.hasPrefix("listening on http://127.0.0.1:"))
        let base = try #require(URL(string: String(listening.dropFirst("listening on ".count))))
        let session = makeHTTPTestSession()
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(from: base.appendingPathComponent("fmi/data/vLatest/productInfo"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        try stdin.close()
        let ended = await onOwnThread { process.waitUntilExit(seconds: 300) }
        #expect(ended, "still running 300 s after its standard input closed")
        guard ended else { return }
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: stderr.readAllRetryingInterrupts(), as: UTF8.self).contains("standard input closed"))
    }

    #if os(Linux)
    /// A harness that never reads the emulator's stderr (`stderr=subprocess.PIPE` with `--verbose`) fills that pipe;
    /// then every write to it blocks. The close of stdin must stop it all the same (its note on stderr is skipped
    /// when the pipe has no room). The test fills the pipe itself, through /proc, before closing stdin.
    @Test("It stops when stdin closes even while its stderr is a full pipe that nobody reads")
    func stopsWithAFullStderrPipe() throws {
        let executable = try #require(fmEmulatorExecutable)
        let process = try ChildProcess(executable, ["--port", "0", "--stop-on-stdin-close"], input: true)
        let stdin = try #require(process.standardInput)
        let stdout = try #require(process.standardOutput)
        defer { if process.isRunning { process.signal(SIGKILL) } }
        let line = try #require(Self.firstLine(of: stdout), "no listening line")
        #expect(line.hasPrefix("listening on "))

        try Self.fillStandardError(of: process)

        try stdin.close()
        let ended = process.waitUntilExit(seconds: 300)
        #expect(ended, "still running 300 s after its standard input closed, with stderr full")
        guard ended else { return }
        #expect(process.terminationStatus == 0)
    }
    #endif

    @Test("Bytes on stdin are not an end: it serves on until the close")
    func bytesAreIgnored() throws {
        let executable = try #require(fmEmulatorExecutable)
        let process = try ChildProcess(executable, ["--port", "0", "--stop-on-stdin-close"], input: true)
        let stdin = try #require(process.standardInput)
        let stdout = try #require(process.standardOutput)
        defer { if process.isRunning { process.signal(SIGKILL) } }
        let line = try #require(Self.firstLine(of: stdout), "no listening line")
        #expect(line.hasPrefix("listening on "))
        try stdin.write(contentsOf: Data("anything\n".utf8))
        #expect(process.isRunning)
        try stdin.close()
        #expect(process.waitUntilExit(seconds: 300))
        #expect(process.terminationStatus == 0)
    }
}

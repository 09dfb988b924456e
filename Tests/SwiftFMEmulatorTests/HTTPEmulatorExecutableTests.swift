import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import SwiftFMEmulator
import TestSupport

// `fm-emulator` as a process: it serves until a signal, honours its request-log flags, and fails with a message on
// bad arguments, a bad schema or a port in use; `--help` prints the usage.

/// The built `fm-emulator` next to the test bundle, if the build produced it (`swift build` builds it;
/// `swift test` alone may not).
let fmEmulatorExecutable: URL? = {
    var directory = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("fm-emulator")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return nil
}()

/// A running `fm-emulator` process with its output captured.
final class HTTPEmulatorProcess: @unchecked Sendable {
    let process: ChildProcess
    /// The read ends of its standard output and error.
    let stdout: FileHandle
    let stderr: FileHandle

    init(_ arguments: [String]) throws {
        guard let executable = fmEmulatorExecutable else { throw HTTPTestError(description: "fm-emulator not built") }
        process = try ChildProcess(executable, arguments)
        guard let stdout = process.standardOutput, let stderr = process.standardError else {
            throw HTTPTestError(description: "fm-emulator has no pipes")
        }
        self.stdout = stdout
        self.stderr = stderr
    }

    /// The first stdout line, or nil if the process ends (or 30 s pass) without one.
    func firstLine() -> String? {
        let result = HTTPOrderLog()
        let done = DispatchSemaphore(value: 0)
        let handle = stdout
        Thread.detachNewThread {
            var bytes = Data()
            while !bytes.contains(0x0A) {
                let chunk = handle.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            if let newline = bytes.firstIndex(of: 0x0A) {
                result.append(String(decoding: bytes[..<newline], as: UTF8.self))
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 300) == .success else { return nil }
        return result.entries.first
    }

    /// The first `count` stdout lines (fewer if the process ends or 300 s pass first).
    func firstLines(_ count: Int) -> [String] {
        let result = HTTPOrderLog()
        let done = DispatchSemaphore(value: 0)
        let handle = stdout
        Thread.detachNewThread {
            var bytes = Data()
            while bytes.filter({ $0 == 0x0A }).count < count {
                let chunk = handle.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").prefix(count) { result.append(String(line)) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 300) == .success else { return [] }
        return result.entries
    }

    /// Waits (at most 300 s) for the process to end and returns its status, killing it on timeout.
    func waitForExit() -> Int32? {
        guard process.waitUntilExit(seconds: 300) else {
            process.terminate()
            return nil
        }
        return process.terminationStatus
    }

    var standardErrorText: String {
        String(decoding: stderr.readAllRetryingInterrupts(), as: UTF8.self)
    }
}

@Suite("HTTP fm-emulator executable", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct HTTPEmulatorExecutableTests {
    @Test("Prints one listening line, serves, and exits 0 on SIGTERM and SIGINT", arguments: [SIGTERM, SIGINT])
    func servesUntilSignal(signalNumber: Int32) async throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--verbose"])
        guard let line = emulator.firstLine() else {
            emulator.process.terminate()
            Issue.record("no listening line")
            return
        }
        #expect(line.hasPrefix("listening on http://127.0.0.1:"))
        let base = String(line.dropFirst("listening on ".count))
        let url = try #require(URL(string: base + "/fmi/data/vLatest/productInfo"))
        let session = makeHTTPTestSession()
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        kill(emulator.process.processIdentifier, signalNumber)
        #expect(emulator.waitForExit() == 0)
        #expect(emulator.standardErrorText.contains("/fmi/data/vLatest/productInfo"))
    }

    /// A harness that signals as soon as it reads the listening line stops the emulator every time. The signal sources
    /// are registered before that line is printed: before, one registered by libdispatch after it now and then let the
    /// signal fall on SIG_IGN, and the emulator ran on for good (`servesUntilSignal` failed once in 25 runs beside two
    /// busy loops; started and signalled in a loop there, one emulator of 31, and one of 150, never stopped).
    @Test("A SIGTERM or SIGINT sent right after the listening line is never lost")
    func aSignalRightAfterTheListeningLineIsNeverLost() throws {
        for round in 0..<30 {
            let emulator = try HTTPEmulatorProcess(["--port", "0"])
            let line = emulator.firstLine()
            #expect(line?.hasPrefix("listening on ") == true, "\(String(describing: line))")
            kill(emulator.process.processIdentifier, round % 2 == 0 ? SIGTERM : SIGINT)
            let status = emulator.waitForExit()
            #expect(status == 0, "round \(round): \(String(describing: status))")
            if status != 0 {
                emulator.process.signal(SIGKILL)
                return
            }
        }
    }

    @Test("--max-logged-requests and --max-logged-bytes set the request log's caps, as the control API reads them")
    func requestLogCapFlags() async throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--control", "--max-logged-requests", "2", "--max-logged-bytes=5000"])
        defer {
            emulator.process.terminate()
            _ = emulator.waitForExit()
        }
        let lines = emulator.firstLines(2)
        let control = try #require(lines.dropFirst().first { $0.hasPrefix("control on ") }, "no control line in \(lines)")
        let url = try #require(URL(string: String(control.dropFirst("control on ".count)) + "/v1/settings"))
        let session = makeHTTPTestSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, _) = try await session.data(from: url)
        let settings = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(settings["maxLoggedRequests"] as? Int == 2)
        #expect(settings["maxLoggedBytes"] as? Int == 5000)
    }

    @Test("Bad log caps print usage and exit 2", arguments: [["--max-logged-requests", "-1"], ["--max-logged-requests", "x"],
                                                             ["--max-logged-bytes"], ["--max-logged-bytes=1.5"]])
    func badLogCaps(arguments: [String]) throws {
        let emulator = try HTTPEmulatorProcess(arguments)
        #expect(emulator.waitForExit() == 2)
        #expect(emulator.standardErrorText.contains("usage: fm-emulator"))
    }

    @Test("Bad arguments print usage and exit 2", arguments: [["--bogus"], ["--port"], ["--port", "70000"], ["--port", "x"]])
    func badArguments(arguments: [String]) throws {
        let emulator = try HTTPEmulatorProcess(arguments)
        #expect(emulator.waitForExit() == 2)
        #expect(emulator.standardErrorText.contains("usage: fm-emulator"))
    }

    /// An unknown option names the one it was most likely meant to be: within two edits, or the only one it begins;
    /// nothing when none or several are as close.
    @Test("A mistyped option names the one meant", arguments: [
        (["--prot", "8080"], "--port"), (["--verbos"], "--verbose"), (["-verbose"], "--verbose"), (["--Control"], "--control"),
        (["--stop-on-stdin"], "--stop-on-stdin-close"), (["--publik-url=http://h"], "--public-url"), (["--max"], nil), (["--zzzzzzzz"], nil),
    ] as [([String], String?)])
    func aMistypedOptionNamesTheOneMeant(arguments: [String], meant: String?) throws {
        let emulator = try HTTPEmulatorProcess(arguments)
        #expect(emulator.waitForExit() == 2)
        let text = emulator.standardErrorText
        #expect(text.contains("unknown argument \(arguments[0])") && text.contains("usage: fm-emulator"), "\(text)")
        if let meant {
            #expect(text.contains("(did you mean \(meant)?)"), "\(text)")
        } else {
            #expect(!text.contains("did you mean"), "\(text)")
        }
    }

    @Test("--help prints usage and exits 0")
    func help() throws {
        let emulator = try HTTPEmulatorProcess(["--help"])
        #expect(emulator.waitForExit() == 0)
        let out = String(decoding: emulator.stdout.readAllRetryingInterrupts(), as: UTF8.self)
        #expect(out.contains("usage: fm-emulator"))
        // It points to the schema contract, which ships in the repository.
        #expect(out.contains("Docs/SCHEMA.md"))
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #expect(FileManager.default.fileExists(atPath: repo.appendingPathComponent("Docs/SCHEMA.md").path))
    }

    @Test("An unreadable schema exits 1 with a message")
    func badSchema() throws {
        let emulator = try HTTPEmulatorProcess(["--schema", "/nonexistent/schema.json"])
        #expect(emulator.waitForExit() == 1)
        #expect(emulator.standardErrorText.contains("schema"))
    }

    @Test("A port in use exits 1 with a message")
    func portInUse() throws {
        try withHTTPServerSync { _, port in
            let emulator = try HTTPEmulatorProcess(["--port", "\(port)"])
            #expect(emulator.waitForExit() == 1)
            #expect(emulator.standardErrorText.contains("\(port)"))
        }
    }
}

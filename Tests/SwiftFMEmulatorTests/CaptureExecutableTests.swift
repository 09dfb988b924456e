import Foundation
import Testing
import SwiftFMEmulator

/// `fm-emulator capture` as a user runs it: exit codes and the file it writes.
@Suite("fm-emulator capture", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct CaptureExecutableTests {
    func capture(_ url: URL, database: String = "Music", password: String = "admin", extra: [String] = []) throws -> (Int32?, String, URL) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString).json")
        let process = try HTTPEmulatorProcess(["capture", "--host", url.absoluteString, "--database", database, "--username", "admin",
                                               "--password", password, "--output", output.path, "--timeout", "10"] + extra)
        let status = process.waitForExit()
        return (status, process.standardErrorText, output)
    }

    @Test func completeAndPartialCapturesAndTheirExitCodes() throws {
        let demo = Emulator()
        let url = try demo.start()
        defer { demo.stop() }
        let (status, stderr, file) = try capture(url, extra: ["--records", "5"])
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(status == 0)
        #expect(stderr.contains("captured by name only"))
        let copy = try Emulator(schemaFile: file)
        #expect(copy.records(inTable: "Artists").count == 5)
        #expect(copy.records(inTable: "Albums").count == 6)

        let league = try Emulator(schemaFile: leagueSchemaURL)
        let leagueURL = try league.start()
        defer { league.stop() }
        // Without records the relationships cannot be seen: a partial capture.
        let (partial, partialErr, partialFile) = try capture(leagueURL, database: "League")
        defer { try? FileManager.default.removeItem(at: partialFile) }
        #expect(partial == 3)
        #expect(partialErr.contains("skipped: layout Teams, portal all games"))
        #expect(FileManager.default.fileExists(atPath: partialFile.path))
        _ = try Emulator(schemaFile: partialFile)
    }

    @Test func failuresAreReportedWithTheirExitCodes() throws {
        let demo = Emulator()
        let url = try demo.start()
        defer { demo.stop() }
        let (refused, refusedErr, _) = try capture(url, password: "wrong")
        #expect(refused == 4)
        #expect(refusedErr.contains("refused"))
        let (unknown, _, _) = try capture(url, database: "Nope")
        #expect(unknown == 6)
        let (unreachable, unreachableErr, _) = try capture(URL(string: "http://127.0.0.1:1")!)
        #expect(unreachable == 5)
        #expect(unreachableErr.contains("cannot be reached"))
        let usage = try HTTPEmulatorProcess(["capture", "--database", "Music"])
        #expect(usage.waitForExit() == 2)
        #expect(usage.standardErrorText.contains("--host is required"))
    }
}

/// A schema with a FileMaker step the emulator does not model does not start: the message names the step.
@Suite("fm-emulator: unknown script steps", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct UnknownStepExecutableTests {
    @Test func anUnknownStepIsASchemaErrorNamingIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("unknown-step-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"database":"D","tables":{"A":{"fields":{"n":"number"}}},"scripts":{"S":{"steps":[{"step":"Send Mail"}]}}}"#.utf8)
            .write(to: file)
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--schema", file.path])
        #expect(emulator.waitForExit() == 1)
        let message = emulator.standardErrorText
        #expect(message.contains(#"scripts.S.steps[0]: unknown script step "Send Mail""#))
        #expect(message.contains("supported: Allow User Abort"))
    }
}

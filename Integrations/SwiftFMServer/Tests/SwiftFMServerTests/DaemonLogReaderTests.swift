// Contract: fm-daemon outlives the reader of its standard output. When the process it logs to goes away (a
// log shipper restarted, `fm-daemon | head`), its lines are lost but the daemon is not: it goes on polling,
// and SIGTERM still drains it and logs its session out, whether or not the in-process emulator (which ignores
// SIGPIPE for its sockets) runs in it.
import Foundation
import SwiftFMEmulator
import Testing

@Suite struct TheDaemonOutlivesItsLogReader {
    /// The reader of stdout closes after the first poll; three more polls follow, then SIGTERM: exit 0, one
    /// logout. Failed on main: the first line written after the close raised SIGPIPE, which killed the daemon
    /// (signal 13) with its session still open on the server.
    @Test(.enabled(if: envResetsSignals(), "needs GNU env's --default-signal (coreutils 8.31 or later)"))
    func aClosedStdoutIsNotFatal() async throws {
        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let polls = PollCount()
        emulator.onRequest = { line in if line.contains("/layouts/Artists/records") { polls.add() } }

        // Started with SIGPIPE's default action, as a shell starts it: this test process ignores SIGPIPE (its
        // emulator sets that), and an ignored signal stays ignored across exec.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal=PIPE", try daemonBinary().path]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FM_") && $0.key != "LOG_LEVEL" }
        environment["FM_HOST"] = url.absoluteString
        environment["FM_DATABASE"] = emulator.database
        environment["FM_USER"] = "admin"
        environment["FM_PASSWORD"] = "admin"
        environment["FM_DAEMON_ROUNDS"] = "0"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = Signal()
        process.terminationHandler = { _ in exited.fire() }
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // The first poll reached the server (its line is about to be written): the reader goes away.
        let first = polls.signal(at: 1, or: exited)
        #expect(await first.wait())
        try output.fileHandleForReading.close()
        // Three more polls (each an info line written to the closed pipe), or the daemon's death.
        let more = polls.signal(at: 4, or: exited)
        #expect(await more.wait())
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        #expect(await exited.wait())
        #expect(process.terminationReason == .exit, "signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
        #expect(emulator.logoutCount == 1)
    }
}

/// Whether `/usr/bin/env --default-signal=PIPE` runs a command (GNU coreutils 8.31 or later).
private func envResetsSignals() -> Bool {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["--default-signal=PIPE", "true"]
    probe.standardOutput = FileHandle.nullDevice
    probe.standardError = FileHandle.nullDevice
    guard (try? probe.run()) != nil else { return false }
    probe.waitUntilExit()
    return probe.terminationReason == .exit && probe.terminationStatus == 0
}

/// Counts polls at the emulator (on its threads); a signal fires when the count reaches a number, or when
/// another signal (the daemon's exit) fires first.
private final class PollCount: @unchecked Sendable {
    // @unchecked: state under `lock`.
    private let lock = NSLock()
    private var count = 0
    private var waiting: [(at: Int, signal: Signal)] = []

    func add() {
        let reached = lock.withLock { () -> [Signal] in
            count += 1
            let due = waiting.filter { $0.at <= count }.map(\.signal)
            waiting.removeAll { $0.at <= count }
            return due
        }
        for signal in reached { signal.fire() }
    }

    /// Fires once `at` polls were counted, or once `other` fires.
    func signal(at: Int, or other: Signal) -> Signal {
        let signal = Signal()
        let now = lock.withLock { () -> Bool in
            if count >= at { return true }
            waiting.append((at, signal))
            return false
        }
        if now { signal.fire() }
        Task { if await other.wait(seconds: 120) { signal.fire() } }
        return signal
    }
}

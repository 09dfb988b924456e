import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

@Suite struct DaemonTests {
    /// The example daemon, sent SIGTERM while a poll is in flight, lets that poll finish (FMService drains
    /// it, as the daemon and FMService's documentation say) instead of cancelling it, then logs its session
    /// out and exits 0. Failed on main: the poller's `cancelWhenGracefulShutdown` cancelled the call in flight
    /// (`poll failed`, code -1005).
    @Test func sigtermLetsThePollInFlightFinish() async throws {
        let daemon = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("fm-daemon")
        let binary = FileManager.default.fileExists(atPath: daemon.path) ? daemon
            : URL(fileURLWithPath: Bundle.main.bundlePath).appendingPathComponent("fm-daemon")
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build fm-daemon first (swift build --build-tests)")

        let emulator = Emulator()
        let url = try emulator.start()
        defer { emulator.stop() }
        let held = HeldFirstRequest(on: emulator)
        defer { held.release() }

        let process = Process()
        process.executableURL = binary
        var environment = ProcessInfo.processInfo.environment
        environment["FM_HOST"] = url.absoluteString
        environment["FM_DATABASE"] = emulator.database
        environment["FM_USER"] = "admin"
        environment["FM_PASSWORD"] = "admin"
        environment["FM_LAYOUT"] = "Artists"
        environment["FM_DAEMON_ROUNDS"] = "0"
        environment["LOG_LEVEL"] = "debug"   // the ServiceGroup's "Triggering graceful shutdown" line
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let exited = Signal()
        process.terminationHandler = { _ in exited.fire() }
        let triggered = Signal()
        let text = Task.detached { () -> String in
            var data = Data()
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data.append(chunk)
                if String(decoding: data, as: UTF8.self).contains("Triggering graceful shutdown") { triggered.fire() }
            }
            return String(decoding: data, as: UTF8.self)
        }
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        #expect(await held.arrived.wait())   // the first poll is held at the server
        kill(process.processIdentifier, SIGTERM)
        // The group has begun its graceful shutdown (the poller is told first): now the held request answers.
        #expect(await triggered.wait())
        #expect(emulator.logoutCount == 0)
        held.release()
        #expect(await exited.wait())
        let lines = await text.value
        #expect(process.terminationStatus == 0, "\(lines)")
        #expect(lines.contains("round=1") && lines.contains("polled"), "\(lines)")
        #expect(!lines.contains("poll failed"), "\(lines)")
        #expect(emulator.logoutCount == 1, "\(lines)")
    }
}

// Contract: fm-daemon reads its settings from the environment and refuses a bad one before it starts: a partial
// server setting (some of FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD, not all four), an empty one, a host
// SwiftFM cannot use (user info, another scheme), a FM_DAEMON_ROUNDS that is not a whole number ≥ 0 or a
// LOG_LEVEL that is not a swift-log level each end the daemon at once with exit status 78 (EX_CONFIG) and one
// line on standard error naming the variable, never with a crash, a hang or a silent fallback (to the
// in-process emulator, or to a default). Nothing it writes, on either stream and at any level, holds the
// password or a part of FM_HOST other than the server's address (user info, a query).
import Foundation
import Testing

@Suite struct ABadEnvironmentStopsTheDaemonWithAMessage {
    /// The environments refused, and the variable each message must name first.
    static let refused: [(environment: [String: String], names: String)] = [
        // Partial server settings: before, the daemon polled its in-process emulator instead, and exited 0.
        (["FM_HOST": "fms.example.com"], "FM_DATABASE"),
        (["FM_HOST": "fms.example.com", "FM_DATABASE": "Music", "FM_USER": "web"], "FM_PASSWORD"),
        (["FM_USER": "web", "FM_PASSWORD": "Sup3rS3cret"], "FM_HOST"),
        (["FM_HOST": "fms.example.com", "FM_DATABASE": "", "FM_USER": "web", "FM_PASSWORD": "Sup3rS3cret"], "FM_DATABASE"),
        // A host SwiftFM refuses: before, every poll failed and the daemon exited 0 (or polled forever).
        (["FM_HOST": "ftp://fms.example.com", "FM_DATABASE": "Music", "FM_USER": "web", "FM_PASSWORD": "Sup3rS3cret"], "FM_HOST"),
        (["FM_HOST": "http://web:Sup3rS3cret@127.0.0.1:1", "FM_DATABASE": "Music", "FM_USER": "web", "FM_PASSWORD": "x"], "FM_HOST"),
        (["FM_HOST": "fms.example.com", "FM_DATABASE": "Music", "FM_USER": "web", "FM_PASSWORD": "Sup3rS3cret", "FM_LAYOUT": ""],
         "FM_LAYOUT"),
        // Rounds and level: before, a bad value was silently the default (5 rounds, info), a negative count 0 rounds.
        (["FM_DAEMON_ROUNDS": "five"], "FM_DAEMON_ROUNDS"),
        (["FM_DAEMON_ROUNDS": "-1"], "FM_DAEMON_ROUNDS"),
        (["FM_DAEMON_ROUNDS": "99999999999999999999999"], "FM_DAEMON_ROUNDS"),
        (["LOG_LEVEL": "verbose"], "LOG_LEVEL"),
    ]

    /// Failed on main: each of these ran (the emulator, or polls that all failed) and exited 0.
    @Test(arguments: refused.indices)
    func isRefusedWithExitStatus78(_ index: Int) async throws {
        let (environment, name) = Self.refused[index]
        let run = try await runDaemon(environment)
        #expect(run.exited, "\(run.all)")
        #expect(run.reason == .exit && run.status == 78, "\(environment): \(run.all)")
        // One line, naming first the variable at fault.
        #expect(run.errors.hasPrefix("fm-daemon: \(name)") && run.errors.filter { $0 == "\n" }.count == 1, "\(environment): \(run.all)")
        #expect(!run.output.contains("polled") && !run.output.contains("poll failed"), "\(environment): \(run.all)")
        #expect(!run.all.contains("Sup3rS3cret"), "\(environment): \(run.all)")
    }

    /// Running against a server it cannot reach, at every level, the daemon writes neither the password (nor its
    /// Basic value) nor what FM_HOST holds past the address. Failed on main: the "fm-daemon starting" line
    /// carried FM_HOST as written, query and all.
    @Test func theDaemonsLinesHoldNoSecret() async throws {
        let run = try await runDaemon([
            "FM_HOST": "http://127.0.0.1:1?key=Sup3rK3y", "FM_DATABASE": "Music", "FM_USER": "web", "FM_PASSWORD": "Sup3rS3cret",
            "FM_DAEMON_ROUNDS": "1", "LOG_LEVEL": "trace",
        ])
        #expect(run.exited && run.reason == .exit && run.status == 0, "\(run.all)")
        #expect(run.output.contains("fm-daemon starting") && run.output.contains("poll failed"), "\(run.all)")
        for secret in ["Sup3rS3cret", "Sup3rK3y", Data("web:Sup3rS3cret".utf8).base64EncodedString()] {
            #expect(!run.all.contains(secret), "\(secret): \(run.all)")
        }
    }
}

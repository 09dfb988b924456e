import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftFM
import SwiftFMEmulator

/// Prints one line of what an example did (one unbuffered write, so output order is kept across queues).
func say(_ line: String) {
    // POSIX write: a closed pipe (`| head`) ends the output quietly; FileHandle.write would trap on EPIPE,
    // and the emulator ignores SIGPIPE for the whole process.
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

/// Where the examples run: a real server from the environment, or the embedded emulator.
struct ExampleTarget: Sendable {
    var configuration: FMConfiguration
    /// The layout the examples work on.
    var layout: String?
    /// `true` against the emulator: the examples may create, edit and delete records.
    var writable: Bool
    /// The embedded emulator, when no server was configured.
    var emulator: Emulator?

    var summary: String {
        emulator == nil
            ? "FileMaker Server at \(configuration.host), database \(configuration.database) (read-only)"
            : "embedded emulator at \(configuration.host), database \(configuration.database)"
    }

    /// The server variables, all four or none: with only some set, the examples would quietly run against the
    /// embedded emulator instead of the server the user meant.
    static let serverVariables = ["FM_HOST", "FM_DATABASE", "FM_USER", "FM_PASSWORD"]

    struct IncompleteServer: Error, CustomStringConvertible {
        var missing: [String]
        var description: String {
            "\(missing.joined(separator: ", ")) not set: set all of \(ExampleTarget.serverVariables.joined(separator: ", ")) "
                + "to run against a server, or none of them to run against the embedded emulator"
        }
    }

    static func fromEnvironment() throws -> ExampleTarget {
        let env = ProcessInfo.processInfo.environment
        if let host = env["FM_HOST"], let database = env["FM_DATABASE"],
           let user = env["FM_USER"], let password = env["FM_PASSWORD"] {
            return ExampleTarget(
                configuration: FMConfiguration(host: host, database: database, username: user, password: password),
                layout: env["FM_LAYOUT"], writable: false, emulator: nil)
        }
        let missing = serverVariables.filter { env[$0] == nil }
        guard missing.count == serverVariables.count else { throw IncompleteServer(missing: missing) }
        let emulator = Emulator()
        let url = try emulator.start(host: "127.0.0.1", port: 0)
        return ExampleTarget(
            configuration: FMConfiguration(host: url.absoluteString, database: emulator.database,
                                           username: "admin", password: "admin"),
            layout: "Artists", writable: true, emulator: emulator)
    }
}

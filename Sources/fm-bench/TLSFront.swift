import Foundation
import SwiftFM
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - HTTPS: a TLS front before the emulator

/// How fm-bench reaches its emulators: straight over `http://`, through TLS fronts it starts itself (`--tls`:
/// nginx with a throwaway CA, `Tests/bench/tls-front.sh`), or through one front somebody else started
/// (`--base-url https://… --ca-file …`, in front of `--emulator-port`).
enum Reach {
    case plain
    /// `--tls`: `directory` holds the CA and the server certificate; `script` is `tls-front.sh`.
    case ownFront(directory: URL, script: URL)
    /// `--base-url`: the front's URL.
    case givenFront(URL)

    var isHTTPS: Bool {
        if case .plain = self { return false }
        return true
    }
}

/// nginx terminating TLS before one emulator: `tls-front.sh front DIR UPSTREAM`, stopped with ``stop()``.
final class TLSFront: @unchecked Sendable {
    // @unchecked: `process` is started in init and only stopped afterwards.
    let process = Process()
    let url: URL
    /// The script's standard input: closed to stop it (a SIGTERM can be blocked in a process spawned from a
    /// Swift concurrency thread, which inherits that thread's signal mask).
    private let input = Pipe()

    init(script: URL, directory: URL, upstream: URL) throws {
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script.path, "front", directory.path, upstream.absoluteString]
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try Children.shared.run(process) { [process, input] _ in TLSFront.end(process, input: input) }
        let line = readLines(output.fileHandleForReading, count: 1).first ?? ""
        guard line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            process.terminate()
            throw BenchError("the TLS front did not start (\(script.path) front): \(line)")
        }
        self.url = url
    }

    func stop() {
        Self.end(process, input: input)
        Children.shared.forget(process) // after: a signal meanwhile still finds it
    }

    private static func end(_ process: Process, input: Pipe) {
        if process.isRunning {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }
}

/// The first `count` lines a process writes on `handle` (fewer if it closes it first).
func readLines(_ handle: FileHandle, count: Int) -> [String] {
    var buffer = Data()
    while buffer.filter({ $0 == UInt8(ascii: "\n") }).count < count {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        buffer.append(chunk)
    }
    return String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
}

/// `Tests/bench/tls-front.sh`: `$FM_BENCH_TLS_SCRIPT`, else found above this binary (`.build/release/fm-bench`)
/// or in the current directory's tree.
func tlsFrontScript() throws -> URL {
    if let given = ProcessInfo.processInfo.environment["FM_BENCH_TLS_SCRIPT"] { return URL(fileURLWithPath: given) }
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    for start in [binary.deletingLastPathComponent(), URL(fileURLWithPath: FileManager.default.currentDirectoryPath)] {
        var directory = start
        for _ in 0..<6 {
            let candidate = directory.appendingPathComponent("Tests/bench/tls-front.sh")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
    }
    throw BenchError("--tls: Tests/bench/tls-front.sh not found above \(binary.path) (set FM_BENCH_TLS_SCRIPT)")
}

/// Runs `/bin/bash script arguments…` with standard output and error passed through; its exit status.
@discardableResult
func runScript(_ script: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [script.path] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// `--tls`, first step: makes the throwaway CA and runs this same command again inside
/// `tls-front.sh trusted CA -- …` (a private mount namespace whose system CA bundle also holds the CA, so the
/// bare-URLSession baselines trust the fronts the Linux way), with `FM_BENCH_TLS_DIR` naming the CA's
/// directory. Returns the inner run's exit status; the directory is removed after it.
func runTrustingThrowawayCA() throws -> Int32 {
    let script = try tlsFrontScript()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fm-bench-tls-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }
    guard try runScript(script, ["ca", directory.path]) == 0 else { throw BenchError("--tls: \(script.path) ca failed") }
    let caFile = directory.appendingPathComponent("ca.crt")
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [script.path, "trusted", caFile.path, "--", binary] + CommandLine.arguments.dropFirst()
    process.environment = ProcessInfo.processInfo.environment.merging(["FM_BENCH_TLS_DIR": directory.path, "FM_BENCH_TLS_SCRIPT": script.path]) { $1 }
    // The inner run is the same process all the way down (the script execs it): SIGTERM and SIGINT go on to it,
    // so a `timeout` around fm-bench --tls ends the inner run, its emulators and fronts too.
    try Children.shared.run(process) { [process] number in
        kill(process.processIdentifier, number)
        process.waitUntilExit()
    }
    process.waitUntilExit()
    Children.shared.forget(process)
    return process.terminationStatus
}

/// One emulator as the clients reach it: its own process, and the TLS front before it when there is one.
final class Served: @unchecked Sendable {
    // @unchecked: set up once; `stop()` is called once, after the scenario.
    let emulator: EmulatorProcess
    let front: TLSFront?
    /// What clients call: the front's URL, or the emulator's own.
    let url: URL

    /// An emulator on `port` and, with `--tls`, a front of its own before it.
    init(schema: URL, port: Int, extraArguments: [String] = [], reach: Reach) throws {
        let process = try EmulatorProcess(schema: schema, port: port, extraArguments: extraArguments)
        switch reach {
        case .plain:
            front = nil
            url = process.url
        case .ownFront(let directory, let script):
            let tlsFront: TLSFront
            do { tlsFront = try TLSFront(script: script, directory: directory, upstream: process.url) } catch {
                process.stop()
                throw error
            }
            front = tlsFront
            url = tlsFront.url
        case .givenFront(let base):
            front = nil
            url = base
        }
        emulator = process
    }

    func stop() {
        front?.stop()
        emulator.stop()
    }
}

extension FMConfiguration {
    /// This configuration trusting the system's store only (no `tls` options): what ``FMURLSessionTransport``
    /// accepts; over HTTPS it relies on the CA being in the system bundle (`--tls` puts it there in fm-bench's own
    /// mount namespace).
    var systemTrust: FMConfiguration {
        var copy = self
        copy.tls = FMTLSOptions()
        return copy
    }
}

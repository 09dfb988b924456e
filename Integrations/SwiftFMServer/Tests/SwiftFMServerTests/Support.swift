import Foundation
import SwiftFM
import SwiftFMEmulator
import Testing

/// A configuration for `emulator` (admin/admin, the demo solution).
func configuration(for emulator: Emulator) throws -> FMConfiguration {
    let url = try #require(emulator.baseURL)
    var configuration = FMConfiguration(host: url.absoluteString, database: emulator.database, username: "admin", password: "admin")
    configuration.timeout = 60
    // Retries wait at most a few milliseconds: no test waits on a back-off's clock.
    configuration.retry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0.001, maxDelay: 0.01)
    return configuration
}

/// The secrets a log line or span must never hold, once `emulator` has issued its tokens.
func secrets(of emulator: Emulator) -> [String] {
    ["admin:admin", Data("admin:admin".utf8).base64EncodedString()] + emulator.activeTokens + emulator.requestLog.compactMap(\.token)
}

/// Something that happens once, awaited with a generous bound (never a sleep as synchronisation).
final class Signal: @unchecked Sendable {
    // @unchecked: state under `lock`.
    private let lock = NSLock()
    private var fired = false
    private var waiters: [UUID: CheckedContinuation<Bool, Never>] = [:]

    func fire() {
        lock.lock()
        guard !fired else { return lock.unlock() }
        fired = true
        let resumed = waiters.values
        waiters = [:]
        lock.unlock()
        for waiter in resumed { waiter.resume(returning: true) }
    }

    /// `true` once fired; `false` if `seconds` pass first (each waiter has its own bound).
    func wait(seconds: Double = 60) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            lock.lock()
            if fired {
                lock.unlock()
                return continuation.resume(returning: true)
            }
            let id = UUID()
            waiters[id] = continuation
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                lock.lock()
                let timedOut = waiters.removeValue(forKey: id)
                lock.unlock()
                timedOut?.resume(returning: false)
            }
        }
    }
}

/// The first request to `emulator` whose line contains `fragment`, held at the emulator until ``release()`` (or
/// 120 s, a hang guard): ``arrived`` fires once it is held. Later matching requests pass.
final class HeldFirstRequest: @unchecked Sendable {
    // @unchecked: `holding` under `lock`.
    /// Fired when the request is held.
    let arrived = Signal()
    private let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var holding = true

    init(on emulator: Emulator, matching fragment: String = "/layouts/Artists/records") {
        emulator.onRequest = { [self] line in
            guard line.contains(fragment) else { return }
            let hold = lock.withLock { () -> Bool in
                defer { holding = false }
                return holding
            }
            guard hold else { return }
            arrived.fire()
            _ = gate.wait(timeout: .now() + 120)
        }
    }

    /// Lets the held request go (calling it again changes nothing that matters: nothing else waits).
    func release() { gate.signal() }
}


/// The example daemon's binary, built beside the tests (`swift build --build-tests`).
func daemonBinary() throws -> URL {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("fm-daemon")
    let binary = FileManager.default.fileExists(atPath: beside.path) ? beside
        : URL(fileURLWithPath: Bundle.main.bundlePath).appendingPathComponent("fm-daemon")
    try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build fm-daemon first (swift build --build-tests)")
    return binary
}

/// How one run of the daemon ended.
struct DaemonRun: Sendable {
    /// Whether it exited within the bound (if not, it was killed).
    let exited: Bool
    /// Its exit status (or signal, when `reason` is `.uncaughtSignal`).
    let status: Int32
    let reason: Process.TerminationReason
    /// What it wrote to standard output and to standard error.
    let output: String
    let errors: String
    /// Both, for a failure's message.
    var all: String { "status \(status) (\(reason == .exit ? "exit" : "signal")); stdout:\n\(output)\nstderr:\n\(errors)" }
}

/// Runs fm-daemon with `environment` (the test's own `FM_*` and `LOG_LEVEL` variables removed first) until it
/// exits, or `seconds` pass (a hang guard: it is then killed, and `exited` is false).
func runDaemon(_ environment: [String: String], seconds: Double = 120) async throws -> DaemonRun {
    let process = Process()
    process.executableURL = try daemonBinary()
    var inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FM_") && $0.key != "LOG_LEVEL" }
    inherited.merge(environment) { $1 }
    process.environment = inherited
    let output = Pipe(), errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    let exited = Signal()
    process.terminationHandler = { _ in exited.fire() }
    func drain(_ pipe: Pipe) -> Task<String, Never> {
        Task.detached {
            var data = Data()
            while true {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data.append(chunk)
            }
            return String(decoding: data, as: UTF8.self)
        }
    }
    let (out, err) = (drain(output), drain(errors))
    try process.run()
    let done = await exited.wait(seconds: seconds)
    if !done {
        kill(process.processIdentifier, SIGKILL)
        _ = await exited.wait(seconds: 60)
    }
    return DaemonRun(exited: done, status: process.terminationStatus, reason: process.terminationReason,
                     output: await out.value, errors: await err.value)
}

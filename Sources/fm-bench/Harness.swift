import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The measuring tools of fm-bench: output, timing, ratios, the emulator and python-fmrest processes, RSS.

/// One unbuffered line on standard output (POSIX write: a closed pipe ends the output quietly).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The 1-minute load average.
/// Handles SIGTERM and SIGINT with `handler` (their default action off) and returns once Dispatch has registered
/// both sources: a signal sent before that would be lost, so the caller only goes on (starts what the handler
/// must stop) when it will be caught. Keep the sources alive as long as the handling should last.
func handlingTermination(_ handler: @escaping @Sendable (Int32) -> Void) -> [DispatchSourceSignal] {
    let registered = DispatchGroup()
    let sources = [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { handler(number) }
        registered.enter()
        source.setRegistrationHandler { registered.leave() }
        source.resume()
        return source
    }
    registered.wait()
    return sources
}

/// The processes fm-bench started and has not stopped (emulators, TLS fronts, python-fmrest, the inner run of
/// `--tls`): a SIGTERM or SIGINT to fm-bench stops each of them before it exits, so a `timeout` around a run
/// leaves nothing behind, whenever it comes.
final class Children: @unchecked Sendable {
    // @unchecked: every property is read and written under `lock`.
    static let shared = Children()
    private let lock = NSLock()
    private var stops: [pid_t: @Sendable (Int32) -> Void] = [:]
    private var ending = false

    /// Starts `process` and keeps `stop` (called with the signal fm-bench got) in one step, so that a signal
    /// cannot fall between the start and the keeping; refuses to start anything once fm-bench is ending.
    func run(_ process: Process, stop: @escaping @Sendable (Int32) -> Void) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !ending else { throw BenchError("fm-bench is ending") }
        try process.run()
        stops[process.processIdentifier] = stop
    }

    /// `process` was stopped the usual way.
    func forget(_ process: Process) {
        lock.lock()
        defer { lock.unlock() }
        stops[process.processIdentifier] = nil
    }

    /// Stops every process still running, once.
    func endAll(_ number: Int32) {
        lock.lock()
        ending = true
        let all = stops
        stops = [:]
        lock.unlock()
        for stop in all.values { stop(number) }
    }
}

func loadAverage() -> Double {
    var loads = [Double](repeating: 0, count: 3)
    return getloadavg(&loads, 3) > 0 ? loads[0] : .nan
}

/// Monotonic nanoseconds.
@inline(__always) func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Seconds spent in `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = now()
    try await body()
    return Double(now() - start) / 1e9
}

/// Per-round totals of several contenders, and the ratios between them.
struct Tally {
    private(set) var rounds: [[String: Double]] = []
    private var current: [String: Double] = [:]

    mutating func add(_ name: String, _ seconds: Double) { current[name, default: 0] += seconds }

    mutating func endRound() {
        rounds.append(current)
        current = [:]
    }

    /// The median over rounds of one contender's total.
    func median(_ name: String) -> Double {
        let values = rounds.compactMap { $0[name] }.sorted()
        return values.isEmpty ? .nan : values[values.count / 2]
    }

    /// min / median / max over rounds of `name`'s total divided by `base`'s total in the same round.
    func ratio(_ name: String, over base: String) -> (min: Double, median: Double, max: Double) {
        let ratios = rounds.compactMap { round -> Double? in
            guard let a = round[name], let b = round[base], b > 0 else { return nil }
            return a / b
        }.sorted()
        guard !ratios.isEmpty else { return (.nan, .nan, .nan) }
        return (ratios[0], ratios[ratios.count / 2], ratios[ratios.count - 1])
    }

    func ratioText(_ name: String, over base: String) -> String {
        let r = ratio(name, over: base)
        return String(format: "%.2f× (min %.2f, max %.2f)", r.median, r.min, r.max)
    }
}

/// One contender measured from a plain thread: an operation made and waited for on that thread.
typealias ThreadContender = (name: String, run: @Sendable () -> Void)

/// Times `contenders` the way a Dispatch daemon calls: on one plain thread (no Task, no executor), each warmed
/// up 100 times, then `rounds` rounds of `calls` operations each, interleaved operation by operation with the
/// order rotating. Returns the per-round totals.
func interleavedOnThread(_ contenders: [ThreadContender], rounds: Int, calls: Int) async -> Tally {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            for _ in 0..<100 { for contender in contenders { contender.run() } } // warm up every path
            var tally = Tally()
            for round in 0..<rounds {
                for call in 0..<calls {
                    for offset in 0..<contenders.count {
                        let contender = contenders[(round + call + offset) % contenders.count]
                        let start = now()
                        contender.run()
                        tally.add(contender.name, Double(now() - start) / 1e9)
                    }
                }
                tally.endRound()
            }
            continuation.resume(returning: tally)
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Times `contenders` over `rounds` rounds of `calls` operations each, interleaved operation by operation
/// with the order rotating, and returns the per-round totals.
func interleaved(_ contenders: [(name: String, run: () async throws -> Void)], rounds: Int, calls: Int) async throws -> Tally {
    var tally = Tally()
    for round in 0..<rounds {
        for call in 0..<calls {
            for offset in 0..<contenders.count {
                let (name, run) = contenders[(round + call + offset) % contenders.count]
                let start = now()
                try await run()
                tally.add(name, Double(now() - start) / 1e9)
            }
        }
        tally.endRound()
    }
    return tally
}

// MARK: - The emulator in its own process

/// `fm-emulator` from the same directory as this binary, serving `schema` on loopback.
final class EmulatorProcess {
    let process = Process()
    let url: URL
    /// The control API (`--control`): settings such as per-session serialisation and a service time.
    let controlURL: URL?

    init(schema: URL, port: Int, extraArguments: [String] = []) throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let binary = directory.appendingPathComponent("fm-emulator")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw BenchError("fm-emulator not found next to fm-bench (\(binary.path)); build it: swift build -c release")
        }
        process.executableURL = binary
        process.arguments = ["--host", "127.0.0.1", "--port", String(port), "--schema", schema.path, "--control"] + extraArguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try Children.shared.run(process) { [process] _ in EmulatorProcess.end(process) }
        // The first line says where it listens, the second where the control API is.
        let lines = readLines(output.fileHandleForReading, count: 2)
        let line = lines.first ?? ""
        controlURL = lines.dropFirst().first { $0.hasPrefix("control on ") }.flatMap { URL(string: String($0.dropFirst("control on ".count))) }
        guard line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            process.terminate()
            throw BenchError("fm-emulator did not start: \(line)")
        }
        self.url = url
    }

    /// A size field (`VmHWM`, `RssAnon`, `RssFile`, …) of the emulator process's /proc status, in bytes.
    func status(_ key: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).filter(\.isNumber)).map { $0 * 1024 }
        }
        return nil
    }

    /// The emulator process's open descriptors (entries of /proc/PID/fd), -1 where there is no /proc.
    func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1
    }

    /// The emulator process's threads (`Threads:` of /proc/PID/status), -1 where there is no /proc.
    func threads() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst("Threads:".count).filter(\.isNumber)) ?? -1
        }
        return -1
    }

    /// CPU seconds the emulator process has used, user and system (`utime` + `stime` of /proc/PID/stat);
    /// `nil` where there is no /proc.
    func cpuSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": state is field 3, utime field 14, stime field 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system) / ticks : nil
    }

    /// How many requests the emulator's request log holds now (`GET /v1/log?limit=…` of the control API).
    func logCount() async throws -> Int {
        guard let controlURL, let url = URL(string: controlURL.absoluteString + "/v1/log?limit=100000") else {
            throw BenchError("fm-emulator printed no control URL")
        }
        let (data, _) = try await URLSession.shared.data(from: url)
        guard let requests = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["requests"] as? [Any] else {
            throw BenchError("the control API's log is not JSON")
        }
        return requests.count
    }

    /// `PATCH /v1/settings` of the control API with `settings` (JSON object).
    func setSettings(_ settings: [String: Any]) async throws {
        guard let controlURL else { throw BenchError("fm-emulator printed no control URL") }
        var request = URLRequest(url: controlURL.appendingPathComponent("v1/settings"))
        request.httpMethod = "PATCH"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: settings)
        let (_, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("control API refused \(settings)") }
    }

    /// `GET /v1/counters` of the control API: `loginCount`, `logoutCount`, `maxInFlight`, `activeSessions`, ….
    func counters() async throws -> [String: Any] {
        guard let controlURL else { throw BenchError("fm-emulator printed no control URL") }
        let (data, _) = try await URLSession.shared.data(from: controlURL.appendingPathComponent("v1/counters"))
        guard let counters = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw BenchError("the control API's counters are not a JSON object")
        }
        return counters
    }

    /// `POST /v1/counters/reset-max-in-flight`: `maxInFlight` starts again from the requests in flight now.
    func resetMaxInFlight() async throws {
        guard let controlURL else { throw BenchError("fm-emulator printed no control URL") }
        var request = URLRequest(url: controlURL.appendingPathComponent("v1/counters/reset-max-in-flight"))
        request.httpMethod = "POST"
        let (_, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("control API refused reset-max-in-flight") }
    }

    /// `POST /v1/faults` of the control API with `fault` (JSON object).
    func injectFault(_ fault: [String: Any]) async throws {
        guard let controlURL else { throw BenchError("fm-emulator printed no control URL") }
        var request = URLRequest(url: controlURL.appendingPathComponent("v1/faults"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: fault)
        let (_, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("control API refused \(fault)") }
    }

    /// `DELETE /v1/faults`: drops the faults still queued.
    func clearFaults() async throws {
        guard let controlURL else { throw BenchError("fm-emulator printed no control URL") }
        var request = URLRequest(url: controlURL.appendingPathComponent("v1/faults"))
        request.httpMethod = "DELETE"
        _ = try await URLSession.shared.data(for: request)
    }

    func stop() {
        Self.end(process)
        Children.shared.forget(process) // after: a signal meanwhile still finds it
    }

    private static func end(_ process: Process) {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

// MARK: - python-fmrest in its own process

/// A contender's driver in Python: `setup` (imports, the client from `url, database, layout` in `sys.argv`), then one
/// command per line on stdin, each answered with one line. `commands` are the `if`/`elif command == …:` branches,
/// indented 8 spaces; `quit` ends the driver, and an unknown command or an exception answers `error …`.
func pythonDriver(setup: String, commands: String) -> String {
    setup + "\n" + #"""
    def answer(text):
        sys.stdout.write(text + "\n"); sys.stdout.flush()
    for line in sys.stdin:
        command, *arguments = line.split()
        try:

    """# + commands + "\n" + #"""
            elif command == "quit":
                break
            else:
                answer("error unknown command")
        except Exception as error:
            answer(f"error {type(error).__name__}: {error}")

    """#
}

/// Runs `python3 -c code`: what it printed, trimmed, when it exits with 0; `nil` when it fails or cannot start.
func runPython(_ code: String) -> String? {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", code]
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return process.terminationStatus == 0 ? text.trimmingCharacters(in: .whitespacesAndNewlines) : nil
}

/// A small python-fmrest driver: reads one command per line on stdin, answers one line (seconds, or "error …").
let fmrestDriver = pythonDriver(setup: #"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import fmrest
url, database, layout = sys.argv[1], sys.argv[2], sys.argv[3]
server = fmrest.Server(url, user="admin", password="admin", database=database, layout=layout,
                       api_version="vLatest", verify_ssl=False, timeout=120)
cache = {}
"""#, commands: #"""
        if command == "login":
            server.login(); answer("ok")
        elif command == "decode":   # json.loads + python-fmrest's Record building, on bytes already in memory
            body = cache.get(arguments[0]) or cache.setdefault(arguments[0], open(arguments[0], "rb").read())
            start = time.perf_counter()
            response = json.loads(body)["response"]
            records = list(server._process_foundset_response(response))
            elapsed = time.perf_counter() - start
            answer(f"{elapsed} {len(records)}")
        elif command == "get":       # the same found set end to end: request, parse, Records
            start = time.perf_counter()
            records = list(server.get_records(limit=int(arguments[0])))
            elapsed = time.perf_counter() - start
            answer(f"{elapsed} {len(records)}")
"""#)

/// `true` when `python3 -c 'import fmrest'` works.
func pythonFmrestAvailable() -> Bool { runPython("import fmrest") != nil }

final class PythonContender {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    private var pending = Data()

    init(script: URL, url: URL, database: String, layout: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // python-fmrest only accepts plain http on port 3000, written without a trailing slash.
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        process.arguments = ["python3", script.path, text, database, layout]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try Children.shared.run(process) { [process] _ in process.terminate() }
    }

    /// Sends one command and returns its answer line.
    func send(_ command: String) throws -> String {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if line.hasPrefix("error") { throw BenchError("python-fmrest: \(line)") }
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("python-fmrest stopped") }
            pending.append(chunk)
        }
    }

    /// The seconds python measured for one command (the first number of its answer).
    func time(_ command: String) throws -> Double {
        let line = try send(command)
        guard let value = line.split(separator: " ").first.flatMap({ Double($0) }) else { throw BenchError("python-fmrest: \(line)") }
        return value
    }

    func stop() {
        _ = try? send("quit")
        process.terminate()
        process.waitUntilExit()
        Children.shared.forget(process) // after: a signal meanwhile still finds it
    }
}

// MARK: - Memory

/// A `kB` line of /proc/self/status (`VmRSS`, `VmHWM`), in bytes; `nil` where there is no /proc.
func procStatus(_ key: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        let digits = line.dropFirst(key.count + 1).filter(\.isNumber)
        return Int(digits).map { $0 * 1024 }
    }
    return nil
}

/// Resets the peak RSS (VmHWM) to the current RSS (Linux: `5` into /proc/self/clear_refs).
func resetPeakRSS() -> Bool {
    let fd = open("/proc/self/clear_refs", O_WRONLY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return write(fd, "5", 1) == 1
}

// MARK: - A raw URLSession client (the baseline)

func rawGet(_ session: URLSession, _ request: URLRequest) async throws -> Data {
    try await withCheckedThrowingContinuation { continuation in
        session.dataTask(with: request) { data, response, error in
            if let data, (response as? HTTPURLResponse)?.statusCode == 200 {
                continuation.resume(returning: data)
            } else {
                continuation.resume(throwing: error ?? BenchError("raw request failed"))
            }
        }.resume()
    }
}

// fm-bench: SwiftFM's speed as ratios against baselines measured in the same run.
//
//   swift build -c release && .build/release/fm-bench [SCENARIO…] [--rounds N] [--calls N] [--records N]
//                                                      [--paging-records N] [--container-mib N] [--no-python]
//                                                      [--profile CONTENDER]   (one contender of percall, transport, policy, metrics, instrumentation, decode, endtoend or odata, repeatedly)
//                                                      [--tls | --base-url https://… [--ca-file PEM] --emulator-port N]
//
// HTTPS: `--tls` puts a TLS front before every emulator fm-bench starts (nginx with a certificate from a
// throwaway CA made with the openssl CLI: Tests/bench/tls-front.sh; root, nginx and openssl needed). SwiftFM trusts
// the CA through FMConfiguration.tls (caCertificates) alone; the whole run happens in a private mount namespace
// whose system CA bundle also holds the CA (`tls-front.sh trusted`), so the bare-URLSession baselines and the
// FMURLSessionTransport contenders trust it the way a Linux user trusts a private CA; the machine's trust store
// is never touched. `--base-url https://… --ca-file ca.pem --emulator-port N`: a front you started yourself,
// proxying to the emulator fm-bench starts on port N (trust the CA for the baselines yourself, for example
// `Tests/bench/tls-front.sh trusted ca.pem -- .build/release/fm-bench --base-url …`). Over HTTPS python-fmrest
// is left out; clarisid stays on http; restart needs --tls.
//
// Method (DESIGN.md, "Performance"): the emulator runs in its own process (`fm-emulator` from the same
// directory, serving a schema this program writes: one 20-field table); contenders are interleaved call by
// call (per-call) or operation by operation (found sets) within each round, their order rotating; every
// figure is the min / median / max over rounds of a per-round ratio. python-fmrest is a contender when
// `python3 -c 'import fmrest'` works (it then needs the emulator on port 3000, its only plain-http port).
//
// Scenarios (all by default; name some to run a subset):
//   percall   get one record, from a plain thread waiting on a semaphore: the callback API vs a raw URLSession
//             data task (bytes only, and + JSONSerialization), the async API vs a raw request bridged the
//             same way (a Task and a continuation around each); on Linux also the callback API over
//             FMURLSessionTransport (the default there is FMCurlTransport); over HTTPS all through the same front
//   transport get one record through callbacks from a plain thread (as percall): SwiftFM over FMCurlTransport vs
//             over FMURLSessionTransport,
//             interleaved call by call, plain and with gzip-encoded answers (Linux; http or https)
//   decode    a found set's bytes already in memory → records: raw vs python-fmrest (json.loads + Records),
//             typed vs JSONDecoder into the same struct, the fm-codegen type (and JSONSerialization alone)
//   endtoend  the same found set in one call against the emulator: SwiftFM raw, typed and generated (the
//             fm-codegen type in Generated/) vs python-fmrest
//   paging    --paging-records records in pages of 1,000: peak RSS above the process's baseline
//   pool      200 concurrent reads, the emulator serialising each session with a 5 ms service time:
//             a pool of 4 sessions vs a pool of 1 (throughput ratio, target ≥ 3×)
//   policy    get one record from a plain thread (as percall) with `.standard` retries and a concurrency cap
//             of 8 vs `.none` and no cap (per-call ratio, target within 2 %)
//   soak      (only when named) --soak-calls mixed calls (default 1,000,000) through callbacks, 8 in flight,
//             pool of 3: RSS, heap, fds, threads and the emulator's RSS every 10 %, slopes in B/call after
//             warm-up; --soak-transport default|urlsession|bare (bare: URLSession alone, no SwiftFM)
//   metrics   get one record from a plain thread (as percall) with FMConfiguration.metrics unset vs a no-op
//             observer (per-call µs: median,
//             fastest and slowest block; interleaved call by call)
//   instrumentation  get one record with FMConfiguration.instrumentation unset vs a no-op instrumentation
//             (per-call µs, as metrics; target ≤ 1.03×)
//   restart   (only when named) reads with timeout 30 from 8 threads (callback + semaphore) while a
//             fm-emulator of their own is killed and started again on the same port 5 s later: failures and
//             the longest call, the default policy vs FMRetryPolicy(maxAttempts: 3)
//   inflight  (only when named) maxConcurrentRequests 32, pool of 32, the emulator holding each request 200 ms:
//             4 threads × 32 reads through callbacks, timeout 30 s, for the default transport and FMURLSessionTransport:
//             the most requests at the server at once (its maxInFlight counter),
//             failed calls, logins, wall time (target ≥ 24 at once, 0 timeouts); baseline: the same burst
//             through a bare URLSession at its defaults (httpMaximumConnectionsPerHost unset: 6 on Linux)
//   emulatorlog  the emulator's cost of a read with a full request log vs a log of one entry (in process)
//   clarisid  a Claris ID sign-in (Cognito SRP against fm-emulator --claris-id, then the FMID login): the
//             client's CPU per sign-in, median of 20 (target ≤ 50 ms)
//   odata     (only when named) the same --records rows in one OData read end to end: FMOData raw and typed vs
//             getRecords raw and typed (target ≤ 1.1) and vs fms-odata-py 0.2.0 (target ≤ 0.4), with the floor
//             (the same request through a bare URLSession, bytes only)
//   container a --container-mib MiB file (default 1024) up with uploadContainer(…fileURL:…) and down with
//             downloadContainer(url:to:): same bytes, peak RSS above the baseline for each (target < 100 MB)
// Further scenarios register in `scenarios` below. Each measuring scenario is cut into set-up, run and report
// functions (none over 100 lines); soak, percall, inflight, restart and container run over HTTPS too.
import Foundation
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Arguments

struct Settings {
    var selected: [String] = []
    var rounds = 7
    var calls = 300
    var records = 10_000
    var pagingRecords = 100_000
    var containerMiB = 1024
    var python = true
    /// `--profile NAME`: the percall, transport, policy, metrics, instrumentation, decode, endtoend or odata scenario runs only that contender, repeatedly (for a profiler).
    var profile: String?
    /// `--soak-calls N`: the soak scenario's call count.
    var soakCalls = 1_000_000
    /// `--soak-transport NAME`: the client the soak drives.
    var soakClient = SoakClient.default
    /// `--tls`: TLS fronts fm-bench starts itself.
    var tls = false
    /// `--base-url URL`: a TLS front started by somebody else, before `--emulator-port`.
    var baseURL: URL?
    /// `--ca-file PEM`: the CA that `--base-url`'s certificate comes from (`FMTLSOptions.caCertificates`).
    var caFile: URL?
    /// `--emulator-port N`: where the emulator listens (for `--base-url`'s front to proxy to).
    var emulatorPort: Int?
}

var settings = Settings()
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    func number() -> Int {
        guard let text = arguments.first, let value = Int(text), value > 0 else {
            say("fm-bench: \(argument) needs a positive number")
            exit(2)
        }
        arguments.removeFirst()
        return value
    }
    switch argument {
    case "--rounds": settings.rounds = number()
    case "--calls": settings.calls = number()
    case "--records": settings.records = number()
    case "--paging-records": settings.pagingRecords = number()
    case "--container-mib": settings.containerMiB = number()
    case "--no-python": settings.python = false
    case "--soak-calls": settings.soakCalls = number()
    case "--soak-transport":
        guard let name = arguments.first, let client = SoakClient(rawValue: name) else {
            say("fm-bench: --soak-transport needs one of \(SoakClient.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        arguments.removeFirst()
        settings.soakClient = client
    case "--tls": settings.tls = true
    case "--emulator-port": settings.emulatorPort = number()
    case "--base-url", "--ca-file":
        guard let text = arguments.first else { say("fm-bench: \(argument) needs a value"); exit(2) }
        arguments.removeFirst()
        if argument == "--ca-file" { settings.caFile = URL(fileURLWithPath: text) } else { settings.baseURL = URL(string: text) }
    case "--profile":
        guard !arguments.isEmpty else { say("fm-bench: --profile needs a contender name"); exit(2) }
        settings.profile = arguments.removeFirst()
    case "--help", "-h":
        say("usage: fm-bench [percall] [transport] [decode] [endtoend] [paging] [pool] [policy] [metrics] [instrumentation] [restart] [inflight] [emulatorlog] [container] [clarisid] [odata] [--rounds N] [--calls N] [--records N] [--paging-records N] [--container-mib N] [--no-python] [--profile CONTENDER] [soak] [--soak-calls N] [--soak-transport default|urlsession|bare] [--tls | --base-url https://… [--ca-file PEM] --emulator-port N]")
        exit(0)
    default:
        if argument.hasPrefix("-") {
            say("fm-bench: unknown option \(argument)")
            exit(2)
        }
        settings.selected.append(argument)
    }
}

if settings.tls && settings.baseURL != nil { say("fm-bench: --tls and --base-url exclude each other"); exit(2) }
if settings.baseURL != nil && settings.emulatorPort == nil { say("fm-bench: --base-url needs --emulator-port (where its front proxies to)"); exit(2) }
// From here on SIGTERM or SIGINT (a `timeout`, ^C, the outer run of --tls passing one on) stops every process
// fm-bench started, then fm-bench (exit status 128 + the signal).
let termination = handlingTermination { number in
    Children.shared.endAll(number)
    exit(128 + number)
}
let tlsDirectory = ProcessInfo.processInfo.environment["FM_BENCH_TLS_DIR"].map { URL(fileURLWithPath: $0) }
if settings.tls && tlsDirectory == nil {
    exit(try runTrustingThrowawayCA()) // again, inside the namespace that trusts the throwaway CA
}
let reach: Reach
if settings.tls, let tlsDirectory {
    reach = .ownFront(directory: tlsDirectory, script: try tlsFrontScript())
} else if let baseURL = settings.baseURL {
    reach = .givenFront(baseURL)
} else {
    reach = .plain
}
let caFile = settings.tls ? tlsDirectory?.appendingPathComponent("ca.crt") : settings.caFile

// MARK: - The data: one table of 20 fields, records made by auto-enter

/// The 20 fields, decoded the same way by SwiftFM's typed calls and by `JSONDecoder`.
struct Row: Decodable, Sendable {
    let id: Int, n1: Int, n2: Int, n3: Int, n4: Int, n5: Int
    let d1: Double, d2: Double, d3: Double, d4: Double
    let t1: String, t2: String, t3: String, t4: String, t5: String, t6: String
    let date1: String, date2: String, ts1: String, ts2: String
}

func schemaJSON(records: Int) -> Data {
    var fields: [String: Any] = ["id": ["type": "number", "autoEnter": "serial"]]
    for (index, start) in [1000, 25_000, 730_000, 9_000_000, 123_456_789].enumerated() {
        fields["n\(index + 1)"] = ["type": "number", "autoEnter": "serial", "serialStart": start]
    }
    for (index, value) in ["3.25", "1234.5", "0.001", "-98765.4321"].enumerated() {
        fields["d\(index + 1)"] = ["type": "number", "autoEnter": ["value": value]]
    }
    let texts = ["Austin", "Masayuki Nii", "a longer text value with some words in it", "é日本", "TX-78701", "line one\rline two"]
    for (index, value) in texts.enumerated() {
        fields["t\(index + 1)"] = ["type": "text", "autoEnter": ["value": value]]
    }
    fields["date1"] = ["type": "date", "autoEnter": "creationDate"]
    fields["date2"] = ["type": "date", "autoEnter": "creationDate"]
    fields["ts1"] = ["type": "timestamp", "autoEnter": "creationTimestamp"]
    fields["ts2"] = ["type": "timestamp", "autoEnter": "modificationTimestamp"]
    let names = ["id", "n1", "n2", "n3", "n4", "n5", "d1", "d2", "d3", "d4", "t1", "t2", "t3", "t4", "t5", "t6", "date1", "date2", "ts1", "ts2"]
    let schema: [String: Any] = [
        "database": "Bench",
        "accounts": [["username": "admin", "password": "admin"]],
        "tables": ["Bench": ["fields": fields],
                   "Files": ["fields": ["id": ["type": "number", "autoEnter": "serial"], "file": "container"]]], // the container scenario
        "layouts": ["Bench": ["table": "Bench", "fields": names], "Files": ["table": "Files", "fields": ["id", "file"]]],
        "records": ["Bench": Array(repeating: [String: Any](), count: records), "Files": [[String: Any]()]],
    ]
    return (try? JSONSerialization.data(withJSONObject: schema)) ?? Data()
}

// MARK: - The run

let all = ["percall", "transport", "decode", "endtoend", "paging", "pool", "policy", "metrics", "instrumentation", "emulatorlog", "container", "clarisid"]
let known = all + ["soak", "restart", "inflight", "odata"] // only when named: a million calls take minutes, a restart 10 s, inflight ~20 s
let chosen = settings.selected.isEmpty ? all : settings.selected
for name in chosen where !known.contains(name) {
    say("fm-bench: unknown scenario \(name) (known: \(known.joined(separator: ", ")))")
    exit(2)
}
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fm-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let tableSize = chosen.contains("paging") ? max(settings.records, settings.pagingRecords) : settings.records
let schemaFile = directory.appendingPathComponent("schema.json")
try schemaJSON(records: tableSize).write(to: schemaFile)

let wantsPython = settings.python && !reach.isHTTPS && (chosen.contains("decode") || chosen.contains("endtoend")) && pythonFmrestAvailable()
let served: Served
if wantsPython, let onPort3000 = try? Served(schema: schemaFile, port: 3000, reach: reach) {
    served = onPort3000
} else {
    served = try Served(schema: schemaFile, port: settings.emulatorPort ?? 0, reach: reach)
}
defer { served.stop() }
let emulator = served.emulator
var python: PythonContender?
if wantsPython, emulator.url.port == 3000 {
    let script = directory.appendingPathComponent("fmrest_driver.py")
    try Data(fmrestDriver.utf8).write(to: script)
    python = try PythonContender(script: script, url: emulator.url, database: "Bench", layout: "Bench")
    _ = try python?.send("login")
}
defer { python?.stop() }

let pythonState = python != nil ? "1.8.0"
    : !(chosen.contains("decode") || chosen.contains("endtoend")) ? "not needed by these scenarios"
    : reach.isHTTPS ? "left out over HTTPS (fm-bench drives it over http on port 3000 only)"
    : settings.python ? "not available (pip install python-fmrest==1.8.0)" : "left out (--no-python)"
var benchConfiguration = FMConfiguration(host: served.url.absoluteString, database: "Bench", username: "admin", password: "admin")
benchConfiguration.tls = FMTLSOptions(caCertificates: caFile)
let api = DataAPI(configuration: benchConfiguration)
let token = try await api.login()
let processorCount = ProcessInfo.processInfo.activeProcessorCount
let reachText = switch reach {
case .plain: ""
case .ownFront: " behind a TLS front (nginx, a throwaway CA: FMTLSOptions.caCertificates for SwiftFM, the system bundle in this run's own mount namespace for URLSession) at \(served.url.absoluteString)"
case .givenFront(let base): " behind the TLS front at \(base.absoluteString) (CA: \(caFile?.path ?? "the system store"))"
}
say("fm-bench, \(Date()): \(processorCount) cores, load average \(String(format: "%.2f", loadAverage())); emulator \(emulator.url.absoluteString) in its own process\(reachText), "
    + "\(tableSize) records × 20 fields; \(settings.rounds) rounds; python-fmrest \(pythonState)")


/// Everything a scenario needs; scenarios run off the main actor (no actor hop inside a measurement).
struct Bench: @unchecked Sendable {
    // @unchecked: the python driver and the emulator process are used by one scenario at a time.
    let settings: Settings
    let api: DataAPI
    let session: URLSession
    let emulator: EmulatorProcess
    /// What clients call: the emulator, or the TLS front before it.
    let baseURL: URL
    /// How emulators are reached (a scenario that starts its own puts the same kind of front before it).
    let reach: Reach
    let directory: URL
    let python: PythonContender?
    let token: String
    let tableSize: Int

    func rawRequest(_ path: String) -> URLRequest {
        var request = URLRequest(url: URL(string: baseURL.absoluteString.trimmingCharacters(in: ["/"]) + "/fmi/data/vLatest/databases/Bench/layouts/Bench/" + path)!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return request
    }

    // MARK: Scenario: found-set bytes in memory → records

    func foundSetBytes() async throws -> Data {
        try await rawGet(session, rawRequest("records?_limit=\(settings.records)"))
    }

    func decode() async throws {
        let body = try await foundSetBytes()
        let file = directory.appendingPathComponent("foundset.json")
        try body.write(to: file)
        guard try FMFoundSet(responseBody: body).count == settings.records,
              try FMTypedFoundSet<Row>(responseBody: body).records.count == settings.records,
              try JSONDecoder().decode(JSONDecoderEnvelope.self, from: body).response.data.count == settings.records else {
            throw BenchError("the found set does not have \(settings.records) records")
        }
        var contenders: [(String, () throws -> Void)] = [
            ("SwiftFM raw", { _ = try FMFoundSet(responseBody: body) }),
            ("JSONSerialization", { _ = try JSONSerialization.jsonObject(with: body) }),
            ("SwiftFM typed", { _ = try FMTypedFoundSet<Row>(responseBody: body) }),
            ("SwiftFM generated", { _ = try FMTypedFoundSet<GeneratedBench>(responseBody: body) }),
            ("JSONDecoder", { _ = try JSONDecoder().decode(JSONDecoderEnvelope.self, from: body) }),
        ]
        if let python {
            contenders.append(("python-fmrest", { [file] in
                let elapsed = try python.time("decode \(file.path)")
                throw PythonTime(seconds: elapsed)
            }))
        }
        if let profiled = settings.profile {
            guard let (_, run) = contenders.first(where: { $0.0 == profiled }) else {
                throw BenchError("--profile: no contender \(profiled) (known: \(contenders.map(\.0).joined(separator: ", ")))")
            }
            let start = now()
            for _ in 0..<(settings.rounds * 10) { try run() }
            say(String(format: "profile %@: %.1f ms per run", profiled, Double(now() - start) / 1e6 / Double(settings.rounds * 10)))
            return
        }
        var tally = Tally()
        for round in 0..<(settings.rounds + 1) { // the first round warms up and is not counted
            for offset in 0..<contenders.count {
                let (name, run) = contenders[(round + offset) % contenders.count]
                let start = now()
                do {
                    try run()
                    tally.add(name, Double(now() - start) / 1e9)
                } catch let time as PythonTime {
                    tally.add(name, time.seconds) // python's own measurement of its work
                }
            }
            if round == 0 { tally = Tally() } else { tally.endRound() }
        }
        let milli = { (name: String) in String(format: "%.0f ms", tally.median(name) * 1e3) }
        say("found set in memory → records (\(settings.records) × 20 fields, \(body.count / 1024) KiB; \(settings.rounds) rounds):")
        say("  SwiftFM raw \(milli("SwiftFM raw")), JSONSerialization alone \(milli("JSONSerialization")), SwiftFM typed \(milli("SwiftFM typed")), "
            + "SwiftFM generated (fm-codegen) \(milli("SwiftFM generated")), "
            + "JSONDecoder \(milli("JSONDecoder"))" + (python == nil ? "" : ", python-fmrest json.loads + Records \(milli("python-fmrest"))"))
        if python != nil {
            say("  python-fmrest / SwiftFM raw     \(tally.ratioText("python-fmrest", over: "SwiftFM raw"))   target ≥ 3")
        }
        say("  JSONSerialization / SwiftFM raw \(tally.ratioText("JSONSerialization", over: "SwiftFM raw"))")
        say("  JSONDecoder / SwiftFM typed     \(tally.ratioText("JSONDecoder", over: "SwiftFM typed"))   target ≥ 3")
        say("  SwiftFM typed / SwiftFM raw     \(tally.ratioText("SwiftFM typed", over: "SwiftFM raw"))")
    }


    // MARK: Scenario: the same found set end to end

    func endToEnd() async throws {
        let limit = settings.records
        let rawBytes = rawRequest("records?_limit=\(limit)")
        var contenders: [(String, () async throws -> Double)] = [
            ("raw URLSession bytes-only", { await timed { _ = try await rawGet(session, rawBytes) } }),
            ("SwiftFM raw", { await timed { _ = try await api.getRecords(layout: "Bench", limit: limit) } }),
            ("SwiftFM typed", { await timed { _ = try await api.getRecords(as: Row.self, layout: "Bench", limit: limit) } }),
            ("SwiftFM generated", { await timed { _ = try await api.getRecords(as: GeneratedBench.self, limit: limit) } }),
        ]
        if let python {
            contenders.append(("python-fmrest", { try python.time("get \(limit)") }))
        }
        func timed(_ body: () async throws -> Void) async -> Double {
            let start = now()
            do { try await body() } catch { say("  error: \(error)") }
            return Double(now() - start) / 1e9
        }
        if let profiled = settings.profile {
            guard let (_, run) = contenders.first(where: { $0.0 == profiled }) else {
                throw BenchError("--profile: no contender \(profiled) (known: \(contenders.map(\.0).joined(separator: ", ")))")
            }
            var total = 0.0
            for _ in 0..<(settings.rounds * 5) { total += try await run() }
            say(String(format: "profile %@: %.1f ms per run", profiled, total * 1e3 / Double(settings.rounds * 5)))
            return
        }
        var tally = Tally()
        let rounds = max(3, settings.rounds / 2 + 1)
        for round in 0..<(rounds + 1) {
            for offset in 0..<contenders.count {
                let (name, run) = contenders[(round + offset) % contenders.count]
                tally.add(name, try await run())
            }
            if round == 0 { tally = Tally() } else { tally.endRound() }
        }
        let milli = { (name: String) in String(format: "%.0f ms", tally.median(name) * 1e3) }
        say("the same found set end to end, one call against the emulator (\(rounds) rounds):")
        say("  raw URLSession bytes-only \(milli("raw URLSession bytes-only")) (the floor: the emulator's time and the transfer), SwiftFM raw \(milli("SwiftFM raw")), "
            + "SwiftFM typed \(milli("SwiftFM typed")), SwiftFM generated \(milli("SwiftFM generated"))"
            + (python == nil ? "" : ", python-fmrest \(milli("python-fmrest"))"))
        say("  SwiftFM typed / SwiftFM raw         \(tally.ratioText("SwiftFM typed", over: "SwiftFM raw"))   target ≤ 1.0")
        say("  SwiftFM generated / SwiftFM raw     \(tally.ratioText("SwiftFM generated", over: "SwiftFM raw"))   target ≤ 1.0")
        if python != nil {
            say("  SwiftFM raw / python-fmrest         \(tally.ratioText("SwiftFM raw", over: "python-fmrest"))   target ≤ 0.5")
            say("  SwiftFM typed / python-fmrest       \(tally.ratioText("SwiftFM typed", over: "python-fmrest"))   target ≤ 0.40")
            say("  SwiftFM generated / python-fmrest   \(tally.ratioText("SwiftFM generated", over: "python-fmrest"))   target ≤ 0.40")
        }
    }

    // MARK: Scenario: paging

    func paging() async throws {
        let pageSize = 1000
        let resettable = resetPeakRSS()
        let baseline = procStatus("VmRSS") ?? 0
        var records = 0
        var pages = 0
        let elapsed = try await seconds {
            for try await page in api.pages(layout: "Bench", pageSize: pageSize) {
                records += page.count
                pages += 1
            }
        }
        let peak = procStatus("VmHWM") ?? 0
        say("paging \(settings.pagingRecords) records in pages of \(pageSize):")
        say(String(format: "  %d records in %d pages, %.1f s (%.0f records/s); peak RSS %.1f MB above the baseline of %.1f MB%@   target < 100 MB",
                   records, pages, elapsed, Double(records) / elapsed, Double(peak - baseline) / 1e6, Double(baseline) / 1e6,
                   resettable ? "" : " (peak not resettable here: VmHWM of the whole run)"))
        if records != min(tableSize, settings.pagingRecords) && records != tableSize {
            say("  warning: expected \(tableSize) records")
        }
    }

}

struct JSONDecoderEnvelope: Decodable {
    struct Response: Decodable { let data: [Record] }
    struct Record: Decodable { let fieldData: Row; let recordId: String; let modId: String }
    let response: Response
}

struct PythonTime: Error { var seconds: Double }

// MARK: - Scenario table (the lead adds retries/cap and session-pool scenarios here)

let bench = Bench(settings: settings, api: api, session: URLSession(configuration: .ephemeral), emulator: emulator,
                  baseURL: served.url, reach: reach, directory: directory, python: python, token: token, tableSize: tableSize)
let scenarios: [(name: String, run: @Sendable (Bench) async throws -> Void)] = [
    ("paging", { try await $0.paging() }), // first: its peak RSS is measured from a clean baseline
    ("percall", { try await $0.perCall() }),
    ("transport", { try await $0.transport() }),
    ("decode", { try await $0.decode() }),
    ("endtoend", { try await $0.endToEnd() }),
    ("pool", { try await $0.pool() }),
    ("policy", { try await $0.policy() }),
    ("metrics", { try await $0.metrics() }),
    ("instrumentation", { try await $0.instrumentation() }),
    ("restart", { try await $0.restart() }),
    ("inflight", { try await $0.inFlight() }),
    ("emulatorlog", { try await $0.emulatorLog() }),
    ("clarisid", { try await $0.clarisID() }),
    ("container", { try await $0.container() }), // a 1 GiB transfer leaves the page cache full
    ("soak", { try await $0.soak() }),
    ("odata", { try await $0.odata() }),
]

for scenario in scenarios where chosen.contains(scenario.name) {
    do {
        try await scenario.run(bench)
    } catch {
        say("\(scenario.name): failed: \(error)")
    }
}

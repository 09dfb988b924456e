import Foundation
import SwiftFM
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Scenario: soak

/// Which client the soak drives (`--soak-transport`).
enum SoakClient: String, CaseIterable {
    /// SwiftFM with its default transport on this platform.
    case `default`
    /// SwiftFM over ``FMURLSessionTransport``.
    case urlsession
    /// No SwiftFM: a bare `URLSession` loop of `GET …/records/N` (what URLSession alone keeps per request).
    case bare
}

/// The soak's calls by `index % 10` (10: the bare loop's GET, 11: the container download).
let soakKinds = ["getRecord", "getRecord", "getRecord", "find", "getRecords", "create", "edit", "delete", "forEachPage",
                 "upload", "GET", "download"]

/// One sample of the process's resources after `calls` completed calls.
struct SoakSample {
    var calls: Int
    var rss: Int
    var heapInUse: Int
    var fds: Int
    var threads: Int
    /// Monotonic nanoseconds when the sample was taken.
    var time: UInt64
    var emulatorRSS: Int
    var emulatorFDs: Int
    var emulatorThreads: Int
    /// CPU seconds the emulator process has used so far.
    var emulatorCPU: Double
}

/// The soak's shared state: counters, the created records waiting for their edit and delete, samples.
final class SoakState: @unchecked Sendable {
    // @unchecked: every field is behind `lock`.
    private let lock = NSLock()
    let total: Int
    private var issued = 0
    private var completed = 0
    private var created: [Int] = []
    private(set) var failures: [String: Int] = [:]
    private(set) var samples: [SoakSample] = []
    private let sampleEvery: Int
    private let sampler: (Int) -> SoakSample
    private let printer: (_ sample: SoakSample, _ previous: SoakSample?, _ slopes: (client: Double, emulator: Double)) -> Void
    /// The sample printed last (the start of the next printed interval).
    private var printed: SoakSample?
    let done = DispatchSemaphore(value: 0)

    init(total: Int, sampler: @escaping (Int) -> SoakSample,
         printer: @escaping (_ sample: SoakSample, _ previous: SoakSample?, _ slopes: (client: Double, emulator: Double)) -> Void) {
        self.total = total
        self.sampleEvery = max(1, total / 200)
        self.sampler = sampler
        self.printer = printer
    }

    /// The index of the next call to start, or `nil` when all are issued.
    func next() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard issued < total else { return nil }
        issued += 1
        return issued - 1
    }

    /// One call ended with `code`; samples every 0.5 % and prints every 10 %; signals the end.
    func finished(_ code: String, kind: String) {
        lock.lock()
        if code != "0" { failures["\(kind) \(code)", default: 0] += 1 }
        completed += 1
        let count = completed
        var sample: SoakSample?
        if count % sampleEvery == 0 || count == total {
            let taken = sampler(count)
            samples.append(taken)
            sample = taken
        }
        lock.unlock()
        if let sample, count == total || count % max(1, total / 10) == 0 {
            lock.lock()
            let previous = printed
            printed = sample
            lock.unlock()
            printer(sample, previous, slopesSoFar())
        }
        if count == total { done.signal() }
    }

    /// The calls after which samples count towards the slopes (the first 10 %, at least 20,000 calls).
    var warmUp: Int { max(total / 10, min(20_000, total / 2)) }

    /// The client's and the emulator's RSS slopes in bytes per call over the samples after warm-up so far
    /// (so a run cut short still says).
    private func slopesSoFar() -> (client: Double, emulator: Double) {
        lock.lock(); defer { lock.unlock() }
        let measured = samples.filter { $0.calls >= warmUp }
        return (slope(measured.map { (Double($0.calls), Double($0.rss)) }),
                slope(measured.map { (Double($0.calls), Double($0.emulatorRSS)) }))
    }

    /// Takes the sample at call 0, the start of the first printed interval; call it just before the first call.
    func begin() {
        let first = sampler(0)
        lock.lock()
        printed = first
        lock.unlock()
    }

    func pushCreated(_ id: Int) { lock.lock(); created.append(id); lock.unlock() }
    func popCreated() -> Int? {
        lock.lock(); defer { lock.unlock() }
        return created.isEmpty ? nil : created.removeFirst()
    }
}

/// The open descriptors of this process (entries of /proc/self/fd).
func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Bytes glibc's allocator has handed out and not got back (from `malloc_info`: the system bytes of every
/// arena plus mmapped blocks, less the free ones): what a leak grows; RSS growing without it is
/// fragmentation or memory outside malloc. 0 where glibc's `malloc_info` is not there.
func heapInUse() -> Int {
    #if canImport(Glibc)
    // `malloc_info` is not in Swift's Glibc module: looked up by name.
    guard let symbol = dlsym(nil, "malloc_info") else { return 0 }
    let mallocInfo = unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32).self)
    var buffer: UnsafeMutablePointer<CChar>?
    var size = 0
    guard let stream = open_memstream(&buffer, &size) else { return 0 }
    _ = mallocInfo(0, stream)
    fclose(stream)
    guard let buffer else { return 0 }
    defer { free(buffer) }
    let xml = String(cString: buffer)
    /// The `size` of the last element that starts with `prefix` (the totals follow the per-arena parts).
    func last(_ prefix: String) -> Int {
        guard let range = xml.range(of: prefix, options: .backwards),
              let sizeRange = xml[range.upperBound...].range(of: "size=\"") else { return 0 }
        return Int(xml[sizeRange.upperBound...].prefix { $0.isNumber }) ?? 0
    }
    return last("<system type=\"current\"") + last("<total type=\"mmap\"") - last("<total type=\"fast\"") - last("<total type=\"rest\"")
    #else
    return 0
    #endif
}

/// Least-squares slope of `y` over `x`.
func slope(_ points: [(x: Double, y: Double)]) -> Double {
    guard points.count >= 2 else { return .nan }
    let n = Double(points.count)
    let mx = points.map(\.x).reduce(0, +) / n, my = points.map(\.y).reduce(0, +) / n
    let sxy = points.map { ($0.x - mx) * ($0.y - my) }.reduce(0, +)
    let sxx = points.map { ($0.x - mx) * ($0.x - mx) }.reduce(0, +)
    return sxx > 0 ? sxy / sxx : .nan
}

/// The soak's calls: which one call `index` is, started through callbacks; `inFlight` chains of them.
struct SoakDriver: Sendable {
    let client: SoakClient
    let api: DataAPI
    let state: SoakState
    /// The bare client's session and requests (`--soak-transport bare`).
    let bareSession: URLSession
    let bareRequests: [URLRequest]
    /// The 2 KB container and the record its uploads replace.
    let blob: Data
    let uploads: Int
    let pagingFind = FMFindRequest(["id": "1...30"])

    /// Starts call `index`; `done` runs once with its code.
    func run(_ index: Int, _ done: @escaping @Sendable (String) -> Void) {
        let record = index % 1000 + 1
        if client == .bare {
            bareSession.dataTask(with: bareRequests[index % bareRequests.count]) { _, response, error in
                done(error == nil && (response as? HTTPURLResponse)?.statusCode == 200 ? "0" : "-1003")
            }.resume()
            return
        }
        switch index % 10 {
        case 0, 1, 2:
            api.getRecord(layout: "Bench", recordId: record) { _, code in done(code) }
        case 3:
            api.find(layout: "Bench", request: FMFindRequest(["id": "\(record)...\(record + 9)"])) { _, code in done(code) }
        case 4:
            api.getRecords(layout: "Bench", offset: record, limit: 10) { _, code in done(code) }
        case 5:
            api.createRecord(layout: "Bench", fieldData: ["t1": "soak \(index)"]) { [state] reference, code in
                if let id = reference.flatMap({ Int($0.recordId) }) { state.pushCreated(id) }
                done(code)
            }
        case 6, 7:
            guard let id = state.popCreated() else {
                api.getRecord(layout: "Bench", recordId: record) { _, code in done(code) }
                return
            }
            if index % 10 == 7 {
                api.deleteRecord(layout: "Bench", recordId: id) { _, code in done(code) }
                return
            }
            api.editRecord(layout: "Bench", recordId: id, fieldData: ["t2": "edited \(index)"]) { [state] _, code in
                state.pushCreated(id) // now for the delete
                done(code)
            }
        case 8:
            api.forEachPage(layout: "Bench", find: pagingFind, pageSize: 10, page: { _ in true }) { _, code in done(code) }
        default:
            container(index, done)
        }
    }

    /// A 2 KB container upload (every 20th call) or the container's URL read, then its download (one call of the mix).
    private func container(_ index: Int, _ done: @escaping @Sendable (String) -> Void) {
        if index % 20 == 9 {
            api.uploadContainer(layout: "Files", recordId: uploads, field: "file", data: blob, fileName: "soak.bin") { _, code in done(code) }
            return
        }
        api.getRecord(layout: "Files", recordId: 1) { [api] found, code in
            guard let fields = found?.first?["fieldData"] as? [String: Any], let text = fields["file"] as? String,
                  let url = URL(string: text) else { return done(code == "0" ? "no container URL" : code) }
            api.downloadContainer(url: url) { _, code in done(code) }
        }
    }

    /// One of the chains: each completion starts the next call.
    func chain() {
        guard let index = state.next() else { return }
        run(index) { code in
            state.finished(code, kind: soakKinds[client == .bare ? 10 : index % 20 == 19 ? 11 : index % 10])
            chain()
        }
    }
}

extension Bench {
    /// `--soak-calls` mixed calls (default 1,000,000), 8 in flight through callbacks (no Task around a
    /// call, as a Dispatch daemon calls), a pool of 3 sessions, against the emulator in its own process
    /// (over HTTPS: through the TLS front): per 10 calls, 3 getRecord, 1 find (10 records), 1 getRecords (10),
    /// 1 create, 1 edit and 1 delete of what was created, 1 forEachPage (3 pages of 10), and a 2 KB
    /// container upload or download (they alternate). Prints RSS, heap in use, fds and threads of this
    /// process and the emulator's RSS every 10 %, then the least-squares slopes in bytes per call after
    /// warm-up (the first 10 %, at least 20,000 calls).
    func soak() async throws {
        let inFlight = 8
        let driver = try await soakSetup()
        say("soak over \(baseURL.scheme ?? "http"), \(driver.state.total) mixed calls (\(driver.client.rawValue) client), \(inFlight) in flight through callbacks, "
            + String(format: "pool of 3; the emulator in its own process; load average %.2f:", loadAverage()))
        driver.state.begin()
        let start = now()
        for _ in 0..<inFlight { driver.chain() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                driver.state.done.wait()
                continuation.resume()
            }
        }
        let elapsed = Double(now() - start) / 1e9
        let emulatorLogCount = try? await emulator.logCount()
        withExtendedLifetime(driver.bareSession) {}
        soakReport(driver.state, elapsed: elapsed, emulatorLogCount: emulatorLogCount)
        await driver.api.shutdown()
    }

    /// The client `--soak-transport` names, a pool of 3; over HTTPS the URLSession transport trusts the system
    /// bundle.
    func makeSoakAPI() throws -> DataAPI {
        var configuration = api.configuration
        configuration.sessionPoolSize = 3
        switch settings.soakClient {
        case .default, .bare: return DataAPI(configuration: configuration)
        case .urlsession:
            return DataAPI(configuration: configuration.systemTrust,
                           transport: FMURLSessionTransport(idleTimeout: configuration.timeout, maxConnectionsPerHost: 64))
        }
    }

    /// Set-up: the client, the emulator's request log, a container to download (record 1) and a record the
    /// uploads replace (an upload changes the container's URL: the downloads' URL must not change under them).
    func soakSetup() async throws -> SoakDriver {
        let soakAPI = try makeSoakAPI()
        // The emulator keeps a full request log (10,000 entries, its default, set explicitly): once it is
        // full (before warm-up ends), the emulator's RSS slope says what it keeps per request beyond it.
        try await emulator.setSettings(["maxLoggedRequests": 10_000])
        let blob = Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = try await soakAPI.uploadContainer(layout: "Files", recordId: 1, field: "file", data: blob, fileName: "soak.bin")
        guard let uploads = Int(try await soakAPI.createRecord(layout: "Files", fieldData: [:]).recordId) else {
            throw BenchError("no record for the uploads")
        }
        return SoakDriver(client: settings.soakClient, api: soakAPI, state: soakState(total: settings.soakCalls),
                          bareSession: URLSession(configuration: .ephemeral), bareRequests: (1...100).map { rawRequest("records/\($0)") },
                          blob: blob, uploads: uploads)
    }

    /// The counters and samples, printing a line every 10 %.
    func soakState(total: Int) -> SoakState {
        let emulator = self.emulator
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1e6) }
        return SoakState(
            total: total,
            sampler: { calls in
                SoakSample(calls: calls, rss: procStatus("VmRSS") ?? 0, heapInUse: heapInUse(), fds: openDescriptors(),
                           threads: procStatus("Threads").map { $0 / 1024 } ?? 0, time: now(), emulatorRSS: emulator.status("VmRSS") ?? 0,
                           emulatorFDs: emulator.openDescriptors(), emulatorThreads: emulator.threads(), emulatorCPU: emulator.cpuSeconds() ?? 0)
            },
            printer: { sample, previous, slopes in
                var line = "  \(String(format: "%3d", sample.calls * 100 / total)) % \(String(format: "%9d", sample.calls)) calls: "
                    + "RSS \(mb(sample.rss)), heap in use \(mb(sample.heapInUse)), fds \(sample.fds), threads \(sample.threads); "
                    + "emulator RSS \(mb(sample.emulatorRSS)), fds \(sample.emulatorFDs), threads \(sample.emulatorThreads)"
                if let previous, sample.calls > previous.calls, sample.time > previous.time {
                    let calls = Double(sample.calls - previous.calls)
                    line += String(format: ", CPU %.0f µs/call; %.0f calls/s", (sample.emulatorCPU - previous.emulatorCPU) / calls * 1e6,
                                   calls / (Double(sample.time - previous.time) / 1e9))
                }
                if !slopes.client.isNaN { line += String(format: "; RSS slope so far %.1f B/call, emulator %.1f", slopes.client, slopes.emulator) }
                say(line)
            })
    }

    /// Report: failures, the slopes after warm-up, fds and threads first and last, throughput early and late.
    func soakReport(_ state: SoakState, elapsed: Double, emulatorLogCount: Int?) {
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1e6) }
        let warmUp = state.warmUp
        let measured = state.samples.filter { $0.calls >= warmUp }
        let perCall = { (value: (SoakSample) -> Int) in
            slope(measured.map { (Double($0.calls), Double(value($0))) })
        }
        say(String(format: "  %.0f s, %.0f calls/s, load average %.2f; failures: %@", elapsed, Double(state.total) / elapsed, loadAverage(),
                   state.failures.isEmpty ? "none" : state.failures.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")))
        say(String(format: "  after warm-up (%d calls, %d samples): RSS slope %.1f B/call, heap-in-use slope %.1f B/call   target ≤ 16; "
                   + "emulator RSS slope %.1f B/call", warmUp, measured.count, perCall(\.rss), perCall(\.heapInUse), perCall(\.emulatorRSS)))
        guard let first = measured.first, let last = measured.last else { return }
        say("  client: fds \(first.fds) → \(last.fds), threads \(first.threads) → \(last.threads), RSS \(mb(first.rss)) → \(mb(last.rss)); "
            + "emulator: fds \(first.emulatorFDs) → \(last.emulatorFDs), threads \(first.emulatorThreads) → \(last.emulatorThreads), "
            + "RSS \(mb(first.emulatorRSS)) → \(mb(last.emulatorRSS)), request log \(emulatorLogCount.map(String.init) ?? "?") entries")
        // Throughput and the emulator's CPU per call, first tenth after warm-up against the last tenth.
        let tenth = measured.filter { $0.calls <= first.calls + (last.calls - first.calls) / 10 }.last
        let lastTenth = measured.filter { $0.calls >= last.calls - (last.calls - first.calls) / 10 }.first
        if let tenth, let lastTenth, tenth.calls > first.calls, last.calls > lastTenth.calls {
            func rate(_ a: SoakSample, _ b: SoakSample) -> (callsPerSecond: Double, cpu: Double) {
                let calls = Double(b.calls - a.calls)
                return (calls / (Double(b.time - a.time) / 1e9), (b.emulatorCPU - a.emulatorCPU) / calls * 1e6)
            }
            let early = rate(first, tenth), late = rate(lastTenth, last)
            say(String(format: "  throughput %.0f → %.0f calls/s (%.2f×), emulator CPU %.0f → %.0f µs/call (first and last tenth after warm-up)",
                       early.callsPerSecond, late.callsPerSecond, late.callsPerSecond / early.callsPerSecond, early.cpu, late.cpu))
        }
    }
}

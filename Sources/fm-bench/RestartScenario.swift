import Foundation
import SwiftFM
#if canImport(Glibc)
import Glibc
#endif

/// Calls, failures (code → count) and the longest call of one client in the restart scenario.
final class RestartTally: @unchecked Sendable {
    // @unchecked: every field is behind `lock`.
    let lock = NSLock()
    var calls = 0
    var failures: [String: Int] = [:]
    var longest = 0.0
    func add(code: String, seconds: Double) {
        lock.withLock {
            calls += 1
            if code != "0" { failures[code, default: 0] += 1 }
            longest = max(longest, seconds)
        }
    }
}

/// The restart scenario's emulator (replaced once) and its front, and when the readers stop.
final class RestartServer: @unchecked Sendable {
    // @unchecked: every var is behind `lock`.
    let lock = NSLock()
    var current: EmulatorProcess
    let front: TLSFront?
    private var stopNanoseconds = UInt64.max

    init(_ served: Served) {
        current = served.emulator
        front = served.front
    }

    var stopAt: UInt64 { lock.withLock { stopNanoseconds } }
    func stopReaders() { lock.withLock { stopNanoseconds = now() } }

    func stop() {
        lock.withLock { current }.stop()
        front?.stop()
    }
}

extension Bench {
    // MARK: Scenario: reads across a server restart

    /// Reads with `timeout = 30`, called back from 8 threads that each wait on a semaphore (the way a
    /// Dispatch daemon calls), against an fm-emulator process of their own (with `--tls`, behind a TLS front of
    /// its own that stays up: nginx answers 502 while the emulator is away): 2 s after the reads start it is
    /// killed (SIGKILL: every connection reset, every session gone), 5 s later a new one starts on the same
    /// port, and the reads go on for 3 s more. Two clients read side by side: the default policy
    /// (`FMRetryPolicy.standard`, which rides out a restart) and `FMRetryPolicy(maxAttempts: 3)` (the earlier
    /// default). For each: calls, failures (target 0 for the default) and the longest call.
    func restart() async throws {
        if case .givenFront = reach { throw BenchError("restart starts an emulator of its own: use --tls (a front fm-bench starts) or plain http") }
        let served = try Served(schema: directory.appendingPathComponent("schema.json"), port: 0, reach: reach)
        let server = RestartServer(served)
        defer { server.stop() }
        let clients = restartClients(url: served.url)
        let threadsPerClient = 4
        let finished = DispatchSemaphore(value: 0)
        for (_, api, tally) in clients {
            for thread in 0..<threadsPerClient {
                Thread.detachNewThread {
                    Self.restartReader(api, tally, first: thread, server: server)
                    finished.signal()
                }
            }
        }
        let back = try await restartEmulator(server)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                for _ in 0..<(threadsPerClient * clients.count) { finished.wait() }
                done.resume()
            }
        }
        restartReport(clients, back: back, threadsPerClient: threadsPerClient)
    }

    /// Set-up: the two clients, logged in and warm.
    func restartClients(url: URL) -> [(String, DataAPI, RestartTally)] {
        func client(_ retry: FMRetryPolicy) -> DataAPI {
            var configuration = api.configuration
            configuration.host = url.absoluteString
            configuration.timeout = 30
            configuration.retry = retry
            return DataAPI(configuration: configuration)
        }
        let clients = [("default (.standard)", client(.standard), RestartTally()), ("3 attempts", client(FMRetryPolicy(maxAttempts: 3)), RestartTally())]
        for (_, api, _) in clients {
            let done = DispatchSemaphore(value: 0)
            api.getRecord(layout: "Bench", recordId: 1) { _, _ in done.signal() }
            done.wait()
        }
        return clients
    }

    /// Run, one reader thread: a read, waited on, until the server says stop.
    static func restartReader(_ api: DataAPI, _ tally: RestartTally, first: Int, server: RestartServer) {
        var index = first
        while now() < server.stopAt {
            index += 1
            let started = now()
            let done = DispatchSemaphore(value: 0)
            api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, code in
                tally.add(code: code, seconds: Double(now() - started) / 1e9)
                done.signal()
            }
            done.wait()
        }
    }

    /// Run, the server's side: 2 s of reads, SIGKILL, 5 s away, a new emulator on the same port, 3 s more;
    /// returns how long it was away.
    func restartEmulator(_ server: RestartServer) async throws -> Double {
        defer { server.stopReaders() } // on the way out, whatever failed: no reader keeps going
        let first = server.lock.withLock { server.current }
        guard let port = first.url.port else { throw BenchError("the restart emulator has no port") }
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let killedAt = now()
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        try await Task.sleep(nanoseconds: 5_000_000_000)
        let second = try EmulatorProcess(schema: directory.appendingPathComponent("schema.json"), port: port)
        let back = Double(now() - killedAt) / 1e9
        server.lock.withLock { server.current = second }
        try await Task.sleep(nanoseconds: 3_000_000_000)
        return back
    }

    /// Report: each client's calls, failures and longest call.
    func restartReport(_ clients: [(String, DataAPI, RestartTally)], back: Double, threadsPerClient: Int) {
        say("reads across a restart over \(baseURL.scheme ?? "http"): fm-emulator killed (SIGKILL) 2 s into the reads, a new one on the same port "
            + "\(String(format: "%.1f", back)) s later, reads for 3 s more; timeout 30 s, \(threadsPerClient) threads per client, each calling back "
            + String(format: "and waiting on a semaphore (load average %.2f):", loadAverage()))
        for (name, _, tally) in clients {
            let (calls, failures, longest) = tally.lock.withLock { (tally.calls, tally.failures, tally.longest) }
            let failed = failures.values.reduce(0, +)
            let codes = failures.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
            say("  \(name): \(calls) calls, \(failed) failed\(failed > 0 ? " (\(codes))" : ""), longest call \(String(format: "%.2f s", longest))"
                + (name.hasPrefix("default") ? "   target: 0 failed" : ""))
        }
    }
}

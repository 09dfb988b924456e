import Foundation
import SwiftFM
#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    // MARK: Scenario: reads across a server restart

    /// Reads with `timeout = 30`, called back from 8 threads that each wait on a semaphore (the way a
    /// Dispatch daemon calls), against an fm-emulator process of their own: 2 s after the reads start it is
    /// killed (SIGKILL: every connection reset, every session gone), 5 s later a new one starts on the same
    /// port, and the reads go on for 3 s more. Two clients read side by side: the default policy
    /// (`FMRetryPolicy.standard`, which rides out a restart) and `FMRetryPolicy(maxAttempts: 3)` (the earlier
    /// default). For each: calls, failures (target 0 for the default) and the longest call.
    func restart() async throws {
        let first = try EmulatorProcess(schema: directory.appendingPathComponent("schema.json"), port: 0)
        guard let port = first.url.port else { first.stop(); throw BenchError("the restart emulator has no port") }
        final class Server: @unchecked Sendable { let lock = NSLock(); var current: EmulatorProcess? }
        let server = Server()
        server.current = first
        defer { server.lock.withLock { server.current }?.stop() }

        func client(_ retry: FMRetryPolicy) -> DataAPI {
            var configuration = FMConfiguration(host: first.url.absoluteString, database: "Bench", username: "admin", password: "admin")
            configuration.timeout = 30
            configuration.retry = retry
            return DataAPI(configuration: configuration)
        }
        /// Calls, failures (code → count) and the longest call of one client.
        final class Tally: @unchecked Sendable {
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
        let clients = [("default (.standard)", client(.standard), Tally()), ("3 attempts", client(FMRetryPolicy(maxAttempts: 3)), Tally())]
        for (_, api, _) in clients { // logged in and warm
            let done = DispatchSemaphore(value: 0)
            api.getRecord(layout: "Bench", recordId: 1) { _, _ in done.signal() }
            done.wait()
        }
        let threadsPerClient = 4
        final class StopAt: @unchecked Sendable {
            let lock = NSLock()
            var nanoseconds = UInt64.max
            var value: UInt64 { lock.withLock { nanoseconds } }
        }
        let stopAt = StopAt()
        let finished = DispatchSemaphore(value: 0)
        for (_, api, tally) in clients {
            for thread in 0..<threadsPerClient {
                Thread.detachNewThread {
                    var index = thread
                    while DispatchTime.now().uptimeNanoseconds < stopAt.value {
                        index += 1
                        let started = DispatchTime.now().uptimeNanoseconds
                        let done = DispatchSemaphore(value: 0)
                        api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, code in
                            tally.add(code: code, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                            done.signal()
                        }
                        done.wait()
                    }
                    finished.signal()
                }
            }
        }
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let killedAt = DispatchTime.now().uptimeNanoseconds
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        try await Task.sleep(nanoseconds: 5_000_000_000)
        let second = try EmulatorProcess(schema: directory.appendingPathComponent("schema.json"), port: port)
        let back = Double(DispatchTime.now().uptimeNanoseconds - killedAt) / 1e9
        server.lock.withLock { server.current = second }
        try await Task.sleep(nanoseconds: 3_000_000_000)
        stopAt.lock.withLock { stopAt.nanoseconds = DispatchTime.now().uptimeNanoseconds }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                for _ in 0..<(threadsPerClient * clients.count) { finished.wait() }
                done.resume()
            }
        }
        say("reads across a restart: fm-emulator killed (SIGKILL) 2 s into the reads, a new one on the same port \(String(format: "%.1f", back)) s later, "
            + "reads for 3 s more; timeout 30 s, \(threadsPerClient) threads per client, each calling back and waiting on a semaphore:")
        for (name, _, tally) in clients {
            let (calls, failures, longest) = tally.lock.withLock { (tally.calls, tally.failures, tally.longest) }
            let failed = failures.values.reduce(0, +)
            let codes = failures.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
            say("  \(name): \(calls) calls, \(failed) failed\(failed > 0 ? " (\(codes))" : ""), longest call \(String(format: "%.2f s", longest))"
                + (name.hasPrefix("default") ? "   target: 0 failed" : ""))
        }
    }
}

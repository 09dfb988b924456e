import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: session pool

    /// Reads called back from threads, as a Dispatch daemon calls (no Task around the call: a thread
    /// starts them and waits on a semaphore), with the emulator serialising each session (one request at a
    /// time per token) and holding each request 5 ms: a pool of 4 sessions against a pool of 1, rounds
    /// interleaved. Then a pool of 4 whose second and later logins hang: every call must complete "0" within
    /// twice the single-session time.
    func pool() async throws {
        let calls = 40
        try await emulator.setSettings(["serializesSessions": true, "serviceTime": 0.005])
        func client(_ size: Int) -> DataAPI {
            var configuration = api.configuration
            configuration.sessionPoolSize = size
            return DataAPI(configuration: configuration)
        }
        /// `calls` reads started from a daemon's thread; returns their codes once all called back.
        func burst(_ api: DataAPI) async -> [String] {
            await withCheckedContinuation { (done: CheckedContinuation<[String], Never>) in
                Thread.detachNewThread {
                    final class Codes: @unchecked Sendable { let lock = NSLock(); var all: [String] = [] }
                    let codes = Codes()
                    let finished = DispatchSemaphore(value: 0)
                    for index in 0..<calls {
                        api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, code in
                            codes.lock.withLock { codes.all.append(code) }
                            finished.signal()
                        }
                    }
                    for _ in 0..<calls { finished.wait() }
                    done.resume(returning: codes.lock.withLock { codes.all })
                }
            }
        }
        let pools = [("pool of 4", client(4)), ("pool of 1", client(1))]
        for (_, api) in pools { _ = await burst(api) } // warm up: every session of each pool is open
        let tally = try await interleaved(pools.map { pool in (pool.0, { _ = await burst(pool.1) }) }, rounds: settings.rounds, calls: 1)
        say("session pool, \(calls) concurrent reads called back from a thread, the emulator serialising each session, 5 ms service time (\(settings.rounds) rounds):")
        say("  pool of 1 \(String(format: "%.0f ms", tally.median("pool of 1") * 1e3)), pool of 4 \(String(format: "%.0f ms", tally.median("pool of 4") * 1e3))")
        say("  throughput, pool of 4 / pool of 1  \(tally.ratioText("pool of 1", over: "pool of 4"))   target ≥ 3.5")

        // Second and later logins hang (30 s each, past the client's own bound): the first session serves all.
        let single = tally.median("pool of 1")
        let hanging = client(4)
        _ = await burst(client(1))
        let first = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            hanging.getRecord(layout: "Bench", recordId: 1) { _, code in done.resume(returning: code) }
        }
        try await emulator.injectFault(["fault": "delay", "seconds": 30, "count": 3, "matching": "/sessions"])
        let started = DispatchTime.now().uptimeNanoseconds
        let codes = await burst(hanging)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        try await emulator.clearFaults()
        try await emulator.setSettings(["serializesSessions": false, "serviceTime": 0])
        let ok = codes.filter { $0 == "0" }.count
        say("  pool of 4, second and later logins hanging: \(ok) of \(calls) calls \"0\" (first login \(first)) in \(String(format: "%.0f ms", elapsed * 1e3)), "
            + "\(String(format: "%.2f", elapsed / max(single, 1e-9)))× the single-session time   target: all \"0\" within 2×")
    }
}

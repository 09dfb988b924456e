import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: session pool

    /// 200 concurrent reads with the emulator serialising each session (one request at a time per token)
    /// and holding each request 5 ms: a pool of 4 sessions against a pool of 1, rounds interleaved.
    func pool() async throws {
        let calls = 200
        try await emulator.setSettings(["serializesSessions": true, "serviceTime": 0.005])
        func client(_ size: Int) -> DataAPI {
            var configuration = api.configuration
            configuration.sessionPoolSize = size
            return DataAPI(configuration: configuration)
        }
        let pools = [("pool of 4", client(4)), ("pool of 1", client(1))]
        func burst(_ api: DataAPI) async {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<calls {
                    group.addTask {
                        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                            api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, _ in done.resume() }
                        }
                    }
                }
            }
        }
        for (_, api) in pools { await burst(api) } // warm up: every session of each pool is open
        let tally = try await interleaved(pools.map { pool in (pool.0, { await burst(pool.1) }) }, rounds: settings.rounds, calls: 1)
        try await emulator.setSettings(["serializesSessions": false, "serviceTime": 0])
        say("session pool, \(calls) concurrent reads, the emulator serialising each session, 5 ms service time (\(settings.rounds) rounds):")
        say("  pool of 1 \(String(format: "%.0f ms", tally.median("pool of 1") * 1e3)), pool of 4 \(String(format: "%.0f ms", tally.median("pool of 4") * 1e3))")
        say("  throughput, pool of 4 / pool of 1  \(tally.ratioText("pool of 1", over: "pool of 4"))   target ≥ 3")
    }
}

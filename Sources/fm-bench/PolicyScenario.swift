import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: retries and the concurrency cap

    /// What the retry policy and the concurrency cap cost a call that needs neither of them: get one record with
    /// `FMRetryPolicy.standard` and `maxConcurrentRequests: 8` against the same call with `.none` and no cap
    /// (each call still has its deadline and size cap: they cannot be turned off). Interleaved call by call,
    /// the order rotating; min / median / max over rounds of the per-round ratio. Target: within 2 %.
    func policy() async throws {
        func client(retry: FMRetryPolicy, cap: Int?) -> DataAPI {
            var configuration = api.configuration
            configuration.retry = retry
            configuration.maxConcurrentRequests = cap
            return DataAPI(configuration: configuration)
        }
        let bare = client(retry: .none, cap: nil)
        let bounded = client(retry: .standard, cap: 8)
        func get(_ api: DataAPI) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                api.getRecord(layout: "Bench", recordId: 1) { _, _ in continuation.resume() }
            }
        }
        let contenders: [(String, DataAPI)] = [("no policy", bare), ("standard + cap", bounded)]
        for _ in 0..<100 { for (_, api) in contenders { await get(api) } } // logs both in, warms both up
        let tally = try await interleaved(contenders.map { contender in (contender.0, { await get(contender.1) }) },
                                      rounds: settings.rounds, calls: settings.calls)
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("retries and the cap, get one record (\(settings.rounds) rounds × \(settings.calls) calls, interleaved call by call):")
        say("  no policy (.none, no cap) \(micro("no policy")), .standard + maxConcurrentRequests 8 \(micro("standard + cap"))")
        say("  standard + cap / no policy  \(tally.ratioText("standard + cap", over: "no policy"))   target ≤ 1.02")
    }
}

import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: retries and the concurrency cap

    /// What the retry policy and the concurrency cap cost a call that needs neither of them: get one record with
    /// `FMRetryPolicy.standard` and `maxConcurrentRequests: 8` against the same call with `.none` and no cap
    /// (each call still has its deadline and size cap: they cannot be turned off). Called from a plain thread,
    /// each call semaphore-waited, interleaved call by call, the order rotating; min / median / max over rounds
    /// of the per-round ratio. Target: within 2 %.
    func policy() async throws {
        func client(retry: FMRetryPolicy, cap: Int?) -> DataAPI {
            var configuration = api.configuration
            configuration.retry = retry
            configuration.maxConcurrentRequests = cap
            return DataAPI(configuration: configuration)
        }
        let bare = client(retry: .none, cap: nil)
        let bounded = client(retry: .standard, cap: 8)
        let wait = DispatchSemaphore(value: 0)
        let contenders: [ThreadContender] = [("no policy", { callbackGetRecord(bare, wait: wait) }),
                                             ("standard + cap", { callbackGetRecord(bounded, wait: wait) })]
        guard let tally = try await measuredOnThread(contenders) else { return }
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("retries and the cap, get one record from a thread, semaphore-waited (\(settings.rounds) rounds × \(settings.calls) calls, interleaved call by call):")
        say("  no policy (.none, no cap) \(micro("no policy")), .standard + maxConcurrentRequests 8 \(micro("standard + cap"))")
        say("  standard + cap / no policy  \(tally.ratioText("standard + cap", over: "no policy"))   target ≤ 1.02")
    }
}

import Foundation
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Gets one record through `api`'s callback API the way a Dispatch daemon calls it: from the calling plain
/// thread, waited for with `wait` (no Task around the callback).
func callbackGetRecord(_ api: DataAPI, wait: DispatchSemaphore) {
    api.getRecord(layout: "Bench", recordId: 1) { _, _ in wait.signal() }
    wait.wait()
}

extension Bench {
    // MARK: Scenario: per call

    /// Get one record, measured the way a Dispatch daemon calls: from a plain thread (no Task around the
    /// callback API), each call waited on with a semaphore. The baselines are measured the same way: a raw
    /// `URLSession` data task whose completion signals the semaphore (bytes only, and with
    /// `JSONSerialization` of the body in that completion); the async API against the same raw request
    /// bridged into async the same way (each awaited in a Task the thread starts and waits for). Every
    /// contender is interleaved call by call, the order rotating; figures are min / median / max over rounds.
    /// Over HTTPS (`--tls`, `--base-url`) every contender goes through the same TLS front.
    func perCall() async throws {
        #if canImport(Glibc)
        // On Linux the default transport is FMCurlTransport; URLSession is the raw baseline's stack.
        let overURLSession: DataAPI? = DataAPI(
            configuration: api.configuration.systemTrust,
            transport: FMURLSessionTransport(idleTimeout: api.configuration.timeout, maxConnectionsPerHost: api.configuration.maxConcurrentRequests ?? 64))
        #else
        let overURLSession: DataAPI? = nil
        #endif
        // Every contender answers, or nothing is measured (a refused handshake is quick, not fast).
        _ = try await rawGet(session, rawRequest("records/1"))
        _ = try await api.getRecord(layout: "Bench", recordId: 1)
        _ = try await overURLSession?.getRecord(layout: "Bench", recordId: 1)
        let contenders = perCallContenders(overURLSession: overURLSession)
        guard let tally = try await measuredOnThread(contenders) else {
            await overURLSession?.shutdown()
            return
        }
        perCallReport(tally, overURLSession: overURLSession != nil)
        await overURLSession?.shutdown()
    }

    /// Set-up: the contenders, each a call and its wait (they share one semaphore: one call at a time).
    func perCallContenders(overURLSession: DataAPI?) -> [ThreadContender] {
        let request = rawRequest("records/1")
        let session = self.session
        let api = self.api
        let wait = DispatchSemaphore(value: 0)
        @Sendable func raw(parse: Bool) {
            session.dataTask(with: request) { data, response, _ in
                if parse, let data, (response as? HTTPURLResponse)?.statusCode == 200 {
                    _ = try? JSONSerialization.jsonObject(with: data)
                }
                wait.signal()
            }.resume()
            wait.wait()
        }
        @Sendable func callback(_ api: DataAPI) { callbackGetRecord(api, wait: wait) }
        /// The async bridge both async contenders pay: a Task started from the thread, waited on.
        @Sendable func inTask(_ body: @escaping @Sendable () async -> Void) {
            Task { await body(); wait.signal() }
            wait.wait()
        }
        var contenders: [ThreadContender] = [
            ("raw", { raw(parse: false) }),
            ("raw+JSON", { raw(parse: true) }),
            ("callback", { callback(api) }),
            ("raw async", { inTask { _ = try? await rawGet(session, request) } }),
            ("async", { inTask { _ = try? await api.getRecord(layout: "Bench", recordId: 1) } }),
        ]
        if let overURLSession {
            contenders.append(("callback/URLSession", { callback(overURLSession) }))
            contenders.append(("async/URLSession", { inTask { _ = try? await overURLSession.getRecord(layout: "Bench", recordId: 1) } }))
        }
        return contenders
    }

    /// Runs `contenders` on one plain thread, interleaved (``interleavedOnThread(_:rounds:calls:)``), and returns
    /// the tally; with `--profile NAME`, runs only that contender as many times (after 100 to warm up), prints
    /// its time per call and returns `nil` (for a profiler, e.g. `valgrind --tool=callgrind`).
    func measuredOnThread(_ contenders: [ThreadContender]) async throws -> Tally? {
        guard let profiled = settings.profile else {
            return await interleavedOnThread(contenders, rounds: settings.rounds, calls: settings.calls)
        }
        guard let contender = contenders.first(where: { $0.name == profiled }) else {
            throw BenchError("--profile: no contender \(profiled) (known: \(contenders.map(\.name).joined(separator: ", ")))")
        }
        let calls = settings.rounds * settings.calls * contenders.count
        let seconds = await withCheckedContinuation { continuation in
            let thread = Thread {
                for _ in 0..<100 { contender.run() }
                let start = now()
                for _ in 0..<calls { contender.run() }
                continuation.resume(returning: Double(now() - start) / 1e9)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        say(String(format: "profile %@: %.1f µs per call over %d calls", profiled, seconds / Double(calls) * 1e6, calls))
        return nil
    }

    /// Report: per-call times and the ratios (targets: ≤ 0.75 over http, ≤ 0.80 over https).
    func perCallReport(_ tally: Tally, overURLSession: Bool) {
        let rounds = settings.rounds, calls = settings.calls
        let scheme = baseURL.scheme ?? "http"
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(calls) * 1e6) }
        say("per call over \(scheme), get one record from a thread, semaphore-waited (\(rounds) rounds × \(calls) calls, interleaved call by call; "
            + String(format: "load average %.2f):", loadAverage()))
        say("  raw URLSession bytes-only \(micro("raw")), raw + JSONSerialization \(micro("raw+JSON")), callback \(micro("callback")); "
            + "raw bridged to async \(micro("raw async")), async \(micro("async"))")
        say("  callback / raw bytes-only      \(tally.ratioText("callback", over: "raw"))   target ≤ \(scheme == "https" ? "0.80" : "0.75")")
        say("  async    / raw bridged (Task)  \(tally.ratioText("async", over: "raw async"))   target ≤ 1.05")
        say("  callback / raw + JSON          \(tally.ratioText("callback", over: "raw+JSON"))   target ≤ 1.00")
        if overURLSession {
            say("  the same over FMURLSessionTransport (the default on Linux is FMCurlTransport): callback \(micro("callback/URLSession")), async \(micro("async/URLSession"))")
            say("  callback / raw bytes-only      \(tally.ratioText("callback/URLSession", over: "raw"))   (URLSession transport)")
            say("  async    / raw bridged (Task)  \(tally.ratioText("async/URLSession", over: "raw async"))   (URLSession transport)")
            say("  callback / raw + JSON          \(tally.ratioText("callback/URLSession", over: "raw+JSON"))   (URLSession transport)")
        }
    }
}

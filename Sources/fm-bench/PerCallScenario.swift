import Foundation
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Bench {
    // MARK: Scenario: per call

    /// Get one record, measured the way a Dispatch daemon calls: from a plain thread (no Task around the
    /// callback API), each call waited on with a semaphore. The baselines are measured the same way: a raw
    /// `URLSession` data task whose completion signals the semaphore (bytes only, and with
    /// `JSONSerialization` of the body in that completion); the async API against the same raw request
    /// bridged into async the same way (each awaited in a Task the thread starts and waits for). Every
    /// contender is interleaved call by call, the order rotating; figures are min / median / max over rounds.
    func perCall() async throws {
        let request = rawRequest("records/1")
        let session = self.session
        let api = self.api
        #if canImport(Glibc)
        // On Linux an http:// host gets FMSocketTransport by default; URLSession is the raw baseline's stack.
        let overURLSession: DataAPI? = DataAPI(
            configuration: api.configuration,
            transport: FMURLSessionTransport(idleTimeout: api.configuration.timeout, maxConnectionsPerHost: api.configuration.maxConcurrentRequests ?? 64))
        #else
        let overURLSession: DataAPI? = nil
        #endif

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
        @Sendable func callback(_ api: DataAPI) {
            api.getRecord(layout: "Bench", recordId: 1) { _, _ in wait.signal() }
            wait.wait()
        }
        /// The async bridge both async contenders pay: a Task started from the thread, waited on.
        @Sendable func inTask(_ body: @escaping @Sendable () async -> Void) {
            Task { await body(); wait.signal() }
            wait.wait()
        }
        var contenders: [(name: String, run: @Sendable () -> Void)] = [
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
        let rounds = settings.rounds, calls = settings.calls
        let measured = contenders
        let tally: Tally = await withCheckedContinuation { continuation in
            let thread = Thread {
                for _ in 0..<100 { for contender in measured { contender.run() } } // warm up every path
                var tally = Tally()
                for round in 0..<rounds {
                    for call in 0..<calls {
                        for offset in 0..<measured.count {
                            let contender = measured[(round + call + offset) % measured.count]
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
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(calls) * 1e6) }
        say("per call, get one record from a thread, semaphore-waited (\(rounds) rounds × \(calls) calls, interleaved call by call):")
        say("  raw URLSession bytes-only \(micro("raw")), raw + JSONSerialization \(micro("raw+JSON")), callback \(micro("callback")); "
            + "raw bridged to async \(micro("raw async")), async \(micro("async"))")
        say("  callback / raw bytes-only      \(tally.ratioText("callback", over: "raw"))   target ≤ 1.05")
        say("  async    / raw bridged (Task)  \(tally.ratioText("async", over: "raw async"))   target ≤ 1.05")
        say("  callback / raw + JSON          \(tally.ratioText("callback", over: "raw+JSON"))   target ≤ 1.00")
        if let overURLSession {
            say("  the same over FMURLSessionTransport (the default for http:// is FMSocketTransport on Linux): callback \(micro("callback/URLSession")), async \(micro("async/URLSession"))")
            say("  callback / raw bytes-only      \(tally.ratioText("callback/URLSession", over: "raw"))   (URLSession transport)")
            say("  async    / raw bridged (Task)  \(tally.ratioText("async/URLSession", over: "raw async"))   (URLSession transport)")
            say("  callback / raw + JSON          \(tally.ratioText("callback/URLSession", over: "raw+JSON"))   (URLSession transport)")
            await overURLSession.shutdown()
        }
    }
}

import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: transport

    /// Get one record through callbacks, SwiftFM over ``FMCurlTransport`` (the default on Linux),
    /// ``FMSocketTransport`` and ``FMURLSessionTransport`` (same configuration), interleaved call by call: what
    /// each transport costs or saves per call (Linux only).
    func transport() async throws {
        #if canImport(Glibc)
        guard !reach.isHTTPS else {
            say("transport: FMSocketTransport speaks plain HTTP only; run this scenario without --tls/--base-url (percall compares "
                + "FMCurlTransport with FMURLSessionTransport over HTTPS)")
            return
        }
        let configuration = api.configuration
        let socketAPI = DataAPI(configuration: configuration, transport: FMSocketTransport(idleTimeout: configuration.timeout))
        let sessionAPI = DataAPI(configuration: configuration, transport: FMURLSessionTransport(idleTimeout: configuration.timeout, maxConnectionsPerHost: 64))
        let curlAPI = DataAPI(configuration: configuration, transport: FMCurlTransport(idleTimeout: configuration.timeout, maxConnectionsPerHost: 64))
        func call(_ api: DataAPI) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                api.getRecord(layout: "Bench", recordId: 1) { _, _ in continuation.resume() }
            }
        }
        let contenders: [(String, () async throws -> Void)] = [
            ("socket", { await call(socketAPI) }),
            ("urlsession", { await call(sessionAPI) }),
            ("curl", { await call(curlAPI) }),
        ]
        for _ in 0..<100 { for (_, run) in contenders { try await run() } } // warm up: logged in, connections open
        let tally = try await interleaved(contenders, rounds: settings.rounds, calls: settings.calls)
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("transport, get one record through callbacks (\(settings.rounds) rounds × \(settings.calls) calls, interleaved call by call):")
        say("  over FMSocketTransport \(micro("socket")), over FMURLSessionTransport \(micro("urlsession"))")
        say("  socket / URLSession  \(tally.ratioText("socket", over: "urlsession"))   target ≤ 1.00")
        say("  over FMCurlTransport \(micro("curl")): curl / URLSession  \(tally.ratioText("curl", over: "urlsession")), curl / socket  \(tally.ratioText("curl", over: "socket"))")
        // The same, each answer gzip-encoded by the emulator (its gzip holds stored blocks: this measures the
        // framing, checks and copies of content decoding, not Huffman decoding).
        let answers = 3 * (settings.rounds * settings.calls + 100)
        try await emulator.injectFault(["fault": "gzip", "count": answers, "matching": "/records/1"])
        for _ in 0..<50 { for (_, run) in contenders { try await run() } }
        let gzipTally = try await interleaved(contenders, rounds: settings.rounds, calls: settings.calls)
        try await emulator.clearFaults()
        let gzipMicro = { (name: String) in String(format: "%.1f µs", gzipTally.median(name) / Double(settings.calls) * 1e6) }
        say("  answers gzip-encoded: over FMSocketTransport \(gzipMicro("socket")), over FMURLSessionTransport \(gzipMicro("urlsession"))")
        say("  socket / URLSession  \(gzipTally.ratioText("socket", over: "urlsession"))   target ≤ 1.00")
        say("  answers gzip-encoded over FMCurlTransport \(gzipMicro("curl")): curl / URLSession  \(gzipTally.ratioText("curl", over: "urlsession")), curl / socket  \(gzipTally.ratioText("curl", over: "socket"))")
        await socketAPI.shutdown()
        await sessionAPI.shutdown()
        await curlAPI.shutdown()
        #else
        say("transport: the socket transport is Linux-only")
        #endif
    }
}

import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: transport

    /// Get one record through callbacks, SwiftFM over ``FMCurlTransport`` (the default on Linux) and
    /// ``FMURLSessionTransport`` (same configuration), interleaved call by call, plain and with gzip-encoded
    /// answers: what libcurl driven directly saves per call over corelibs URLSession (Linux only). Over HTTPS the
    /// URLSession contender trusts the system bundle (`--tls` puts the CA there).
    func transport() async throws {
        #if canImport(Glibc)
        let configuration = api.configuration
        let sessionAPI = DataAPI(configuration: configuration.systemTrust,
                                 transport: FMURLSessionTransport(idleTimeout: configuration.timeout, maxConnectionsPerHost: 64))
        let curlAPI = DataAPI(configuration: configuration, transport: FMCurlTransport(
            idleTimeout: configuration.timeout, maxConnectionsPerHost: 64, tls: configuration.tls, proxy: configuration.proxy))
        func call(_ api: DataAPI) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                api.getRecord(layout: "Bench", recordId: 1) { _, _ in continuation.resume() }
            }
        }
        let contenders: [(String, () async throws -> Void)] = [
            ("urlsession", { await call(sessionAPI) }),
            ("curl", { await call(curlAPI) }),
        ]
        for _ in 0..<100 { for (_, run) in contenders { try await run() } } // warm up: logged in, connections open
        let tally = try await interleaved(contenders, rounds: settings.rounds, calls: settings.calls)
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("transport, get one record through callbacks (\(settings.rounds) rounds × \(settings.calls) calls, interleaved call by call):")
        say("  over FMCurlTransport \(micro("curl")), over FMURLSessionTransport \(micro("urlsession"))")
        say("  curl / URLSession  \(tally.ratioText("curl", over: "urlsession"))")
        // The same, each answer gzip-encoded by the emulator (its gzip holds stored blocks: this measures the
        // framing, checks and copies of content decoding, not Huffman decoding).
        let answers = 2 * (settings.rounds * settings.calls + 100)
        try await emulator.injectFault(["fault": "gzip", "count": answers, "matching": "/records/1"])
        for _ in 0..<50 { for (_, run) in contenders { try await run() } }
        let gzipTally = try await interleaved(contenders, rounds: settings.rounds, calls: settings.calls)
        try await emulator.clearFaults()
        let gzipMicro = { (name: String) in String(format: "%.1f µs", gzipTally.median(name) / Double(settings.calls) * 1e6) }
        say("  answers gzip-encoded: over FMCurlTransport \(gzipMicro("curl")), over FMURLSessionTransport \(gzipMicro("urlsession"))")
        say("  curl / URLSession  \(gzipTally.ratioText("curl", over: "urlsession"))")
        await sessionAPI.shutdown()
        await curlAPI.shutdown()
        #else
        say("transport: FMCurlTransport is Linux-only")
        #endif
    }
}

import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: transport

    /// Get one record through callbacks from a plain thread (each call semaphore-waited), SwiftFM over ``FMCurlTransport`` (the default on Linux) and
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
        let wait = DispatchSemaphore(value: 0)
        let contenders: [ThreadContender] = [
            ("urlsession", { callbackGetRecord(sessionAPI, wait: wait) }),
            ("curl", { callbackGetRecord(curlAPI, wait: wait) }),
        ]
        guard let tally = try await measuredOnThread(contenders) else { return }
        let micro = { (name: String) in String(format: "%.1f µs", tally.median(name) / Double(settings.calls) * 1e6) }
        say("transport, get one record through callbacks from a thread, semaphore-waited (\(settings.rounds) rounds × \(settings.calls) calls, interleaved call by call):")
        say("  over FMCurlTransport \(micro("curl")), over FMURLSessionTransport \(micro("urlsession"))")
        say("  curl / URLSession  \(tally.ratioText("curl", over: "urlsession"))")
        // The same, each answer gzip-encoded by the emulator (its gzip holds stored blocks: this measures the
        // framing, checks and copies of content decoding, not Huffman decoding).
        let answers = 2 * (settings.rounds * settings.calls + 100)
        try await emulator.injectFault(["fault": "gzip", "count": answers, "matching": "/records/1"])
        let gzipTally = await interleavedOnThread(contenders, rounds: settings.rounds, calls: settings.calls)
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

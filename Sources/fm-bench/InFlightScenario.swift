import Foundation
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Scenario: in flight

/// One burst's outcome.
struct InFlightBurst {
    /// The most requests the emulator held at once during the burst (its `maxInFlight` counter, logins included).
    var mostAtServer: Int
    /// Codes other than "0", by code (completions that never came count as "lost").
    var failures: [String: Int]
    /// Logins the emulator answered during the burst.
    var logins: Int
    var seconds: Double

    var failureText: String {
        failures.isEmpty ? "0 failed" : failures.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
    }
    var failed: Int { failures.values.reduce(0, +) }
}

extension Bench {
    /// Issue 16's in-flight target: `maxConcurrentRequests = 32`, a pool of 32, the emulator (in its own
    /// process) holding each request 200 ms: 4 threads start 32 reads each through callbacks (no Task around
    /// a call, as a Dispatch daemon calls) and wait for them on a semaphore, timeout 30 s. For each transport
    /// the package ships (the default one for this host, FMURLSessionTransport, FMSocketTransport on Linux):
    /// a first burst on a fresh client (the pool grows from nothing, its logins held too), then bursts on
    /// the open pool. Prints the most requests at the server at once (the emulator's `maxInFlight`), the
    /// calls that failed or timed out, the logins and the wall time. The baseline is the same burst through
    /// a bare `URLSession` left at its defaults (no `httpMaximumConnectionsPerHost`): the limit it hides.
    func inFlight() async throws {
        let allowed = 32, threads = 4, hold = 0.2, timeout: TimeInterval = 30
        let calls = threads * allowed
        let warmBursts = max(1, min(settings.rounds, 3))
        var configuration = api.configuration
        configuration.maxConcurrentRequests = allowed
        configuration.sessionPoolSize = allowed
        configuration.timeout = timeout
        let emulator = self.emulator

        /// Starts call `index`; `done` runs once with its code.
        typealias Start = @Sendable (_ index: Int, _ done: @escaping @Sendable (String) -> Void) -> Void
        func swiftFM(_ api: DataAPI) -> Start {
            { index, done in api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, code in done(code) } }
        }
        /// `calls` calls from `threads` threads, each waiting on a semaphore for its own; measured at the emulator.
        func burst(_ start: @escaping Start) async throws -> InFlightBurst {
            let before = try await emulator.counters()
            try await emulator.resetMaxInFlight()
            let began = now()
            let codes = await withCheckedContinuation { (finished: CheckedContinuation<[String], Never>) in
                final class Codes: @unchecked Sendable { let lock = NSLock(); var all: [String] = []; var threadsLeft = 0 }
                let codes = Codes()
                codes.threadsLeft = threads
                for thread in 0..<threads {
                    Thread.detachNewThread {
                        let answered = DispatchSemaphore(value: 0)
                        for call in 0..<allowed {
                            start(thread * allowed + call) { code in
                                codes.lock.withLock { codes.all.append(code) }
                                answered.signal()
                            }
                        }
                        // A generous bound (the calls' own deadline is 30 s): a completion that never comes is "lost".
                        let deadline = DispatchTime.now() + timeout * 4
                        for _ in 0..<allowed where answered.wait(timeout: deadline) == .timedOut {
                            codes.lock.withLock { codes.all.append("lost") }
                        }
                        let last = codes.lock.withLock { () -> Bool in codes.threadsLeft -= 1; return codes.threadsLeft == 0 }
                        if last { finished.resume(returning: codes.lock.withLock { codes.all }) }
                    }
                }
            }
            let seconds = Double(now() - began) / 1e9
            let after = try await emulator.counters()
            var failures: [String: Int] = [:]
            for code in codes.prefix(calls) where code != "0" { failures[code, default: 0] += 1 }
            return InFlightBurst(mostAtServer: after["maxInFlight"] as? Int ?? -1, failures: failures,
                                 logins: (after["loginCount"] as? Int ?? 0) - (before["loginCount"] as? Int ?? 0), seconds: seconds)
        }

        var clients: [(name: String, make: () -> DataAPI)] = [
            ("default transport", { DataAPI(configuration: configuration) }),
            ("FMURLSessionTransport", {
                DataAPI(configuration: configuration, transport: FMURLSessionTransport(idleTimeout: timeout, maxConnectionsPerHost: allowed))
            }),
        ]
        #if canImport(Glibc)
        clients.append(("FMSocketTransport", {
            DataAPI(configuration: configuration, transport: FMSocketTransport(idleTimeout: timeout, maxConnectionsPerHost: allowed))
        }))
        let defaultName = configuration.baseURL?.scheme == "http" ? "FMSocketTransport" : "FMURLSessionTransport"
        #else
        let defaultName = "FMURLSessionTransport"
        #endif

        // The baseline's token: a session of its own, opened before the hold is set.
        let bareToken = try await DataAPI(configuration: api.configuration).login()
        try await emulator.setSettings(["serviceTime": hold])
        say("in flight, \(threads) threads × \(allowed) reads through callbacks (semaphore-waited), maxConcurrentRequests \(allowed), "
            + "pool \(allowed), timeout \(Int(timeout)) s; the emulator in its own process holds each request \(Int(hold * 1000)) ms "
            + String(format: "(the floor: %d × %.0f ms = %.2f s a burst):", threads, hold * 1000, Double(threads) * hold))
        do {
            for (name, make) in clients {
                let client = make()
                let first = try await burst(swiftFM(client))
                var warm: [InFlightBurst] = []
                for _ in 0..<warmBursts { warm.append(try await burst(swiftFM(client))) }
                let label = name == "default transport" ? "\(name) (\(defaultName))" : name
                let most = warm.map(\.mostAtServer).sorted()
                let wall = warm.map(\.seconds).sorted()
                let failed = first.failed + warm.map(\.failed).reduce(0, +)
                say("  \(label):")
                say(String(format: "    first burst (pool grows from 0): %d at the server at once, %@, %d logins, %.2f s", first.mostAtServer,
                           first.failureText, first.logins, first.seconds))
                say(String(format: "    %d bursts on the open pool: %@ at the server at once, %@, %d logins, %.2f s median   target ≥ 24, 0 timeouts%@",
                           warmBursts, most.map(String.init).joined(separator: "/"),
                           InFlightBurst(mostAtServer: 0, failures: warm.reduce(into: [:]) { $0.merge($1.failures, uniquingKeysWith: +) },
                                         logins: 0, seconds: 0).failureText,
                           warm.map(\.logins).reduce(0, +), wall[wall.count / 2],
                           (most.first ?? 0) >= 24 && first.mostAtServer >= 24 && failed == 0 ? "" : "   BELOW TARGET"))
                await client.shutdown()
            }

            // The baseline: URLSession at its defaults (httpMaximumConnectionsPerHost unset), the same burst.
            let bare = URLSession(configuration: .default)
            let base = emulator.url.absoluteString.trimmingCharacters(in: ["/"]) + "/fmi/data/vLatest/databases/Bench/layouts/Bench/records/"
            let bareStart: Start = { index, done in
                guard let url = URL(string: base + String(index % 100 + 1)) else { return done("bad URL") }
                var request = URLRequest(url: url, timeoutInterval: timeout)
                request.setValue("Bearer \(bareToken)", forHTTPHeaderField: "Authorization")
                bare.dataTask(with: request) { _, response, error in
                    if let error = error as? URLError {
                        done(error.code == .timedOut ? "-1004" : "URLError \(error.code.rawValue)")
                    } else if error != nil {
                        done("-1003")
                    } else {
                        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                        done(status == 200 ? "0" : "HTTP \(status)")
                    }
                }.resume()
            }
            _ = try await burst(bareStart) // connections open, as for the others' warm bursts
            let baseline = try await burst(bareStart)
            let hidden = bare.configuration.httpMaximumConnectionsPerHost
            say(String(format: "  baseline, a bare URLSession at its defaults (httpMaximumConnectionsPerHost %d, not set): %d at the server at once, %@, %.2f s "
                       + "(%d calls %d at a time: %.2f s)", hidden, baseline.mostAtServer, baseline.failureText, baseline.seconds,
                       calls, hidden, (Double(calls) / Double(max(1, hidden))).rounded(.up) * hold))
            bare.finishTasksAndInvalidate()
        } catch {
            try? await emulator.setSettings(["serviceTime": 0])
            throw error
        }
        try await emulator.setSettings(["serviceTime": 0])
    }
}

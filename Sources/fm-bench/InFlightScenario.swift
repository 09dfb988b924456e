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

/// The in-flight scenario's shape: 32 calls at the server at once, no more.
struct InFlightShape {
    let allowed = 32, threads = 4, hold = 0.2, timeout: TimeInterval = 30
    var calls: Int { threads * allowed }
}

/// Starts call `index`; `done` runs once with its code.
typealias InFlightStart = @Sendable (_ index: Int, _ done: @escaping @Sendable (String) -> Void) -> Void

extension Bench {
    /// The in-flight target: `maxConcurrentRequests = 32`, a pool of 32, the emulator (in its own
    /// process) holding each request 200 ms: 4 threads start 32 reads each through callbacks (no Task around
    /// a call, as a Dispatch daemon calls) and wait for them on a semaphore, timeout 30 s. For each transport
    /// the package ships (the default one for this host, and FMURLSessionTransport): a first burst on a fresh client (the pool grows from nothing, its logins held too), then
    /// bursts on the open pool. Prints the most requests at the server at once (the emulator's `maxInFlight`),
    /// the calls that failed or timed out, the logins and the wall time. The baseline is the same burst
    /// through a bare `URLSession` left at its defaults (no `httpMaximumConnectionsPerHost`): the limit it
    /// hides. Over HTTPS every burst goes through the TLS front.
    func inFlight() async throws {
        let shape = InFlightShape()
        // The baseline's token: a session of its own, opened before the hold is set.
        let bareToken = try await DataAPI(configuration: api.configuration).login()
        try await emulator.setSettings(["serviceTime": shape.hold])
        say("in flight over \(baseURL.scheme ?? "http"), \(shape.threads) threads × \(shape.allowed) reads through callbacks (semaphore-waited), "
            + "maxConcurrentRequests \(shape.allowed), pool \(shape.allowed), timeout \(Int(shape.timeout)) s; the emulator in its own process holds "
            + String(format: "each request %.0f ms (the floor: %d × %.0f ms = %.2f s a burst; load average %.2f):",
                     shape.hold * 1000, shape.threads, shape.hold * 1000, Double(shape.threads) * shape.hold, loadAverage()))
        do {
            for (name, make) in inFlightClients(shape) {
                let client = make()
                let first = try await inFlightBurst(shape, start: Self.swiftFM(client))
                var warm: [InFlightBurst] = []
                for _ in 0..<max(1, min(settings.rounds, 3)) { warm.append(try await inFlightBurst(shape, start: Self.swiftFM(client))) }
                inFlightReport(name, first: first, warm: warm)
                await client.shutdown()
            }
            try await inFlightBaseline(shape, token: bareToken)
        } catch {
            try? await emulator.setSettings(["serviceTime": 0])
            throw error
        }
        try await emulator.setSettings(["serviceTime": 0])
    }

    static func swiftFM(_ api: DataAPI) -> InFlightStart {
        { index, done in api.getRecord(layout: "Bench", recordId: index % 100 + 1) { _, code in done(code) } }
    }

    /// Set-up: the clients measured, by name (the default transport named after the one it is).
    func inFlightClients(_ shape: InFlightShape) -> [(name: String, make: () -> DataAPI)] {
        var configuration = api.configuration
        configuration.maxConcurrentRequests = shape.allowed
        configuration.sessionPoolSize = shape.allowed
        configuration.timeout = shape.timeout
        #if canImport(Glibc)
        let defaultName = FMCurlTransport.isAvailable ? "FMCurlTransport" : "FMURLSessionTransport"
        #else
        let defaultName = "FMURLSessionTransport"
        #endif
        let systemTrust = configuration.systemTrust
        return [
            ("default transport (\(defaultName))", { DataAPI(configuration: configuration) }),
            ("FMURLSessionTransport", {
                DataAPI(configuration: systemTrust, transport: FMURLSessionTransport(idleTimeout: shape.timeout, maxConnectionsPerHost: shape.allowed))
            }),
        ]
    }

    /// Run: `calls` calls from `threads` threads, each waiting on a semaphore for its own; measured at the emulator.
    func inFlightBurst(_ shape: InFlightShape, start: @escaping InFlightStart) async throws -> InFlightBurst {
        let before = try await emulator.counters()
        try await emulator.resetMaxInFlight()
        let began = now()
        let codes = await withCheckedContinuation { (finished: CheckedContinuation<[String], Never>) in
            final class Codes: @unchecked Sendable { let lock = NSLock(); var all: [String] = []; var threadsLeft = 0 }
            let codes = Codes()
            codes.threadsLeft = shape.threads
            for thread in 0..<shape.threads {
                Thread.detachNewThread {
                    let answered = DispatchSemaphore(value: 0)
                    for call in 0..<shape.allowed {
                        start(thread * shape.allowed + call) { code in
                            codes.lock.withLock { codes.all.append(code) }
                            answered.signal()
                        }
                    }
                    // A generous bound (the calls' own deadline is 30 s): a completion that never comes is "lost".
                    let deadline = DispatchTime.now() + shape.timeout * 4
                    for _ in 0..<shape.allowed where answered.wait(timeout: deadline) == .timedOut {
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
        for code in codes.prefix(shape.calls) where code != "0" { failures[code, default: 0] += 1 }
        return InFlightBurst(mostAtServer: after["maxInFlight"] as? Int ?? -1, failures: failures,
                             logins: (after["loginCount"] as? Int ?? 0) - (before["loginCount"] as? Int ?? 0), seconds: seconds)
    }

    /// Report: one client's first burst and its bursts on the open pool.
    func inFlightReport(_ label: String, first: InFlightBurst, warm: [InFlightBurst]) {
        let most = warm.map(\.mostAtServer).sorted()
        let wall = warm.map(\.seconds).sorted()
        let failed = first.failed + warm.map(\.failed).reduce(0, +)
        let warmFailures = InFlightBurst(mostAtServer: 0, failures: warm.reduce(into: [:]) { $0.merge($1.failures, uniquingKeysWith: +) },
                                         logins: 0, seconds: 0)
        say("  \(label):")
        say(String(format: "    first burst (pool grows from 0): %d at the server at once, %@, %d logins, %.2f s", first.mostAtServer,
                   first.failureText, first.logins, first.seconds))
        say(String(format: "    %d bursts on the open pool: %@ at the server at once, %@, %d logins, %.2f s median   target ≥ 24, 0 timeouts%@",
                   warm.count, most.map(String.init).joined(separator: "/"), warmFailures.failureText,
                   warm.map(\.logins).reduce(0, +), wall[wall.count / 2],
                   (most.first ?? 0) >= 24 && first.mostAtServer >= 24 && failed == 0 ? "" : "   BELOW TARGET"))
    }

    /// The baseline: URLSession at its defaults (httpMaximumConnectionsPerHost unset), the same burst.
    func inFlightBaseline(_ shape: InFlightShape, token: String) async throws {
        let bare = URLSession(configuration: .default)
        defer { bare.finishTasksAndInvalidate() }
        let base = baseURL.absoluteString.trimmingCharacters(in: ["/"]) + "/fmi/data/vLatest/databases/Bench/layouts/Bench/records/"
        let bareStart: InFlightStart = { index, done in
            guard let url = URL(string: base + String(index % 100 + 1)) else { return done("bad URL") }
            var request = URLRequest(url: url, timeoutInterval: shape.timeout)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
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
        _ = try await inFlightBurst(shape, start: bareStart) // connections open, as for the others' warm bursts
        let baseline = try await inFlightBurst(shape, start: bareStart)
        let hidden = bare.configuration.httpMaximumConnectionsPerHost
        say(String(format: "  baseline, a bare URLSession at its defaults (httpMaximumConnectionsPerHost %d, not set): %d at the server at once, %@, %.2f s "
                   + "(%d calls %d at a time: %.2f s)", hidden, baseline.mostAtServer, baseline.failureText, baseline.seconds,
                   shape.calls, hidden, (Double(shape.calls) / Double(max(1, hidden))).rounded(.up) * shape.hold))
    }
}

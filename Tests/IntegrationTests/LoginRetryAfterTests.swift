import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: `Retry-After` is honoured as the server asks, also when the transient answer (a 503 from a proxy in
// maintenance) comes to the login a call waits for: the call's retry waits at least that long, exactly as when the
// same answer comes to the call itself. Checked on the retry event the call's span records (its wait), not on a clock.

@Suite("A login answered 503 with Retry-After makes the waiting call wait as asked")
struct LoginRetryAfterTests {
    private final class Recorder: FMInstrumentation, FMCallSpan, @unchecked Sendable {
        private let lock = NSLock()
        private var events: [(endpoint: String, event: FMCallEvent)] = []
        private var endpoint = ""
        func startCall(_ call: FMCallStart) -> any FMCallSpan { Span(recorder: self, endpoint: call.endpoint) }
        func record(_ event: FMCallEvent) {}
        func end(_ outcome: FMCallOutcome) {}
        func add(_ endpoint: String, _ event: FMCallEvent) { lock.withLock { events.append((endpoint, event)) } }
        var retries: [(endpoint: String, event: FMCallEvent)] { lock.withLock { events.filter { $0.event.kind == .retry } } }
        final class Span: FMCallSpan, @unchecked Sendable {
            let recorder: Recorder, endpoint: String
            init(recorder: Recorder, endpoint: String) { self.recorder = recorder; self.endpoint = endpoint }
            func record(_ event: FMCallEvent) { recorder.add(endpoint, event) }
            func end(_ outcome: FMCallOutcome) {}
        }
    }

    private func api(_ emulator: Emulator, _ base: URL, _ recorder: Recorder) -> DataAPI {
        var configuration = FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.instrumentation = recorder
        configuration.timeout = 30
        return DataAPI(configuration: configuration)
    }

    @Test("a read whose login got 503 + Retry-After retries after at least that wait", arguments: ["1", "2"])
    func loginRetryAfterIsHonoured(seconds: String) async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let recorder = Recorder()
        let api = api(emulator, base, recorder)
        _ = try await api.productInfo()   // the host has answered: no first-contact rule in the way
        emulator.inject(.status(503, body: "maintenance", contentType: "text/plain", retryAfter: seconds), count: 1, matching: "/sessions")
        let found = try await api.getRecords(layout: "Artists", limit: 1)
        #expect(found.records.count == 1)
        let asked = try #require(TimeInterval(seconds))
        let retries = recorder.retries.filter { $0.endpoint != "POST sessions" }
        let wait = try #require(retries.first?.event.wait, "no retry recorded: \(recorder.retries.map(\.event.description))")
        #expect(wait >= asked, "retried after \(wait) s; the login's answer asked for Retry-After: \(seconds)")
    }

    @Test("the same answer to the call itself is honoured (the reference behaviour)")
    func callRetryAfterIsHonoured() async throws {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        let recorder = Recorder()
        let api = api(emulator, base, recorder)
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        emulator.inject(.status(503, body: "maintenance", contentType: "text/plain", retryAfter: "1"), count: 1, matching: "/records")
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        let wait = try #require(recorder.retries.first?.event.wait)
        #expect(wait >= 1)
    }
}

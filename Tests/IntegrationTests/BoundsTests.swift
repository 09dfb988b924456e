import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Every call is bounded, against the emulator, through the callback and the async surfaces: what is retried and
// how often, what never is (a write that was sent), back-offs that stop at the deadline, cancel, and the concurrency cap.

/// The surface a behaviour is driven through.
enum BoundsSurface: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case callback, async
    var testDescription: String { rawValue }
}

/// Collects lines (log lines, the emulator's request lines); `wait(for:)` resumes when a line containing
/// a fragment arrived.
final class LogWatch: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var waiters: [(String, @Sendable () -> Void)] = []

    var handler: FMLogHandler { { [self] event in record(event.message) } }

    /// Takes one line (give it to `Emulator.onRequest`).
    func arrived(_ line: String) { record(line) }

    var all: [String] { lock.withLock { lines } }
    func lines(containing fragment: String) -> [String] { all.filter { $0.contains(fragment) } }

    private func record(_ line: String) {
        let ready = lock.withLock { () -> [@Sendable () -> Void] in
            lines.append(line)
            let (hit, rest) = (waiters.filter { line.contains($0.0) }, waiters.filter { !line.contains($0.0) })
            waiters = rest
            return hit.map(\.1)
        }
        for action in ready { action() }
    }

    /// Runs `action` on the thread that logs the first line containing `fragment` (at once if one was):
    /// no task has to be scheduled for it, so a busy concurrency pool cannot delay it.
    func when(_ fragment: String, _ action: @escaping @Sendable () -> Void) {
        let now = lock.withLock { () -> Bool in
            if lines.contains(where: { $0.contains(fragment) }) { return true }
            waiters.append((fragment, action))
            return false
        }
        if now { action() }
    }

    /// Returns once a line containing `fragment` was logged (at once if one was).
    func wait(for fragment: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            when(fragment) { continuation.resume() }
        }
    }
}

/// Counts the requests it is told of.
final class HopCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    /// The number of requests so far, this one included.
    func next() -> Int { lock.withLock { count += 1; return count } }
}

/// Holds a cancel handle set from a completion-based start.
final class HandleBox: @unchecked Sendable {
    private let lock = NSLock()
    private var request: FMRequest?
    private var cancelled = false
    func set(_ request: FMRequest) {
        let cancelNow = lock.withLock { () -> Bool in
            self.request = request
            return cancelled
        }
        if cancelNow { request.cancel() }
    }
    func cancel() {
        let request = lock.withLock { () -> FMRequest? in
            cancelled = true
            return self.request
        }
        request?.cancel()
    }
}

/// A fast policy for tests: the same shape as `.standard`, with tiny delays.
let quickRetry = FMRetryPolicy(maxAttempts: 3, initialDelay: 0.005, maxDelay: 0.02)

/// An emulator and a client with the given limits; the client logs into `log`.
func withBoundedClient<T>(
    timeout: TimeInterval = 30,
    retry: FMRetryPolicy = quickRetry,
    maxConcurrentRequests: Int? = nil,
    _ body: (DataAPI, Emulator, LogWatch) async throws -> T
) async throws -> T {
    let emulator = try Emulator(schemaJSON: integrationSchema)
    let url = try emulator.start()
    defer { emulator.stop() }
    var configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin")
    configuration.timeout = timeout
    configuration.retry = retry
    configuration.maxConcurrentRequests = maxConcurrentRequests
    // These tests exercise the concurrency cap on one session: let the session take as many calls as the cap.
    configuration.maxCallsPerSession = maxConcurrentRequests ?? 1
    let log = LogWatch()
    let api = DataAPI(configuration: configuration, logger: log.handler)
    return try await body(api, emulator, log)
}

extension Emulator {
    /// Requests whose method is `method` and whose decoded path ends with `suffix`.
    func count(_ method: String, _ suffix: String) -> Int {
        requestLog.filter { $0.method == method && $0.decodedPath.hasSuffix(suffix) }.count
    }
}

/// `getRecords` on "Bands" through `surface`: the code (exactly one completion for the callback surface).
func readCode(_ api: DataAPI, _ surface: BoundsSurface, sourceLocation: SourceLocation = #_sourceLocation) async -> String {
    switch surface {
    case .callback:
        return await callback(api, sourceLocation: sourceLocation) { api.getRecords(layout: "Bands", limit: 1, completion: $0) }.1
    case .async:
        do {
            _ = try await api.getRecords(layout: "Bands", limit: 1)
            return "0"
        } catch let error as FMError {
            return error.code
        } catch {
            return "not an FMError: \(error)"
        }
    }
}

/// `createRecord` on "Bands" through `surface`: the code.
func createCode(_ api: DataAPI, _ surface: BoundsSurface, sourceLocation: SourceLocation = #_sourceLocation) async -> String {
    switch surface {
    case .callback:
        return await callback(api, sourceLocation: sourceLocation) { api.createRecord(layout: "Bands", fieldData: ["name": "New"], completion: $0) }.1
    case .async:
        do {
            _ = try await api.createRecord(layout: "Bands", fieldData: ["name": "New"])
            return "0"
        } catch let error as FMError {
            return error.code
        } catch {
            return "not an FMError: \(error)"
        }
    }
}

let proxy503 = EmulatorFault.status(503, body: "<html><body>503 Service Unavailable</body></html>", contentType: "text/html")

/// Retries: what is retried, how often, and what never is.
@Suite("Bounds: retries, client against the emulator")
struct RetryBoundsTests {
    @Test(arguments: BoundsSurface.allCases)
    func a503TwiceThen200OnAReadCompletesAfterThreeRequests(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(retry: .standard) { api, emulator, log in
            emulator.inject(proxy503, count: 2, matching: "/records")
            #expect(await readCode(api, surface) == "0")
            #expect(emulator.count("GET", "/records") == 3)
            #expect(log.lines(containing: "got -1006: retry").count == 2)
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func aCreateAnswered503IsSentOnce(_ surface: BoundsSurface) async throws {
        try await withBoundedClient { api, emulator, _ in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(proxy503, count: 1, matching: "/records")
            #expect(await createCode(api, surface) == FMError.ClientCode.notJSON)
            #expect(emulator.count("POST", "/records") == 1)
            #expect(emulator.recordCount(inTable: "Bands") == 4)
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func retriesWritesRetriesACreate(_ surface: BoundsSurface) async throws {
        let policy = FMRetryPolicy(maxAttempts: 3, initialDelay: 0.005, maxDelay: 0.02, retriesWrites: true)
        try await withBoundedClient(retry: policy) { api, emulator, _ in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(proxy503, count: 1, matching: "/records")
            #expect(await createCode(api, surface) == "0")
            #expect(emulator.count("POST", "/records") == 2)
            #expect(emulator.recordCount(inTable: "Bands") == 5)
        }
    }

    @Test(arguments: ["812", "956"], BoundsSurface.allCases)
    func fileMakerCapacityCodesAreRetried(_ code: String, _ surface: BoundsSurface) async throws {
        try await withBoundedClient { api, emulator, _ in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.fileMakerError(code: code, status: 500), count: 2, matching: "/records")
            #expect(await readCode(api, surface) == "0")
            #expect(emulator.count("GET", "/records") == 3)
            // Not for a write.
            emulator.inject(.fileMakerError(code: code, status: 500), count: 1, matching: "/records")
            #expect(await createCode(api, surface) == code)
            #expect(emulator.count("POST", "/records") == 1)
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func everyAttemptFailingReportsTheLastFailure(_ surface: BoundsSurface) async throws {
        try await withBoundedClient { api, emulator, _ in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(proxy503, count: 2, matching: "/records")
            emulator.inject(.fileMakerError(code: "812", status: 500), count: 1, matching: "/records")
            #expect(await readCode(api, surface) == "812")
            #expect(emulator.count("GET", "/records") == 3)
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        // Without Retry-After this policy waits 0 s; the server asks for 1 s, and the log line says so.
        let policy = FMRetryPolicy(maxAttempts: 2, initialDelay: 0, maxDelay: 8)
        try await withBoundedClient(retry: policy) { api, emulator, log in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.status(503, body: "{}", retryAfter: "1"), count: 1, matching: "/records")
            #expect(await readCode(api, .async) == "0")
            #expect(log.lines(containing: "retry 1 of 1 in 1.00 s").count == 1, "\(log.all)")
            emulator.inject(.status(503, body: "{}"), count: 1, matching: "/records")
            #expect(await readCode(api, .callback) == "0")
            #expect(log.lines(containing: "retry 1 of 1 in 0.00 s").count == 1, "\(log.all)")
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func aBackOffPastTheDeadlineStopsAtOnceWithTheLastFailure(_ surface: BoundsSurface) async throws {
        // A back-off far past a deadline that is itself generous: on a loaded machine the login and the 503 may take
        // seconds, and the deadline must not end the call before the 503 is answered.
        let policy = FMRetryPolicy(maxAttempts: 3, initialDelay: 3600, maxDelay: 3600)
        try await withBoundedClient(timeout: 120, retry: policy) { api, emulator, log in
            emulator.inject(.status(503, body: "{}", retryAfter: "3600"), count: 1, matching: "/records")
            #expect(await readCode(api, surface) == FMError.ClientCode.malformedResponse)
            #expect(emulator.count("GET", "/records") == 1)
            #expect(log.lines(containing: "no retry, the deadline comes first").count == 1)
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func cancellingDuringTheBackOffCompletesOnceWithMinus1005(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(retry: FMRetryPolicy(maxAttempts: 3, initialDelay: 5, maxDelay: 10)) { api, emulator, log in
            _ = await callback(api) { api.login(completion: $0) }
            emulator.inject(.status(503, body: "{}", retryAfter: "10"), count: 1, matching: "/records")
            switch surface {
            case .callback:
                let (_, code) = await callback(api) { done in
                    let request = api.getRecords(layout: "Bands", completion: done)
                    log.when("retry 1 of 2") { request.cancel() }
                }
                #expect(code == FMError.ClientCode.cancelled)
            case .async:
                let task = Task { try await api.getRecords(layout: "Bands") }
                log.when("retry 1 of 2") { task.cancel() }
                do {
                    _ = try await task.value
                    Issue.record("expected a cancellation")
                } catch let error as FMError {
                    #expect(error.code == FMError.ClientCode.cancelled)
                }
            }
            #expect(emulator.count("GET", "/records") == 1)
        }
    }

    /// Both clients' deadline is a hang bound (the read must succeed, which a loaded machine could take longer than the
    /// 2 s of before for). The write goes through a second client holding the first one's session, so on a connection of
    /// its own: a reset on a connection libcurl reused makes libcurl itself send the POST again, a copy that never
    /// completes (its body is not replayed) and that only a short deadline ended (-1004).
    @Test(arguments: BoundsSurface.allCases)
    func aResetBeforeAnyAnswerIsRetriedForAReadNotForAWrite(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(timeout: 300) { api, emulator, _ in
            let token = try await api.login()
            emulator.inject(.resetConnection, count: 1, matching: "/records")
            #expect(await readCode(api, surface) == "0")
            #expect(emulator.count("GET", "/records") == 2)
            let writer = DataAPI(configuration: api.configuration,
                                 tokenStore: FMMemoryTokenStore(FMStoredToken(token: token, expiry: Date().addingTimeInterval(600))))
            emulator.inject(.resetConnection, count: 1, matching: "/records")
            // -1003, and SwiftFM does not send it again.
            let code = await createCode(writer, surface)
            #expect(code == FMError.ClientCode.transport, "got \(code)")
            #expect(emulator.count("POST", "/records") == 1)
            // Why: the reset came after the server ran it.
            #expect(emulator.recordCount(inTable: "Bands") == 5)
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func aTransientLoginFailureIsRetriedForTheCallWaitingForIt(_ surface: BoundsSurface) async throws {
        // The login itself changes no data; a call that was never sent can always be sent later.
        try await withBoundedClient { api, emulator, _ in
            emulator.inject(proxy503, count: 1, matching: "/sessions")
            emulator.inject(.fileMakerError(code: "956", status: 500), count: 1, matching: "/sessions")
            #expect(await readCode(api, surface) == "0")
            #expect(emulator.count("POST", "/sessions") == 3)
            #expect(emulator.count("GET", "/records") == 1)
            // A write whose login fails transiently: the server forgot the session (952, not run), the new
            // login gets a 503, the next one succeeds, and the create runs once.
            emulator.expireAllTokens()
            emulator.inject(proxy503, count: 1, matching: "/sessions")
            #expect(await createCode(api, surface) == "0")
            #expect(emulator.count("POST", "/sessions") == 5)
            #expect(emulator.recordCount(inTable: "Bands") == 5)
        }
    }
}

/// The concurrency cap and the deadline of a queued call.
@Suite("Bounds: concurrency cap, client against the emulator")
struct CapBoundsTests {
    @Test(arguments: BoundsSurface.allCases)
    func fiftyCallsUnderACapOfFour(_ surface: BoundsSurface) async throws {
        // A generous deadline: 50 calls queue for four slots, and the deadline is not what this test is about.
        try await withBoundedClient(timeout: 600, maxConcurrentRequests: 4) { api, emulator, _ in
            emulator.serviceTime = 0.01
            emulator.resetMaxInFlight()
            let codes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<50 { group.addTask { await readCode(api, surface) } }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(codes.count == 50 && codes.allSatisfy { $0 == "0" }, "\(codes)")
            #expect(emulator.maxInFlight <= 4, "\(emulator.maxInFlight) in flight at once")
            #expect(emulator.maxInFlight >= 2, "the cap was exercised")
            #expect(emulator.count("GET", "/records") == 50)
            #expect(emulator.count("POST", "/sessions") == 1)
        }
    }

    /// Logs in, then holds the only slot of a client capped at one request with a container download whose
    /// body (64 KiB, uploaded first) is dripped at 10 bytes a second: bounded by `containerTimeout`, not `timeout`,
    /// never idle for more than a tenth of a second, and far longer than any test, so it holds the slot until
    /// `handle` is cancelled however slowly a loaded machine runs the test (a missing file's 404 page, 35 bytes,
    /// held it for 17 s only). Returns once the emulator has received the download's second hop (the first, the
    /// redirect that sets the streaming cookie, is a call of its own). `done` gives the download's code.
    ///
    /// The container is stored and its URL read by a client of its own, with a generous deadline: the client under
    /// test may have a short one (`aQueuedCallWhoseDeadlinePassesCompletesMinus1004WithoutBeingSent`: 5 s), which a
    /// loaded machine could pass in these preparations (the read then threw, or the upload was not "0").
    func holdTheOnlySlot(_ api: DataAPI, _ emulator: Emulator) async throws -> (handle: HandleBox, done: Task<String, Never>) {
        _ = await callback(api) { api.login(completion: $0) }
        var preparing = api.configuration
        preparing.timeout = 600
        preparing.maxConcurrentRequests = nil
        let setup = DataAPI(configuration: preparing)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-hold-\(UUID().uuidString).bin")
        try Data(repeating: 0x2A, count: 64 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (_, uploaded) = await callback(setup) { setup.uploadContainer(layout: "Bands", recordId: 1, field: "photo", fileURL: file, completion: $0) }
        try #require(uploaded == "0")
        let record = try await setup.getRecord(layout: "Bands", recordId: 1)
        let photo = try #require((record.records.first?["fieldData"] as? [String: Any])?["photo"] as? String)
        let holder = try #require(URL(string: photo))
        let arrivals = LogWatch()
        let hops = HopCounter()
        emulator.onRequest = { line in if line.contains("/Streaming"), hops.next() == 2 { arrivals.arrived("second hop") } }
        emulator.inject(.drip(bytesPerSecond: 10), count: 2, matching: "/Streaming")
        let handle = HandleBox()
        let done = Task {
            await callback(api) { done in handle.set(api.downloadContainer(url: holder) { data, code in done(data, code) }) }.1
        }
        await arrivals.wait(for: "second hop")
        return (handle, done)
    }

    @Test(arguments: BoundsSurface.allCases)
    func cancelledQueuedCallsAreNeverSent(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(maxConcurrentRequests: 1) { api, emulator, _ in
            let (handle, first) = try await holdTheOnlySlot(api, emulator)
            // Three calls queue behind it and are cancelled while queued.
            let codes: [String]
            switch surface {
            case .callback:
                codes = await withTaskGroup(of: String.self) { group in
                    for _ in 0..<3 {
                        group.addTask {
                            await callback(api) { done in api.getRecords(layout: "Bands", limit: 2, completion: done).cancel() }.1
                        }
                    }
                    return await group.reduce(into: [String]()) { $0.append($1) }
                }
            case .async:
                let tasks = (0..<3).map { _ in Task { try await api.getRecords(layout: "Bands", limit: 2) } }
                for task in tasks { task.cancel() }
                var collected: [String] = []
                for task in tasks {
                    do { _ = try await task.value; collected.append("0") } catch let error as FMError { collected.append(error.code) } catch { collected.append("?") }
                }
                codes = collected
            }
            #expect(codes == Array(repeating: FMError.ClientCode.cancelled, count: 3))
            handle.cancel()
            #expect(await first.value == FMError.ClientCode.cancelled)
            // FIFO: had a cancelled call been sent, it would precede this one.
            #expect(await readCode(api, surface) == "0")
            #expect(emulator.requestLog.filter { $0.decodedPath.hasSuffix("/records") }.count == 1)
            #expect(!emulator.requestLog.contains { $0.target.contains("_limit=2") }, "no cancelled call reached the server")
        }
    }

    @Test(arguments: BoundsSurface.allCases)
    func aQueuedCallWhoseDeadlinePassesCompletesMinus1004WithoutBeingSent(_ surface: BoundsSurface) async throws {
        try await withBoundedClient(timeout: 5, maxConcurrentRequests: 1) { api, emulator, _ in
            let (handle, held) = try await holdTheOnlySlot(api, emulator)
            let queued: String
            switch surface {
            case .callback:
                queued = await callback(api) { api.getRecords(layout: "Bands", limit: 2, completion: $0) }.1
            case .async:
                do { _ = try await api.getRecords(layout: "Bands", limit: 2); queued = "0" } catch let error as FMError { queued = error.code }
            }
            #expect(queued == FMError.ClientCode.timeout)
            #expect(!emulator.requestLog.contains { $0.target.contains("_limit=2") }, "the queued call was never sent")
            handle.cancel()
            #expect(await held.value == FMError.ClientCode.cancelled, "the holder was still running")
        }
    }
}

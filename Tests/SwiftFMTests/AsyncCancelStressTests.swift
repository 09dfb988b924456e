import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Stress of the async bridge over the managed session: tasks cancelled at assorted moments (before the
/// call, while waiting for the login, while their request or its 952 replay is in flight). Every task must
/// end (value or -1005, no hang, no continuation misuse) and no transport task may be left running.
@Suite("Async cancel stress")
struct AsyncCancelStressTests {
    @Test func cancelledTasksNeverLeaveATransportTaskRunning() async throws {
        // The subject is cancellation, not deadlines: a deadline far beyond the work, so that on a loaded machine
        // the answered calls queued FIFO behind held ones (one call per session) never reach it.
        let run = await Self.scenario(timeout: 600)
        #expect(run.outcomes.count == Self.count)
        #expect(run.outcomes.allSatisfy { $0 == "v" || $0 == FMError.ClientCode.cancelled }, "\(Set(run.outcomes))")
        #expect(run.outcomes.filter { $0 == "v" }.count == Self.count / 3)
        #expect(run.running == 0, "\(run.running) held transport task(s) left running")
    }

    /// Failed before the fix (the call returned the value): a task cancelled before it calls the async API sends
    /// nothing and throws `-1005`. The bridge used to start the call and cancel it afterwards, which a server that
    /// answered first (here the transport answers inside `send`) beat: the cancelled task got the answer, and a
    /// cancelled SwiftFM 2.x `newSession()` stored its token (CI saw it on a loaded machine).
    @Test func aTaskCancelledBeforeTheCallSendsNothing() async throws {
        let h = Harness { request in
            isLogin(request) ? .atOnce(200, Bodies.login()) : .atOnce(200, Bodies.value("v"))
        }
        let api = h.api
        let task = Task { () -> [String] in
            withUnsafeCurrentTask { $0?.cancel() }
            var codes: [String] = []
            for call in 0..<3 {
                do {
                    switch call {
                    case 0: _ = try await api.login()
                    case 1: _ = try await api.getRecord(layout: "L", recordId: 1)
                    default: _ = try await api.getRecords(layout: "L")
                    }
                    codes.append("0")
                } catch {
                    codes.append((error as? FMError)?.code ?? "\(error)")
                }
            }
            return codes
        }
        #expect(await task.value == Array(repeating: FMError.ClientCode.cancelled, count: 3))
        #expect(h.stub.requests.isEmpty, "\(h.stub.requests.count) request(s) sent")
        #expect(h.store.load() == nil)
    }

    /// The scenario looped, as a benchmark of the session stage's wake-ups (not part of the suite's run):
    /// `SWIFTFM_STALL_LOOP=10000 swift test -c release --filter AsyncCancelStressTests`. Each iteration has a 5 s
    /// timeout; any outcome other than the value or -1005 (a call that waited out its deadline ends -1004) counts
    /// as wrong. Prints the tally.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SWIFTFM_STALL_LOOP"] != nil))
    func loopedScenarioHasNoWrongOutcome() async {
        let iterations = Int(ProcessInfo.processInfo.environment["SWIFTFM_STALL_LOOP"] ?? "") ?? 1_000
        var wrong = 0
        var left = 0
        let started = Date()
        for iteration in 1...iterations {
            let run = await Self.scenario(timeout: 5)
            let bad = run.outcomes.count != Self.count
                || !run.outcomes.allSatisfy { $0 == "v" || $0 == FMError.ClientCode.cancelled }
                || run.outcomes.filter { $0 == "v" }.count != Self.count / 3
            if bad { wrong += 1 }
            left += run.running
            if iteration % 500 == 0 || iteration == iterations {
                print("stall loop: \(iteration) iterations, \(wrong) with a wrong outcome, \(left) transport task(s) left running, \(Int(Date().timeIntervalSince(started))) s")
            }
        }
        #expect(wrong == 0 && left == 0)
    }

    static let count = 300

    /// 300 tasks on one client (pool of 1, a stale token in the store, so the first request meets 952 and one
    /// login follows); one in three reads a layout the transport answers at once, the others one it holds until
    /// cancelled, and are cancelled after 0-6 yields. Returns each task's value or error code, and how many held
    /// transport tasks were left running.
    static func scenario(timeout: TimeInterval) async -> (outcomes: [String], running: Int) {
        let stale = "stale-token-0000"
        // Requests with the stale token get 952; the rest are held until cancelled, or answered when
        // their layout says so.
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = timeout
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: stale, expiry: .distantFuture))) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.header("Authorization") == "Bearer " + stale { return .json(401, Bodies.expired) }
            return (request.url?.path ?? "").contains("/layouts/answer/") ? .json(200, Bodies.value("v")) : .hold
        }
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<count {
                group.addTask {
                    let layout = index % 3 == 0 ? "answer" : "hold"
                    let task = Task { try await h.api.bridge(TestEndpoints.records(layout)) }
                    if layout == "hold" {
                        for _ in 0..<(index % 7) { await Task.yield() }
                        task.cancel()
                    }
                    switch await task.result {
                    case .success(let value): return value
                    case .failure(let error): return (error as? FMError)?.code ?? "?"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        h.drain()
        // Every request still held must be cancelled: the call delivers its result first and then stops its
        // transport task, so each is waited for (the event itself, with a generous bound), not looked at once.
        let held = h.stub.tasks.enumerated().filter { index, _ in
            let request = h.stub.requests[index]
            return !isLogin(request) && request.header("Authorization") != "Bearer " + stale
                && !(request.url?.path ?? "").contains("/layouts/answer/")
        }.map(\.element)
        let running = await onOwnThread {
            let deadline = TestBound.deadline
            return held.filter { !$0.waitUntilCancelled(deadline: deadline) }.count
        }
        return (outcomes, running)
    }
}

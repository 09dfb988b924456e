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
        let stale = "stale-token-0000"
        // Requests with the stale token get 952; the rest are held until cancelled, or answered when
        // their layout says so.
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: stale, expiry: .distantFuture))) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.header("Authorization") == "Bearer " + stale { return .json(401, Bodies.expired) }
            return (request.url?.path ?? "").contains("/layouts/answer/") ? .json(200, Bodies.value("v")) : .hold
        }
        let count = 300
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
        #expect(outcomes.count == count)
        #expect(outcomes.allSatisfy { $0 == "v" || $0 == FMError.ClientCode.cancelled }, "\(Set(outcomes))")
        #expect(outcomes.filter { $0 == "v" }.count == count / 3)
        h.drain()
        // Every request still held must have been cancelled.
        let running = h.stub.tasks.enumerated().filter { index, task in
            let request = h.stub.requests[index]
            let held = !isLogin(request) && request.header("Authorization") != "Bearer " + stale
                && !(request.url?.path ?? "").contains("/layouts/answer/")
            return held && !task.isCancelled
        }
        #expect(running.isEmpty, "\(running.count) held transport task(s) left running")
    }
}

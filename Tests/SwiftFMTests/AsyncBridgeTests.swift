import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The async overlay over the callback core: values and `FMError`s come through, non-Sendable values cross, task
// cancellation cancels the request (-1005, at once when already cancelled), a call does not wait for the callback
// queue, and each of many concurrent calls resumes exactly once.

@Suite("Async bridge")
struct AsyncBridgeTests {
    @Test func returnsTheValue() async throws {
        let h = Harness { request in isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("async")) }
        #expect(try await h.api.bridge(TestEndpoints.records()) == "async")
    }

    @Test func throwsFMError() async {
        let h = Harness { request in isLogin(request) ? .json(200, Bodies.login()) : .json(500, Bodies.noRecords) }
        await #expect(throws: FMError(code: "401", message: "No records match the request", httpStatus: 500)) {
            try await h.api.bridge(TestEndpoints.records())
        }
    }

    @Test func nonSendableValuesCrossTheBridge() async throws {
        let h = Harness { _ in .json(200, Bodies.value("raw")) }
        let endpoint = Endpoint<[String: Any]>(.get, .host, ["productInfo"], auth: .none) { response in
            try Envelope.response(from: response.body)
        }
        let response = try await h.api.bridge(endpoint)
        #expect(response["value"] as? String == "raw")
    }

    @Test func taskCancellationCancelsTheRequestAndThrowsMinus1005() async throws {
        let held = Recorder<Void>()
        // An hour-long deadline: the cancel comes once this test's task resumes, which a loaded pool may delay past
        // the default 30 s (the call would then end -1004, not -1005).
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass",
                                            timeout: 3600)
        let h = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in
            held.record(())
            return .hold
        }
        let task = Task { try await h.api.bridge(TestEndpoints.records()) }
        await held.value()
        task.cancel()
        let result = await task.result
        #expect((result.testError as? FMError)?.code == "-1005")
        #expect(h.stub.tasks.count == 1)
        #expect(h.stub.tasks.first?.isCancelled == true)
    }

    @Test func alreadyCancelledTaskThrowsMinus1005WithoutWaiting() async {
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in .hold }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await h.api.bridge(TestEndpoints.records())
        }
        let result = await task.result
        #expect((result.testError as? FMError)?.code == "-1005")
        #expect(h.stub.tasks.allSatisfy { $0.isCancelled })
    }

    /// The async surface resumes its continuation from the engine directly: a callback queue that is
    /// blocked (an app's main queue while its thread waits) does not hold an async call back.
    @Test func anAsyncCallDoesNotWaitForTheCallbackQueue() async throws {
        let blocked = DispatchQueue(label: "blocked.callbacks")
        blocked.suspend()
        defer { blocked.resume() }
        let stub = StubTransport { request in isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("inline")) }
        let api = DataAPI(configuration: FMConfiguration(host: "fms.example.com", database: "d", username: "u", password: "p"),
                          transport: stub, callbackQueue: blocked)
        let done = Recorder<String>()
        let task = Task { done.record(try await api.bridge(TestEndpoints.records())) }
        #expect(await done.value() == ["inline"], "the async call waited for the suspended callback queue")
        task.cancel()
    }

    @Test func manyConcurrentCallsResumeExactlyOnce() async throws {
        let h = Harness { request in isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("v")) }
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await h.api.bridge(TestEndpoints.records()) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(values.count == 100)
        #expect(h.stub.count("POST", "/sessions") == 1)
    }

    @Test func asyncSessions() async throws {
        let h = Harness { request in
            if isLogin(request) { return .json(200, Bodies.login("async-token")) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return request.header("Authorization") == "Bearer async-token" ? .json(200, Bodies.ok) : .json(401, Bodies.expired)
        }
        #expect(try await h.api.validateSession() == false) // no token yet
        #expect(try await h.api.login() == "async-token")
        #expect(try await h.api.validateSession() == true)
        let refreshed = try await h.api.refreshToken()
        #expect(refreshed.token == "async-token")
        #expect(refreshed.expiry == h.clock.now + 900)
        try await h.api.logout()
        #expect(h.api.currentToken == nil)
        #expect(try await h.api.validateSession() == false)
    }

    @Test func asyncLoginFailureThrows() async {
        let h = Harness { _ in .json(401, Bodies.badLogin) }
        await #expect { try await h.api.login() } throws: { ($0 as? FMError)?.code == "212" }
    }
}

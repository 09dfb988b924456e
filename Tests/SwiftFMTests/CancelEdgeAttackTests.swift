import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The contract tested here: a cancel ends a call at once, wherever the call is, and exactly once — its completion
// runs with -1005 and nothing of the call is sent afterwards — and the deadline (FMConfiguration.timeout) ends
// every call, whatever a server or a token provider does. A handle that is not a call's (the shutdown's) does not
// end anything when cancelled: the shutdown's completion still means that the shutdown is complete.

@Suite("Cancellation at the edges")
struct CancelEdgeAttackTests {
    /// Failed before: cancelling the handle `shutdown(grace:completion:)` returns ran the shutdown's completion at
    /// once, while a call was still in flight and no session was logged out — yet the handle's cancel "does not stop
    /// the shutdown", and the completion is how a caller learns the shutdown is complete.
    @Test func cancellingTheShutdownsHandleDoesNotCompleteItEarly() {
        let sent = DispatchSemaphore(value: 0)
        let harness = Harness { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            sent.signal()
            return .hold
        }
        let call = Recorder<Result<String, FMError>>()
        let inFlight = harness.api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(sent.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>()
        let handle = harness.api.shutdown(grace: 600) { shutDown.record(()) }
        handle.cancel()
        harness.drain()
        #expect(shutDown.values.isEmpty, "the shutdown completed while a call was in flight")
        #expect(harness.stub.count("DELETE", Bodies.token) == 0)
        // The call in flight ends: the shutdown logs the session out, then completes, once.
        inFlight.cancel()
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.cancelled)
        shutDown.wait()
        harness.drain()
        #expect(shutDown.values.count == 1)
        #expect(harness.stub.count("DELETE", Bodies.token) == 1)
    }


    /// Failed before (the request reached the transport): a call cancelled after it was let through to the send
    /// stage but before its exchange was handed to it (here from the "→" log line, which is written in between)
    /// completed with -1005 and then sent its request all the same; the exchange was only stopped afterwards.
    @Test func aCallCancelledJustBeforeItsExchangeStartsSendsNothing() {
        let stub = StubTransport { _ in .json(200, Bodies.value("ok")) }
        let handle = FMRequest()
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        let api = DataAPI(configuration: configuration, transport: stub, logger: { event in
            if event.message.hasPrefix("→ ") { handle.cancel() }
        })
        var options = CallOptions()
        options.handle = handle
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records(auth: .none), options: options) { call.record($0) }
        #expect(call.wait().first?.testFailureCode == FMError.ClientCode.cancelled)
        api.callbackQueue.sync {}
        #expect(call.values.count == 1)
        #expect(stub.requests.isEmpty, "a request went out after the call completed with -1005")
        let shutDown = Recorder<Void>()
        api.shutdown(grace: 5) { shutDown.record(()) }
        shutDown.wait()
    }
}

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
    /// An OData client whose Claris ID provider keeps every answer to itself (until the test gives one).
    private static func odataWithHeldProvider(timeout: TimeInterval? = nil)
        -> (setup: ODataHarness, asked: DispatchSemaphore, answers: Locked<[@Sendable (Result<String, FMError>) -> Void]>) {
        let asked = DispatchSemaphore(value: 0)
        let answers = Locked<[@Sendable (Result<String, FMError>) -> Void]>([])
        let provider = FMClarisIDTokenProvider { _, done in
            answers.withLock { $0.append(done) }
            asked.signal()
        }
        // Any request reaching the stub is unexpected: the call must end before it sends anything.
        let setup = ODataHarness(credentials: .clarisID(provider), timeout: timeout) { _ in nil }
        return (setup, asked, answers)
    }

    /// Failed before: an OData call cancelled while its Claris ID token was being fetched did not complete — nobody
    /// listened to its handle until the token arrived (the completion ran only then, and never for a provider that
    /// never answers; an async call cancelled there stayed suspended).
    @Test func anODataCallCancelledDuringItsTokenFetchCompletesAtOnce() {
        let (setup, asked, answers) = Self.odataWithHeldProvider()
        let recorder = Recorder<String>(queueKey: Harness.key)
        let handle = setup.odata.records(from: "contacts") { _, code in recorder.record(code) }
        #expect(asked.wait(timeout: TestBound.deadline) == .success)
        handle.cancel()
        setup.harness.drain()
        #expect(recorder.values == [FMError.ClientCode.cancelled], "the cancel did not complete the call")
        // The token arriving late sends nothing and completes nothing more.
        for answer in answers.value { answer(.success("late-token")) }
        #expect(recorder.wait() == [FMError.ClientCode.cancelled])
        setup.harness.drain()
        #expect(recorder.values.count == 1)
        #expect(recorder.offQueue == 0)
        #expect(setup.stub.requests.isEmpty)
    }

    /// Failed before (hang guard): an OData call whose Claris ID provider never answers never completed; the
    /// deadline (FMConfiguration.timeout, "however the server behaves") did not cover the token fetch, as it does
    /// for a Data API login.
    @Test func anODataTokenFetchThatNeverAnswersEndsAtTheDeadline() {
        let (setup, asked, _) = Self.odataWithHeldProvider(timeout: 0.2)
        let recorder = Recorder<String>(queueKey: Harness.key)
        setup.odata.records(from: "contacts") { _, code in recorder.record(code) }
        #expect(asked.wait(timeout: TestBound.deadline) == .success)
        #expect(recorder.wait() == [FMError.ClientCode.timeout])
        setup.harness.drain()
        #expect(recorder.values.count == 1)
        #expect(setup.stub.requests.isEmpty)
    }

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

    /// Starts a walk (`start` calls `forEachPage` with the page closure and completion it is given) whose page closure
    /// cancels the walk's handle on its first page, and returns what the completion saw: its code and
    /// `FMError.current`'s.
    static func walkCancelledOnItsFirstPage<Page>(
        _ start: (_ page: @escaping @Sendable (Page) -> Bool, _ completion: @escaping @Sendable (Int?, String) -> Void) -> FMRequest
    ) -> [[String?]] {
        let done = Recorder<[String?]>()
        let handle = Locked<FMRequest?>(nil)
        let handleSet = DispatchSemaphore(value: 0)
        let walk = start({ _ in
            // The first page may arrive before forEachPage returned the handle.
            #expect(handleSet.wait(timeout: TestBound.deadline) == .success)
            handle.withLock { $0 }?.cancel()
            return true
        }, { _, code in done.record([code, FMError.current?.code]) })
        handle.withLock { $0 = walk }
        handleSet.signal()
        return done.wait()
    }

    /// Failed before (`FMError.current` was nil): a walk cancelled between pages completed with `(nil, "-1005")` but
    /// without the error behind the code, which every other `(value?, code)` completion binds while it runs.
    @Test func aWalkCancelledBetweenPagesBindsItsError() {
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, ServerValuesAttackTests.page(ids: [1], found: 3)) }
        let seen = Self.walkCancelledOnItsFirstPage { page, completion in
            h.api.forEachPage(layout: "L", pageSize: 1, page: page, completion: completion)
        }
        #expect(seen == [[FMError.ClientCode.cancelled, FMError.ClientCode.cancelled]])
        h.drain()
        #expect(h.stub.requests.count == 1)
    }

    /// Failed before (`FMError.current` was nil): the same for an OData walk cancelled between pages, and for an OData
    /// call ended while it waited for its Claris ID token (cancelled, or the provider's own failure).
    @Test func anODataWalkOrTokenFetchEndedEarlyBindsItsError() {
        let setup = ODataHarness { _ in .json(200, ODataBodies.collection) }
        let seen = Self.walkCancelledOnItsFirstPage { page, completion in
            setup.odata.forEachPage(from: "contacts", page: page, completion: completion)
        }
        #expect(seen == [[FMError.ClientCode.cancelled, FMError.ClientCode.cancelled]])
        #expect(setup.stub.requests.count == 1)

        let (held, asked, _) = Self.odataWithHeldProvider()
        let cancelled = Recorder<[String?]>()
        let request = held.odata.records(from: "contacts") { _, code in cancelled.record([code, FMError.current?.code]) }
        #expect(asked.wait(timeout: TestBound.deadline) == .success)
        request.cancel()
        #expect(cancelled.wait() == [[FMError.ClientCode.cancelled, FMError.ClientCode.cancelled]])

        let failing = ODataHarness(credentials: .clarisID(FMClarisIDTokenProvider { _, done in
            done(.failure(FMError(code: FMError.ClientCode.signInFailed, message: "no")))
        })) { _ in nil }
        let failed = Recorder<[String?]>()
        failing.odata.records(from: "contacts") { _, code in failed.record([code, FMError.current?.code]) }
        #expect(failed.wait() == [[FMError.ClientCode.signInFailed, FMError.ClientCode.signInFailed]])
    }

    /// Failed before (`-1004` at the deadline, instead of `-1012` with the shutdown): an OData call waiting for its
    /// Claris ID token was no call in flight for the shutdown — `shutdown(grace: 0)` completed and left it waiting for
    /// the provider (for good, before the deadline covered the fetch), where a call in flight ends with `-1012`.
    @Test func anODataCallWaitingForItsTokenEndsWithTheShutdownsGrace() {
        let (setup, asked, answers) = Self.odataWithHeldProvider(timeout: 2 * TestBound.seconds)
        let recorder = Recorder<[String?]>(queueKey: Harness.key)
        setup.odata.records(from: "contacts") { _, code in recorder.record([code, FMError.current?.code]) }
        #expect(asked.wait(timeout: TestBound.deadline) == .success)
        let shutDown = Recorder<Void>()
        setup.harness.api.shutdown(grace: 0) { shutDown.record(()) }
        #expect(recorder.wait() == [[FMError.ClientCode.shuttingDown, FMError.ClientCode.shuttingDown]])
        shutDown.wait()
        // The token arriving late sends nothing and completes nothing more; a new call is refused unasked.
        for answer in answers.value { answer(.success("late-token")) }
        let refused = Recorder<String>()
        setup.odata.records(from: "contacts") { _, code in refused.record(code) }
        #expect(refused.wait() == [FMError.ClientCode.shuttingDown])
        setup.harness.drain()
        #expect(recorder.values.count == 1)
        #expect(answers.value.count == 1)
        #expect(setup.stub.requests.isEmpty)
    }

    /// A client whose logger cancels the task that writes the "→" line: the line is written on the task's own thread,
    /// after the call started and before its exchange does.
    private static func cancellingAtTheSend(_ stub: StubTransport) -> DataAPI {
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        // Logged in already: the first line is the call's own.
        return DataAPI(configuration: configuration, transport: stub, tokenStore: ServerValuesAttackTests.loggedIn, logger: { event in
            if event.message.hasPrefix("→ ") { withUnsafeCurrentTask { $0?.cancel() } }
        })
    }

    /// Failed before (the task got "ok"; the request was sent): a task cancelled while its call was starting — after
    /// the bridge's check, before the call's handle reached the bridge — did not reach the call, which sent its request
    /// and returned the answer; the cancel only came to the handle once the call was over.
    @Test func aTaskCancelledWhileItsCallStartsSendsNothing() async {
        let stub = StubTransport { _ in .atOnce(200, Bodies.value("ok")) }
        let api = Self.cancellingAtTheSend(stub)
        let outcome = await Task { () -> String in
            do { return try await api.bridge(TestEndpoints.records(auth: .none)) } catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(outcome == FMError.ClientCode.cancelled)
        #expect(stub.requests.isEmpty)
    }

    /// Failed before (the task got the rows; the request was sent): the same for an OData call.
    @Test func anODataTaskCancelledWhileItsCallStartsSendsNothing() async {
        let stub = StubTransport { _ in .atOnce(200, ODataBodies.collection) }
        let odata = FMOData(sharing: Self.cancellingAtTheSend(stub))
        let outcome = await Task { () -> String in
            do { return "\(try await odata.records(from: "contacts").rows.count) rows" } catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(outcome == FMError.ClientCode.cancelled)
        #expect(stub.requests.isEmpty)
    }

    /// Failed before (the bytes came back; the request was sent): the same for a container download and for a page of
    /// an async walk, whose handles the bridge also learned only once they were started.
    @Test func aDownloadOrPageTaskCancelledWhileItStartsSendsNothing() async throws {
        let stub = StubTransport { _ in .atOnce(200, Bodies.value("ok")) }
        let api = Self.cancellingAtTheSend(stub)
        let url = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/photo.png?RCType=EmbeddedRCFileProcessor"))
        let download = await Task { () -> String in
            do { return "\(try await api.downloadContainer(url: url).count) bytes" } catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(download == FMError.ClientCode.cancelled)
        let page = await Task { () -> String in
            do {
                for try await page in api.pages(layout: "L") { return "\(page.records.count) records" }
                return "no page"
            } catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(page == FMError.ClientCode.cancelled)
        #expect(stub.requests.isEmpty)
    }

    /// Failed before (the count and the file came back; both requests were sent): the same for `FMOData`'s async count
    /// and its async download into a file, which made their handles inside the bridge's `start`.
    @Test func anODataCountOrDownloadTaskCancelledWhileItStartsSendsNothing() async throws {
        let stub = StubTransport { request in
            (request.url?.path ?? "").hasSuffix("$count") ? .atOnce(200, "3") : .atOnce(200, Bodies.value("bytes"))
        }
        let odata = FMOData(sharing: Self.cancellingAtTheSend(stub))
        let count = await Task { () -> String in
            do { return "\(try await odata.count(of: "contacts"))" } catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(count == FMError.ClientCode.cancelled)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-cancel-edge-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let download = await Task { () -> String in
            do { return try await odata.downloadContainer(from: "contacts", key: .number(1), field: "photo", to: file).lastPathComponent }
            catch { return (error as? FMError)?.code ?? "\(error)" }
        }.value
        #expect(download == FMError.ClientCode.cancelled)
        #expect(stub.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }
}

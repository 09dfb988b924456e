import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A canned answer of the stub transport.
enum StubAnswer: Sendable {
    case json(Int, String, headers: [String: String] = [:])
    case body(Int, Data, contentType: String)
    case failure(URLError.Code)
    /// Never answers until the task is cancelled (then fails with URLError.cancelled).
    case hold
    /// Answers JSON inside `send`, on the sending thread, before `send` returns (the fastest server there is).
    case atOnce(Int, String)
    /// As ``atOnce``, with these headers too (a redirect's `Location`).
    case atOnceWith(Int, String, headers: [String: String])
}

/// A transport that fails the test when a request arrives that the test did not stub.
final class StubTransport: WholeBodyTransport, @unchecked Sendable {
    typealias Handler = @Sendable (URLRequest) -> StubAnswer?

    private let lock = NSLock()
    private var handler: Handler?
    private var _requests: [URLRequest] = []
    private var _tasks: [StubTask] = []
    private var _unexpected: [String] = []
    private let sourceLocation: SourceLocation

    init(_ handler: Handler? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        self.handler = handler
        self.sourceLocation = sourceLocation
    }

    var requests: [URLRequest] { lock.withLock { _requests } }
    var tasks: [StubTask] { lock.withLock { _tasks } }
    var unexpected: [String] { lock.withLock { _unexpected } }
    func requests(matching fragment: String) -> [URLRequest] {
        requests.filter { ($0.url?.absoluteString ?? "").contains(fragment) }
    }
    func count(_ method: String, _ pathSuffix: String) -> Int {
        requests.filter { $0.httpMethod == method && ($0.url?.path ?? "").hasSuffix(pathSuffix) }.count
    }

    func send(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void
    ) -> CancellableTask {
        let task = StubTask(completion: completion)
        let handler = lock.withLock { () -> Handler? in
            _requests.append(request)
            _tasks.append(task)
            return self.handler
        }
        guard let answer = handler?(request) else {
            let text = "\(request.httpMethod ?? "?") \(request.url?.absoluteString ?? "?")"
            lock.withLock { _unexpected.append(text) }
            Issue.record("Unexpected request: \(text)", sourceLocation: sourceLocation)
            task.complete(.failure(URLError(.unsupportedURL)))
            return task
        }
        let url = request.url ?? URL(string: "http://invalid")!
        switch answer {
        case .hold:
            break
        case .failure(let code):
            DispatchQueue.global().async { task.complete(.failure(URLError(code))) }
        case .json(let status, let text, let headers):
            var all = headers
            all["Content-Type"] = "application/json"
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: all)!
            DispatchQueue.global().async { task.complete(.success((response, Data(text.utf8)))) }
        case .atOnce(let status, let text):
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])!
            task.complete(.success((response, Data(text.utf8))))
        case .atOnceWith(let status, let text, let headers):
            var all = headers
            all["Content-Type"] = "application/json"
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: all)!
            task.complete(.success((response, Data(text.utf8))))
        case .body(let status, let data, let contentType):
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": contentType])!
            DispatchQueue.global().async { task.complete(.success((response, data))) }
        }
        return task
    }
}

final class StubTask: CancellableTask, @unchecked Sendable {
    private let lock = NSLock()
    private var completion: (@Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void)?
    private var _cancelled = false
    private let cancelledSignal = DispatchSemaphore(value: 0)

    init(completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void) {
        self.completion = completion
    }

    var isCancelled: Bool { lock.withLock { _cancelled } }

    /// Waits until the task is cancelled, at most until `deadline`: a call that ended early stops its transport
    /// task after it delivered its result, so a test that has the result may look before the cancel arrived.
    func waitUntilCancelled(deadline: DispatchTime) -> Bool {
        guard !isCancelled else { return true }
        guard cancelledSignal.wait(timeout: deadline) == .success else { return isCancelled }
        cancelledSignal.signal()   // for the next waiter
        return true
    }

    func complete(_ result: Result<(HTTPURLResponse, Data), Error>) {
        let completion = lock.withLock { () -> (@Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void)? in
            defer { self.completion = nil }
            return self.completion
        }
        completion?(result)
    }

    func cancel() {
        let first = lock.withLock { () -> Bool in
            defer { _cancelled = true }
            return !_cancelled
        }
        if first { cancelledSignal.signal() }
        DispatchQueue.global().async { self.complete(.failure(URLError(.cancelled))) }
    }
}

/// A clock the test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = start }
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
}

/// The elapsed clock (seconds) a test moves by hand, apart from the wall clock (``TestClock``): the clock a session's
/// idle time is measured on, which counts a sleep and no wall-clock step.
final class TestElapsedClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: TimeInterval
    init(_ start: TimeInterval = 1_000) { current = start }
    var now: TimeInterval { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
}

/// How long a test waits for an event before it fails: minutes, far beyond the work (milliseconds), so a
/// busy machine only slows a test down and a hang still fails with a message.
enum TestBound {
    static let seconds: Double = 300
    static var deadline: DispatchTime { .now() + seconds }
}

/// Runs `wait` on a thread of its own and resumes the caller with its result: an async test waits on the
/// event itself without blocking a thread of the cooperative pool (two threads on this machine) or of
/// Dispatch's global pool, which blocked threads and a busy machine starve.
func onOwnThread<R: Sendable>(_ wait: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: wait()) }.start()
    }
}

/// Records completions; `wait()` blocks until the expected number arrived (no sleeps).
final class Recorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [T] = []
    private var _offQueue = 0
    private let expected: Int
    private let group = DispatchGroup()
    private let key: DispatchSpecificKey<String>?

    init(expecting count: Int = 1, queueKey: DispatchSpecificKey<String>? = nil) {
        expected = count
        key = queueKey
        for _ in 0..<count { group.enter() }
    }

    func record(_ value: T) {
        let leave = lock.withLock { () -> Bool in
            if let key, DispatchQueue.getSpecific(key: key) != "callbacks" { _offQueue += 1 }
            _values.append(value)
            return _values.count <= expected
        }
        if leave { group.leave() }
    }

    @discardableResult
    func wait(sourceLocation: SourceLocation = #_sourceLocation) -> [T] {
        let result = group.wait(timeout: TestBound.deadline)
        #expect(result == .success, "no completion within \(Int(TestBound.seconds)) s (hang guard)", sourceLocation: sourceLocation)
        return values
    }

    /// ``wait()`` without blocking a thread of the cooperative pool or of Dispatch's global pool (the wait
    /// runs on a thread of its own): for async tests, and for tests whose completions need those pools
    /// themselves (async providers and hooks), which a blocked pool would starve.
    @discardableResult
    func value(sourceLocation: SourceLocation = #_sourceLocation) async -> [T] {
        let result = await onOwnThread { [group] in group.wait(timeout: TestBound.deadline) }
        #expect(result == .success, "no completion within \(Int(TestBound.seconds)) s (hang guard)", sourceLocation: sourceLocation)
        return values
    }

    var values: [T] { lock.withLock { _values } }
    var offQueue: Int { lock.withLock { _offQueue } }
}

/// A DataAPI over a stub, with a marked callback queue and a test clock.
struct Harness {
    static let key = DispatchSpecificKey<String>()
    let api: DataAPI
    let stub: StubTransport
    let clock: TestClock
    let store: FMTokenStore
    let logs: Recorder<FMLogEvent>
    let queue: DispatchQueue

    init(
        configuration: FMConfiguration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass"),
        store: FMTokenStore = FMMemoryTokenStore(),
        clock: TestClock = TestClock(),
        elapsed: TestElapsedClock? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ handler: StubTransport.Handler? = nil
    ) {
        let queue = DispatchQueue(label: "test.callbacks")
        queue.setSpecific(key: Harness.key, value: "callbacks")
        let logs = Recorder<FMLogEvent>(expecting: 0)
        self.queue = queue
        self.logs = logs
        self.clock = clock
        self.store = store
        stub = StubTransport(handler, sourceLocation: sourceLocation)
        api = DataAPI(
            configuration: configuration, transport: stub, callbackQueue: queue, tokenStore: store,
            logger: { logs.record($0) }, clock: Self.clock(wall: clock, elapsed: elapsed)
        )
    }

    /// The clocks of a harness: the elapsed clock follows the wall clock unless one is given.
    static func clock(wall: TestClock, elapsed: TestElapsedClock?) -> SessionClock {
        guard let elapsed else { return SessionClock(wall: { wall.now }, elapsed: nil) }
        return SessionClock(wall: { wall.now }, elapsed: { elapsed.now })
    }

    /// Waits until everything already queued on the callback queue has run.
    func drain() { queue.sync {} }

    /// Opens a second pool session: a call to a path with "hold" in it is held at the server (its handler
    /// signals `hold` and answers `.hold`) and keeps the first session busy while a second call opens the
    /// second session and is answered "ok"; then the held call is cancelled and has completed on return.
    func openSecondSessionBesideAHeldCall(hold: DispatchSemaphore, sourceLocation: SourceLocation = #_sourceLocation) {
        let held = Recorder<Result<String, FMError>>()
        let holding = api.perform(TestEndpoints.records("hold")) { held.record($0) }
        #expect(hold.wait(timeout: TestBound.deadline) == .success, sourceLocation: sourceLocation)
        let second = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { second.record($0) }
        #expect(second.wait(sourceLocation: sourceLocation).first?.testValue == "ok", sourceLocation: sourceLocation)
        holding.cancel()
        held.wait()
    }
}

/// Canned bodies.
enum Bodies {
    static let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123"
    static func login(_ token: String = Bodies.token) -> String {
        #"{"response":{"token":"\#(token)"},"messages":[{"code":"0","message":"OK"}]}"#
    }
    static let ok = #"{"response":{},"messages":[{"code":"0","message":"OK"}]}"#
    static let expired = #"{"messages":[{"code":"952","message":"Invalid FileMaker Data API token (*)"}],"response":{}}"#
    static let badLogin = #"{"messages":[{"code":"212","message":"Invalid user account and/or password; please try again"}],"response":{}}"#
    static let noRecords = #"{"messages":[{"code":"401","message":"No records match the request"}],"response":{}}"#
    static func value(_ text: String) -> String {
        #"{"response":{"value":"\#(text)"},"messages":[{"code":"0","message":"OK"}]}"#
    }
}

/// Endpoints for engine tests.
enum TestEndpoints {
    /// GET …/layouts/{layout}/records, session auth, returns `response.value` or "".
    static func records(_ layout: String = "Contacts", auth: Endpoint<String>.Auth = .session) -> Endpoint<String> {
        Endpoint(.get, .database, ["layouts", layout, "records"], auth: auth) { response in
            let object = try Envelope.response(from: response.body, status: response.status)
            return object["value"] as? String ?? ""
        }
    }
}

extension URLRequest {
    func header(_ name: String) -> String? { value(forHTTPHeaderField: name) }
}

func isLogin(_ request: URLRequest) -> Bool {
    request.httpMethod == "POST" && (request.url?.path ?? "").hasSuffix("/sessions")
}

func basicValue(_ user: String, _ password: String) -> String {
    Data("\(user):\(password)".utf8).base64EncodedString()
}

extension Result {
    /// The value on success (test helper; named to avoid clashing with helpers of other streams).
    var testValue: Success? { try? get() }
    /// The error on failure.
    var testError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension Result where Failure == FMError {
    /// The FileMaker or client code on failure.
    var testFailureCode: String? { testError?.code }
}


/// A transport that holds the first request until ``release()`` and answers every later one inside `send`.
protocol HoldingFirstTransport: FMTransport {
    /// Signalled when the first request reached the transport (and is held).
    var arrived: DispatchSemaphore { get }
    /// Answers the held first request, on the calling thread.
    func release()
}

/// A chain of `count` calls through `transport` on a secondary thread's stack (512 KiB): the first is sent from
/// such a thread and held, the rest queue behind it (`whileQueued` runs then), and the held one is released from
/// another such thread, so every later call is served and answered inside the previous one's answer there.
/// Returns every call's result (a crash, not a result, when the chain grows the stack per call).
func chainOfCalls(_ api: DataAPI, through transport: some HoldingFirstTransport, count: Int,
                  whileQueued: () -> Void = {}) -> [Result<String, FMError>] {
    let results = Recorder<Result<String, FMError>>(expecting: count)
    let started = DispatchSemaphore(value: 0)
    let thread = Thread {
        api.perform(TestEndpoints.records()) { results.record($0) }
        started.signal()
    }
    thread.stackSize = 512 * 1024
    thread.start()
    #expect(started.wait(timeout: TestBound.deadline) == .success)
    #expect(transport.arrived.wait(timeout: TestBound.deadline) == .success)
    for _ in 1..<count { api.perform(TestEndpoints.records()) { results.record($0) } }
    whileQueued()
    let releaser = Thread { transport.release() }
    releaser.stackSize = 512 * 1024
    releaser.start()
    return results.wait()
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one call may reach, and no more: the configuration, the session stage, the send stage, the
/// lifecycle (shutdown) and the callback queue. ``DataAPI`` holds one; an ``EngineCall`` holds it instead of
/// the whole ``DataAPI``, so a call's walk stays inside the pipeline's rooms.
struct CallContext: Sendable {
    let configuration: FMConfiguration
    /// The session stage: leases, logins, the token store.
    let sessions: SessionStage
    /// The send stage: the transport, the rate limit, the concurrency cap, the log.
    let sender: Sender
    /// Admission and the shutdown.
    let lifecycle: Lifecycle
    /// Where completions run unless a call says otherwise.
    let callbackQueue: DispatchQueue
}

/// How one call is sent, beyond its endpoint (every field has the plain call's value by default).
struct CallOptions: Sendable {
    /// Which HTTP statuses go to `endpoint.decode` (200 only by default; the container download also accepts
    /// its 302). Other statuses are turned into an ``FMError`` from the envelope.
    var accepting: @Sendable (Int) -> Bool = { $0 == 200 }
    /// An existing handle to report cancellation through (a multi-step operation); a new one when `nil`.
    var handle: FMRequest?
    /// Where the answer's body goes (memory under ``FMConfiguration/maxResponseBytes`` by default).
    var sink: BodySink?
    /// A container transfer, bounded by ``FMConfiguration/containerTimeout``.
    var isTransfer = false
    /// A deadline shared by the steps of one operation (the hops of a container download), instead of a new
    /// one for this call.
    var endsAt: DispatchTime?
    /// Sent even while shutting down (the shutdown's own logouts, logins).
    var bypassShutdown = false
    /// Whether transient failures are retried under ``FMConfiguration/retry`` (not for logins: the calls
    /// waiting for the session decide).
    var retries = true
    /// Where the completion runs (the context's callback queue by default).
    var queue: DispatchQueue?
    /// The completion runs at once on the thread that finished the call, on no queue (the async bridge: its
    /// continuation resumes on its task's executor, so a queue hop first would be a second hop).
    var inline = false
    /// The span of the call this one is made for (a login a waiting call started).
    var parent: (any FMCallSpan)?
    /// The call's number (`fm.request_id`, ``FMCallStart/requestID``), when the caller drew it first
    /// (``CallContext/newRequestID()``) to name the call on a line of its own: the one a container download logs when
    /// the redirect a hop answered ends it. A new one when `nil`.
    var requestID: UInt64?
    /// The caller's logging context for the call's lines (``FMLogMetadataProvider``), read as the operation this call is
    /// a step of began (a walk's next page, a download's next hop, an OData call's request after its token), where the
    /// caller was; `[:]` for none (a login: it serves the pool, not one caller). Read now, as the call begins, when `nil`.
    var logContext: [String: String]?

    /// The plain call's options.
    init() {}

    /// A call that decodes these statuses and reports cancellation through `handle`.
    init(accepting: @escaping @Sendable (Int) -> Bool, handle: FMRequest? = nil) {
        self.accepting = accepting
        self.handle = handle
    }
}

/// The send stage's tenants, shared by every call of one ``DataAPI`` (and its new-session hook's): the
/// transport and why it may refuse, the rate limit, the concurrency cap, the first-contact rule, the log.
final class Sender: Sendable {
    let transport: any FMTransport
    /// Whether `transport` sends a body file as it was when it opened it, checking it as it sends (``SendsBodyFileAsItWas``:
    /// FMCurlTransport): then an OData upload hands it the caller's file, else a copy taken under the same rule.
    let sendsBodyFilesAsTheyWere: Bool
    /// Why `transport` cannot send this configuration's calls (TLS options or a proxy it cannot honour): every
    /// call fails with it.
    let refusal: FMError?
    /// The concurrency cap (``FMConfiguration/maxConcurrentRequests``); `nil` without one.
    let gate: AdmissionGate?
    /// The rate limit (``FMConfiguration/maxRequestsPerSecond``), shared by every request.
    let rateLimiter: RateLimiter?
    /// Which hosts have answered this client (the first-contact rule: ``Reachability``).
    let reachability: Reachability
    let logger: Logger
    /// The server's address, port and scheme, resolved once from the host (for spans).
    let server: (address: String?, port: Int?, scheme: String?)
    /// Draws a retry's back-off from its range (full jitter); the tests' seam for the random source.
    let retryJitter = Locked<@Sendable (ClosedRange<Double>) -> Double>({ Double.random(in: $0) })
    /// Arms a call's deadline timer (`seconds`, then `fire`): ``Deadline/after(seconds:fire:)``; the tests' seam to
    /// end a call by its deadline at a moment of their choosing (a deadline racing an answer).
    let armDeadline = Locked<@Sendable (TimeInterval, @escaping @Sendable () -> Void) -> Deadline>({ Deadline.after(seconds: $0, fire: $1) })

    /// The send stage of `configuration` over `transport`; `refusal`: why `transport` cannot send its calls.
    init(configuration: FMConfiguration, transport: any FMTransport, refusal: FMError?, logger: Logger,
         clock: SessionClock) {
        self.transport = transport
        self.sendsBodyFilesAsTheyWere = (transport as? any SendsBodyFileAsItWas)?.sendsBodyFileAsItWas ?? false
        self.refusal = refusal
        self.gate = configuration.maxConcurrentRequests.map(AdmissionGate.init(limit:))
        self.rateLimiter = RateLimiter.make(rate: configuration.maxRequestsPerSecond)
        let base = try? configuration.resolvedBase().get()
        self.reachability = Reachability(elapsed: { clock.elapsed }, home: base)
        self.logger = logger
        self.server = (base?.host, base?.connectionPort, base?.scheme)
    }

    /// nginx's answer to plain HTTP on its HTTPS port (a 400 page) as the wrong-scheme error that names
    /// `https://` (``FMError/wrongScheme(_:use:underlying:)``); any other result as it is.
    static func namingTheScheme(_ result: consuming Result<ExchangeAnswer, ExchangeFailure>, url: URL?) -> Result<ExchangeAnswer, ExchangeFailure> {
        guard Self.isPlainHTTPRefusal(result, url: url) else { return result }
        let error = FMError.wrongScheme(url, use: "https", underlying: "HTTP 400: The plain HTTP request was sent to HTTPS port")
        return .failure(ExchangeFailure(error: error, beforeAnswer: false))
    }

    /// Whether `result` is a server's 400 for a plain HTTP request sent to its HTTPS port.
    private static func isPlainHTTPRefusal(_ result: Result<ExchangeAnswer, ExchangeFailure>, url: URL?) -> Bool {
        guard case .success(let answer) = result, answer.head.status == 400, url?.scheme?.lowercased() == "http",
              answer.body.count < 64 * 1024, answer.body.range(of: Data("plain HTTP request was sent to HTTPS port".utf8)) != nil
        else { return false }
        return true
    }
}

extension CallContext {
    /// A number for a new call (``FMCallStart/requestID``, the `fm.request_id` of its lines), drawn only when someone
    /// reads it (a logger or the instrumentation is set): `0` otherwise.
    func newRequestID() -> UInt64 {
        sender.logger.isEnabled || configuration.instrumentation != nil ? RequestIDs.make() : 0
    }

    /// The caller's logging context (``FMConfiguration/logMetadataProvider``), read now: call it where an operation
    /// begins, on the caller's thread or in its task. Empty without a provider, and without a logging hook (nothing
    /// would read it); see ``CallerLogContext/read(_:secrets:)`` for what is kept of what the provider returned.
    func callerLogContext() -> [String: String] {
        guard sender.logger.isEnabled, let provider = configuration.logMetadataProvider else { return [:] }
        return CallerLogContext.read(provider, secrets: sender.logger.secrets)
    }

    /// Sends `endpoint` and calls `completion` exactly once, on the options' queue (the callback queue by default).
    @discardableResult
    func perform<Value>(_ endpoint: Endpoint<Value>, options: CallOptions = CallOptions(),
                        completion: @escaping (consuming Result<Value, FMError>) -> Void) -> FMRequest {
        // The metrics observer and the instrumentation ride the same meter; with neither set, a call measures nothing.
        let (metrics, instrumentation) = (configuration.metrics, configuration.instrumentation)
        let requestID = options.requestID ?? newRequestID()
        // Where the caller is, as the span below: a step of an operation brings the context read as the operation began.
        let logContext = options.logContext ?? callerLogContext()
        var meter: CallMeter?
        var observe: (@Sendable (FMError?) -> Void)?
        if metrics != nil || instrumentation != nil {
            let kind = endpoint.kind
            let server = sender.server
            // Synchronously, on the caller's thread or task: the instrumentation reads its task-local context here.
            let span = instrumentation?.startCall(FMCallStart(
                endpoint: kind, method: endpoint.method.rawValue, layout: endpoint.layout, table: endpoint.table, database: configuration.database,
                serverAddress: server.address, serverPort: server.port, scheme: server.scheme, requestID: requestID,
                parent: options.parent))
            let started = CallMeter(endpoint: kind, span: span)
            meter = started
            observe = { error in started.end(error: error, observer: metrics) }
        }
        // A call of the new-session hook (a pinned stage) is counted until its completion returned: its token stays hidden.
        let completion = sessions.pool.pinned ? sessions.trackingHookCall(completion) : completion
        let delivery = Delivery(queue: options.inline ? nil : options.queue ?? callbackQueue, observe: observe, completion: completion)
        let call = EngineCall(context: self, endpoint: endpoint, accepting: options.accepting, delivery: delivery,
                              handle: options.handle ?? FMRequest(), sink: options.sink ?? .memory(cap: configuration.maxResponseBytes),
                              retries: options.retries, meter: meter, requestID: requestID, logContext: logContext)
        // The new-session hook's calls (a pinned pool) are part of a call in flight: admitted during the grace.
        guard options.bypassShutdown || lifecycle.admit(call, duringGrace: sessions.pool.pinned) else {
            call.refuse(.shuttingDown)
            return call.handle
        }
        let seconds = options.endsAt.map(Deadline.remaining(until:))
        call.start(deadline: seconds ?? configuration.deadline(isTransfer: options.isTransfer || endpoint.isContainerUpload))
        return call.handle
    }

    /// The session stage's ``SessionStage/Send``: a login or a logout through the pipeline like any call
    /// (deadline, concurrency cap, rate limit, metrics) but once, even while shutting down, reporting on the
    /// session queue rather than the callback queue (which the caller may be blocking). It holds no
    /// ``DataAPI`` and no stage: the stage that asks comes with each request.
    static func sessionSend(configuration: FMConfiguration, sender: Sender, lifecycle: Lifecycle,
                            callbackQueue: DispatchQueue) -> SessionStage.Send {
        { stage, request, parent, completion in
            let context = CallContext(configuration: configuration, sessions: stage, sender: sender, lifecycle: lifecycle,
                                      callbackQueue: callbackQueue)
            var options = CallOptions()
            options.bypassShutdown = true
            options.retries = false
            options.queue = stage.queue
            options.parent = parent
            // A login or logout serves the pool, not the caller whose wait started it: no caller's context.
            options.logContext = [:]
            switch request {
            case .login(let headers):
                var endpoint = SessionEndpoints.login(dataSources: configuration.dataSources)
                endpoint.auth = .none
                for (name, value) in headers { endpoint.headers[name] = value }
                context.perform(endpoint, options: options, completion: completion)
            case .logout(let token):
                options.accepting = SessionEndpoints.closeAccepting   // a session the server forgot is closed already
                context.perform(SessionEndpoints.close(token: token), options: options) { result in
                    completion(result.map { _ in token })
                }
            }
        }
    }
}

extension DataAPI {
    /// Sends `endpoint` through this service's pipeline and calls `completion` exactly once (see
    /// ``CallContext/perform(_:options:completion:)``).
    @discardableResult
    func perform<Value>(_ endpoint: Endpoint<Value>, options: CallOptions = CallOptions(),
                        completion: @escaping (consuming Result<Value, FMError>) -> Void) -> FMRequest {
        context.perform(endpoint, options: options, completion: completion)
    }

    /// Completes at once with `result` (on ``callbackQueue``, like every other path) and returns the handle.
    @discardableResult
    func complete<Value>(_ result: consuming Result<Value, FMError>,
                         _ completion: @escaping (consuming Result<Value, FMError>) -> Void) -> FMRequest {
        let delivery = OneShot(queue: callbackQueue, completion: completion)
        delivery.finish(result)
        return delivery.handle
    }
}

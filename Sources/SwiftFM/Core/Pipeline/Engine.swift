import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The call pipeline. One call passes through these stages, in order; the folders of Core/ follow them:
//
//   admission  Pipeline/  CallContext.perform (CallContext.swift; DataAPI.perform forwards with CallOptions):
//                         the shutdown check (Lifecycle), the call's deadline (Deadline.swift:
//                         FMConfiguration.timeout, or containerTimeout for a container transfer)
//   session    Session/   SessionStage leases a pool session (SessionPool and its self-releasing SessionLease,
//                         driven by SessionStateMachine; calls wait in a WaitQueue, a replay at its front),
//                         logs in once for every waiter through its `send`,
//                         runs the new-session hook and writes the token store
//   send       Pipeline/  Sender holds the send stage's tenants: the rate limit (RateLimiter), the
//                         concurrency cap (AdmissionGate), each waiting in FIFO order in a WaitQueue; one exchange
//                         (Exchange: the byte cap) through the transport (Wire/: FMTransport)
//   classify   Pipeline/  FileMaker code, transport error, session lost, transient: Classifier
//   retry      Pipeline/  replay once after a lost session; transient failures retried under FMRetryPolicy
//                         with back-off, never past the deadline (EngineCall.replay, EngineCall.retry)
//   complete   Pipeline/  exactly once, on the callback queue (inline for the async bridge): Delivery, with
//                         the caller's handle FMRequest, the (value?, code) pair and FMError.current
//                         (Completion.swift)
//
// One call's phase through these stages is a CallState (CallState.swift): queued, waiting for a session, in
// flight, backing off, done. Every stage reports an event to it, and EngineCall carries out the actions it
// returns; its end is the one place a result is delivered and what the call holds is given back.
//
// Wire/ is what travels: each endpoint described once (Endpoint, Endpoints, SessionEndpoints), the request
// built from it (RequestBuilder, Multipart), the envelope read back (Envelope), the transports. JSON/ reads
// answers: one lexer (JSONLexer) under raw values (JSONReader) and typed ones (JSONTape, FileMakerDecoder).
// EngineCall, below, composes the stages for one call; it holds a CallContext (configuration, session stage,
// sender, lifecycle, callback queue), never the DataAPI. SwiftFM.docc/Architecture.md follows one getRecord
// through every file whose code it runs.

/// Something a call handed to the send stage, which it stops if it ends first: its place in the rate-limit or
/// concurrency queue, or its exchange.
enum SentWork: Sendable {
    case queued(@Sendable () -> Void)
    case exchange(Exchange)

    /// Leaves the queue (nothing once let through), or ends the exchange with `error` and cancels its transfer.
    func stop(with error: FMError) {
        switch self {
        case .queued(let withdraw): withdraw()
        case .exchange(let exchange): exchange.cancel(with: error)
        }
    }
}

/// One call of ``CallContext/perform(_:options:completion:)``:
/// the stages of the pipeline around one or more HTTP exchanges. Its phase is a ``CallState``: every stage
/// reports an event, and the call carries out the actions the state returns, outside the lock. It keeps no
/// other state of its own.
final class EngineCall<Value>: StoppableCall, @unchecked Sendable {
    // @unchecked: the state is behind its lock; `startedAt`, `endsAt` and `rideOutEndsAt` are written once, in `start`,
    // before any stage runs; the rest is immutable.
    typealias State = CallState<Value, SessionLease, SentWork, Deadline>
    let context: CallContext
    let endpoint: Endpoint<Value>
    let accepting: @Sendable (Int) -> Bool
    let delivery: Delivery<Value>
    /// The caller's handle: its cancel reports ``CallState/Event/cancelled``.
    let handle: FMRequest
    let sink: BodySink
    let retries: Bool
    let meter: CallMeter?
    /// The call's number in log lines and its span (0 when neither a logger nor an instrumentation is set).
    let requestID: UInt64
    /// The caller's logging context (``FMLogMetadataProvider``), read as the call began: under SwiftFM's keys in every
    /// line of the call.
    let logContext: [String: String]
    private let state = Locked(State())
    private var endsAt: DispatchTime = .distantFuture
    /// When the call started (a retried connection failure's message says for how long it was retried).
    private var startedAt: DispatchTime = .now()
    /// How long a read may ride out a server that is away: its deadline, but at most ``FMConfiguration/timeout``
    /// from its start (a container transfer's own deadline, ``FMConfiguration/containerTimeout``, is far longer).
    private var rideOutEndsAt: DispatchTime = .distantFuture

    init(context: CallContext, endpoint: Endpoint<Value>, accepting: @escaping @Sendable (Int) -> Bool, delivery: Delivery<Value>,
         handle: FMRequest, sink: BodySink, retries: Bool = true, meter: CallMeter? = nil, requestID: UInt64 = 0,
         logContext: [String: String] = [:]) {
        self.retries = retries
        self.meter = meter
        self.requestID = requestID
        self.logContext = logContext
        self.context = context
        self.endpoint = endpoint
        self.accepting = accepting
        self.delivery = delivery
        self.handle = handle
        self.sink = sink
    }

    /// `true` once the call ended.
    private var isDone: Bool { state.withLock { $0.isDone } }

    /// Tells the state what happened and carries out what it decides, in order, outside the lock.
    ///
    /// The result is delivered once nothing here refers to it any more (the event and the actions are gone):
    /// the completion gets the only reference (see ``Delivery``). Delivery is the last action but for the
    /// stops of a call that ends early, which follow it, as the state ordered them.
    ///
    /// `saying`: the lines that say how the call ended when this event ends it (its one error line, and any
    /// warning beside it). They are written only when this event is the one that delivers the result: an
    /// outcome that lost the race to an end already delivered (its deadline, a cancel, a shutdown) is detail,
    /// written at `debug`, so one failure stays one error line whichever end comes first.
    private func report(_ event: consuming State.Event, saying lines: [EndingLine] = []) {
        var delivering: Result<Value, FMError>?
        var stops: [(SentWork, FMError)] = []
        let byDeadline = event.isDeadline
        do {
            for action in decide(event) {
                switch action {
                case .startAttempt(let front, let number): attempt(front: front, number: number)
                case .send(let lease, let number): send(lease: lease, attempt: number)
                case .armBackoff(let wait, let backoff):
                    let timer = Deadline.after(seconds: wait) { [self] in report(.backoffEnded(backoff: backoff)) }
                    report(.backoffArmed(timer, backoff: backoff))
                case .cancelTimer(let timer): timer.cancel()
                case .withdrawFromPool(let id): context.sessions.withdraw(id)
                case .releaseLease(let lease): lease.release()
                case .unregister: context.lifecycle.release(self)
                case .deliver(let result): delivering = result
                case .stop(let work, let error):
                    if delivering == nil { work.stop(with: error) } else { stops.append((work, error)) }
                }
            }
        }
        let delivered = delivering != nil
        for line in lines {
            context.sender.logger.log(delivered ? line.level : .debug, line.text, metadata: logMetadata(code: line.code, status: line.status))
        }
        if let result = delivering.take() {
            // The deadline ended the call: its exchange is stopped and logs nothing, so this line says it.
            // A login's or logout's (`retries` off: the session stage's) end is the session stage's to say.
            if byDeadline, case .failure(let error) = result {
                context.sender.logger.log(retries ? .error : .warning, "\(endpoint.kind) timed out: \(error.message)",
                                          metadata: logMetadata(code: error.code))
            }
            delivery.deliver(hidingSecrets(consume result))
        }
        for (work, error) in stops { work.stop(with: error) }
    }

    /// A failure without the secrets a server may have echoed into its text (a gateway quoting the
    /// `Authorization` header, a script returning the token), as ``FMError/description`` promises: the
    /// configured ones (the logger's: passwords, the Basic value, held tokens) and the call's own token or Basic
    /// value (legacy calls carry theirs). A success passes untouched.
    private func hidingSecrets(_ result: consuming Result<Value, FMError>) -> Result<Value, FMError> {
        var error: FMError
        switch consume result {
        case .success(let value): return .success(value)
        case .failure(let failure): error = failure
        }
        var secrets = context.sender.logger.secrets()
        switch endpoint.auth {
        case .token(let token): secrets.append(token)
        case .basic(let encoded?): secrets += Redaction.basicSecrets(encoded)
        case .basic(nil), .none, .session: break
        }
        // The call's own `Authorization` header: a login's Basic value (an explicit base64 value:
        // `refreshToken(encodedCredentials:)`), a Claris ID token (a login's, an OData request's), whatever its provider.
        if let header = endpoint.headers.first(where: { $0.key.lowercased() == "authorization" })?.value,
           let space = header.firstIndex(of: " ") {
            let credential = String(header[header.index(after: space)...])
            secrets += header.lowercased().hasPrefix("basic ") ? Redaction.basicSecrets(credential) : [credential]
        }
        let shown = context.sender.logger.shown
        error.message = Redaction.scrubCut(error.message, secrets: secrets, shown: shown)
        error.underlying = error.underlying.map { Redaction.scrubCut($0, secrets: secrets, shown: shown) }
        return .failure(error)
    }

    /// What the state decides for `event` (which ends here).
    private func decide(_ event: consuming State.Event) -> [State.Action] {
        state.withLock { $0.handle(event) }
    }

    /// `StoppableCall`: the shutdown's grace is over.
    func stop(with error: FMError) { report(.shutdown(error)) }

    // MARK: admission

    /// Not admitted (shutting down): completes with `error`.
    func refuse(_ error: FMError) { report(.answered(.failure(error))) }

    /// Starts the call once it is admitted (a handle cancelled already ends it here, with `-1005`, and nothing is
    /// sent). The handle is listened to only now: a call it ended before its admission would stay registered, and
    /// a shutdown would wait for it for ever.
    func start(deadline seconds: TimeInterval) {
        if handle.isCancelled { return report(.cancelled) }
        if let invalid = endpoint.invalid {
            // Refused before anything was sent: an argument that cannot be sent (`-1002`: a record id that is
            // not one, an empty layout name, a URL that is not a file URL) or a file that cannot be read (`-1009`).
            // The call failed: said once, at error, as a request that cannot be built is.
            report(.answered(.failure(invalid)), saying: ending(notSent(invalid)))
            return
        }
        startedAt = .now()
        endsAt = Deadline.fromNow(seconds)
        rideOutEndsAt = Deadline.fromNow(min(seconds, context.configuration.timeout))
        // The timers hold the call (nothing else does while it backs off): the state cancels them when it ends.
        let arm = context.sender.armDeadline.value
        report(.deadlineArmed(arm(seconds) { [self] in report(.deadlinePassed(deadlineError(after: seconds))) }))
        // A cancel from now on (at once if it came since the check above) ends the call wherever it is.
        handle.onCancel { [weak self] in self?.report(.cancelled) }
        report(.started)
    }

    /// The `-1004` of this call's deadline (`seconds`): a call still waiting for a session whose wait a running
    /// new-session hook held up (``SessionStage/waitIsHeldUpByNewSessionHook(_:)``) waited for that hook, and says so
    /// (``FMError/waitedForNewSessionHook(_:_:after:)``); any other timed out on its way to the host
    /// (``FMError/timeout(_:_:after:)``).
    private func deadlineError(after seconds: TimeInterval) -> FMError {
        let waiting = state.withLock { state -> UInt64? in
            if case .waitingForSession(let id) = state.phase { return id }
            return nil
        }
        guard let waiting, context.sessions.waitIsHeldUpByNewSessionHook(waiting) else {
            return .timeout(endpoint, context.configuration, after: seconds)
        }
        return .waitedForNewSessionHook(endpoint, context.configuration, after: seconds)
    }

    // MARK: session

    private func attempt(front: Bool, number: Int) {
        guard case .session = endpoint.auth else { return report(.noSessionNeeded) }
        let id = context.sessions.lease(front: front, parent: meter?.span) { [self] result in
            switch result {
            case .success(let lease):
                report(.leased(lease))
            case .failure(let error):
                // The login failed, so nothing of the call was sent: a transient failure (a server still
                // restarting, its session cap) is retried under the policy, writes included.
                if Classifier.isTransientLoginFailure(error) {
                    // As long as the login's answer asked (`Retry-After` on a 503 from a proxy in maintenance).
                    retry(after: error, retryAfter: error.retryAfter, unsent: true)
                } else {
                    report(.loginFailed(error))
                }
            }
        }
        // Queued (not leased at once): the state remembers the place, to leave the queue if the call ends.
        if let id { report(.leaseRequested(id, attempt: number)) }
    }

    // MARK: send

    /// One HTTP exchange: build, wait for a turn under the rate limit and a slot under the concurrency cap,
    /// send, log; the answer (any status) or the failure goes to ``received(_:lease:explicitToken:)``. Each
    /// place in a queue and the exchange are reported as sent work, which the state stops if the call ends first.
    private func send(lease: SessionLease?, attempt: Int) {
        let authorization: String?
        let explicitToken: String?
        switch authorize(lease) {
        case .success(let pair): (authorization, explicitToken) = pair
        case .failure(let error): return report(.answered(.failure(error)), saying: ending(notSent(error)))
        }
        let endpoint = self.endpoint
        let sender = context.sender
        let logger = sender.logger
        let request: URLRequest
        switch RequestBuilder.request(for: endpoint, configuration: context.configuration, authorization: authorization) {
        case .success(let built): request = built
        case .failure(let error):
            return received(.failure(ExchangeFailure(error: error, beforeAnswer: false)), lease: lease, explicitToken: explicitToken,
                            failedLine: notSent(error))
        }
        if let refusal = sender.refusal {
            return received(.failure(ExchangeFailure(error: refusal, beforeAnswer: false)), lease: lease, explicitToken: explicitToken,
                            failedLine: notSent(refusal))
        }
        // The method and redacted path of the request's lines: built once when debug lines are wanted, else only
        // for a line that is written (a failure).
        let container = if case .absolute = endpoint.scope { true } else { false }   // only container URLs are absolute
        let line = logger.isEnabled(.debug) ? "\(endpoint.method.rawValue) \(Redaction.path(of: request.url, container: container))" : nil
        let describe: @Sendable () -> String = {
            line ?? "\(endpoint.method.rawValue) \(Redaction.path(of: request.url, container: container))"
        }
        let gate = sender.gate
        let admit: @Sendable () -> Void = { [self] in
            // No cap, no gate: the exchange starts at once and has no slot to give back.
            guard let gate else {
                return exchange(request, lease: lease, explicitToken: explicitToken, attempt: attempt, describe: describe, release: {})
            }
            let ticket = gate.enter { [self] release in
                exchange(request, lease: lease, explicitToken: explicitToken, attempt: attempt, describe: describe, release: release)
            }
            if let ticket { report(.sent(.queued(ticket.withdraw), attempt: attempt)) }   // waiting for a slot
        }
        // The rate limit first, then the concurrency cap: a request waiting for its turn holds no slot.
        if let rateLimiter = sender.rateLimiter {
            let turn = rateLimiter.enter { [self] in if !isDone { admit() } }
            if let turn { report(.sent(.queued(turn.withdraw), attempt: attempt)) }   // waiting for its turn
        } else {
            admit()
        }
    }

    /// Attempt `attempt`'s exchange of `request`, holding a slot of the concurrency cap that `release` gives back.
    private func exchange(_ request: URLRequest, lease: SessionLease?, explicitToken: String?, attempt: Int,
                          describe: @escaping @Sendable () -> String, release: @escaping @Sendable () -> Void) {
        let (endpoint, sender, meter, sink) = (self.endpoint, context.sender, self.meter, self.sink)
        guard !isDone else { return release() }   // cancelled or out of time while queued: never sent
        // The body assembled into a private temporary file (removed after the exchange): a multipart body around the
        // caller's file, or, for a transport that would read the caller's file on its own schedule unchecked
        // (FMURLSessionTransport, yours), a copy of it. Either is the file as it was when its copy began, or the call
        // fails with -1009 naming it (UploadSource.copy, the rule of FileSnapshot).
        var built: URL?
        let copied: ((URL, Int64) -> Void)? = endpoint.bodyCopied.map { copied in { copied($0, $1) } }
        let assembling: URL? = switch endpoint.body {
        case .multipartFile(let source, _, _, _): source
        case .file(let source, _) where !sender.sendsBodyFilesAsTheyWere: source
        default: nil
        }
        if let source = assembling {
            do {
                // A large file takes a while: a cancel or the deadline ends the copy at the next chunk (the call has
                // completed already, once, with -1005 or -1004; the partial body is removed).
                if case .multipartFile(_, let fileName, let mimeType, let boundary) = endpoint.body {
                    built = try Multipart.writeBody(boundary: boundary, fileName: fileName, mimeType: mimeType, source: source,
                                                    stop: { [self] in isDone }, copied: copied)
                } else {
                    built = try UploadSource.copy(source, stop: { [self] in isDone }, copied: copied)
                }
            } catch is UploadSource.Stopped {
                return release()
            } catch {
                release()
                let failure = (error as? FMError) ?? FMError(code: FMError.ClientCode.fileError, message: "Cannot read \(source.path)",
                                                             underlying: String(describing: error))
                // Nothing was sent and no exchange line will say it: this line does (as a request that cannot be built).
                received(.failure(ExchangeFailure(error: failure, beforeAnswer: false)), lease: lease, explicitToken: explicitToken,
                         failedLine: notSent(failure))
                return
            }
        }
        // A file sent as it is (an OData container upload over FMCurlTransport, which compares it with its snapshot as it
        // sends it) is the caller's: read, never removed.
        var callersFile: URL?
        if built == nil, case .file(let source, _) = endpoint.body {
            // Checked again now: the file may have changed since the call was made.
            if let problem = UploadSource.problem(source) {
                release()
                received(.failure(ExchangeFailure(error: problem, beforeAnswer: false)), lease: lease, explicitToken: explicitToken,
                         failedLine: notSent(problem))
                return
            }
            callersFile = source
        }
        let bodyFile = built
        let sentFile = built ?? callersFile
        if let meter {
            switch endpoint.body {
            case .json(let data), .multipart(let data, _), .raw(let data, _): meter.sending(bytes: data.count)
            case .none, .multipartFile, .file: meter.sending(bytes: 0)
            }
        }
        sender.logger.log(.debug, "→ \(describe())", metadata: logMetadata())
        let started = DispatchTime.now().uptimeNanoseconds
        var transportRequest = FMTransportRequest(urlRequest: request, bodyFile: sentFile)
        transportRequest.mayBeSentTwice = endpoint.cannotChangeData
        // The exchange is the call's before it is sent: a call that ended meanwhile (a cancel reported -1005)
        // stops it there, and nothing goes out.
        Exchange.start(transportRequest, through: sender.transport, sink: sink, handOver: { [self] running in
            report(.sent(.exchange(running), attempt: attempt))
        }) { [self] (answered: consuming Result<ExchangeAnswer, ExchangeFailure>) in
            release()
            switch answered {
            case .success: sender.reachability.answered(request.url)
            case .failure(let failure) where failure.beforeAnswer && Classifier.isConnectionFailure(failure.error):
                sender.reachability.unreachable(request.url)
            // The head arrived: an answer, whatever became of its body (one that broke off included).
            case .failure(let failure) where !failure.beforeAnswer: sender.reachability.answered(request.url)
            case .failure: break
            }
            let result = Sender.namingTheScheme(answered, url: request.url)
            if let bodyFile { try? FileManager.default.removeItem(at: bodyFile) }
            let failedLine = logAnswer(result, line: describe, started: started)
            if let meter, case .success(let answer) = result {
                meter.received(bytes: answer.body.count, status: answer.head.status)
            }
            // Moved on, so that the delivered value is the only holder of the answer's bytes.
            received(consume result, lease: lease, explicitToken: explicitToken, describe: describe, failedLine: failedLine)
        }
    }

    /// The `Authorization` value of this attempt and the explicit token it sends (a caller's, not leased).
    private func authorize(_ lease: SessionLease?) -> Result<(String?, String?), FMError> {
        switch (lease, endpoint.auth) {
        case (let lease?, _):
            .success(("Bearer " + lease.token, nil))
        case (nil, .none), (nil, .session):
            .success((nil, nil))
        case (nil, .basic(let encoded)):
            RequestBuilder.basicAuthorization(encoded, credentials: context.configuration.credentials).map { ($0, nil) }
        case (nil, .token(let token)):
            .success(("Bearer " + token, token))
        }
    }

    /// The line of a call that failed before anything was sent (an argument that cannot be sent, a request that
    /// cannot be built, a refusal, an upload's file that cannot be read), naming the call and why: said once, as
    /// no exchange line will say it, at the level of what became of the call (``ending(_:)``).
    /// `nil` when the hook takes no errors (nothing is formatted).
    private func notSent(_ error: FMError) -> FailedAttemptLine? {
        guard context.sender.logger.isEnabled(.error) else { return nil }
        return FailedAttemptLine(text: "\(endpoint.kind) not sent: \(error)", code: error.code)
    }

    /// The line of an exchange that failed (no answer, or one that broke off), logged once the call decided:
    /// `warning` when it retries, `error` when the failure ends the call (the level table of
    /// TracingAndLogLevels: a restart ridden out is no error).
    struct FailedAttemptLine {
        let text: String
        let code: String
    }

    /// A line that says how a call ended, written by ``report(_:saying:)`` only when its event is the one that
    /// ends the call: the delivered result, and nothing else, is what the log says the call ended with.
    struct EndingLine {
        let level: FMLogEvent.Level
        let text: String
        let code: String
        var status: Int?
    }

    /// The failed attempt's line as the line of a failure that ends the call: `error`, or `warning` for a login
    /// or logout (`retries` off), whose failure the session stage says ("login failed", at the level of its
    /// verdict): one failure, one error line.
    private func ending(_ line: FailedAttemptLine?) -> [EndingLine] {
        guard let line else { return [] }
        return [EndingLine(level: retries ? .error : .warning, text: line.text, code: line.code)]
    }

    /// The answer's log line: debug unless the answer failed, and nothing is formatted for a plain answer when
    /// the hook takes only info and above (FMConfiguration.logLevel). A failed exchange's line is returned, to be
    /// logged once the call decided (``logRecovered(_:)`` or ``ending(_:)``).
    private func logAnswer(_ result: Result<ExchangeAnswer, ExchangeFailure>, line: () -> String, started: UInt64) -> FailedAttemptLine? {
        let logger = context.sender.logger
        // A failed exchange's line may end up an error (``ending(_:)``): built whenever errors are logged.
        guard logger.isEnabled, logger.isEnabled(Self.answerFailed(result, accepting: accepting) ? .error : .debug) else { return nil }
        let line = line()
        let duration = String(format: "%.1f ms", Double(DispatchTime.now().uptimeNanoseconds &- started) / 1_000_000)
        switch result {
        case .success(let answer):
            let status = answer.head.status
            let expected = status == 200 || accepting(status)
            let code = expected ? nil : Envelope.error(status: status, body: answer.body, odata: endpoint.isOData).code
            let size = answer.file == nil ? "\(answer.body.count) bytes" : "streamed to a file"
            // An answer is detail (debug), and so are outcomes a caller expects (a modId conflict, 306; "no
            // records match", 401); any other FileMaker error is one a caller must see (warning).
            let outcome = code.map(Classifier.expectedOutcomes.contains) ?? false
            let level: FMLogEvent.Level = expected || outcome ? .debug : .warning
            logger.log(level, "← \(line) \(status)\(code.map { " code \($0)" } ?? "") \(size) \(duration)",
                       metadata: logMetadata(code: code ?? "0", status: status))
            return nil
        case .failure(let failure):
            // With the cause (host, port, what failed): a code alone says nothing a person can act on.
            let text = "← \(line) failed \(failure.error.code) \(duration): \(failure.error.message)"
            // A cancel was the caller's own doing; any other failure waits for the call's decision.
            guard failure.error.code != FMError.ClientCode.cancelled else {
                logger.log(.debug, text, metadata: logMetadata(code: failure.error.code))
                return nil
            }
            return FailedAttemptLine(text: text, code: failure.error.code)
        }
    }

    /// Logs a failed exchange's line when the call goes on (retried, or replayed): a `warning`. The line of a
    /// failure that ends the call goes with the event that ends it (``ending(_:)``, ``report(_:saying:)``).
    private func logRecovered(_ line: FailedAttemptLine?) {
        guard let line else { return }
        context.sender.logger.log(.warning, line.text, metadata: logMetadata(code: line.code))
    }

    // MARK: classify

    /// An exchange ended. An accepted answer is decoded and reported from a frame that no longer holds it, so the
    /// decoded value is the only holder of the answer's bytes (a raw found set's `rawResponse`, a container's
    /// data) when it is delivered (see ``Delivery``); anything else is classified.
    private func received(_ result: consuming Result<ExchangeAnswer, ExchangeFailure>, lease: SessionLease?, explicitToken: String?,
                          describe: (@Sendable () -> String)? = nil, failedLine: FailedAttemptLine? = nil) {
        // Ended meanwhile (its deadline, a shutdown): the session is not touched any more, and the exchange that end
        // stopped is detail, as a cancelled one is (the deadline's own line said it; a shutdown is the owner's doing).
        guard !isDone else {
            if let failedLine { context.sender.logger.log(.debug, failedLine.text, metadata: logMetadata(code: failedLine.code)) }
            return
        }
        guard result.isAccepted(by: accepting) else {
            return classify(result, lease: lease, explicitToken: explicitToken, failedLine: failedLine)
        }
        lease?.used()
        if !endpoint.isOData { spokeDataAPI() }
        let value = decoded(consume result)
        var lines: [EndingLine] = []
        if case .failure(let error) = value, let line = unreadable(error, line: describe) { lines.append(line) }
        // Moved on, so that the delivered value stays the only holder of the answer's bytes.
        report(.answered(consume value), saying: lines)
    }

    /// An accepted answer that could not be read (cut or malformed JSON, a shape the call does not know): the answer's
    /// line said what arrived; this one says the call failed, with the code it completes with — at `error` for a
    /// client code (the answer was unusable), as an answer's FileMaker error is logged otherwise. Returned, to be
    /// written with the event that ends the call (``report(_:saying:)``); `nil` when the hook takes no line at its level.
    private func unreadable(_ error: FMError, line: (@Sendable () -> String)?) -> EndingLine? {
        let logger = context.sender.logger
        let level: FMLogEvent.Level = error.code.hasPrefix("-") ? .error
            : Classifier.expectedOutcomes.contains(error.code) ? .debug : .warning
        guard logger.isEnabled, logger.isEnabled(level) else { return nil }
        let what = line.map { "← \($0()) " } ?? "← \(endpoint.kind) "
        return EndingLine(level: level, text: "\(what)could not be read: \(error.code) \(error.message)", code: error.code)
    }

    /// The value of an accepted answer (which ends here).
    private func decoded(_ result: consuming Result<ExchangeAnswer, ExchangeFailure>) -> Result<Value, FMError> {
        switch consume result {
        case .success(let answer): Self.decode(endpoint, Endpoint<Value>.Response(answer.head, body: answer.body, file: answer.file))
        case .failure(let failure): .failure(failure.error)
        }
    }

    /// A failed exchange, or an answer whose status the call does not accept: its error, then the verdict.
    private func classify(_ result: Result<ExchangeAnswer, ExchangeFailure>, lease: SessionLease?, explicitToken: String?,
                          failedLine: FailedAttemptLine?) {
        let error: FMError
        var beforeAnswer = false
        var headers: [String: String] = [:]
        var answered: Int?
        switch result {
        case .failure(let failure):
            error = failure.error
            beforeAnswer = failure.beforeAnswer
        case .success(let answer):
            let status = answer.head.status
            answered = status
            let response = Endpoint<Value>.Response(answer.head, body: answer.body, file: answer.file)
            // OData answers are read in OData's error shape; the Data API's hints (a host with a path) are not theirs.
            error = endpoint.isOData ? Envelope.error(status: status, body: answer.body, odata: true)
                : hinted(Envelope.error(status: status, body: answer.body), status: status, location: answer.head.header("Location"),
                         body: answer.body)
            if !endpoint.isOData, error.code != FMError.ClientCode.notJSON, error.code != FMError.ClientCode.malformedResponse {
                spokeDataAPI()
            }
            headers = response.headers
            // A FileMaker error still used (and slid) the session.
            if let lease, status != 401, !Classifier.isSessionLost(error) { lease.used() }
        }
        let usedToken = lease != nil || explicitToken != nil
        switch Classifier.verdict(for: error, beforeAnswer: beforeAnswer, usedSession: usedToken, headers: headers,
                                  mayBeSentAgain: endpoint.cannotChangeData, now: context.sessions.now()) {
        case .final:
            report(.answered(.failure(error)), saying: ending(failedLine) + unusableAnswer(error, status: answered))
        case .sessionLost:
            if let explicitToken {
                context.sessions.explicitTokenRejected(explicitToken)
                report(.answered(.failure(error)), saying: ending(failedLine))
            } else if let lease {
                logRecovered(failedLine)
                lease.rejected(code: error.code)
                replay(after: error)
            } else {
                report(.answered(.failure(error)), saying: ending(failedLine))
            }
        case .transient(let retryAfter):
            // Kept on the error too: when this call is a login, the calls waiting for it retry after the same wait.
            var error = error
            error.retryAfter = retryAfter
            retry(after: error, retryAfter: retryAfter, failedLine: failedLine)
        }
    }

    /// An answer that ends the call with a client code (`-1006`: a page that is not JSON, as a proxy's or another
    /// web server's 404 or 500; `-1007`): its own line was a warning, as an answer with a FileMaker error is, and
    /// no FileMaker code says what happened, so this line says the call failed — at error (a login's, `retries`
    /// off, at warning: the session stage says it). Its text as the caller gets it (``hidingSecrets(_:)``).
    private func unusableAnswer(_ error: FMError, status: Int?) -> [EndingLine] {
        let level: FMLogEvent.Level = retries ? .error : .warning
        guard let status, error.code.hasPrefix("-"), context.sender.logger.isEnabled(level),
              case .failure(let shown) = hidingSecrets(.failure(error)) else { return [] }
        return [EndingLine(level: level, text: "\(endpoint.kind) failed: HTTP \(status): \(shown.code) \(shown.message)",
                           code: shown.code, status: status)]
    }

    // MARK: retry or replay

    /// The session was lost: renew it (on the same slot) and send once more — unless the call may already
    /// have run (a write answered 112: the session died while it ran) or it was replayed already.
    private func replay(after error: FMError) {
        let mayReplay = !context.sessions.pool.pinned && !(error.code == "112" && !endpoint.cannotChangeData)
        let (replayed, attempts) = state.withLock { ($0.replayed, $0.attempts) }
        if mayReplay, !replayed {
            context.sender.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): logging in again and replaying once",
                           metadata: logMetadata(code: error.code))
            meter?.span?.record(FMCallEvent(kind: .replay, attempt: attempts, code: error.code))
        }
        report(.sessionLost(error, mayReplay: mayReplay))
    }

    /// A transient failure: wait (back-off with jitter, or `Retry-After`) and try again under the policy.
    /// `unsent`: the call itself never left (its login failed), so a write may be retried too. `failedLine`:
    /// the failed exchange's line, logged as what became of it (a warning when retried, ``ending(_:)`` when not).
    private func retry(after error: FMError, retryAfter: TimeInterval?, unsent: Bool = false, failedLine: FailedAttemptLine? = nil) {
        let logger = context.sender.logger
        switch retryDecision(after: error, retryAfter: retryAfter, unsent: unsent) {
        case .end(let final, let why):
            // A call that does not retry (a login, a logout) hands a transient failure to the session stage,
            // which says what became of it ("login failed", at the level of its verdict).
            var lines = ending(failedLine)
            if unsent, logger.isEnabled(.error) {
                // Nothing of this call was sent (its login failed, and the login's own lines were warnings): this
                // line says the call ended.
                lines.append(EndingLine(level: .error, text: "\(endpoint.kind) not sent, its login failed: \(final.code) \(final.message)",
                                        code: final.code))
            }
            if let why, logger.isEnabled(.warning) {
                lines.append(EndingLine(level: .warning, text: "\(endpoint.method.rawValue) got \(error.code): \(why)", code: error.code))
            }
            // An answer that says the server is away (a proxy's 502, 503 or 504: its line was a warning) ends the call:
            // said once, at error, as a refused connection's line is.
            // Its text as the caller gets it: without the call's own token, which a proxy's page may echo.
            if retries, !unsent, let status = error.httpStatus, [502, 503, 504].contains(status), logger.isEnabled(.error),
               case .failure(let shown) = hidingSecrets(.failure(final)) {
                lines.append(EndingLine(level: .error, text: "\(endpoint.kind) failed: HTTP \(status): \(shown.code) \(shown.message)",
                                        code: shown.code, status: status))
            }
            report(.answered(.failure(final)), saying: lines)
        case .backOff(let wait, let attempts, let untilDeadline):
            logRecovered(failedLine)
            let policy = context.configuration.retry
            logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): retry \(attempts)\(untilDeadline ? " (until the deadline)" : " of \(policy.maxAttempts - 1)") in \(String(format: "%.2f", wait)) s",
                       metadata: logMetadata(code: error.code))
            meter?.span?.record(FMCallEvent(kind: .retry, attempt: attempts, code: error.code, wait: wait))
            report(.backOff(wait: wait))
        }
    }

    /// What a transient failure leads to: the call ends (with the error it completes with, and why it was not
    /// retried when that needs saying), or it waits and tries again.
    private enum RetryDecision {
        case end(FMError, why: String?)
        case backOff(wait: TimeInterval, attempts: Int, untilDeadline: Bool)
    }

    private func retryDecision(after error: FMError, retryAfter: TimeInterval?, unsent: Bool) -> RetryDecision {
        let policy = context.configuration.retry
        let attempts = state.withLock { $0.attempts }
        // A read that finds the server away (restarting) rides it out until its deadline; the rest keep to maxAttempts.
        let untilDeadline = policy.retriesReadsUntilDeadline && endpoint.cannotChangeData && Classifier.serverAway(error)
        guard retries, attempts < policy.maxAttempts || untilDeadline, unsent || policy.retriesWrites || endpoint.cannotChangeData else {
            return .end(summarised(error, attempts: attempts), why: nil)
        }
        // First contact: a connection failure is ridden out only for a host that answered this client before
        // (and has not been away longer than Reachability.window). Otherwise the first failure is the answer.
        if Classifier.isConnectionFailure(error) {
            switch context.sender.reachability.standing(target) {
            case .rideOut:
                break
            case .neverAnswered where attempts == 1:
                // A port that speaks only TLS may close a plain request without a word (nginx's 400 page is named
                // by Sender.namingTheScheme): say which scheme to try.
                let closedPlain = error.urlErrorCode == URLError.Code.networkConnectionLost.rawValue && target?.scheme?.lowercased() == "http"
                return .end(error.noting(
                    "not retried: \(FMError.address(of: target)) has not answered this client yet: "
                    + "check the host and port (\(context.configuration.settingNames.host)) and that the server is running there"
                    + (closedPlain ? "; if that port speaks HTTPS, write the host as https://\(FMError.address(of: target))\(configuredPrefix)" : "")), why: nil)
            case .awayTooLong where attempts == 1:
                return .end(error.noting(
                    "not retried: \(FMError.address(of: target)) has not answered for more than \(Int(Reachability.window / 60)) minutes"), why: nil)
            case .neverAnswered, .awayTooLong:
                return .end(summarised(error, attempts: attempts), why: nil)
            }
        }
        let jitter = context.sender.retryJitter.value
        let wait = policy.delay(afterAttempt: attempts, retryAfter: retryAfter, random: jitter)
        // Riding out, past maxAttempts: only within `timeout`.
        let ridingOutPastAttempts = untilDeadline && attempts >= policy.maxAttempts
        if ridingOutPastAttempts && wait >= Deadline.remaining(until: rideOutEndsAt) || wait >= Deadline.remaining(until: endsAt) {
            return .end(summarised(error, attempts: attempts), why: "no retry, the deadline comes first")
        }
        return .backOff(wait: wait, attempts: attempts, untilDeadline: untilDeadline)
    }

    /// A connection failure that ends a call after retries, with how many and for how long:
    /// `…: connection refused; retried 11 times over 29.4 s`. Other errors (and a call tried once) as they are.
    private func summarised(_ error: FMError, attempts: Int) -> FMError {
        guard attempts > 1, Classifier.isConnectionFailure(error) else { return error }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds &- startedAt.uptimeNanoseconds) / 1e9
        let times = attempts - 1 == 1 ? "once" : "\(attempts - 1) times"
        return error.noting("retried \(times) over \(String(format: "%.1f", seconds)) s")
    }

    /// The host the call goes to: a container URL's, or the configured one.
    private var target: URL? {
        if case .absolute(let url) = endpoint.scope { return url }
        return context.configuration.baseURL
    }

    /// An answer that is not FileMaker's, with a message that points the right way (and FileMaker's 105, which names no
    /// layout, with the layout's name): a container URL that answers 404 names the container; a 404 page from a host configured with a path says to give the host only;
    /// an `http://` host that redirects to `https://` (FileMaker Server's port 80) says to write `https://`.
    /// The two "No FileMaker Data API" hints are first-contact ones: once the Data API answered this client at
    /// its configured host (``Reachability/spokeDataAPI()``), a page from there comes from a proxy rule or a path (Apache's
    /// 404 for an encoded slash in a layout name), not from a wrong host, port or path.
    private func hinted(_ error: FMError, status: Int, location: String?, body: Data) -> FMError {
        if let hint = clientCertificatePage(error, status: status, body: body) { return hint }
        if (300...399).contains(status), let hint = redirectToHTTPS(location) {
            return FMError(code: error.code, message: hint, httpStatus: error.httpStatus, underlying: error.underlying)
        }
        if case .absolute = endpoint.scope { return containerNotFound(error, status: status) }
        if error.code == "105", let layout = endpoint.layout { return layoutMissing(error, layout: layout) }
        guard !context.sender.reachability.hasSpokenDataAPI else { return error }
        if let other = otherWebServer(error, status: status) { return other }
        guard status == 404, error.code == FMError.ClientCode.notJSON || error.code == FMError.ClientCode.malformedResponse,
              let base = try? context.configuration.resolvedBase().get(), !base.percentEncodedPath.isEmpty, base.percentEncodedPath != "/"
        else { return error }
        var hostOnly = base
        hostOnly.percentEncodedPath = ""
        return FMError(code: error.code, message: "No FileMaker Data API under \(base.string ?? "the host") (HTTP 404): the host was given "
                       + "with a path (\(base.percentEncodedPath)); give the host only (\(hostOnly.string ?? "scheme://host:port")), "
                       + "unless a proxy serves the Data API under that path",
                       httpStatus: error.httpStatus, underlying: error.underlying)
    }

    /// FileMaker's 105 ("Layout is missing") names no layout: the layout and the database asked for, and where to look.
    /// A call that also names a response layout (`layout.response`) may miss either: both are named.
    private func layoutMissing(_ error: FMError, layout: String) -> FMError {
        let database = FMError.serverText(context.configuration.database, limit: 100)
        let asked = "\"\(FMError.serverText(layout, limit: 100))\""
        if let response = endpoint.responseLayout, !response.isEmpty, response != layout {
            return error.noting("no layout \(asked) or no response layout \"\(FMError.serverText(response, limit: 100))\" "
                                + "(layout.response) in database \(database): check both names "
                                + "(layouts() lists the ones this account can use)")
        }
        return error.noting("no layout \(asked) in database \(database): check the layout's name "
                            + "(layouts() lists the ones this account can use)")
    }

    /// nginx's page for a client certificate it wanted (`ssl_verify_client on`): it completes the handshake and answers
    /// HTTP 400 "No required SSL certificate was sent", or "The SSL certificate error" for one it rejects. Named, with the
    /// setting to fix, instead of "something that is not JSON".
    private func clientCertificatePage(_ error: FMError, status: Int, body: Data) -> FMError? {
        guard status == 400, error.code == FMError.ClientCode.notJSON else { return nil }
        let text = String(decoding: body.prefix(2048), as: UTF8.self).lowercased()
        let what: String
        if text.contains("no required ssl certificate was sent") {
            what = "requires a client certificate and none was sent: set FMConfiguration.tls.clientCertificate and clientKey"
        } else if text.contains("the ssl certificate error") {
            what = "rejected the client certificate: check FMConfiguration.tls.clientCertificate and clientKey "
                + "(a certificate from an authority the server trusts, not expired, with its own key)"
        } else {
            return nil
        }
        return FMError(code: error.code, message: "\(FMError.address(of: target)) \(what) (HTTP 400)",
                       httpStatus: error.httpStatus, underlying: error.underlying)
    }

    /// A container URL that answers 404 names the container.
    private func containerNotFound(_ error: FMError, status: Int) -> FMError {
        guard status == 404 else { return error }
        return FMError(code: error.code, message: "The container was not found at \(FMError.address(of: target)) (HTTP 404): "
                       + "its URL may have expired or the record changed; read the record again for a fresh URL",
                       httpStatus: error.httpStatus, underlying: error.underlying)
    }

    /// The Data API answered at the configured host (an accepted answer, or FileMaker's JSON error); a container
    /// URL's answer is not the Data API's.
    private func spokeDataAPI() {
        if case .absolute = endpoint.scope { return }
        context.sender.reachability.spokeDataAPI()
    }

    /// The configured host's path prefix (a reverse proxy's `/filemaker`, no trailing slash) for a hint that says how to
    /// write the host: `""` without one.
    private var configuredPrefix: String {
        guard let base = try? context.configuration.resolvedBase().get() else { return "" }
        var prefix = base.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        return FMError.serverText(prefix, limit: 200)
    }

    /// A page that is not JSON, answered 404, 405 or 501 by a host configured without a path (the path case has
    /// its own hint): another web server on that port, or one without the Data API. A proxy's 502 page is not
    /// this: FileMaker is behind it, and away.
    private func otherWebServer(_ error: FMError, status: Int) -> FMError? {
        guard [404, 405, 501].contains(status), error.code == FMError.ClientCode.notJSON,
              let base = try? context.configuration.resolvedBase().get(), base.percentEncodedPath.isEmpty || base.percentEncodedPath == "/"
        else { return nil }
        return FMError(code: error.code, message: "No FileMaker Data API at \(FMError.address(of: base.url)): it answered HTTP \(status) "
                       + "with something that is not JSON; check the host and port (\(context.configuration.settingNames.host)) and that the Data API "
                       + "is enabled on the server", httpStatus: error.httpStatus, underlying: error.underlying)
    }

    /// `Wrong scheme: HOST:PORT redirects to https://…; write the host as https://HOST` when the configured
    /// host is `http://` and the redirect goes to `https://` (a container's own redirect is not the host's).
    /// The redirect is named without its user info or query (FileMaker Server's echoes the request's query: a
    /// script parameter) and with the session path's token hidden (``Redaction/path(of:container:)``); the host
    /// to write keeps the path prefix before `/fmi/data/` (a reverse proxy's `/filemaker`).
    private func redirectToHTTPS(_ location: String?) -> String? {
        if case .absolute = endpoint.scope { return nil }
        guard let base = context.configuration.baseURL, base.scheme?.lowercased() == "http",
              let location, let to = URL(string: location), to.scheme?.lowercased() == "https",
              let host = FMError.hostName(of: to)
        else { return nil }
        let origin = "https://" + (host.contains(":") ? "[\(host)]" : host) + (to.port.map { ":\($0)" } ?? "")
        let path = URLComponents(url: to, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        let prefix = path.range(of: "/fmi/data/").map { String(path[..<$0.lowerBound]) } ?? ""
        return FMError.wrongSchemePrefix + "\(FMError.address(of: base)) redirects to "
            + FMError.serverText(origin + Redaction.path(of: to), limit: 200)
            + "; write the host as " + FMError.serverText(origin + prefix, limit: 300)
    }

    // MARK: complete

    /// Whether an exchange's result is a failure whose line may be above debug (not a plain answer, not a cancel).
    private static func answerFailed(_ result: Result<ExchangeAnswer, ExchangeFailure>, accepting: (Int) -> Bool) -> Bool {
        switch result {
        case .success(let answer): !(answer.head.status == 200 || accepting(answer.head.status))
        case .failure(let failure): failure.error.code != FMError.ClientCode.cancelled
        }
    }

    /// The structured part of a log line (``FMLogEvent/metadata``): built only when a logger is set. SwiftFM's keys over
    /// the caller's context.
    private func logMetadata(code: String? = nil, status: Int? = nil) -> [String: String] {
        var metadata = logContext
        metadata["fm.request_id"] = String(requestID)
        metadata["fm.endpoint"] = endpoint.kind
        if let layout = endpoint.layout { metadata["fm.layout"] = layout }
        if endpoint.isOData, let table = endpoint.table { metadata["fm.table"] = table }
        if let code { metadata["fm.code"] = code }
        if let status { metadata["http.response.status_code"] = String(status) }
        return metadata
    }

    static func decode(_ endpoint: Endpoint<Value>, _ response: Endpoint<Value>.Response) -> Result<Value, FMError> {
        do {
            return .success(try endpoint.decode(response))
        } catch let error as FMError {
            return .failure(error)
        } catch {
            return .failure(.malformed(FileMakerDecoder.describe(error, withDetails: false), status: response.status))
        }
    }
}

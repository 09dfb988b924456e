import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The call pipeline. One call passes through these stages, in order; the folders of Core/ follow them:
//
//   admission  Pipeline/  DataAPI.perform: the shutdown check (Lifecycle), the call's deadline (Deadline:
//                         FMConfiguration.timeout, or containerTimeout for a container transfer)
//   session    Session/   a pool session is leased: SessionPool and its SessionLease, driven by
//                         SessionStateMachine; DataAPI.leaseSession (SessionStage.swift) logs in once for
//                         every waiter and runs the new-session hook
//   send       Pipeline/  the rate limit (RateLimiter), the concurrency cap (AdmissionGate), one exchange
//                         (Flight, Exchange: the byte cap) through the transport (Wire/: FMTransport)
//   classify   Pipeline/  FileMaker code, transport error, session lost, transient: Classifier
//   retry      Pipeline/  replay once after a lost session; transient failures retried under FMRetryPolicy
//                         with back-off, never past the deadline (EngineCall.replay, EngineCall.retry)
//   complete   Pipeline/  exactly once, on the callback queue (inline for the async bridge): OneShot,
//                         with the caller's handle FMRequest (Completion.swift)
//
// Wire/ is what travels: each endpoint described once (Endpoint, Endpoints, SessionEndpoints), the request
// built from it (RequestBuilder, Multipart), the envelope read back (Envelope), the transports. JSON/ reads
// answers: one lexer (JSONLexer) under raw values (JSONReader) and typed ones (JSONTape, FileMakerDecoder).
// EngineCall, below, composes the stages for one call.

extension DataAPI {
    /// Sends `endpoint` and calls `completion` exactly once, on ``callbackQueue``.
    ///
    /// - Parameters:
    ///   - acceptingStatus: which HTTP statuses go to `endpoint.decode` (200 only by default; the container
    ///     download also accepts its 302). Other statuses are turned into an ``FMError`` from the envelope.
    ///   - request: an existing handle to report cancellation through (a multi-step operation); a new one
    ///     when `nil`.
    ///   - sink: where the answer's body goes (memory under ``FMConfiguration/maxResponseBytes`` by default).
    ///   - isTransfer: a container transfer, bounded by ``FMConfiguration/containerTimeout``.
    ///   - endsAt: a deadline shared by the steps of one operation (the hops of a container download),
    ///     instead of a new one for this call.
    ///   - bypassShutdown: sent even while shutting down (the shutdown's own logouts, logins).
    ///   - retries: whether transient failures are retried under ``FMConfiguration/retry`` (not for logins:
    ///     the calls waiting for the session decide).
    ///   - deliveringOn: where `completion` runs (``callbackQueue`` by default).
    ///   - inline: `completion` runs at once on the thread that finished the call, on no queue (the async
    ///     bridge: its continuation resumes on its task's executor, so a queue hop first would be a second hop).
    @discardableResult
    func perform<Value>(
        _ endpoint: Endpoint<Value>,
        acceptingStatus: @escaping @Sendable (Int) -> Bool,
        attachingTo request: FMRequest?,
        sink: BodySink? = nil,
        isTransfer: Bool = false,
        endsAt: DispatchTime? = nil,
        bypassShutdown: Bool = false,
        retries: Bool = true,
        deliveringOn queue: DispatchQueue? = nil,
        inline: Bool = false,
        completion: @escaping (Result<Value, FMError>) -> Void
    ) -> FMRequest {
        var meter: CallMeter?
        var observe: (@Sendable (String) -> Void)?
        if let metrics = configuration.metrics {
            let started = CallMeter(endpoint: endpoint.kind)
            meter = started
            observe = { code in metrics.callFinished(started.finish(code: code)) }
        }
        let delivery = OneShot(queue: inline ? nil : queue ?? callbackQueue, handle: request ?? FMRequest(), observe: observe, completion: completion)
        // The new-session hook's calls (a pinned pool) are part of a call in flight: admitted during the grace.
        guard bypassShutdown || lifecycle.admit(delivery, duringGrace: pool.pinned) else {
            delivery.finish(.failure(.shuttingDown))
            return delivery.handle
        }
        let call = EngineCall(api: self, endpoint: endpoint, accepting: acceptingStatus, delivery: delivery,
                              sink: sink ?? .memory(cap: configuration.maxResponseBytes), retries: retries, meter: meter)
        let seconds = endsAt.map { Double($0.uptimeNanoseconds &- min($0.uptimeNanoseconds, DispatchTime.now().uptimeNanoseconds)) / 1e9 }
        call.start(deadline: seconds ?? (isTransfer ? configuration.containerTimeout : configuration.timeout))
        return delivery.handle
    }

    /// Sends `endpoint` and calls `completion` exactly once, on ``callbackQueue``.
    @discardableResult
    func perform<Value>(_ endpoint: Endpoint<Value>, completion: @escaping (Result<Value, FMError>) -> Void) -> FMRequest {
        perform(endpoint, acceptingStatus: { $0 == 200 }, attachingTo: nil, completion: completion)
    }

    /// Completes at once with `result` (on ``callbackQueue``, like every other path) and returns the handle.
    @discardableResult
    func complete<Value>(_ result: Result<Value, FMError>, _ completion: @escaping (Result<Value, FMError>) -> Void) -> FMRequest {
        let delivery = OneShot(queue: callbackQueue, completion: completion)
        delivery.finish(result)
        return delivery.handle
    }

    /// The `Authorization` value for configured Basic credentials, or `-1001`.
    func basicAuthorization(_ encoded: String? = nil) -> Result<String, FMError> {
        if let encoded = encoded?.trimmingCharacters(in: .whitespacesAndNewlines), !encoded.isEmpty {
            guard RequestBuilder.isValidHeaderValue(encoded) else {
                return .failure(.invalidArgument("The encoded credentials contain control characters"))
            }
            return .success("Basic " + encoded)
        }
        guard let value = configuration.credentials?.encodedValue else {
            return .failure(.invalidConfiguration("No Basic credentials are configured"))
        }
        guard RequestBuilder.isValidHeaderValue(value) else {
            return .failure(.invalidConfiguration("The configured encoded credentials contain control characters"))
        }
        return .success("Basic " + value)
    }

    /// nginx's answer to plain HTTP on its HTTPS port (a 400 page) as the wrong-scheme error that names
    /// `https://` (``FMError/wrongScheme(_:use:underlying:)``); any other result as it is.
    static func namingTheScheme(_ result: Result<ExchangeAnswer, ExchangeFailure>, url: URL?) -> Result<ExchangeAnswer, ExchangeFailure> {
        guard case .success(let answer) = result, answer.response.statusCode == 400, url?.scheme?.lowercased() == "http",
              answer.body.count < 64 * 1024, answer.body.range(of: Data("plain HTTP request was sent to HTTPS port".utf8)) != nil
        else { return result }
        let error = FMError.wrongScheme(url, use: "https", underlying: "HTTP 400: The plain HTTP request was sent to HTTPS port")
        return .failure(ExchangeFailure(error: error, beforeAnswer: false))
    }

    /// One HTTP exchange: build, wait for a slot under the concurrency cap, send, log. `completion` gets the
    /// raw answer (any status) or the failure, once, on the transport's queue — unless the returned flight
    /// is cancelled first, which completes it with the cancel's error. `accepting`: the statuses the call
    /// expects; one other than 200 (a container download's 302) is logged at debug, not as a failure.
    func exchange<Value>(
        _ endpoint: Endpoint<Value>,
        authorization: String?,
        sink: BodySink,
        accepting: @escaping @Sendable (Int) -> Bool = { $0 == 200 },
        meter: CallMeter? = nil,
        completion: @escaping @Sendable (Result<ExchangeAnswer, ExchangeFailure>) -> Void
    ) -> Flight {
        let flight = Flight(completion: completion)
        let request: URLRequest
        switch RequestBuilder.request(for: endpoint, configuration: configuration, authorization: authorization) {
        case .success(let built): request = built
        case .failure(let error):
            logger.log(.error, "\(endpoint.method.rawValue) not sent: \(error)")
            flight.end(.failure(ExchangeFailure(error: error, beforeAnswer: false)))
            return flight
        }
        let logger = self.logger
        let transport = self.transport
        let line = logger.isEnabled ? "\(endpoint.method.rawValue) \(Redaction.path(of: request.url))" : ""
        let gate = self.gate
        let admit: @Sendable () -> Void = {
        let ticket = gate.enter { release in
            guard !flight.isEnded else { return release() }   // cancelled or out of time while queued: never sent
            var built: URL?
            if case .multipartFile(let source, let fileName, let mimeType, let boundary) = endpoint.body {
                do {
                    built = try Multipart.writeBody(boundary: boundary, fileName: fileName, mimeType: mimeType, source: source)
                } catch {
                    release()
                    flight.end(.failure(ExchangeFailure(error: FMError(code: FMError.ClientCode.fileError,
                        message: "Cannot read \(source.path)", underlying: String(describing: error)), beforeAnswer: false)))
                    return
                }
            }
            let bodyFile = built
            if let meter {
                switch endpoint.body {
                case .json(let data), .multipart(let data, _): meter.sending(bytes: data.count)
                case .none, .multipartFile: meter.sending(bytes: 0)
                }
            }
            logger.log(.debug, "→ \(line)")
            let started = DispatchTime.now().uptimeNanoseconds
            let running = Exchange.start(FMTransportRequest(urlRequest: request, bodyFile: bodyFile), through: transport, sink: sink) { answered in
                release()
                let result = Self.namingTheScheme(answered, url: request.url)
                if let bodyFile { try? FileManager.default.removeItem(at: bodyFile) }
                if logger.isEnabled {
                    let duration = String(format: "%.1f ms", Double(DispatchTime.now().uptimeNanoseconds &- started) / 1_000_000)
                    switch result {
                    case .success(let answer):
                        let status = answer.response.statusCode
                        let expected = status == 200 || accepting(status)
                        let code = expected ? "" : " code \(Envelope.error(status: status, body: answer.body).code)"
                        let size = answer.file == nil ? "\(answer.body.count) bytes" : "streamed to a file"
                        let level: FMLogEvent.Level = status == 200 ? .info : expected ? .debug : .warning
                        logger.log(level, "← \(line) \(status)\(code) \(size) \(duration)")
                    case .failure(let failure):
                        let level: FMLogEvent.Level = failure.error.code == FMError.ClientCode.cancelled ? .info : .error
                        logger.log(level, "← \(line) failed \(failure.error.code) \(duration)")
                    }
                }
                if let meter, case .success(let answer) = result { meter.received(bytes: answer.body.count) }
                flight.end(result)
            }
            flight.running(running)
        }
        flight.queued(ticket.withdraw)
        }
        // The rate limit first, then the concurrency cap: a request waiting for its turn holds no slot.
        if let rateLimiter {
            let turn = rateLimiter.enter { if !flight.isEnded { admit() } }
            flight.queued(turn.withdraw)
        } else {
            admit()
        }
        return flight
    }

    /// Applies a token-store write decided by the state machine, unless a newer one was applied already.
    func apply(_ persist: SessionStateMachine<SessionWaiter>.Persist?) {
        guard let persist else { return }
        persistedVersion.withLock { applied in
            // The store is called under this dedicated lock only (never under the session lock), so
            // concurrent writes land in the order the state machine decided them.
            guard persist.version > applied else { return }
            applied = persist.version
            tokenStore.save(persist.token)
        }
    }
}

/// One exchange as the pipeline holds it: queued for a slot, then running; ends exactly once.
final class Flight: CancellableTask, @unchecked Sendable {
    // @unchecked: mutable state is behind `state`'s lock.
    private struct State {
        var completion: (@Sendable (Result<ExchangeAnswer, ExchangeFailure>) -> Void)?
        var withdraw: [@Sendable () -> Void] = []
        var exchange: Exchange?
        var onEnd: [@Sendable () -> Void] = []
    }
    private let state: Locked<State>

    init(completion: @escaping @Sendable (Result<ExchangeAnswer, ExchangeFailure>) -> Void) {
        state = Locked(State(completion: completion))
    }

    var isEnded: Bool { state.withLock { $0.completion == nil } }

    /// The flight waits in a queue (the rate limit, the concurrency cap); `withdraw` leaves it if the flight ends.
    fileprivate func queued(_ withdraw: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state -> Bool in
            if state.completion == nil { return true }
            state.withdraw.append(withdraw)
            return false
        }
        if ended { withdraw() }
    }

    fileprivate func running(_ exchange: Exchange) {
        let ended = state.withLock { state -> Bool in
            if state.completion == nil { return true }
            state.exchange = exchange
            return false
        }
        if ended { exchange.cancel(with: .cancelled) }
    }

    /// Runs `action` when the flight ends (at once if it has).
    func onEnd(_ action: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state -> Bool in
            if state.completion == nil { return true }
            state.onEnd.append(action)
            return false
        }
        if ended { action() }
    }

    /// Ends the flight with `error`: leaves the queue, or stops the exchange.
    func cancel(with error: FMError) {
        end(.failure(ExchangeFailure(error: error, beforeAnswer: false)))
    }

    /// `CancellableTask`: cancel.
    func cancel() { cancel(with: .cancelled) }

    fileprivate func end(_ result: Result<ExchangeAnswer, ExchangeFailure>) {
        let taken = state.withLock { state -> (completion: (@Sendable (Result<ExchangeAnswer, ExchangeFailure>) -> Void)?, withdraw: [@Sendable () -> Void], exchange: Exchange?, onEnd: [@Sendable () -> Void]) in
            defer { state = State() }
            return (state.completion, state.withdraw, state.exchange, state.onEnd)
        }
        guard let completion = taken.completion else { return }
        for withdraw in taken.withdraw { withdraw() }
        if case .failure(let failure) = result { taken.exchange?.cancel(with: failure.error) }
        completion(result)
        for action in taken.onEnd { action() }
    }
}

/// A one-shot timer on a global queue.
final class Deadline: @unchecked Sendable {
    // @unchecked: a dispatch source is thread-safe; it is not `Sendable`-annotated.
    private let timer: DispatchSourceTimer

    private init(timer: DispatchSourceTimer) { self.timer = timer }

    /// Calls `fire` once after `seconds` (a non-finite or huge value never fires), unless cancelled.
    static func after(seconds: TimeInterval, fire: @escaping @Sendable () -> Void) -> Deadline {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let delay = seconds.isFinite ? min(max(0, seconds), 10 * 365 * 86_400) : 10 * 365 * 86_400
        timer.schedule(deadline: .now() + delay)
        timer.setEventHandler {
            timer.cancel()
            fire()
        }
        timer.resume()
        return Deadline(timer: timer)
    }

    /// Stops the timer; `fire` will not run (unless it is running already).
    func cancel() { timer.cancel() }
}

/// One call of ``DataAPI/perform(_:acceptingStatus:attachingTo:sink:isTransfer:bypassShutdown:completion:)``:
/// the stages of the pipeline around one or more HTTP exchanges.
final class EngineCall<Value>: @unchecked Sendable {
    // @unchecked: mutable state is behind `state`'s lock; the rest is immutable.
    private struct State {
        var lease: SessionLease?
        /// Waiting for a session: the pool's id of this call's place in the queue.
        var waiting: UInt64?
        var deadline: Deadline?
        var backoff: Deadline?
        var attempts = 0
        var replayed = false
    }
    let api: DataAPI
    let endpoint: Endpoint<Value>
    let accepting: @Sendable (Int) -> Bool
    let delivery: OneShot<Value>
    let sink: BodySink
    let retries: Bool
    let meter: CallMeter?
    private let state = Locked(State())
    private var endsAt: DispatchTime = .distantFuture
    /// How long a read may ride out a server that is away: its deadline, but at most ``FMConfiguration/timeout``
    /// from its start (a container transfer's own deadline, ``FMConfiguration/containerTimeout``, is far longer).
    private var rideOutEndsAt: DispatchTime = .distantFuture

    init(api: DataAPI, endpoint: Endpoint<Value>, accepting: @escaping @Sendable (Int) -> Bool, delivery: OneShot<Value>, sink: BodySink,
         retries: Bool = true, meter: CallMeter? = nil) {
        self.retries = retries
        self.meter = meter
        self.api = api
        self.endpoint = endpoint
        self.accepting = accepting
        self.delivery = delivery
        self.sink = sink
    }

    // MARK: admission

    func start(deadline seconds: TimeInterval) {
        if let invalid = endpoint.invalid {
            delivery.finish(.failure(invalid))
            api.lifecycle.release(delivery)
            return
        }
        endsAt = .now() + (seconds.isFinite ? min(max(0, seconds), 10 * 365 * 86_400) : 10 * 365 * 86_400)
        let rideOut = min(seconds, api.configuration.timeout)
        rideOutEndsAt = .now() + (rideOut.isFinite ? min(max(0, rideOut), 10 * 365 * 86_400) : 10 * 365 * 86_400)
        let timer = Deadline.after(seconds: seconds) { [weak self] in self?.delivery.stop(with: .timeout) }
        state.withLock { $0.deadline = timer }
        delivery.onFinish { [self] in
            let (lease, waiting, timers) = state.withLock { state -> (SessionLease?, UInt64?, [Deadline?]) in
                defer { state.lease = nil; state.waiting = nil; state.deadline = nil; state.backoff = nil }
                return (state.lease, state.waiting, [state.deadline, state.backoff])
            }
            for timer in timers { timer?.cancel() }
            if let waiting { api.withdrawLease(waiting) }
            if let lease { api.releaseSession(lease) }
            api.lifecycle.release(delivery)
        }
        attempt()
    }

    // MARK: session

    private func attempt() {
        guard !delivery.isFinished else { return }
        state.withLock { $0.attempts += 1 }
        switch endpoint.auth {
        case .none:
            send(authorization: nil, lease: nil, explicitToken: nil)
        case .basic(let encoded):
            switch api.basicAuthorization(encoded) {
            case .success(let value): send(authorization: value, lease: nil, explicitToken: nil)
            case .failure(let error): delivery.finish(.failure(error))
            }
        case .token(let token):
            send(authorization: "Bearer " + token, lease: nil, explicitToken: token)
        case .session:
            let replay = state.withLock { $0.replayed }
            releaseLease()
            let id = api.leaseSession(front: replay) { [self] result in
                state.withLock { $0.waiting = nil }
                switch result {
                case .success(let lease):
                    let kept = state.withLock { state -> Bool in
                        guard !delivery.isFinished else { return false }
                        state.lease = lease
                        return true
                    }
                    guard kept else { return api.releaseSession(lease) }
                    send(authorization: "Bearer " + lease.token, lease: lease, explicitToken: nil)
                case .failure(let error):
                    // The login failed, so nothing of the call was sent: a transient failure (a server still
                    // restarting, its session cap) is retried under the policy, writes included.
                    let verdict = Classifier.verdict(for: error, beforeAnswer: error.code == FMError.ClientCode.transport,
                                                     usedSession: false, headers: [:])
                    if case .transient = verdict {
                        retry(after: error, retryAfter: nil, unsent: true)
                    } else {
                        delivery.finish(.failure(error))
                    }
                }
            }
            // Still waiting (not served synchronously): remember the place, to leave the queue if the call ends.
            let finished = state.withLock { state -> Bool in
                if delivery.isFinished { return true }
                if state.lease == nil { state.waiting = id }
                return false
            }
            if finished { api.withdrawLease(id) }
        }
    }

    private func releaseLease() {
        let lease = state.withLock { state -> SessionLease? in
            defer { state.lease = nil }
            return state.lease
        }
        if let lease { api.releaseSession(lease) }
    }

    // MARK: send

    private func send(authorization: String?, lease: SessionLease?, explicitToken: String?) {
        guard !delivery.isFinished else { return }
        let flight = api.exchange(endpoint, authorization: authorization, sink: sink, accepting: accepting, meter: meter) { [self] result in
            received(result, lease: lease, explicitToken: explicitToken)
        }
        delivery.attach(flight)
    }

    // MARK: classify

    private func received(_ result: Result<ExchangeAnswer, ExchangeFailure>, lease: SessionLease?, explicitToken: String?) {
        guard !delivery.isFinished else { return }
        let error: FMError
        var beforeAnswer = false
        var headers: [String: String] = [:]
        switch result {
        case .failure(let failure):
            error = failure.error
            beforeAnswer = failure.beforeAnswer
        case .success(let answer):
            let status = answer.response.statusCode
            let response = Endpoint<Value>.Response(answer.response, body: answer.body, file: answer.file)
            if accepting(status) {
                if let lease { api.sessionUsed(lease) }
                delivery.finish(Self.decode(endpoint, response))
                return
            }
            error = Envelope.error(status: status, body: answer.body)
            headers = response.headers
            // A FileMaker error still used (and slid) the session.
            if let lease, status != 401, !Classifier.isSessionLost(error) { api.sessionUsed(lease) }
        }
        let usedToken = lease != nil || explicitToken != nil
        switch Classifier.verdict(for: error, beforeAnswer: beforeAnswer, usedSession: usedToken, headers: headers) {
        case .final:
            delivery.finish(.failure(error))
        case .sessionLost:
            if let explicitToken {
                api.explicitTokenRejected(explicitToken)
                delivery.finish(.failure(error))
            } else if let lease {
                api.sessionRejected(lease, code: error.code)
                replay(after: error)
            } else {
                delivery.finish(.failure(error))
            }
        case .transient(let retryAfter):
            retry(after: error, retryAfter: retryAfter)
        }
    }

    // MARK: retry or replay

    /// The session was lost: renew it (on the same slot) and send once more — unless the call may already
    /// have run (a write answered 112: the session died while it ran) or it was replayed already.
    private func replay(after error: FMError) {
        let mayHaveRun = error.code == "112" && !endpoint.cannotChangeData
        let allowed = state.withLock { state -> Bool in
            guard !state.replayed, !api.pool.pinned, !mayHaveRun else { return false }
            state.replayed = true
            return true
        }
        guard allowed else { delivery.finish(.failure(error)); return }
        api.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): logging in again and replaying once")
        attempt()
    }

    /// A transient failure: wait (back-off with jitter, or `Retry-After`) and try again under the policy.
    /// `unsent`: the call itself never left (its login failed), so a write may be retried too.
    private func retry(after error: FMError, retryAfter: TimeInterval?, unsent: Bool = false) {
        let policy = api.configuration.retry
        let attempts = state.withLock { $0.attempts }
        // A read that finds the server away (restarting) rides it out until its deadline; the rest keep to maxAttempts.
        let untilDeadline = policy.retriesReadsUntilDeadline && endpoint.cannotChangeData && Classifier.serverAway(error)
        guard retries, attempts < policy.maxAttempts || untilDeadline, unsent || policy.retriesWrites || endpoint.cannotChangeData else {
            delivery.finish(.failure(error)); return
        }
        let jitter = api.retryJitter.value
        let wait = policy.delay(afterAttempt: attempts, retryAfter: retryAfter, random: jitter)
        let now = DispatchTime.now().uptimeNanoseconds
        if untilDeadline, attempts >= policy.maxAttempts {   // riding out, past maxAttempts: only within `timeout`
            let rideOutRemaining = Double(rideOutEndsAt.uptimeNanoseconds &- min(rideOutEndsAt.uptimeNanoseconds, now)) / 1e9
            guard wait < rideOutRemaining else {
                api.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): no retry, the deadline comes first")
                delivery.finish(.failure(error)); return
            }
        }
        let remaining = Double(endsAt.uptimeNanoseconds &- min(endsAt.uptimeNanoseconds, now)) / 1e9
        guard wait < remaining else {
            api.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): no retry, the deadline comes first")
            delivery.finish(.failure(error)); return
        }
        releaseLease()
        api.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): retry \(attempts)\(untilDeadline ? " (until the deadline)" : " of \(policy.maxAttempts - 1)") in \(String(format: "%.2f", wait)) s")
        let timer = Deadline.after(seconds: wait) { [weak self] in self?.attempt() }
        let finished = state.withLock { state -> Bool in
            state.backoff = timer
            return delivery.isFinished
        }
        if finished { timer.cancel() }
    }

    // MARK: complete

    static func decode(_ endpoint: Endpoint<Value>, _ response: Endpoint<Value>.Response) -> Result<Value, FMError> {
        do {
            return .success(try endpoint.decode(response))
        } catch let error as FMError {
            return .failure(error)
        } catch {
            return .failure(.malformed(Envelope.describe(error), status: response.status))
        }
    }
}

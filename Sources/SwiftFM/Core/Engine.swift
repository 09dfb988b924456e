import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DataAPI {
    /// Sends `endpoint` and calls `completion` exactly once, on ``callbackQueue``.
    ///
    /// - Parameters:
    ///   - acceptingStatus: which HTTP statuses go to `endpoint.decode` (200 only by default; the container
    ///     download also accepts its 302). Other statuses are turned into an ``FMError`` from the envelope.
    ///   - request: an existing handle to report cancellation through (a multi-step operation); a new one
    ///     when `nil`.
    @discardableResult
    func perform<Value>(
        _ endpoint: Endpoint<Value>,
        acceptingStatus: @escaping @Sendable (Int) -> Bool,
        attachingTo request: FMRequest?,
        completion: @escaping (Result<Value, FMError>) -> Void
    ) -> FMRequest {
        let delivery = OneShot(queue: callbackQueue, handle: request ?? FMRequest(), completion: completion)
        EngineCall(api: self, endpoint: endpoint, accepting: acceptingStatus, delivery: delivery).start()
        return delivery.handle
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
            return .failure(.invalidConfiguration("No credentials are configured"))
        }
        guard RequestBuilder.isValidHeaderValue(value) else {
            return .failure(.invalidConfiguration("The configured encoded credentials contain control characters"))
        }
        return .success("Basic " + value)
    }

    /// One HTTP exchange: build, log, send, log. `completion` gets the raw answer (any status) or the mapped
    /// transport error; it runs on the transport's queue. Returns the task, or `nil` when nothing was sent.
    @discardableResult
    func exchange<Value>(
        _ endpoint: Endpoint<Value>,
        authorization: String?,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), FMError>) -> Void
    ) -> TransportTask? {
        let request: URLRequest
        switch RequestBuilder.request(for: endpoint, configuration: configuration, authorization: authorization) {
        case .success(let built): request = built
        case .failure(let error):
            logger.log(.error, "\(endpoint.method.rawValue) not sent: \(error)")
            completion(.failure(error))
            return nil
        }
        // Nothing of the log lines is built when no logger is set: this is the hot path of every call.
        let logger = self.logger
        let line = logger.isEnabled ? "\(endpoint.method.rawValue) \(Redaction.path(of: request.url))" : ""
        logger.log(.debug, "→ \(line)")
        let started = DispatchTime.now().uptimeNanoseconds
        return transport.send(request) { result in
            let finished = DispatchTime.now().uptimeNanoseconds
            let duration = { String(format: "%.1f ms", Double(finished &- started) / 1_000_000) }
            switch result {
            case .success(let (response, body)):
                if logger.isEnabled {
                    let status = response.statusCode
                    let code = status == 200 ? "" : " code \(Envelope.error(status: status, body: body).code)"
                    logger.log(status == 200 ? .info : .warning, "← \(line) \(status)\(code) \(body.count) bytes \(duration())")
                }
                completion(.success((response, body)))
            case .failure(let error):
                let mapped = FMError.fromTransport(error)
                logger.log(mapped.code == FMError.ClientCode.cancelled ? .info : .error, "← \(line) failed \(mapped.code) \(duration())")
                completion(.failure(mapped))
            }
        }
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

/// The answer handed to the decoder, converted from the transport's.
extension Endpoint.Response {
    init(_ response: HTTPURLResponse, body: Data) {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers[String(describing: name)] = String(describing: value)
        }
        self.init(status: response.statusCode, headers: headers, body: body)
    }
}

/// One call of ``DataAPI/perform(_:acceptingStatus:attachingTo:completion:)``: the session logic around one
/// or two HTTP exchanges (a second one only to replay after a 952).
private final class EngineCall<Value>: Sendable {
    let api: DataAPI
    let endpoint: Endpoint<Value>
    let accepting: @Sendable (Int) -> Bool
    let delivery: OneShot<Value>

    init(api: DataAPI, endpoint: Endpoint<Value>, accepting: @escaping @Sendable (Int) -> Bool, delivery: OneShot<Value>) {
        self.api = api
        self.endpoint = endpoint
        self.accepting = accepting
        self.delivery = delivery
    }

    func start() {
        if let invalid = endpoint.invalid {
            delivery.finish(.failure(invalid))
            return
        }
        switch endpoint.auth {
        case .none:
            send(authorization: nil, token: nil, replayable: false)
        case .basic(let encoded):
            switch api.basicAuthorization(encoded) {
            case .success(let value): send(authorization: value, token: nil, replayable: false)
            case .failure(let error): delivery.finish(.failure(error))
            }
        case .token(let token):
            send(authorization: "Bearer " + token, token: token, replayable: false)
        case .session:
            acquire(replayable: true)
        }
    }

    private func acquire(replayable: Bool) {
        api.withSessionToken(force: false) { [self] result in
            switch result {
            case .success(let token): send(authorization: "Bearer " + token, token: token, replayable: replayable)
            case .failure(let error): delivery.finish(.failure(error))
            }
        }
    }

    private func send(authorization: String?, token: String?, replayable: Bool) {
        guard !delivery.isFinished else { return } // cancelled while waiting for a login
        let task = api.exchange(endpoint, authorization: authorization) { [self] result in
            received(result, token: token, replayable: replayable)
        }
        if let task { delivery.attach(task) }
    }

    private func received(_ result: Result<(HTTPURLResponse, Data), FMError>, token: String?, replayable: Bool) {
        guard !delivery.isFinished else { return }
        let response: HTTPURLResponse
        let body: Data
        switch result {
        case .failure(let error):
            delivery.finish(.failure(error))
            return
        case .success(let answer):
            (response, body) = answer
        }
        let status = response.statusCode
        if accepting(status) {
            if let token { api.sessionUsed(token) }
            delivery.finish(decode(Endpoint.Response(response, body: body)))
            return
        }
        let error = Envelope.error(status: status, body: body)
        guard let token else {
            delivery.finish(.failure(error))
            return
        }
        // 952 (or an HTML 401, as FileMaker Cloud sends after expiry): the token is no longer valid.
        let expired = error.code == "952" || (status == 401 && error.code == FMError.ClientCode.notJSON)
        guard expired else {
            if status != 401 { api.sessionUsed(token) } // a FileMaker error still used (and slid) the session
            delivery.finish(.failure(error))
            return
        }
        api.sessionRejected(token)
        if replayable {
            api.logger.log(.warning, "\(endpoint.method.rawValue) got \(error.code): logging in again and replaying once")
            acquire(replayable: false)
        } else {
            delivery.finish(.failure(error))
        }
    }

    private func decode(_ response: Endpoint<Value>.Response) -> Result<Value, FMError> {
        do {
            return .success(try endpoint.decode(response))
        } catch let error as FMError {
            return .failure(error)
        } catch {
            return .failure(.malformed(Envelope.describe(error), status: response.status))
        }
    }
}

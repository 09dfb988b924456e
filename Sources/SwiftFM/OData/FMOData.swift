import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of FileMaker's OData v4 service (`/fmi/odata/v4/{database}`), on the same pipeline as
/// ``DataAPI``: the same ``FMConfiguration`` (host, database, credentials), transport, deadline
/// (``FMConfiguration/timeout``), size cap (``FMConfiguration/maxResponseBytes``), retries (reads only, under
/// ``FMConfiguration/retry``), concurrency cap, rate limit, metrics and redacted logging.
///
/// OData has no sessions: every request carries the credentials, `Authorization: Basic …` on FileMaker
/// Server, `Authorization: FMID <token>` with ``FMCredentials/clarisID(_:)`` on FileMaker Cloud (a token the
/// server rejects with HTTP 401 is asked for again once, with `refresh: true`, and the request sent again).
///
/// Every call has a completion-handler form, completing exactly once on ``callbackQueue`` with
/// `(value?, code)` — `"0"` on success, else FileMaker's code as a string or a client code (`-10xx`, as the
/// Data API uses them) — and an `async throws` twin that throws ``FMError``. FileMaker's OData engine has
/// negative codes of its own (`-1002` syntax error in the URL, `-1020` unknown table, `-1023` no such
/// record): those come with ``FMError/httpStatus`` set, client codes without.
///
/// ```swift
/// let odata = FMOData(configuration: FMConfiguration(host: "fms.example.com", database: "Music",
///                                                    username: "admin", password: "secret"))
/// let page = try await odata.records(from: "Artists", query: FMODataQuery(filter: .eq("city", "Austin"), top: 50))
/// ```
public final class FMOData: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The ``DataAPI`` whose pipeline carries the calls (its gate, rate limit, transport and logger).
    let api: DataAPI

    /// The configuration the calls use.
    public var configuration: FMConfiguration { api.configuration }

    /// The queue every completion runs on.
    public var callbackQueue: DispatchQueue { api.callbackQueue }

    /// Creates a client with the default transport (as ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)``).
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, limits, retries.
    ///   - callbackQueue: where completions run; by default a serial queue owned by this instance.
    ///   - logger: receives one redacted line per request and per answer; `nil` for silence.
    public convenience init(configuration: FMConfiguration, callbackQueue: DispatchQueue? = nil, logger: FMLogHandler? = nil) {
        self.init(sharing: DataAPI(configuration: configuration, callbackQueue: callbackQueue, logger: logger))
    }

    /// Creates a client over your own HTTP client (see ``FMTransport``).
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, limits, retries.
    ///   - transport: sends every request.
    ///   - callbackQueue: where completions run; by default a serial queue owned by this instance.
    ///   - logger: receives one redacted line per request and per answer; `nil` for silence.
    public convenience init(configuration: FMConfiguration, transport: any FMTransport, callbackQueue: DispatchQueue? = nil,
                            logger: FMLogHandler? = nil) {
        self.init(sharing: DataAPI(configuration: configuration, transport: transport, callbackQueue: callbackQueue, logger: logger))
    }

    /// Creates a client that shares `api`'s configuration, transport, callback queue, logger, concurrency cap
    /// and rate limit: FileMaker counts both APIs against one quota, and so do these limits.
    public init(sharing api: DataAPI) {
        self.api = api
    }

    /// A description with credentials redacted.
    public var description: String { "FMOData(\(configuration))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows no secret.
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

// MARK: - The core: one OData request through the engine

/// A completion that is not `Sendable` (callers capture anything), carried across the credentials step; it
/// runs once.
struct ODataCompletion<Value>: @unchecked Sendable {
    let run: (consuming Result<Value, FMError>) -> Void
}

/// What one OData request is, before its credentials are known.
struct ODataCall<Value>: Sendable {
    var method: Endpoint<Value>.Method
    /// After `{db}/`, percent-encoded, query string included.
    var path: String
    var kind: String
    var body: Endpoint<Value>.Body = .none
    var accept: String = "application/json"
    var accepting: @Sendable (Int) -> Bool = { (200...299).contains($0) }
    var invalid: FMError?
    var sink: BodySink?
    var isTransfer = false
    /// `path` starts after `/fmi/odata/v4/` (a next link), not after `{db}/`.
    var rooted = false
    /// More request headers (a container upload's `Content-Disposition`).
    var extraHeaders: [String: String] = [:]
    var decode: @Sendable (Endpoint<Value>.Response) throws -> Value
}

extension FMOData {
    /// The credentials of one request: `nil` for the configured Basic credentials (the engine adds them), or
    /// the headers of a Claris ID token (`refresh`: the server rejected the last one).
    func credentials(refresh: Bool, _ done: @escaping @Sendable (Result<[String: String]?, FMError>) -> Void) {
        switch configuration.credentials {
        case .basic?, .encoded?:
            done(.success(nil))
        case .clarisID(let provider)?:
            LoginAuthorization.provider(scheme: "FMID", provider.fetch, warnings: provider.warnings, logger: api.logger).headers(refresh) { done($0.map { $0 }) }
        case .oauth?:
            done(.failure(.invalidConfiguration("OData requests authenticate with Basic or Claris ID credentials, not OAuth")))
        case nil:
            done(.failure(.invalidConfiguration("No credentials are configured")))
        }
    }

    /// Sends `call` and completes once (on ``callbackQueue``, or inline for the async bridge), through the
    /// engine: admission, credentials, rate limit, concurrency cap, transport, deadline, size cap, retries of
    /// reads, classification, metrics, logging. A Claris ID token rejected with HTTP 401 is renewed once.
    /// One deadline covers the whole call: the token fetches and the requests. `sentAs`, when given, holds the number
    /// (`fm.request_id`) of the last request the call made, once it made one: a walk's line about the page names it.
    /// `logContext`: the caller's logging context, read as the operation began (a walk's next page is sent from the
    /// callback queue); read here, where the caller is, when `nil`: each request of the call (after a token fetch,
    /// a renewed token) carries it.
    @discardableResult
    func send<Value>(_ call: ODataCall<Value>, attachingTo handle: FMRequest? = nil, inline: Bool = false,
                     sentAs: Locked<UInt64?>? = nil, logContext: [String: String]? = nil,
                     completion: @escaping (consuming Result<Value, FMError>) -> Void) -> FMRequest {
        let how = ODataSending(handle: handle ?? FMRequest(), inline: inline,
                               endsAt: Deadline.fromNow(configuration.deadline(isTransfer: call.isTransfer)),
                               sentAs: sentAs, logContext: logContext ?? api.context.callerLogContext())
        let done = ODataCompletion(run: completion)
        if call.invalid != nil {
            attempt(call, headers: nil, how, requestID: api.context.newRequestID(), then: done.run)
            return how.handle
        }
        credentials(for: call, refresh: false, how, done: done) { [self] headers in
            let requestID = api.context.newRequestID()
            attempt(call, headers: headers, how, requestID: requestID) { [self] (result: consuming Result<Value, FMError>) in
                guard let error = result.failure, error.httpStatus == 401, headers != nil, !how.handle.isCancelled else {
                    return done.run(result)
                }
                // A line of this call: the rejected request's number and the call's context, as its own lines.
                api.logger.log(.warning, "OData \(call.method.rawValue) got 401 with a Claris ID token: asking for a new one",
                               metadata: renewalMetadata(call, error: error, requestID: requestID, logContext: how.logContext))
                credentials(for: call, refresh: true, how, done: done) { [self] headers in
                    attempt(call, headers: headers, how, requestID: api.context.newRequestID(), then: done.run)
                }
            }
        }
        return how.handle
    }

    /// The metadata of the line that says a Claris ID token was rejected: the caller's context under the rejected
    /// request's `fm.request_id`, `fm.endpoint`, `fm.table` and `fm.code` (as on that request's own `←` line).
    private func renewalMetadata<Value>(_ call: ODataCall<Value>, error: FMError, requestID: UInt64,
                                        logContext: [String: String]) -> [String: String] {
        let endpoint = endpoint(call, headers: nil)
        var metadata = logContext
        metadata["fm.request_id"] = String(requestID)
        metadata["fm.endpoint"] = endpoint.kind
        if let table = endpoint.table { metadata["fm.table"] = table }
        metadata["fm.code"] = error.code
        return metadata
    }

    /// The credentials of `call`'s next request, which then go to `then`. A Claris ID provider is the caller's code
    /// and may take its time: the call waits for it as an ``ODataTokenWait`` (a cancel, the deadline or the end of a
    /// shutdown's grace ends the wait first); an answer after the end is dropped, and nothing is sent. No credentials
    /// to send (the provider failed, or none OData can use) fail the call as one refused before it was sent
    /// (``refuse(_:_:_:done:)``).
    private func credentials<Value>(for call: ODataCall<Value>, refresh: Bool, _ how: ODataSending, done: ODataCompletion<Value>,
                                    then: @escaping @Sendable ([String: String]?) -> Void) {
        guard case .clarisID? = configuration.credentials else {
            // Known at once (Basic, or a configuration that cannot authenticate): nothing to wait for.
            return credentials(refresh: refresh) { [self] result in
                switch result {
                case .failure where how.handle.isCancelled: deliver(.failure(.cancelled), inline: how.inline, done)
                case .failure(let error): refuse(call, error, how, done: done)
                case .success(let headers): then(headers)
                }
            }
        }
        let wait = ODataTokenWait(done, lifecycle: api.lifecycle) { [self] error, done in
            // The deadline is a failure to say (as a Data API call's waiting for its session); a cancel and a shutdown
            // log no error.
            guard error.code == FMError.ClientCode.timeout else { return deliver(.failure(error), inline: how.inline, done) }
            refuse(call, error, how, done: done)
        }
        // Shutting down: refused, as the request would be, and the provider is not asked.
        guard api.lifecycle.admit(wait) else { return deliver(.failure(.shuttingDown), inline: how.inline, done) }
        let seconds = configuration.deadline(isTransfer: call.isTransfer)
        let expired = FMError.timeout(endpoint(call, headers: nil), configuration, after: seconds)
        wait.arm(Deadline.after(seconds: Deadline.remaining(until: how.endsAt)) { [wait] in wait.stop(with: expired) })
        // Weakly: the handle, which the caller may keep, holds nothing of the call once the wait is over.
        how.handle.onCancel { [weak wait] in wait?.stop(with: .cancelled) }
        guard wait.isWaiting else { return }   // cancelled already: the provider is not asked
        credentials(refresh: refresh) { [self] result in
            guard let done = wait.end() else { return }
            switch result {
            case .failure(let error): refuse(call, error, how, done: done)
            case .success(let headers): then(headers)
            }
        }
    }

    /// Fails `call`, which has no credentials to send (or whose deadline passed while its token was awaited), through
    /// the engine as a call refused before it was sent (as an argument that cannot be sent is): one error line,
    /// `KIND not sent: ERROR`, with the number drawn for it and the caller's context, measured and traced; nothing is
    /// sent. It completes with `error` even while shutting down (it was admitted as it began).
    private func refuse<Value>(_ call: ODataCall<Value>, _ error: FMError, _ how: ODataSending, done: ODataCompletion<Value>) {
        var refused = call
        refused.invalid = error
        var options = how.options(accepting: call.accepting, requestID: api.context.newRequestID())
        options.bypassShutdown = true
        api.perform(endpoint(refused, headers: nil), options: options, completion: done.run)
    }

    /// Sends one request of `call` (number `requestID`) with `headers` (a Claris ID token's, or `nil` for Basic).
    private func attempt<Value>(_ call: ODataCall<Value>, headers: [String: String]?, _ how: ODataSending, requestID: UInt64,
                                then: @escaping (consuming Result<Value, FMError>) -> Void) {
        var options = how.options(accepting: call.accepting, requestID: requestID)
        options.sink = call.sink
        options.isTransfer = call.isTransfer
        options.endsAt = how.endsAt
        api.perform(endpoint(call, headers: headers), options: options, completion: then)
    }

    /// Completes with a result the engine did not deliver (the credentials step's), with ``FMError/current`` bound
    /// to its error as the engine binds it.
    private func deliver<Value>(_ result: Result<Value, FMError>, inline: Bool, _ done: ODataCompletion<Value>) {
        let failure = result.failure
        if inline {
            FMError.withCurrent(failure) { done.run(result) }
        } else {
            let box = UncheckedBox(result)
            callbackQueue.async { FMError.withCurrent(failure) { done.run(box.value) } }
        }
    }

    /// The engine's endpoint for `call`.
    func endpoint<Value>(_ call: ODataCall<Value>, headers: [String: String]?) -> Endpoint<Value> {
        let database = configuration.database
        var invalid = call.invalid
        if invalid == nil, database.isEmpty { invalid = .invalidConfiguration("No database is configured") }
        let path = call.rooted ? call.path : ODataText.encodePath(database) + (call.path.isEmpty ? "" : "/" + call.path)
        var endpoint = Endpoint(call.method, .odata(path, kind: call.kind), [], body: call.body,
                                auth: headers == nil ? .basic(encoded: nil) : .none, invalid: invalid, decode: call.decode)
        endpoint.headers = ["Accept": call.accept, "OData-Version": "4.0", "OData-MaxVersion": "4.0"]
        for (name, value) in call.extraHeaders { endpoint.headers[name] = value }
        for (name, value) in headers ?? [:] { endpoint.headers[name] = value }
        return endpoint
    }

    /// The async twin of ``send(_:attachingTo:inline:sentAs:logContext:completion:)``.
    func sendAsync<Value>(_ call: ODataCall<Value>, sentAs: Locked<UInt64?>? = nil, logContext: [String: String]? = nil) async throws -> Value {
        let handle = FMRequest()
        return try await api.bridge(attaching: handle) { completion in
            send(call, attachingTo: handle, inline: true, sentAs: sentAs, logContext: logContext, completion: completion)
        }
    }
}

/// An OData call waiting for its Claris ID token. The first of the provider's answer (``end()``), a cancel
/// (`-1005`), the deadline (`-1004`) and the end of a shutdown's grace (`-1012`, ``stop(with:)``) ends the wait, once.
/// Meanwhile it is registered with the lifecycle as a call in flight is: a shutdown waits for it within its grace,
/// then ends it.
final class ODataTokenWait<Value>: StoppableCall, Sendable {
    private struct State: Sendable {
        var done: ODataCompletion<Value>?
        var timer: Deadline?
    }
    private let state: Locked<State>
    private let lifecycle: Lifecycle
    /// Completes the call with an error that ended the wait.
    private let fail: @Sendable (FMError, ODataCompletion<Value>) -> Void

    init(_ done: ODataCompletion<Value>, lifecycle: Lifecycle, fail: @escaping @Sendable (FMError, ODataCompletion<Value>) -> Void) {
        state = Locked(State(done: done))
        self.lifecycle = lifecycle
        self.fail = fail
    }

    /// `true` until the wait ended.
    var isWaiting: Bool { state.withLock { $0.done != nil } }

    /// Keeps the deadline's timer, cancelled when the wait ends (at once when it ended already).
    func arm(_ timer: Deadline) {
        let ended = state.withLock { state -> Bool in
            guard state.done != nil else { return true }
            state.timer = timer
            return false
        }
        if ended { timer.cancel() }
    }

    /// Ends the wait: returns the call's completion, or `nil` when the wait had ended already. The timer is
    /// cancelled and the lifecycle no longer waits for it.
    func end() -> ODataCompletion<Value>? {
        let (done, timer) = state.withLock { state -> (ODataCompletion<Value>?, Deadline?) in
            defer { state = State() }
            return (state.done, state.timer)
        }
        guard let done else { return nil }
        timer?.cancel()
        lifecycle.release(self)
        return done
    }

    /// `StoppableCall`, and the cancel and the deadline: ends the wait with `error`, unless it ended already.
    func stop(with error: FMError) {
        if let done = end() { fail(error, done) }
    }
}

// MARK: - Calls

extension FMOData {
    /// `{set}` or `{set}?{query}`, or `-1002`.
    static func collectionPath(_ set: String, query: FMODataQuery) -> (String, FMError?) {
        guard !set.isEmpty else { return ("", .invalidArgument("An empty entity set name")) }
        switch query.queryString() {
        case .success(let text): return (ODataText.encodePath(set) + (text.isEmpty ? "" : "?" + text), nil)
        case .failure(let error): return ("", error)
        }
    }

    /// `{set}({key})`, or `-1002`.
    static func recordPath(_ set: String, key: FMODataKey) -> (String, FMError?) {
        guard !set.isEmpty else { return ("", .invalidArgument("An empty entity set name")) }
        switch key.encoded() {
        case .success(let text): return (ODataText.encodePath(set) + text, nil)
        case .failure(let error): return ("", error)
        }
    }

    func metadataCall() -> ODataCall<FMODataMetadata> {
        ODataCall(method: .get, path: "$metadata", kind: "$metadata", accept: "application/json", accepting: { $0 == 200 }) {
            try ODataMetadataReader.metadata($0.body, status: $0.status)
        }
    }

    /// What a collection read accepts: JSON without the per-row `@id`/`@editLink` (`odata.metadata=none`, as
    /// proofkit asks of FileMaker Server by default), which the rows would lose anyway; `@odata.count` and
    /// `@odata.nextLink` still come.
    static let collectionAccept = "application/json;odata.metadata=none"

    func pageCall(from set: String, query: FMODataQuery) -> ODataCall<FMODataPage> {
        let (path, invalid) = Self.collectionPath(set, query: query)
        return ODataCall(method: .get, path: path, kind: "{set}", accept: Self.collectionAccept, accepting: { $0 == 200 }, invalid: invalid) {
            try ODataEnvelope.page($0.body, status: $0.status)
        }
    }

    /// The page at a server's next link, which must lead to an OData URL on this client's server (same
    /// scheme, host and port); `-1007` otherwise: credentials never go to another server.
    func pageCall(following link: URL) -> ODataCall<FMODataPage> {
        let decode: @Sendable (Endpoint<FMODataPage>.Response) throws -> FMODataPage = { try ODataEnvelope.page($0.body, status: $0.status) }
        switch tail(of: link) {
        case .success(let path):
            // As the server wrote it, database segment included (it echoes the name as the client sent it).
            return ODataCall(method: .get, path: path, kind: "{set}", accept: Self.collectionAccept, accepting: { $0 == 200 }, rooted: true,
                             decode: decode)
        case .failure(let error):
            return ODataCall(method: .get, path: "", kind: "{set}", invalid: error, decode: decode)
        }
    }

    /// The part of `link` after `/fmi/odata/v4/`, when it leads to this client's host.
    private func tail(of link: URL) -> Result<String, FMError> {
        var base: URLComponents
        switch configuration.resolvedBase() {
        case .success(let resolved): base = resolved
        case .failure(let error): return .failure(error)   // what is wrong with the host, as every surface says it
        }
        var prefix = base.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        base.percentEncodedPath = prefix + "/fmi/odata/v4/" + ODataText.encodePath(configuration.database) + "/"
        guard let baseURL = base.url, let resolved = URL(string: link.absoluteString, relativeTo: baseURL)?.absoluteURL,
              let components = URLComponents(url: resolved, resolvingAgainstBaseURL: false) else {
            return .failure(.malformed("the next link is not a URL", status: nil))
        }
        guard components.scheme?.lowercased() == base.scheme?.lowercased(),
              components.host?.lowercased() == base.host?.lowercased(),
              components.connectionPort == base.connectionPort else {
            return .failure(.malformed("the next link leads to another server", status: nil))
        }
        let path = components.percentEncodedPath
        guard let range = path.range(of: "/fmi/odata/v4/", options: .caseInsensitive) else {
            return .failure(.malformed("the next link is not an OData URL", status: nil))
        }
        return .success(String(path[range.upperBound...]) + (components.percentEncodedQuery.map { "?" + $0 } ?? ""))
    }

    /// `call` with its page's rows decoded into `T` (same path, same server: a next link stays rooted).
    func typedPageCall<T: Decodable & SendableMetatype>(_ type: T.Type, _ call: ODataCall<FMODataPage>) -> ODataCall<FMODataTypedPage<T>> {
        ODataCall(method: .get, path: call.path, kind: call.kind, accept: call.accept, accepting: call.accepting, invalid: call.invalid,
                  rooted: call.rooted) { response in
            try ODataEnvelope.typedPage(T.self, response.body, status: response.status)
        }
    }

    func recordCall(from set: String, key: FMODataKey, query: FMODataQuery) -> ODataCall<[String: Any]> {
        var (path, invalid) = Self.recordPath(set, key: key)
        if invalid == nil {
            switch FMODataQuery(select: query.select, expand: query.expand).queryString() {
            case .success(let text): path += text.isEmpty ? "" : "?" + text
            case .failure(let error): invalid = error
            }
        }
        return ODataCall(method: .get, path: path, kind: "{set}({key})", accepting: { $0 == 200 }, invalid: invalid) {
            ODataEnvelope.fields(try ODataEnvelope.object($0.body, status: $0.status))
        }
    }

    func countCall(of set: String, filter: FMODataFilter?, viaCollection: Bool) -> ODataCall<Int> {
        if viaCollection {
            let (path, invalid) = Self.collectionPath(set, query: FMODataQuery(filter: filter, top: 1, count: true))
            return ODataCall(method: .get, path: path, kind: "{set}", accepting: { $0 == 200 }, invalid: invalid) { response in
                guard let count = try ODataEnvelope.count(in: try ODataEnvelope.object(response.body, status: response.status),
                                                          status: response.status) else {
                    throw FMError.malformed("no @odata.count", status: response.status)
                }
                return count
            }
        }
        var (path, invalid) = Self.collectionPath(set, query: FMODataQuery())
        path += "/$count"
        if invalid == nil, let filter {
            switch filter.expression() {
            case .success(let text): path += "?$filter=" + ODataText.encodeQuery(text)
            case .failure(let error): invalid = error
            }
        }
        return ODataCall(method: .get, path: path, kind: "{set}/$count", accept: "text/plain", accepting: { $0 == 200 }, invalid: invalid) {
            try ODataEnvelope.plainCount($0.body, status: $0.status)
        }
    }

    func createCall(in set: String, fields: [String: Any]) -> ODataCall<[String: Any]> {
        let (path, invalid) = Self.collectionPath(set, query: FMODataQuery())
        let decode: @Sendable (Endpoint<[String: Any]>.Response) throws -> [String: Any] = { response in
            if response.status == 204 || response.body.isEmpty { return [:] }
            return ODataEnvelope.createdRecord(try ODataEnvelope.object(response.body, status: response.status))
        }
        switch JSONPayload.serialize(fields) {
        case .success(let data):
            return ODataCall(method: .post, path: path, kind: "{set}", body: .json(data), invalid: invalid, decode: decode)
        case .failure(let error):
            return ODataCall(method: .post, path: path, kind: "{set}", invalid: invalid ?? error, decode: decode)
        }
    }

    /// The affected-row count of a PATCH or DELETE: FileMaker's `fmodata.affected_rows` header, else 1.
    static func affectedRows(_ response: Endpoint<Int>.Response) throws(FMError) -> Int {
        guard let header = response.header("fmodata.affected_rows") else { return 1 }
        guard let count = Int(header.trimmingCharacters(in: .whitespaces)), count >= 0 else {
            throw .malformed("fmodata.affected_rows is not an integer", status: response.status)
        }
        return count
    }

    func updateCall(in set: String, key: FMODataKey, fields: [String: Any]) -> ODataCall<Int> {
        let (path, invalid) = Self.recordPath(set, key: key)
        switch JSONPayload.serialize(fields) {
        case .success(let data):
            return ODataCall(method: .patch, path: path, kind: "{set}({key})", body: .json(data), invalid: invalid) { try Self.affectedRows($0) }
        case .failure(let error):
            return ODataCall(method: .patch, path: path, kind: "{set}({key})", invalid: invalid ?? error) { try Self.affectedRows($0) }
        }
    }

    func deleteCall(in set: String, key: FMODataKey) -> ODataCall<Int> {
        let (path, invalid) = Self.recordPath(set, key: key)
        return ODataCall(method: .delete, path: path, kind: "{set}({key})", invalid: invalid) { try Self.affectedRows($0) }
    }

    func scriptCall(_ script: String, parameter: String?) -> ODataCall<FMODataScriptResult> {
        let decode: @Sendable (Endpoint<FMODataScriptResult>.Response) throws -> FMODataScriptResult = {
            try ODataEnvelope.script($0.body, status: $0.status)
        }
        var invalid: FMError?
        if script.isEmpty { invalid = .invalidArgument("An empty script name") }
        let path = "Script." + ODataText.encodePath(script)
        guard let parameter else {
            return ODataCall(method: .post, path: path, kind: "Script.{}", invalid: invalid, decode: decode)
        }
        switch JSONPayload.serialize(["scriptParameterValue": parameter]) {
        case .success(let data):
            return ODataCall(method: .post, path: path, kind: "Script.{}", body: .json(data), invalid: invalid, decode: decode)
        case .failure(let error):
            return ODataCall(method: .post, path: path, kind: "Script.{}", invalid: invalid ?? error, decode: decode)
        }
    }
}

/// How the requests of one OData call are sent, the same for each (its first, one after a token fetch, one after a
/// renewed token, a refusal): the caller's handle, inline or on the callback queue, the call's one deadline, where the
/// number of its last request is noted for a walk's line, and the caller's logging context.
struct ODataSending: Sendable {
    let handle: FMRequest
    let inline: Bool
    let endsAt: DispatchTime
    let sentAs: Locked<UInt64?>?
    let logContext: [String: String]

    /// The engine's options for the call's request number `requestID`, which is noted in ``sentAs``.
    func options(accepting: @escaping @Sendable (Int) -> Bool, requestID: UInt64) -> CallOptions {
        var options = CallOptions(accepting: accepting, handle: handle)
        options.logContext = logContext
        options.inline = inline
        options.requestID = requestID
        sentAs?.withLock { $0 = requestID }
        return options
    }
}

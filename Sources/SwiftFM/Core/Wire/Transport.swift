import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Where a connection goes

extension URL {
    /// The port a connection goes to: the one written, else the scheme's (80 for `http`, 443 for `https`;
    /// SwiftFM sends nothing else).
    static func connectionPort(scheme: String?, written port: Int?) -> Int {
        port ?? (scheme?.lowercased() == "http" ? 80 : 443)
    }

    /// The port a connection to this URL goes to (``connectionPort(scheme:written:)``).
    var connectionPort: Int {
        let url = connectionURL
        return Self.connectionPort(scheme: url.scheme, written: url.port)
    }

    /// `host:port` a connection to this URL goes to (the host lowercased, the port ``connectionPort``), or `nil`
    /// without a host: the one key of the per-host connection limit, the first-contact rule and the cookies of
    /// a container download.
    var connectionOrigin: String? {
        let url = connectionURL
        guard let host = url.host, !host.isEmpty else { return nil }
        return "\(host.lowercased()):\(Self.connectionPort(scheme: url.scheme, written: url.port))"
    }

    /// The URL of this one's text (`absoluteString`), the text a transport connects to: a URL relative to a base
    /// without an authority may have the text `http://b.com/y` (`..//b.com/y` against `http:/x/`) while its own
    /// `host` is `nil`. An absolute URL is its text already.
    private var connectionURL: URL { baseURL == nil ? self : absoluteURL }
}

/// The origin of every URL whose text begins with one `scheme://authority/`: an authority holds no `/`, so such URLs
/// have the same host and port, and comparing a URL's first bytes with the prefix replaces parsing it (Foundation's
/// `URL.host` and the lowercasing cost about 3,000 instructions on Linux).
struct OriginPrefix: Sendable {
    /// `scheme://authority/` as UTF-8.
    let prefix: [UInt8]
    /// Their `URL.connectionOrigin`.
    let origin: String

    /// The prefix and origin of `url`: its text up to the first `/` after `scheme://`; `nil` when its text has none
    /// or the URL has no host.
    init?(_ url: URL) {
        guard let origin = url.connectionOrigin else { return nil }
        var text = url.absoluteString
        guard let end = text.withUTF8({ Self.prefixLength(of: $0) }) else { return nil }
        self.prefix = Array(text.utf8.prefix(end))
        self.origin = origin
    }

    /// The length of `scheme://authority/` at the start of `text` (the scheme's letters, digits, `+`, `-` and `.`,
    /// then `://`, then up to and with the next `/`), or `nil`.
    static func prefixLength(of text: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index < text.count, Self.isSchemeByte(text[index]) { index += 1 }
        guard index > 0, index + 3 <= text.count, text[index] == UInt8(ascii: ":"), text[index + 1] == UInt8(ascii: "/"),
              text[index + 2] == UInt8(ascii: "/") else { return nil }
        index += 3
        while index < text.count {
            if text[index] == UInt8(ascii: "/") { return index + 1 }
            index += 1
        }
        return nil
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    /// ``origin`` when `url`'s text begins with ``prefix``, else `nil`.
    func origin(of url: URL) -> String? { origin(ofText: url.absoluteString) }

    /// ``origin`` when `text` (a URL's `absoluteString`) begins with ``prefix``, else `nil`.
    func origin(ofText text: String) -> String? {
        var text = text
        let matches = text.withUTF8 { bytes in
            prefix.withUnsafeBytes { wanted in
                guard bytes.count >= wanted.count, let start = bytes.baseAddress, let base = wanted.baseAddress else { return false }
                return memcmp(start, base, wanted.count) == 0
            }
        }
        return matches ? origin : nil
    }
}

extension URLComponents {
    /// The port a connection to these components' URL goes to (`URL.connectionPort(scheme:written:)`).
    var connectionPort: Int { URL.connectionPort(scheme: scheme, written: port) }
}

// MARK: - The public transport protocol

/// A transfer in flight that can be cancelled.
///
/// Cancelling must end the transfer: the transport then calls ``FMTransportEvents/complete`` with an error
/// (or not at all, if it had already completed). SwiftFM never relies on either.
public protocol FMTransportTask: Sendable {
    /// Stops the transfer. Calling it more than once, or after completion, does nothing.
    func cancel()
}

/// Where a transport reports one HTTP exchange, in order: the response head once, body bytes as they
/// arrive, then the end exactly once.
///
/// SwiftFM enforces its limits through these callbacks: when ``response`` or ``data`` returns `false` the
/// transport must stop reading and cancel the transfer (it still calls ``complete``).
public struct FMTransportEvents: Sendable {
    /// The response head (status and headers). Redirects must *not* be followed: a 3xx is the response.
    /// Returns `false` when SwiftFM wants the transfer stopped.
    public let response: @Sendable (HTTPURLResponse) -> Bool
    /// The next bytes of the body, after content decoding (gzip, deflate). Returns `false` when SwiftFM
    /// wants the transfer stopped (the answer passed ``FMConfiguration/maxResponseBytes``, or a file
    /// could not be written).
    public let data: @Sendable (Data) -> Bool
    /// The end of the exchange: `nil` when the whole body arrived, else the transport error (a `URLError`
    /// is mapped to SwiftFM's client codes: timed out `-1004`, cancelled `-1005`, anything else `-1003`).
    public let complete: @Sendable (Error?) -> Void
    /// The response head as the status and the header fields (a repeated field's values joined with `", "`),
    /// for the package's own transports: set by SwiftFM's exchanges, it spares ``FMCurlTransport`` an
    /// `HTTPURLResponse` per answer. `nil` when the events were made with the public initializer.
    let head: (@Sendable (Int, [String: String]) -> Bool)?

    /// Creates the callbacks of one exchange (transports do not need this; tests of transports may).
    public init(
        response: @escaping @Sendable (HTTPURLResponse) -> Bool,
        data: @escaping @Sendable (Data) -> Bool,
        complete: @escaping @Sendable (Error?) -> Void
    ) {
        self.init(response: response, data: data, complete: complete, head: nil)
    }

    init(
        response: @escaping @Sendable (HTTPURLResponse) -> Bool,
        data: @escaping @Sendable (Data) -> Bool,
        complete: @escaping @Sendable (Error?) -> Void,
        head: (@Sendable (Int, [String: String]) -> Bool)?
    ) {
        self.response = response
        self.data = data
        self.complete = complete
        self.head = head
    }
}

/// One request for a transport: the `URLRequest` (method, URL, headers, small bodies in `httpBody`) and,
/// for container uploads, a file whose bytes are the body.
///
/// It holds the `Authorization` value (a Basic value or a session token) and, at login, data-source
/// passwords: its `description`, `debugDescription`, `dump` and `Mirror` show the method, the path (a
/// session token in it replaced), the header names and the body's size only.
public struct FMTransportRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The request. Its `httpBody` is set unless ``bodyFile`` is.
    public var urlRequest: URLRequest
    /// When set, the body is this file's content, to be streamed, with `Content-Length` set to its size: a body SwiftFM
    /// assembled on disk (a multipart body, or a copy of the caller's file for an `FMOData` container upload, taken as the
    /// file was when the upload started), removed once the exchange ended; or, for ``FMCurlTransport``, which compares
    /// the file with its state at opening as it sends it, the caller's file itself.
    public var bodyFile: URL?
    /// Whether a transport may send this request a second time (on a new connection, when a reused one died
    /// before any byte of the answer): the engine's rule, ``Endpoint/cannotChangeData``. `nil`: the transport
    /// decides from the method and the URL (a `GET` or `HEAD` that runs no script).
    var mayBeSentTwice: Bool?

    /// Whether a transport may send this request again (``mayBeSentTwice`` when the engine set it): else a `GET` or
    /// `HEAD` without a body file that runs no script (no `script` path component, no `script…` query item).
    var mayBeSentAgain: Bool {
        if let marked = mayBeSentTwice { return marked }
        let method = (urlRequest.httpMethod ?? "GET").uppercased()
        guard method == "GET" || method == "HEAD", bodyFile == nil else { return false }
        guard let url = urlRequest.url else { return false }
        if url.pathComponents.contains("script") { return false }
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return !items.contains { $0.name.lowercased().hasPrefix("script") }
    }

    /// Creates a request.
    public init(urlRequest: URLRequest, bodyFile: URL? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
    }

    /// `"FMTransportRequest(POST /fmi/data/vLatest/databases/DB/sessions, headers: Authorization, Content-Type, body: 85 bytes)"`:
    /// no header value, no body, no query, no token.
    public var description: String {
        let headers = (urlRequest.allHTTPHeaderFields ?? [:]).keys.sorted().joined(separator: ", ")
        let body = bodyFile != nil ? "a file" : "\(urlRequest.httpBody?.count ?? 0) bytes"
        return "FMTransportRequest(\(urlRequest.httpMethod ?? "GET") \(Redaction.path(of: urlRequest.url)), headers: \(headers), body: \(body))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror that shows no secret (what `dump` and `Mirror(reflecting:)` read).
    public var customMirror: Mirror { Redaction.mirror(of: self, description) }
}

/// The HTTP client SwiftFM sends every request through.
///
/// ``FMCurlTransport`` (libcurl) is the default on Linux, ``FMURLSessionTransport`` (URLSession) elsewhere; TLS
/// per client and proxies are ``FMConfiguration/tls`` and ``FMConfiguration/proxy``. Bring your own to use
/// another HTTP stack without SwiftFM depending on it: pass it to
/// ``DataAPI/init(configuration:transport:callbackQueue:tokenStore:logger:now:)``.
///
/// Contract: send the request as given (headers included, no cookies added, no redirect followed, no
/// cache), report through `events`, and call `events.complete` exactly once. Deadlines, size caps,
/// retries and concurrency limits are SwiftFM's job, not the transport's.
public protocol FMTransport: Sendable {
    /// Starts sending `request`; reports through `events`; returns a handle that can cancel it.
    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask
}

// MARK: - The URLSession transport

/// The URLSession transport, the default on Apple platforms (and on Linux where libcurl cannot be loaded): one
/// private `URLSession` (ephemeral, no cache, no cookies, no redirects followed), streaming each answer to
/// SwiftFM as it arrives.
///
/// On Linux, `URLSession` trusts the certificate authorities of the system bundle that libcurl reads (on
/// Debian and Ubuntu `/etc/ssl/certs/ca-certificates.crt`); see the README's TLS section for a private CA.
/// On Apple platforms, pass `serverTrust` to decide trust yourself (a private CA or pinned certificates).
public final class FMURLSessionTransport: FMTransport {
    private let session: URLSession
    private let router: TaskRouter

    #if canImport(Darwin)
    /// Decides whether to trust a server: return `true` to accept the presented trust for that host.
    public typealias ServerTrustEvaluator = @Sendable (SecTrust, String) -> Bool

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - idleTimeout: the longest silence allowed between two bytes of an answer, in seconds (the whole
    ///     call is bounded by SwiftFM's own deadline, ``FMConfiguration/timeout``).
    ///   - maxConnectionsPerHost: the most connections URLSession opens to one host (`nil`: its own default,
    ///     6 on Linux); requests past it wait inside URLSession, where SwiftFM cannot see them. ``DataAPI``
    ///     sets it from ``FMConfiguration/maxConcurrentRequests`` and ``FMConfiguration/sessionPoolSize``.
    ///   - serverTrust: when given, decides server trust instead of the system (Apple platforms only).
    public init(idleTimeout: TimeInterval = 60, maxConnectionsPerHost: Int? = nil, serverTrust: ServerTrustEvaluator? = nil) {
        router = TaskRouter(serverTrust: serverTrust)
        session = Self.makeSession(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, delegate: router)
    }
    #else
    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - idleTimeout: the longest silence allowed between two bytes of an answer, in seconds (the whole
    ///     call is bounded by SwiftFM's own deadline, ``FMConfiguration/timeout``).
    ///   - maxConnectionsPerHost: the most connections URLSession opens to one host (`nil`: its own default,
    ///     6 on Linux); requests past it wait inside URLSession, where SwiftFM cannot see them. ``DataAPI``
    ///     sets it from ``FMConfiguration/maxConcurrentRequests`` and ``FMConfiguration/sessionPoolSize``.
    public init(idleTimeout: TimeInterval = 60, maxConnectionsPerHost: Int? = nil) {
        router = TaskRouter()
        session = Self.makeSession(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, delegate: router)
    }
    #endif

    private static func makeSession(idleTimeout: TimeInterval, maxConnectionsPerHost: Int?, delegate: TaskRouter) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        if let maxConnectionsPerHost { configuration.httpMaximumConnectionsPerHost = max(1, maxConnectionsPerHost) }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        // Linux truncates timeouts to whole seconds (a value under 1 s would fire at once).
        configuration.timeoutIntervalForRequest = max(1, idleTimeout.rounded(.up))
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.delegateQueue())
    }

    #if canImport(Darwin)
    private static func delegateQueue() -> OperationQueue? { nil }
    #else
    /// On Linux, URLSession hands each chunk of a body to the delegate queue as a new operation, as fast as
    /// libcurl reads and inflates it. When the delegate queue falls behind (a busy machine, a compression
    /// bomb inflating at hundreds of MB/s) the backlog grows without bound, and the cancel of an answer past
    /// ``FMConfiguration/maxResponseBytes`` waits behind it. Running the delegate inline, on URLSession's own
    /// work queue, is the back-pressure: libcurl reads no further until SwiftFM took the chunk or refused it.
    private static func delegateQueue() -> OperationQueue? { InlineOperationQueue() }
    #endif

    deinit {
        // The last reference may go inside one of this transport's own callbacks (a client released while its
        // last call completes), which on Linux run on URLSession's work queue; invalidating waits for that
        // queue, so it happens on another one. Requests still in flight finish: cancelling them here would
        // bypass TaskRouter's one-way end. A DataAPI holds its transport until its calls end (each call holds
        // the DataAPI), so only a direct user of this transport can release it with a request in flight; that
        // request ends by its answer, its idle timeout, or the handle's `cancel()`.
        let session = self.session
        Self.invalidations.async { session.finishTasksAndInvalidate() }
    }

    /// Where released transports invalidate their sessions (tests wait on it).
    static let invalidations = DispatchQueue(label: "SwiftFM.FMURLSessionTransport.invalidations")

    /// URLSession's idle timeout for requests, in seconds (tests and diagnostics).
    var requestTimeout: TimeInterval { session.configuration.timeoutIntervalForRequest }

    /// Starts the request; see ``FMTransport/send(_:events:)``.
    public func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        // corelibs sends a field set through `allHTTPHeaderFields` as given, line breaks included (and libcurl cuts it
        // at a NUL).
        if let fields = request.urlRequest.allHTTPHeaderFields,
           fields.contains(where: { HTTPHeader.cannotBeSent(name: $0.key, value: $0.value) }) {
            DispatchQueue.global().async { events.complete(HTTPHeader.cannotBeSentError()) }
            return NothingToCancel()
        }
        let task: URLSessionTask
        if let file = request.bodyFile {
            var plain = request.urlRequest
            plain.httpBody = nil
            task = session.uploadTask(with: plain, fromFile: file)
        } else {
            task = session.dataTask(with: request.urlRequest)
        }
        router.register(task, events: events)
        task.resume()
        return URLSessionTaskHandle(task: task, router: router)
    }
}

#if !canImport(Darwin)
/// An operation queue that runs each block at once, on the thread that adds it (URLSession's work queue).
/// Nothing run there may start or wait for another task: the router hands completions to another queue.
private final class InlineOperationQueue: OperationQueue, @unchecked Sendable {
    override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
}
#endif

/// The task of a request refused before it was sent.
private struct NothingToCancel: FMTransportTask {
    func cancel() {}
}

/// Cancels one `URLSessionTask`.
struct URLSessionTaskHandle: FMTransportTask, @unchecked Sendable {
    // URLSessionTask is thread-safe for `cancel()`; it is not `Sendable`-annotated on every platform.
    let task: URLSessionTask
    let router: TaskRouter
    /// Decides the cancel at once and stops the task from another queue: on Linux `URLSessionTask.cancel()` waits
    /// for URLSession's work queue, where the task's callbacks run — and so does whatever they call that may cancel
    /// (a size cap refusing the answer; a download's `progress` did, before it moved to a queue of its own, and the
    /// process trapped in `dispatch_sync`).
    func cancel() {
        guard router.mayCancel(task) else { return }
        DispatchQueue.global().async { [self] in task.cancel() }
    }
}

/// The session delegate: routes each task's events to its ``FMTransportEvents`` and refuses redirects.
///
/// A task is ended one way only, whichever comes first: `cancel()` (``mayCancel(_:)``) or a refused head
/// (the `.cancel` disposition). swift-corelibs-foundation traps when two reach one task — "Trying to access a
/// behaviour for a task that in not in the registry" when the refused head completes and unregisters the
/// task before the cancel's second hop looks it up, and "Received response disposition, but we're not
/// waiting for it" when a head is answered after a cancel stopped the transfer. So a head that arrives
/// once a cancel was decided gets no answer at all: the cancel ends the task.
final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `routes` is behind its lock; the rest is immutable.
    private struct Route {
        var events: FMTransportEvents
        /// SwiftFM refused the answer: no more of its bytes are handed on.
        var refused = false
        /// The answer was a redirect, refused: the task ends by itself, and is never cancelled from then on.
        var redirected = false
        /// The task is being ended, by `cancel()` or by a refused head: nothing else may end it, and neither
        /// its head nor a redirect of it is answered.
        var ending = false
    }
    private let routes = Locked<[Int: Route]>([:])
    #if canImport(Darwin)
    private let serverTrust: FMURLSessionTransport.ServerTrustEvaluator?
    init(serverTrust: FMURLSessionTransport.ServerTrustEvaluator?) { self.serverTrust = serverTrust }
    #endif

    func register(_ task: URLSessionTask, events: FMTransportEvents) {
        routes.withLock { $0[task.taskIdentifier] = Route(events: events) }
    }

    /// The events of `task`, unless its answer was refused.
    private func events(for task: URLSessionTask) -> FMTransportEvents? {
        routes.withLock { routes in routes[task.taskIdentifier].flatMap { $0.refused ? nil : $0.events } }
    }

    /// SwiftFM refused `task`'s answer: hand on nothing more, and cancel it from another queue (on Linux
    /// toolchains up to 6.3 at least, `cancel()` waits for the work queue these callbacks run on).
    private func refuse(_ task: URLSessionTask) {
        routes.withLock { $0[task.taskIdentifier]?.refused = true }
        let handle = URLSessionTaskHandle(task: task, router: self)
        DispatchQueue.global().async { handle.cancel() }
    }

    /// Whether `task` may be cancelled now (at most once); from then on neither its head nor a redirect of it
    /// is answered. Not a task that completed (its route is gone), nor one being ended already (cancelled, or
    /// its head refused), nor one whose redirect was answered (its answer is complete and it ends by itself;
    /// swift-corelibs-foundation traps — "Received callback for HTTP redirection, but we're not waiting for
    /// it" — when the answer to `willPerformHTTPRedirection` reaches a task cancelled meanwhile).
    func mayCancel(_ task: URLSessionTask) -> Bool {
        routes.withLock { routes in
            guard let route = routes[task.taskIdentifier], !route.redirected, !route.ending else { return false }
            routes[task.taskIdentifier]?.ending = true
            return true
        }
    }

    /// Whether the redirect of `task` may be answered (it is not being ended); no cancel reaches it from then on.
    private func mayAnswerRedirect(_ task: URLSessionTask) -> Bool {
        routes.withLock { routes in
            if routes[task.taskIdentifier]?.ending == true { return false }
            routes[task.taskIdentifier]?.redirected = true
            return true
        }
    }

    /// How to answer `task`'s head: `nil` (no answer: a cancel ends the task, or it completed), `.allow`, or
    /// `.cancel` — which then is the one way the task ends, so no cancel follows. `proceed` asks the events.
    func disposition(for task: URLSessionTask, proceed: (FMTransportEvents) -> Bool) -> URLSession.ResponseDisposition? {
        // `.none`: no answer; `.some(nil)`: refused already (answered `.cancel`); `.some(events)`: ask them.
        let events = routes.withLock { routes -> FMTransportEvents?? in
            guard let route = routes[task.taskIdentifier], !route.ending else { return .none }
            return .some(route.refused ? nil : route.events)
        }
        guard let events else { return nil }
        let accepted = events.map(proceed) ?? false
        return routes.withLock { routes -> URLSession.ResponseDisposition? in
            // On Linux this runs on URLSession's work queue, which a cancel decided meanwhile waits for: its
            // first step comes after this answer. A cancel decided before this line ends the task instead.
            guard let route = routes[task.taskIdentifier], !route.ending else { return nil }
            if accepted { return .allow }
            routes[task.taskIdentifier]?.refused = true
            routes[task.taskIdentifier]?.ending = true
            return .cancel
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let disposition = disposition(for: dataTask) { events in
            guard let http = response as? HTTPURLResponse else { return false }
            return events.response(http)
        }
        if let disposition { completionHandler(disposition) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let events = events(for: dataTask) else { return }
        if !events.data(data) { refuse(dataTask) }
    }

    /// On Linux, corelibs URLSession reads with libcurl and reports a head it cannot read as `URLError(-1 unknown)` in
    /// libcurl's words: a header line longer than libcurl takes (100 KB) "Out of memory" ("A value or data field grew
    /// larger than allowed" since 8.6), a line its own parser refuses "Failed writing header". Before any response,
    /// that is a malformed answer (`cannotParseResponse`), not a lost connection to ride out.
    static func unreadableHead(_ error: Error?) -> URLError? {
        guard let error = error as? URLError, error.code == .unknown,
              ["Out of memory", "A value or data field grew larger than allowed", "Failed writing header"].contains(error.localizedDescription)
        else { return nil }
        return URLError(.cannotParseResponse, userInfo: [NSLocalizedDescriptionKey:
            "the transport cannot read a line of the answer's head (\(error.localizedDescription))"])
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let events = routes.withLock { $0.removeValue(forKey: task.taskIdentifier)?.events }
        guard let events else { return }
        let outcome = UncheckedError(base: error == nil && task.response == nil ? URLError(.badServerResponse)
                                        : task.response == nil ? Self.unreadableHead(error) ?? error : error)
        // Off URLSession's work queue: what the completion starts next (a retry, the next request under the
        // concurrency cap) creates a task, which waits for that queue.
        DispatchQueue.global().async { events.complete(outcome.base) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Never followed (SwiftFM follows a container's redirect itself). A cancelled task gets no answer:
        // it has ended already, and the answer would trap in swift-corelibs-foundation.
        if mayAnswerRedirect(task) { completionHandler(nil) }
    }

    #if canImport(Darwin)
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let serverTrust, let trust = challenge.protectionSpace.serverTrust
        else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        if serverTrust(trust, challenge.protectionSpace.host) {
            completionHandler(.useCredential, URLCredential(trust: trust))
        } else {
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }
    #endif
}

/// Carries a transport error (or none) across a queue hop (`Error` values are not all `Sendable`).
private struct UncheckedError: @unchecked Sendable {
    let base: Error?
}

// MARK: - The default transport of a configuration

extension FMConfiguration {
    /// The most requests SwiftFM may have in flight to one host: ``maxConcurrentRequests`` when set, else
    /// enough for every session of the pool plus logins and container transfers. The default transport
    /// allows this many connections, so that the only queue is SwiftFM's own (FIFO, under the deadline).
    var transportConnectionLimit: Int {
        if let cap = maxConcurrentRequests { return max(1, cap) }
        return max(64, 2 * min(1000, max(1, sessionPoolSize)))
    }
}

/// The transport ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)`` uses: on Linux
/// ``FMCurlTransport`` (http and https) wherever libcurl loads, else ``FMURLSessionTransport``. Each allows
/// ``FMConfiguration/transportConnectionLimit`` connections per host.
func defaultTransport(for configuration: FMConfiguration) -> any FMTransport {
    defaultTransportChoice(for: configuration, libraryPath: "libcurl.so.4").transport
}

/// The default transport, and the line to log when libcurl could not be loaded from `libraryPath` (on Linux;
/// the tests point it at a missing library).
func defaultTransportChoice(for configuration: FMConfiguration, libraryPath: String) -> (transport: any FMTransport, note: String?) {
    #if os(Linux)
    let library = CurlLibrary.at(libraryPath)
    if let error = library.error {
        return (urlSessionTransport(for: configuration),
                "libcurl could not be loaded (\(error)): every request goes through FMURLSessionTransport instead "
                    + "(corelibs URLSession: memory grows per request, and FMConfiguration.tls and proxy cannot be honoured)")
    }
    return (FMCurlTransport(idleTimeout: defaultIdleTimeout(for: configuration), maxConnectionsPerHost: configuration.transportConnectionLimit,
                            tls: configuration.tls, proxy: configuration.proxy, library: library), nil)
    #else
    return (urlSessionTransport(for: configuration), nil)
    #endif
}

/// The URLSession transport a configuration gets where it is the default (Apple platforms, or Linux without libcurl).
func urlSessionTransport(for configuration: FMConfiguration) -> FMURLSessionTransport {
    FMURLSessionTransport(idleTimeout: defaultIdleTimeout(for: configuration), maxConnectionsPerHost: configuration.transportConnectionLimit)
}

/// Why `transport` cannot send `configuration`'s calls: TLS options or a proxy that only ``FMCurlTransport``
/// honours, set for another transport (or for an FMCurlTransport made with other ones). `nil`: it can.
func refusal(of transport: any FMTransport, for configuration: FMConfiguration) -> FMError? {
    let names = configuration.tls.namesSet.map { "tls.\($0)" } + (configuration.proxy == nil ? [] : ["proxy"])
    guard !names.isEmpty else { return nil }
    #if os(Linux)
    if let curl = transport as? FMCurlTransport {
        if curl.tls == configuration.tls && curl.proxy == configuration.proxy { return nil }
        return .invalidConfiguration("FMConfiguration's \(names.joined(separator: ", ")) differ from the FMCurlTransport's own: "
            + "make the transport with the same options (FMCurlTransport(tls:proxy:)), or let DataAPI(configuration:) make it")
    }
    #endif
    return .invalidConfiguration("FMConfiguration's \(names.joined(separator: ", ")) cannot be honoured by \(type(of: transport)): "
        + "only FMCurlTransport (Linux, libcurl) applies them; never ignored silently, so no call is sent")
}

/// The default transports' idle timeout (``FMCurlTransport``'s and ``FMURLSessionTransport``'s): the call's
/// deadline plus a margin, so a silent server meets SwiftFM's deadline first, and a silence shorter than the
/// deadline never ends a call. Were both the same, URLSession's own timeout and the deadline's cancel
/// would reach the task at the same moment, and swift-corelibs-foundation can trap when they do ("Trying to
/// access a behaviour for a task that in not in the registry"). The idle timeout stays a backstop for a
/// transfer that stalls under a longer deadline (a container's).
func defaultIdleTimeout(for configuration: FMConfiguration) -> TimeInterval {
    let timeout = configuration.timeout.isFinite ? max(0, configuration.timeout) : 60
    return timeout + 5
}

extension FMError {
    /// Maps a transport failure: timeout → -1004, cancelled → -1005, anything else → -1003 with a message
    /// naming the host, the port and the cause in words (``connectionFailure(_:cause:underlying:)``), or, for
    /// a TLS handshake that fails on an `https` URL or a TLS answer on an `http` one, the scheme to use
    /// (``wrongScheme(_:use:underlying:)``). The underlying error prints as `URLError(-1004
    /// cannotConnectToHost)`, never beside SwiftFM's own codes as a bare number. `answerStarted`: the answer's head
    /// had arrived, so a connection failure is an answer that broke off (``answerBrokeOff(_:code:description:underlying:)``),
    /// and a body that cannot be read (a corrupt content coding, a chunked body that does not parse) an answer that
    /// cannot be read (``unreadableAnswer(_:cause:underlying:)``).
    static func fromTransport(_ error: Error, url: URL? = nil, answerStarted: Bool = false) -> FMError {
        if let fm = error as? FMError { return fm }
        let code: Int
        if let url = error as? URLError {
            code = url.code.rawValue
        } else {
            let ns = error as NSError
            guard ns.domain == NSURLErrorDomain else { return .transport(underlyingText(error)) }
            code = ns.code
        }
        // Partly the server's words (curl quotes a certificate's subject name): printable and short.
        let description = serverText((error as NSError).localizedDescription, limit: 1_000)
        let underlying = "\(urlErrorName(code)): \(description)"
        switch code {
        case URLError.Code.timedOut.rawValue: return .timeout(url, after: nil)
        case URLError.Code.cancelled.rawValue: return .cancelled
        default:
            if answerStarted {
                // A body that arrived but cannot be read did not break off: it is an answer that cannot be read. Corelibs'
                // URLSession hands libcurl's failures on as code -1 with curl's words: a coding it cannot undo or a
                // chunked body that does not parse is told by them.
                if code == URLError.Code.cannotParseResponse.rawValue || code == URLError.Code.cannotDecodeContentData.rawValue
                    || (code == -1 && isUnreadableBodyWords(description)) {
                    return unreadableAnswer(url, cause: cause(code: code, description: description), underlying: underlying)
                }
                return answerBrokeOff(url, code: code, description: description, underlying: underlying)
            }
            let scheme = url?.scheme?.lowercased()
            if scheme == "https", isFailedHandshake(code: code, description: description) {
                return wrongScheme(url, use: "http", underlying: underlying)
            }
            if scheme == "http", description.contains("HTTP/0.9") { // TLS bytes where an HTTP answer was expected
                return wrongScheme(url, use: "https", underlying: underlying)
            }
            return connectionFailure(url, cause: cause(code: code, description: description), underlying: underlying)
        }
    }

    /// libcurl's words for a body it received but cannot read (error 61, a bad content coding; a chunked body that does
    /// not parse), as corelibs' URLSession passes them on with code -1.
    static func isUnreadableBodyWords(_ description: String) -> Bool {
        let words = description.lowercased()
        return words.contains("content encoding") || words.contains("unencoding") || words.contains("chunk")
    }

    /// `URLError(-1004 cannotConnectToHost)`: the code with its name, so it is never read as SwiftFM's `-1004`.
    static func urlErrorName(_ code: Int) -> String {
        let names: [Int: String] = [
            -1: "unknown", -999: "cancelled", -1000: "badURL", -1001: "timedOut", -1002: "unsupportedURL",
            -1003: "cannotFindHost", -1004: "cannotConnectToHost", -1005: "networkConnectionLost", -1006: "dnsLookupFailed",
            -1007: "httpTooManyRedirects", -1009: "notConnectedToInternet", -1011: "badServerResponse", -1016: "cannotDecodeContentData",
            -1017: "cannotParseResponse", -1103: "dataLengthExceedsMaximum", -1200: "secureConnectionFailed",
            -1201: "serverCertificateHasBadDate", -1202: "serverCertificateUntrusted", -1203: "serverCertificateHasUnknownRoot",
            -1204: "serverCertificateNotYetValid", -1205: "clientCertificateRejected", -1206: "clientCertificateRequired",
        ]
        return "URLError(\(code)\(names[code].map { " " + $0 } ?? ""))"
    }

    /// A TLS handshake that failed for another reason than the certificate: on Linux libcurl's OpenSSL
    /// error ("wrong version number" when plain HTTP answered, "unexpected eof" when the server closed),
    /// on Apple platforms `secureConnectionFailed`.
    static func isFailedHandshake(code: Int, description: String) -> Bool {
        if description.localizedCaseInsensitiveContains("certificate") { return false }
        if code == URLError.Code.secureConnectionFailed.rawValue { return true }
        return code == -1 && (description.contains("SSL") || description.contains("TLS"))
    }

    /// How every wrong-scheme message starts (``isWrongScheme``).
    static let wrongSchemePrefix = "Wrong scheme: "

    /// A call sent with the scheme the server does not speak: `-1003`, a message naming the URL to write
    /// instead, never retried (it is no transient fault).
    static func wrongScheme(_ url: URL?, use scheme: String, underlying: String) -> FMError {
        var address = hostName(of: url) ?? "the host"
        if let port = url?.port { address += ":\(port)" }
        let said = scheme == "http"
            ? "the TLS handshake with \(address) failed: the server there speaks plain HTTP (as fm-emulator does)? Write the host as http://\(address)"
            : "the server at \(address) speaks TLS (HTTPS)? Write the host as https://\(address)"
        return FMError(code: ClientCode.transport, message: wrongSchemePrefix + said, underlying: underlying)
    }

    /// Whether this is ``wrongScheme(_:use:underlying:)``'s error.
    var isWrongScheme: Bool { code == ClientCode.transport && message.hasPrefix(Self.wrongSchemePrefix) }

    /// The `URLError` code of a transport failure, read from ``underlying`` (``urlErrorName(_:)`` starts it).
    var urlErrorCode: Int? {
        guard code == ClientCode.transport, let underlying, underlying.hasPrefix("URLError(") else { return nil }
        let digits = underlying.dropFirst("URLError(".count).prefix { $0 == "-" || $0.isNumber }
        return Int(digits)
    }

    /// An answer that arrived but cannot be read: `cannotParseResponse` (a malformed head) or
    /// `cannotDecodeContentData` (a content coding that is unknown or corrupt). Never retried or ridden out:
    /// it fails the same way again, and at once, with what was wrong.
    var isMalformedAnswer: Bool {
        guard let urlCode = urlErrorCode else { return false }
        return urlCode == URLError.Code.cannotParseResponse.rawValue || urlCode == URLError.Code.cannotDecodeContentData.rawValue
    }

    /// A TLS failure: `secureConnectionFailed`, a certificate error (`-1201` … `-1206`), or libcurl's
    /// OpenSSL error (code -1 naming SSL, TLS or a certificate). Never retried: it fails the same way again.
    var isTLSFailure: Bool {
        guard code == ClientCode.transport, let urlCode = urlErrorCode else { return false }
        if (-1206 ... -1200).contains(urlCode) { return true }
        guard urlCode == -1, let underlying else { return false }
        return underlying.contains("SSL") || underlying.contains("TLS") || underlying.localizedCaseInsensitiveContains("certificate")
    }
}

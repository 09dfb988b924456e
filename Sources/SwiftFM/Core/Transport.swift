import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    /// Creates the callbacks of one exchange (transports do not need this; tests of transports may).
    public init(
        response: @escaping @Sendable (HTTPURLResponse) -> Bool,
        data: @escaping @Sendable (Data) -> Bool,
        complete: @escaping @Sendable (Error?) -> Void
    ) {
        self.response = response
        self.data = data
        self.complete = complete
    }
}

/// One request for a transport: the `URLRequest` (method, URL, headers, small bodies in `httpBody`) and,
/// for container uploads, a file whose bytes are the body.
public struct FMTransportRequest: Sendable {
    /// The request. Its `httpBody` is set unless ``bodyFile`` is.
    public var urlRequest: URLRequest
    /// When set, the body is this file's content (a multipart body SwiftFM assembled on disk), to be
    /// streamed, with `Content-Length` set to its size.
    public var bodyFile: URL?

    /// Creates a request.
    public init(urlRequest: URLRequest, bodyFile: URL? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
    }
}

/// The HTTP client SwiftFM sends every request through.
///
/// ``FMURLSessionTransport`` (URLSession) is the default. Bring your own to use another HTTP stack or TLS
/// configuration — client certificates on Linux, a proxy, a custom trust store — without SwiftFM depending
/// on it: pass it to ``DataAPI/init(configuration:transport:callbackQueue:tokenStore:logger:now:)``.
///
/// Contract: send the request as given (headers included, no cookies added, no redirect followed, no
/// cache), report through `events`, and call `events.complete` exactly once. Deadlines, size caps,
/// retries and concurrency limits are SwiftFM's job, not the transport's.
public protocol FMTransport: Sendable {
    /// Starts sending `request`; reports through `events`; returns a handle that can cancel it.
    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask
}

// MARK: - The URLSession transport

/// The default transport: one private `URLSession` (ephemeral, no cache, no cookies, no redirects followed),
/// streaming each answer to SwiftFM as it arrives.
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
    ///   - serverTrust: when given, decides server trust instead of the system (Apple platforms only).
    public init(idleTimeout: TimeInterval = 60, serverTrust: ServerTrustEvaluator? = nil) {
        router = TaskRouter(serverTrust: serverTrust)
        session = Self.makeSession(idleTimeout: idleTimeout, delegate: router)
    }
    #else
    /// Creates a transport.
    ///
    /// - Parameter idleTimeout: the longest silence allowed between two bytes of an answer, in seconds (the
    ///   whole call is bounded by SwiftFM's own deadline, ``FMConfiguration/timeout``).
    public init(idleTimeout: TimeInterval = 60) {
        router = TaskRouter()
        session = Self.makeSession(idleTimeout: idleTimeout, delegate: router)
    }
    #endif

    private static func makeSession(idleTimeout: TimeInterval, delegate: TaskRouter) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        // Linux truncates timeouts to whole seconds (a value under 1 s would fire at once).
        configuration.timeoutIntervalForRequest = max(1, idleTimeout.rounded(.up))
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Starts the request; see ``FMTransport/send(_:events:)``.
    public func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
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
        return URLSessionTaskHandle(task: task)
    }
}

/// Cancels one `URLSessionTask`.
private struct URLSessionTaskHandle: FMTransportTask, @unchecked Sendable {
    // URLSessionTask is thread-safe for `cancel()`; it is not `Sendable`-annotated on every platform.
    let task: URLSessionTask
    func cancel() { task.cancel() }
}

/// The session delegate: routes each task's events to its ``FMTransportEvents`` and refuses redirects.
private final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `routes` is behind its lock; the rest is immutable.
    private let routes = Locked<[Int: FMTransportEvents]>([:])
    #if canImport(Darwin)
    private let serverTrust: FMURLSessionTransport.ServerTrustEvaluator?
    init(serverTrust: FMURLSessionTransport.ServerTrustEvaluator?) { self.serverTrust = serverTrust }
    #endif

    func register(_ task: URLSessionTask, events: FMTransportEvents) {
        routes.withLock { $0[task.taskIdentifier] = events }
    }

    private func events(for task: URLSessionTask) -> FMTransportEvents? {
        routes.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let events = events(for: dataTask) else { return completionHandler(.cancel) }
        guard let http = response as? HTTPURLResponse else {
            completionHandler(.cancel)
            return
        }
        completionHandler(events.response(http) ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let events = events(for: dataTask) else { return }
        if !events.data(data) { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let events = routes.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        guard let events else { return }
        if error == nil, task.response == nil {
            events.complete(URLError(.badServerResponse))
        } else {
            events.complete(error)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
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

// MARK: - Whole-body transports (tests)

/// A request in flight of a ``Transport``.
protocol TransportTask: Sendable {
    func cancel()
}

/// A transport that answers with the whole body at once: what the unit tests' stubs implement. It is
/// adapted to ``FMTransport`` by ``WholeBodyTransport``.
protocol Transport: Sendable {
    func send(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void
    ) -> TransportTask
}

/// Adapts a whole-body ``Transport`` to ``FMTransport``.
struct WholeBodyTransport: FMTransport {
    let base: Transport

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        var urlRequest = request.urlRequest
        if let file = request.bodyFile {
            urlRequest.httpBody = try? Data(contentsOf: file)
        }
        let task = base.send(urlRequest) { result in
            switch result {
            case .failure(let error):
                events.complete(error)
            case .success(let (response, body)):
                guard events.response(response) else { return events.complete(URLError(.cancelled)) }
                if !body.isEmpty, !events.data(body) { return events.complete(URLError(.cancelled)) }
                events.complete(nil)
            }
        }
        return WholeBodyTask(base: task)
    }
}

private struct WholeBodyTask: FMTransportTask {
    let base: TransportTask
    func cancel() { base.cancel() }
}

extension FMError {
    /// Maps a transport failure: timeout → -1004, cancelled → -1005, anything else → -1003.
    static func fromTransport(_ error: Error) -> FMError {
        if let fm = error as? FMError { return fm }
        let code: Int
        if let url = error as? URLError {
            code = url.code.rawValue
        } else {
            let ns = error as NSError
            guard ns.domain == NSURLErrorDomain else { return .transport(String(describing: error)) }
            code = ns.code
        }
        switch code {
        case URLError.Code.timedOut.rawValue: return .timeout
        case URLError.Code.cancelled.rawValue: return .cancelled
        default: return .transport("URLError \(code): \((error as NSError).localizedDescription)")
        }
    }
}

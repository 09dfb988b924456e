import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request in flight that can be cancelled. Cancelling must make the transport complete with an error
/// (or not at all, if it had already completed); the engine never relies on either.
protocol TransportTask: Sendable {
    func cancel()
}

/// Sends one HTTP request. The engine's only door to the network; tests replace it with a stub.
///
/// `completion` is called once, on any queue, with the response (any status; redirects are *not* followed)
/// or the transport error.
protocol Transport: Sendable {
    func send(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void
    ) -> TransportTask
}

extension URLSessionDataTask: TransportTask {}

/// The production transport: one private `URLSession` per ``DataAPI``.
///
/// Ephemeral configuration, no cache, no cookie jar, the configured timeout, and redirects returned to
/// the caller instead of followed (the container download follows a 302 itself, with its cookie).
final class URLSessionTransport: Transport {
    private let session: URLSession

    init(timeout: TimeInterval) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration, delegate: NoRedirectDelegate(), delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func send(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void
    ) -> TransportTask {
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                completion(.failure(error))
            } else if let http = response as? HTTPURLResponse {
                completion(.success((http, data ?? Data())))
            } else {
                completion(.failure(URLError(.badServerResponse)))
            }
        }
        task.resume()
        return task
    }
}

/// Refuses every redirect, so the 3xx answer itself reaches the completion handler.
private final class NoRedirectDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
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

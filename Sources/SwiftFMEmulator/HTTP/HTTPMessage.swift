import Foundation

/// One parsed HTTP/1.1 request, as the emulator's socket layer hands it to a ``HTTPHandler``.
public struct HTTPRequest: Sendable {
    /// The request method, upper-case (`GET`, `POST`, …).
    public var method: String
    /// The raw request target as received, percent-encoding intact (`/fmi/data/v1/…?x=1`).
    public var target: String
    /// Header fields in the order received; names keep their original case.
    public var headers: [(name: String, value: String)]
    /// The request body, de-chunked when it arrived with `Transfer-Encoding: chunked`.
    public var body: Data

    /// Creates a request.
    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The raw path of ``target`` (everything before `?`), still percent-encoded.
    public var rawPath: String {
        if let q = target.firstIndex(of: "?") { return String(target[..<q]) }
        return target
    }

    /// The raw query of ``target`` (everything after the first `?`), or `nil`.
    public var rawQuery: String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        return String(target[target.index(after: q)...])
    }

    /// The first value of the header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// One HTTP response, plus how the socket layer should deliver it (for fault injection).
public struct HTTPResponse: Sendable {
    /// How the socket layer writes a response.
    public enum Delivery: Sendable, Equatable {
        /// Write the whole response with one write.
        case normal
        /// Announce the full `Content-Length`, write only the first half of the body, then close the connection.
        case closeMidBody
        /// Write nothing: reset the connection (TCP RST, via `SO_LINGER` 0 and close).
        case reset
        /// Write the status line and headers (with the full `Content-Length`) at once, then the body at
        /// this many bytes per second, without blocking other connections; stop if the client goes away.
        case drip(bytesPerSecond: Int)
    }

    /// The status code.
    public var status: Int
    /// Header fields; `Content-Length` and `Connection` are added by the socket layer.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Data
    /// Seconds to wait before writing (without blocking other connections); 0 for none.
    public var delay: TimeInterval
    /// How to write it.
    public var delivery: Delivery

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data(),
                delay: TimeInterval = 0, delivery: Delivery = .normal) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.delivery = delivery
    }

    /// The standard reason phrase for ``status``.
    public var reasonPhrase: String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Payload Too Large"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}

/// Answers parsed requests. The socket layer calls it on a background queue, possibly concurrently
/// for different connections.
public protocol HTTPHandler: Sendable {
    /// Produces the response to `request`.
    func handle(_ request: HTTPRequest) -> HTTPResponse
}

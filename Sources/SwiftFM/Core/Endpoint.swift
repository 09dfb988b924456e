import Foundation

/// The description of one Data API call: everything that goes on the wire and how to read the answer.
///
/// Each endpoint of the Data API is described once, by a factory in `Core/Endpoints.swift`; the engine
/// (`DataAPI.perform`) builds the request, sends it, handles the session and decodes the answer with
/// ``decode``. Nothing else knows what an endpoint looks like on the wire.
struct Endpoint<Value>: Sendable {
    /// The HTTP method.
    enum Method: String, Sendable {
        case get = "GET", post = "POST", patch = "PATCH", delete = "DELETE"
    }

    /// Where the path starts.
    enum Scope: Sendable {
        /// `/fmi/data/{version}/` + segments (productInfo, databases, validateSession).
        case host
        /// `/fmi/data/{version}/databases/{database}/` + segments.
        case database
        /// An absolute URL taken from a response (a container's streaming URL); segments are ignored.
        case absolute(URL)
    }

    /// How the request authenticates.
    enum Auth: Sendable {
        /// No `Authorization` header.
        case none
        /// `Basic` with the configured credentials, or with the given base64 `user:pass` value.
        case basic(encoded: String?)
        /// `Bearer` with the managed session token: obtained, reused, slid, replayed once after a 952.
        case session
        /// `Bearer` with a token the caller owns (legacy explicit-token calls): no login, no replay.
        case token(String)
    }

    /// The request body.
    enum Body: Sendable {
        case none
        /// A JSON body, already serialised (sent as `Content-Type: application/json`).
        case json(Data)
        /// A multipart/form-data body, already assembled, with its boundary.
        case multipart(Data, boundary: String)
        /// A multipart/form-data body with one file part whose bytes are read from `source` as the request
        /// is sent (assembled in a temporary file, streamed, removed afterwards).
        case multipartFile(URL, fileName: String, mimeType: String, boundary: String)
    }

    /// What the decoder receives for an HTTP 200 answer.
    struct Response: Sendable {
        /// The HTTP status (200 for the decoder, except for endpoints that opt in to others).
        var status: Int
        /// The response headers, names as received.
        var headers: [String: String]
        /// The body bytes (empty when the body went to a file).
        var body: Data
        /// The file the body was streamed to (a container download to a file).
        var file: URL? = nil
    }

    var method: Method
    var scope: Scope
    /// Path segments after the scope, *not* percent-encoded: the request builder encodes each one.
    var segments: [String]
    /// Query items, *not* percent-encoded: the request builder encodes names and values.
    var query: [URLQueryItem]
    var body: Body
    var auth: Auth
    /// When the factory could not build the call (for example a payload that is not JSON-serialisable),
    /// the engine completes with this error without sending anything.
    var invalid: FMError?
    /// Decodes a successful (HTTP 200) answer; throws ``FMError`` for an unexpected shape.
    var decode: @Sendable (Response) throws -> Value
    /// Extra request headers, sent as given (the container download sends `Cookie` on its second hop).
    var headers: [String: String] = [:]

    init(
        _ method: Method,
        _ scope: Scope,
        _ segments: [String],
        query: [URLQueryItem] = [],
        body: Body = .none,
        auth: Auth = .session,
        invalid: FMError? = nil,
        decode: @escaping @Sendable (Response) throws -> Value
    ) {
        self.method = method
        self.scope = scope
        self.segments = segments
        self.query = query
        self.body = body
        self.auth = auth
        self.invalid = invalid
        self.decode = decode
    }
}

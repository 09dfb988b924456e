import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Header lookup by name, as HTTP defines it: case-insensitive.
enum HTTPHeader {
    /// The value of `name` in `headers`, whatever the case of either, or `nil`. Field names are ASCII tokens:
    /// compared byte by byte, ASCII letters folded (Foundation's `caseInsensitiveCompare` cost about 2.5 µs
    /// for a name that is not there among eight, on every answer).
    static func value(_ name: String, in headers: [String: String]) -> String? {
        if let exact = headers[name] { return exact }
        return headers.first { key, _ in sameName(key, name) }?.value
    }

    /// Whether a field cannot go out as given: a line break (CR or LF) in its name or its value would add a line of
    /// its own to the head, a NUL would end the field there (libcurl reads each field up to its NUL: the rest of the
    /// value, or the whole field, was lost), and a name that is not a token (RFC 9110: empty, a space or a tab, a
    /// colon, a byte past ASCII, …) is not the field it says (`X-Note : a`, which some servers read as `X-Note`).
    /// Checked byte by byte: "\r\n" is one `Character`, neither "\r" nor "\n".
    static func cannotBeSent(name: String, value: String) -> Bool {
        name.isEmpty || !name.utf8.allSatisfy(isTokenByte) || value.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }

    /// The error a transport completes with when a request holds such a field, before anything is sent.
    static func cannotBeSentError() -> URLError {
        URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "a request header contains a line break or NUL, or its name is not a token"])
    }

    /// A byte of an RFC 9110 token: an ASCII letter or digit, or one of ``!#$%&'*+-.^_`|~``.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `a` and `b` name the same field: equal byte by byte with ASCII letters folded.
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { folded($0) == folded($1) }
    }

    /// `name` with its ASCII letters folded: two names are the same field when their folded forms are equal.
    static func folded(_ name: String) -> String {
        String(decoding: name.utf8.map(folded), as: UTF8.self)
    }

    /// An ASCII capital as its small letter; any other byte as it is.
    private static func folded(_ byte: UInt8) -> UInt8 { byte &- 65 < 26 ? byte | 0x20 : byte }
}

/// The head of one answer: its status and headers, as the transport gave them. ``FMCurlTransport`` hands over
/// the header lines as they came (building an `HTTPURLResponse` for each answer cost about 10 µs here, two
/// thirds of decoding a one-record found set); any other transport hands over its `HTTPURLResponse`, read only when a header is
/// asked for (logins, container hops and the retry classifier do; a record read does not).
struct AnswerHead: Sendable {
    /// The HTTP status.
    let status: Int
    private let source: Source

    private enum Source: Sendable {
        case fields([String: String])
        case http(HTTPURLResponse)
    }

    /// A head of these header fields (names as received).
    init(status: Int, fields: [String: String]) {
        self.status = status
        source = .fields(fields)
    }

    /// The head of a transport's `HTTPURLResponse`.
    init(_ response: HTTPURLResponse) {
        status = response.statusCode
        source = .http(response)
    }

    /// The value of the header `name` (case-insensitive), or `nil`. Without the spaces and tabs around it, which
    /// are not part of a value (RFC 9110 §5.5): ``FMCurlTransport`` drops them, corelibs URLSession keeps them
    /// (header fields are checked too, so that no reader of a head depends on which transport made it).
    func header(_ name: String) -> String? {
        switch source {
        case .fields(let fields): return HTTPHeader.value(name, in: fields).map(Self.withoutSurroundingWhitespace)
        case .http(let response): return response.value(forHTTPHeaderField: name).map(Self.withoutSurroundingWhitespace)
        }
    }

    /// `value` without leading and trailing spaces and tabs (the common case, none, allocates nothing).
    static func withoutSurroundingWhitespace(_ value: String) -> String {
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = value.utf8.first, let last = value.utf8.last, blank(first) || blank(last) else { return value }
        return value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
    }

    /// Every header, names as received (built when asked for).
    var headers: [String: String] {
        switch source {
        case .fields(let fields): return fields
        case .http(let response):
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields {
                headers[String(describing: name)] = String(describing: value)
            }
            return headers
        }
    }

    /// The length of the body as the transport hands it over: the declared `Content-Length`, or -1 when there
    /// is none or the body is content-encoded. Both transports decode `Content-Encoding` (gzip, deflate), so the
    /// declared length counts compressed bytes, not the ones written (a download's progress passed its "total").
    var expectedContentLength: Int64 {
        let declared: Int64
        switch source {
        case .fields:
            guard let text = header("Content-Length"), let length = Int64(text), length >= 0 else { return -1 }
            declared = length
        case .http(let response):
            guard response.expectedContentLength >= 0 else { return -1 }
            declared = response.expectedContentLength
        }
        // Looked up only when there is a declared length to correct.
        if let coding = header("Content-Encoding"), !coding.isEmpty,
           coding.caseInsensitiveCompare("identity") != .orderedSame {
            return -1
        }
        return declared
    }
}

/// The description of one Data API call: everything that goes on the wire and how to read the answer.
///
/// Each endpoint of the Data API is described once, by a factory in `Core/Wire/Endpoints.swift`; the engine
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
        /// FileMaker's OData service: `/fmi/odata/v4/` + `path`, already percent-encoded (database, resource
        /// and query string, as ``FMOData`` writes them); segments are ignored. `kind` names the endpoint in
        /// metrics. Error answers are read in OData's shape (`{"error":{"code","message"}}`).
        case odata(String, kind: String)
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
        /// Bytes sent as they are, with this `Content-Type` (an OData container upload).
        case raw(Data, contentType: String)
        /// A file's bytes sent as they are, streamed from the file, with this `Content-Type` (an OData
        /// container upload); the file is the caller's and stays in place.
        case file(URL, contentType: String)
    }

    /// What the decoder receives for an HTTP 200 answer.
    struct Response: Sendable {
        /// The HTTP status (200 for the decoder, except for endpoints that opt in to others).
        var status: Int
        /// The body bytes (empty when the body went to a file).
        var body: Data
        /// The file the body was streamed to (a container download to a file).
        var file: URL? = nil
        /// The status and the headers, as the transport gave them.
        let head: AnswerHead

        /// An answer with these headers (names as received).
        init(status: Int, headers: [String: String], body: Data, file: URL? = nil) {
            self.init(AnswerHead(status: status, fields: headers), body: body, file: file)
        }

        /// The answer of a transport.
        init(_ head: AnswerHead, body: Data, file: URL? = nil) {
            self.status = head.status
            self.head = head
            self.body = body
            self.file = file
        }

        /// The same answer, for another endpoint's decoder.
        init<Other>(_ other: Endpoint<Other>.Response) {
            self.status = other.status
            self.head = other.head
            self.body = other.body
            self.file = other.file
        }

        /// The value of the header `name` (case-insensitive), or `nil`.
        func header(_ name: String) -> String? { head.header(name) }

        /// Every header, names as received.
        var headers: [String: String] { head.headers }
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
    /// The call's name in its kind when it has no path to name it by: a call refused before it was built
    /// (``Endpoints/failing(_:_:segments:call:)``) is `POST uploadContainer`, not `POST ` (see ``kind``).
    var refusedCall: String?
    /// Decodes a successful (HTTP 200) answer; throws ``FMError`` for an unexpected shape.
    var decode: @Sendable (Response) throws -> Value
    /// Extra request headers, sent as given (the container download sends `Cookie` on its second hop).
    var headers: [String: String] = [:]
    /// The other layout the call asks to shape its answer (`layout.response`), if any: FileMaker's 105 may be about
    /// either layout, and names neither.
    var responseLayout: String?
    /// The empty-found-set rule: the FileMaker codes that mean "no records" for this endpoint (``NoRecords``),
    /// answered as an empty found set by the callback and async surfaces alike. Empty: every failure is one.
    var noRecords: Set<String> = []

    /// Told the temporary body of a multipart upload (``Body/multipartFile(_:fileName:mimeType:boundary:)``), or of a
    /// file upload copied for a transport that does not check the file as it sends it (``Body/file(_:contentType:)``),
    /// and the bytes of the caller's file copied into it so far, after each chunk: tests watch the copy through it.
    var bodyCopied: (@Sendable (URL, Int64) -> Void)?

    /// `true` when `error` is this endpoint's "no records" (an empty found set, not a failure).
    func meansNoRecords(_ error: FMError) -> Bool {
        !noRecords.isEmpty && noRecords.contains(error.code)
    }

    /// ``decode`` on up to `parts` threads (a found set's records), for ``decoding(parts:)``; `nil` for an
    /// endpoint whose answer is always read on the calling thread.
    var decodeInParts: (@Sendable (Response, _ parts: Int) throws -> Value)?

    /// This endpoint as a found-set read: `read` decodes its answer (on one thread, or on up to `parts` after
    /// ``decoding(parts:)``), and `noRecords` is its empty-found-set rule.
    func foundSetRead(noRecords: Set<String>, _ read: @escaping @Sendable (Response, _ parts: Int) throws -> Value) -> Endpoint {
        var copy = self
        copy.decode = { try read($0, 1) }
        copy.decodeInParts = read
        copy.noRecords = noRecords
        return copy
    }

    /// This endpoint with its answer decoded on up to `parts` threads where it can be
    /// (``FMConfiguration/parallelDecoding``); itself when `parts` is 1 or it has no parts.
    func decoding(parts: Int) -> Endpoint {
        guard parts > 1, let decodeInParts else { return self }
        var copy = self
        copy.decode = { response in try decodeInParts(response, parts) }
        return copy
    }

    /// A Data API container upload (its body is multipart): a container transfer, bounded by
    /// ``FMConfiguration/containerTimeout`` like a download, not by ``FMConfiguration/timeout``.
    var isContainerUpload: Bool {
        switch body {
        case .multipart, .multipartFile: true
        default: false
        }
    }

    /// `true` for a call to FileMaker's OData service (``Scope/odata(_:kind:)``).
    var isOData: Bool {
        if case .odata = scope { return true }
        return false
    }

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

/// The codes of the empty-found-set rule (``Endpoint/noRecords``), decided here once for every surface.
enum NoRecords {
    /// A find: FileMaker's 401 "No records match the request".
    static let find: Set<String> = ["401"]
    /// A range read (`GET …/records`): 401 past the end, and 101 "Record is missing", FileMaker Server's
    /// answer for a layout whose table is empty (python-fmrest#85).
    static let rangeRead: Set<String> = ["401", "101"]
}

/// An answer that has an empty value for the empty-found-set rule: ``FMFoundSet`` and ``FMTypedFoundSet``.
protocol EmptiableFoundSet {
    /// The found set of no records.
    static var empty: Self { get }
}

extension FMFoundSet: EmptiableFoundSet {}
extension FMTypedFoundSet: EmptiableFoundSet {}

extension Endpoint where Value: EmptiableFoundSet {
    /// The callback surface's `(found set?, code)` pair: "no records" is an empty found set with its code.
    func foundSetPair(_ result: Result<Value, FMError>) -> (Value?, String) {
        if case .failure(let error) = result, meansNoRecords(error) { return (.empty, error.code) }
        return result.legacyPair
    }

    /// The async surface's answer for `error`: an empty found set for "no records", else `error` thrown.
    func foundSet(after error: any Error) throws -> Value {
        if let error = error as? FMError, meansNoRecords(error) { return .empty }
        throw error
    }
}

extension Endpoint {
    /// `true` when the call cannot have changed data, so it may be sent again: GETs that run no script,
    /// `_find` without script keys, logout-free metadata and container reads.
    var cannotChangeData: Bool {
        let scriptInQuery = query.contains { $0.name.lowercased().hasPrefix("script") }
        switch method {
        case .get:
            return !scriptInQuery && !segments.contains("script")
        case .post:
            guard segments.last == "_find", case .json(let data) = body else { return false }
            return data.range(of: Data("\"script".utf8)) == nil
        case .patch, .delete:
            return false
        }
    }
}

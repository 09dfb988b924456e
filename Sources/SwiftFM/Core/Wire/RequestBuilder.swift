import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns an ``Endpoint`` into a `URLRequest`: the only place that knows URL layout, encoding and headers.
enum RequestBuilder {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// RFC 3986 unreserved characters: the only bytes left as they are in a path segment or a query value.
    @inline(__always) private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Percent-encodes every byte of the UTF-8 form of `text` except `A-Z a-z 0-9 - _ . ~`.
    ///
    /// Used for path segments and for query names and values: `/`, `?`, `#`, `%`, `+`, `&`, `=`, space and
    /// non-ASCII characters are all encoded, so no name can reach another path or add a parameter.
    static func encode(_ text: String) -> String {
        encode(text, keeping: [])
    }

    /// Percent-encodes every byte of the UTF-8 form of `text` except `A-Z a-z 0-9 - _ . ~` and the bytes in
    /// `kept` (OData's query options and path segments keep a few sub-delimiters FileMaker refuses encoded).
    static func encode(_ text: String, keeping kept: Set<UInt8>) -> String {
        let keeps = { (byte: UInt8) in isUnreserved(byte) || kept.contains(byte) }
        if text.utf8.allSatisfy(keeps) { return text } // the common case: nothing to encode
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if keeps(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A path segment: ``encode(_:)``, and a segment made only of dots (`.`, `..`) fully encoded (`%2E%2E`) so
    /// no URL normaliser (Foundation, libcurl, a proxy) can treat it as "this/parent directory".
    static func encodeSegment(_ segment: String) -> String {
        if !segment.isEmpty, segment.allSatisfy({ $0 == "." }) {
            return String(repeating: "%2E", count: segment.count)
        }
        return encode(segment)
    }

    /// `name=value&…`, every name and value encoded with ``encode(_:)``; a `nil` value gives `name` alone.
    static func query(_ items: [URLQueryItem]) -> String {
        items.map { item in
            item.value.map { "\(encode(item.name))=\(encode($0))" } ?? encode(item.name)
        }.joined(separator: "&")
    }

    /// Builds the request for `endpoint`, with `authorization` as the complete `Authorization` value
    /// (`"Basic …"`, `"Bearer …"`) or `nil` for none.
    static func request<Value>(
        for endpoint: Endpoint<Value>,
        configuration: FMConfiguration,
        authorization: String?
    ) -> Result<URLRequest, FMError> {
        let url: URL
        switch Self.url(for: endpoint, configuration: configuration) {
        case .success(let built): url = built
        case .failure(let error): return .failure(error)
        }
        // URLRequest silently drops a header whose value holds CR, LF or another control character: the call
        // would go out without it (an unauthenticated request) instead of failing.
        for (name, value) in endpoint.headers where !isValidHeaderValue(value) {
            return .failure(.invalidArgument("The \(name) header value contains control characters"))
        }
        if let authorization, !isValidHeaderValue(authorization) {
            return .failure(.invalidArgument("The Authorization value (token or credentials) contains control characters"))
        }
        // A body's own type may be the caller's (an OData upload's MIME type): checked as the other values are.
        switch endpoint.body {
        case .raw(_, let contentType), .file(_, let contentType):
            guard isValidHeaderValue(contentType) else {
                return .failure(.invalidArgument("The Content-Type value (the MIME type) contains control characters"))
            }
        case .none, .json, .multipart, .multipartFile:
            break
        }
        // The transport's idle timeout, not the call's deadline: one source for one timeout (a request timeout
        // equal to the deadline would reach URLSession's task at the moment the deadline cancels it).
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                 timeoutInterval: defaultIdleTimeout(for: configuration))
        // A request's method is GET until set, and corelibs' setter costs about 4,000 instructions.
        if endpoint.method != .get { request.httpMethod = endpoint.method.rawValue }
        request.httpShouldHandleCookies = false
        // The headers are set in one assignment: corelibs' `setValue(_:forHTTPHeaderField:)` costs about four
        // times as much per header (it checks the value again and searches the table case-insensitively);
        // every value a caller can reach was checked above (the names are SwiftFM's), and `HeaderTable` keeps
        // its one-value-per-name rule.
        var headers = HeaderTable()
        for (name, value) in endpoint.headers {   // e.g. the container-download cookie
            headers.set(value, for: name)
        }
        if let authorization {
            headers.set(authorization, for: "Authorization")
        }
        switch endpoint.body {
        case .none:
            break
        case .json(let data):
            headers.set("application/json", for: "Content-Type")
            request.httpBody = data
        case .multipart(let data, let boundary):
            headers.set("multipart/form-data; boundary=\(boundary)", for: "Content-Type")
            request.httpBody = data
        case .multipartFile(_, _, _, let boundary):
            // The body is a file the engine assembles when it sends (FMTransportRequest.bodyFile).
            headers.set("multipart/form-data; boundary=\(boundary)", for: "Content-Type")
        case .raw(let data, let contentType):
            headers.set(contentType, for: "Content-Type")
            request.httpBody = data
        case .file(_, let contentType):
            // The body is the file itself (FMTransportRequest.bodyFile), streamed by the transport.
            headers.set(contentType, for: "Content-Type")
        }
        if !headers.fields.isEmpty {
            request.allHTTPHeaderFields = headers.fields
        }
        return .success(request)
    }

    /// A request's header fields, one value per name whatever its case: setting a name again replaces the value
    /// under the name's first spelling, as `URLRequest.setValue(_:forHTTPHeaderField:)` does.
    struct HeaderTable {
        private(set) var fields: [String: String] = [:]

        mutating func set(_ value: String, for name: String) {
            if fields[name] == nil, let spelled = fields.keys.first(where: { HTTPHeader.sameName($0, name) }) {
                fields[spelled] = value
            } else {
                fields[name] = value
            }
        }
    }

    /// The `Authorization` value for Basic `encoded` when given, else for `credentials`' Basic value; an
    /// error when there is none or it holds control characters.
    static func basicAuthorization(_ encoded: String?, credentials: FMCredentials?) -> Result<String, FMError> {
        if let encoded = encoded?.trimmingCharacters(in: .whitespacesAndNewlines), !encoded.isEmpty {
            guard isValidHeaderValue(encoded) else {
                return .failure(.invalidArgument("The encoded credentials contain control characters"))
            }
            return .success("Basic " + encoded)
        }
        guard let value = credentials?.encodedValue else {
            return .failure(.invalidConfiguration("No Basic credentials are configured"))
        }
        guard isValidHeaderValue(value) else {
            return .failure(.invalidConfiguration("The configured encoded credentials contain control characters"))
        }
        return .success("Basic " + value)
    }

    /// `true` when `value` can be sent as an HTTP header value: no control character (CR, LF, NUL, DEL, …).
    static func isValidHeaderValue(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }

    /// `true` when `token` can be a `Bearer` token: non-empty, visible ASCII only (no space or control character).
    static func isValidToken(_ token: String) -> Bool {
        !token.isEmpty && token.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) }
    }

    /// The longest Data API session token SwiftFM takes from a login or a token store: a token is some 50
    /// characters, and a header line of a few KiB is what servers take back.
    static let maxSessionTokenBytes = 4096

    /// `true` when `token` can be a Data API session token: ``isValidToken(_:)``, at most ``maxSessionTokenBytes``.
    static func isValidSessionToken(_ token: String) -> Bool {
        token.utf8.count <= maxSessionTokenBytes && isValidToken(token)
    }

    private struct BaseKey: Hashable {
        var host: String
        var version: String
    }

    /// Resolved bases by host and version (a process holds a handful of configurations; the cache is
    /// emptied if it ever grows past 64 entries).
    private static let bases = Locked<[BaseKey: Result<String, FMError>]>([:])

    /// `scheme://host[:port][/prefix]/fmi/data/{version}` for `configuration`, resolved once per host and version.
    static func basePrefix(_ configuration: FMConfiguration) -> Result<String, FMError> {
        let key = BaseKey(host: configuration.host, version: configuration.version.rawValue)
        if let cached = bases.withLock({ $0[key] }) { return cached }
        let resolved: Result<String, FMError> = configuration.resolvedBase().flatMap { base in
            var components = base
            var path = components.percentEncodedPath
            while path.hasSuffix("/") { path.removeLast() }
            components.percentEncodedPath = path + "/fmi/data/" + configuration.version.rawValue
            components.percentEncodedQuery = nil
            components.fragment = nil
            guard let text = components.string else {
                return .failure(.invalidConfiguration("Cannot build a URL for host \(Redaction.host(configuration.host))"))
            }
            return .success(text)
        }
        bases.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[key] = resolved
        }
        return resolved
    }

    /// The longest URL sent (Data API, OData or a container's). libcurl takes a request head of at most 1 MiB and refuses a longer one as
    /// "out of memory" (curl 27), which read as a connection failure and was retried until the deadline; servers
    /// answer 414 far below this. A longer URL (a layout, script name, script parameter or OData `$filter` of megabytes) is
    /// `-1002`.
    static let maxURLBytes = 1_000_000

    /// `-1002` for a URL longer than ``maxURLBytes``, or `nil`.
    private static func tooLong(_ url: String) -> FMError? {
        let length = url.utf8.count
        guard length > maxURLBytes else { return nil }
        return .invalidArgument("The request URL would be \(length) bytes (a name, parameter or filter that long); "
            + "the most that can be sent is \(maxURLBytes)")
    }

    /// The URL of `endpoint`: `{base}/fmi/data/{version}[/databases/{db}]/{segments…}?{query}`.
    static func url<Value>(for endpoint: Endpoint<Value>, configuration: FMConfiguration) -> Result<URL, FMError> {
        var components: URLComponents
        switch endpoint.scope {
        case .odata(let path, _):
            var components: URLComponents
            switch configuration.resolvedBase() {
            case .success(let base): components = base
            case .failure(let error): return .failure(error)   // what is wrong with the host, as every surface says it
            }
            var prefix = components.percentEncodedPath
            while prefix.hasSuffix("/") { prefix.removeLast() }
            components.percentEncodedPath = ""
            components.percentEncodedQuery = nil
            components.fragment = nil
            guard let origin = components.string else {
                return .failure(.invalidConfiguration("Cannot build a URL for host \(Redaction.host(configuration.host))"))
            }
            let text = origin + prefix + "/fmi/odata/v4/" + path
            if let tooLong = tooLong(text) { return .failure(tooLong) }
            guard let url = URL(string: text) else {
                return .failure(.invalidConfiguration("Cannot build a URL for host \(Redaction.host(configuration.host))"))
            }
            return .success(url)
        case .absolute(let absolute):
            guard let parsed = URLComponents(url: absolute, resolvingAgainstBaseURL: true),
                  let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https", parsed.host != nil
            else { return .failure(.invalidArgument("Not an http(s) URL: \(Redaction.path(of: absolute))")) }
            components = parsed
            if !endpoint.query.isEmpty {
                let extra = query(endpoint.query)
                components.percentEncodedQuery = components.percentEncodedQuery.map { $0 + "&" + extra } ?? extra
            }
        case .host, .database:
            // The base (`scheme://host:port/prefix/fmi/data/vX`) is resolved once per host and version, not per
            // call: parsing the host with URLComponents was a measurable part of every call.
            var text: String
            switch basePrefix(configuration) {
            case .success(let prefix): text = prefix
            case .failure(let error): return .failure(error)
            }
            text.reserveCapacity(text.utf8.count + 160) // grown once, not at each segment
            if case .database = endpoint.scope {
                guard !configuration.database.isEmpty else {
                    return .failure(.invalidConfiguration("No database is configured"))
                }
                text.append("/databases/")
                text.append(encodeSegment(configuration.database))
            }
            for segment in endpoint.segments {
                text.append("/")
                text.append(encodeSegment(segment))
            }
            if !endpoint.query.isEmpty {
                text.append("?")
                text.append(query(endpoint.query))
            }
            if let tooLong = tooLong(text) { return .failure(tooLong) }
            guard let url = URL(string: text) else {
                return .failure(.invalidConfiguration("Cannot build a URL for host \(Redaction.host(configuration.host))"))
            }
            return .success(url)
        }
        guard let url = components.url else {
            return .failure(.invalidConfiguration("Cannot build a URL for host \(Redaction.host(configuration.host))"))
        }
        // A container's URL (the caller's or a redirect's) is capped as the others are.
        if let tooLong = tooLong(url.absoluteString) { return .failure(tooLong) }
        return .success(url)
    }
}

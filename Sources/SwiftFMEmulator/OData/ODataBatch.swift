import Foundation

/// One part of a `$batch` body: a request, or a change set of requests.
enum ODataBatchPart {
    case request(ODataBatchRequest)
    case changeset([ODataBatchRequest])
}

/// A request inside a `$batch` (`application/http`).
struct ODataBatchRequest {
    var method: String
    var url: String
    var headers: [(name: String, value: String)]
    var body: Data
    var contentID: String?
}

enum ODataBatchParser {
    /// The most requests one batch may hold.
    static let maxRequests = 1_000

    /// The `boundary` parameter of a multipart `Content-Type`.
    static func boundary(_ contentType: String?) -> String? {
        guard let contentType, mediaType(contentType) == "multipart/mixed" else { return nil }
        for item in contentType.split(separator: ";").dropFirst() {
            let kv = item.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, trimSpaces(String(kv[0])).lowercased() == "boundary" else { continue }
            var value = trimSpaces(String(kv[1]))
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The parts between `--boundary` lines (CRLF or LF; text after `--boundary--` is ignored).
    static func split(_ lines: ArraySlice<String>, boundary: String) throws -> [[String]] {
        var parts: [[String]] = []
        var current: [String]?
        var closed = false
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "--" + boundary + "--" {
                if let c = current { parts.append(c) }
                current = nil
                closed = true
                break
            }
            if trimmed == "--" + boundary {
                if let c = current { parts.append(c) }
                current = []
                continue
            }
            current?.append(line)
        }
        guard closed, !parts.isEmpty else {
            throw ODataError(400, "-1015", "Expected batch boundary '\(boundary)'")
        }
        return parts
    }

    /// MIME headers up to the first blank line, and the rest.
    static func headers(_ lines: [String]) -> ([(name: String, value: String)], ArraySlice<String>) {
        var headers: [(name: String, value: String)] = []
        var i = 0
        while i < lines.count, !lines[i].trimmingCharacters(in: .whitespaces).isEmpty {
            if let colon = lines[i].firstIndex(of: ":") {
                headers.append((trimSpaces(String(lines[i][..<colon])), trimSpaces(String(lines[i][lines[i].index(after: colon)...]))))
            }
            i += 1
        }
        return (headers, lines[min(i + 1, lines.count)...])
    }

    static func header(_ headers: [(name: String, value: String)], _ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Parses a `$batch` body.
    static func parse(_ body: Data, contentType: String?) throws -> [ODataBatchPart] {
        guard let boundary = boundary(contentType) else {
            throw ODataError(400, "-1015", "Expected batch boundary: the Content-Type must be multipart/mixed with a boundary")
        }
        guard let text = String(data: body, encoding: .utf8) else { throw ODataError(400, "-1002", "Error: the batch body is not UTF-8") }
        // Split on scalars: "\r\n" is one Character, so a Character split would not see its "\n".
        let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var scalars = String.UnicodeScalarView(line)
            if scalars.last == "\r" { scalars.removeLast() }
            return String(scalars)
        }
        var parts: [ODataBatchPart] = []
        var count = 0
        for part in try split(lines[...], boundary: boundary) {
            let (mime, rest) = headers(part)
            let type = header(mime, "Content-Type")
            if let inner = ODataBatchParser.boundary(type) {
                var requests: [ODataBatchRequest] = []
                for sub in try split(rest, boundary: inner) {
                    let (subMime, subRest) = headers(sub)
                    requests.append(try request(subRest, mime: subMime))
                }
                count += requests.count
                parts.append(.changeset(requests))
            } else {
                count += 1
                parts.append(.request(try request(rest, mime: mime)))
            }
            if count > maxRequests { throw ODataError(400, "-1002", "Error: a batch may hold at most \(maxRequests) requests") }
        }
        return parts
    }

    /// An `application/http` part: request line, headers, blank line, body.
    static func request(_ lines: ArraySlice<String>, mime: [(name: String, value: String)]) throws -> ODataBatchRequest {
        guard mediaType(header(mime, "Content-Type")) == "application/http" else {
            throw ODataError(400, "-1033", "Unexpected batch part: Content-Type must be application/http")
        }
        var rest = lines.drop { $0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard let line = rest.first else { throw ODataError(400, "-1033", "Unexpected batch boundary: a part without a request") }
        rest = rest.dropFirst()
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 3 || words.count == 2, ["GET", "POST", "PATCH", "PUT", "DELETE"].contains(String(words[0]).uppercased()) else {
            throw ODataError(400, "-1033", "Unexpected request line '\(line.prefix(80))'")
        }
        let (headers, bodyLines) = ODataBatchParser.headers(Array(rest))
        var bodyText = bodyLines.joined(separator: "\r\n")
        while let last = bodyText.last, last.isWhitespace { bodyText.removeLast() }
        return ODataBatchRequest(method: String(words[0]).uppercased(), url: String(words[1]), headers: headers,
                                 body: Data(bodyText.utf8), contentID: header(mime, "Content-ID"))
    }
}

extension EmulatorState {
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        default: return status < 400 ? "OK" : "Error"
        }
    }

    /// The decoded segments after `/fmi/odata/v4` of a raw path; `nil` when it is not an OData path.
    static func odataSegments(_ rawPath: String) -> [String]? {
        var segments: [String] = []
        for raw in rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard let s = decodePathSegment(raw) else { return nil }
            segments.append(s)
        }
        if segments.last == "", segments.count > 1 { segments.removeLast() }
        guard segments.count >= 3, segments[0].lowercased() == "fmi", segments[1].lowercased() == "odata",
              segments[2].lowercased() == "v4" else { return nil }
        return Array(segments[3...])
    }

    /// `POST /{db}/$batch`: the requests in order; each change set all or nothing (a failing request rolls
    /// its change set back and answers for it alone); processing stops at the first failure unless
    /// `Prefer: odata.continue-on-error`. Sub-request URLs may be absolute, path-absolute or relative to the
    /// service root; they carry the batch's credentials.
    mutating func odataBatch(_ ctx: ODataContext) throws -> HTTPResponse {
        let parts = try ODataBatchParser.parse(ctx.request.body, contentType: ctx.request.header("Content-Type"))
        let continueOnError = ctx.preferences["odata.continue-on-error"] != nil
        let boundary = "batch_" + UUID().uuidString.lowercased()
        var out = ""
        let savedPrepared = prepared
        prepared = nil
        defer { prepared = savedPrepared }

        func render(_ r: HTTPResponse, contentID: String?) -> String {
            var s = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
            if let contentID { s += "Content-ID: \(contentID)\r\n" }
            s += "\r\nHTTP/1.1 \(r.status) \(EmulatorState.reasonPhrase(r.status))\r\n"
            for (name, value) in r.headers where name.caseInsensitiveCompare("OData-Version") != .orderedSame {
                s += "\(name): \(value)\r\n"
            }
            s += "\r\n" + String(decoding: r.body, as: UTF8.self) + "\r\n"
            return s
        }

        for part in parts {
            switch part {
            case let .request(request):
                let r = try odataSubRequest(request, ctx: ctx)
                out += "--\(boundary)\r\n" + render(r, contentID: request.contentID)
                if r.status >= 400, !continueOnError { return odataBatchResponse(out, boundary: boundary) }
            case let .changeset(requests):
                let savedTables = tables, savedBlobs = blobs, savedNotes = odataChangeNotes
                var responses: [(HTTPResponse, String?)] = []
                var failure: HTTPResponse?
                for request in requests {
                    guard request.method != "GET" else {
                        failure = EmulatorState.odataError(ODataError(400, "-1002", "Error: a change set may not contain GET requests"))
                        break
                    }
                    let r = try odataSubRequest(request, ctx: ctx)
                    if r.status >= 400 { failure = r; break }
                    responses.append((r, request.contentID))
                }
                if let failure {
                    tables = savedTables
                    blobs = savedBlobs
                    odataChangeNotes = savedNotes
                    out += "--\(boundary)\r\n" + render(failure, contentID: nil)
                    if !continueOnError { return odataBatchResponse(out, boundary: boundary) }
                    continue
                }
                let inner = "changeset_" + UUID().uuidString.lowercased()
                out += "--\(boundary)\r\nContent-Type: multipart/mixed; boundary=\(inner)\r\n\r\n"
                for (r, id) in responses { out += "--\(inner)\r\n" + render(r, contentID: id) }
                out += "--\(inner)--\r\n"
            }
        }
        return odataBatchResponse(out, boundary: boundary)
    }

    func odataBatchResponse(_ parts: String, boundary: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "multipart/mixed; boundary=\(boundary)"), ("OData-Version", "4.0")],
                     body: Data((parts + "--\(boundary)--\r\n").utf8))
    }

    /// Runs one request of a batch as if it came alone, with the batch's credentials.
    mutating func odataSubRequest(_ sub: ODataBatchRequest, ctx: ODataContext) throws -> HTTPResponse {
        var target = sub.url
        if let scheme = target.range(of: "://"), target.lowercased().hasPrefix("http") {
            let afterHost = target[scheme.upperBound...].firstIndex(of: "/") ?? target.endIndex
            target = String(target[afterHost...])
        } else if !target.hasPrefix("/") {
            target = "/fmi/odata/v4/" + ODataContext.encode(ctx.dbSegment) + "/" + target
        }
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        guard let segments = EmulatorState.odataSegments(path), segments.count >= 2 else {
            return EmulatorState.odataError(ODataError(400, "-1002", "Error: syntax error in URL at: '\(sub.url.prefix(80))'"))
        }
        if segments[1] == "$batch" { return EmulatorState.odataError(ODataError(400, "-1003", "Unsupported OData operation - nested $batch")) }
        var headers = sub.headers
        for name in ["Authorization", "Host", "OData-Version", "OData-MaxVersion", "X-Forwarded-Proto", "X-Forwarded-Host"] {
            if ODataBatchParser.header(headers, name) == nil, let value = ctx.request.header(name) { headers.append((name, value)) }
        }
        let request = HTTPRequest(method: sub.method, target: target, headers: headers, body: sub.body)
        return odataRoute(request, segments: segments, now: ctx.now)
    }
}

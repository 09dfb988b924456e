#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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

/// Reads a `$batch` body on its bytes: delimiter lines are found with `memchr`, only the parts' header lines
/// become strings, and a body is sliced out as it is (read as one string per line, 16 MiB of blank lines took 13 s
/// and 0.9 GB under the emulator's lock; the body cap is 64 MiB).
enum ODataBatchParser {
    /// The most requests one batch may hold.
    static let maxRequests = 1_000
    /// The most header lines a part or a request may have.
    static let maxHeaderLines = 100

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

    typealias Bytes = UnsafeBufferPointer<UInt8>

    static func tooMany() -> ODataError { ODataError(400, "-1002", "Error: a batch may hold at most \(maxRequests) requests") }

    /// The line starting at `start` (before `end`): its bytes without the line break, and where the next line starts.
    static func line(_ bytes: Bytes, _ start: Int, _ end: Int) -> (content: Range<Int>, next: Int) {
        guard start < end, let base = bytes.baseAddress else { return (start..<start, end) }
        var stop = end
        var next = end
        if let hit = memchr(base + start, 0x0A, end - start) {
            stop = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            next = stop + 1
        }
        if stop > start, bytes[stop - 1] == 0x0D { stop -= 1 }
        return (start..<stop, next)
    }

    static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }

    /// `range` without spaces and tabs at either end.
    static func trimmed(_ bytes: Bytes, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, isBlank(bytes[lower]) { lower += 1 }
        while upper > lower, isBlank(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }

    static func equals(_ bytes: Bytes, _ range: Range<Int>, _ text: [UInt8]) -> Bool {
        guard range.count == text.count else { return false }
        return zip(bytes[range], text).allSatisfy { $0 == $1 }
    }

    static func text(_ bytes: Bytes, _ range: Range<Int>) -> String {
        String(decoding: Bytes(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The parts between `--boundary` lines (CRLF or LF; text before the first and after `--boundary--` is
    /// ignored); more than `limit` parts is an error.
    static func split(_ bytes: Bytes, _ range: Range<Int>, boundary: String, limit: Int) throws -> [Range<Int>] {
        let open = Array(("--" + boundary).utf8)
        let close = open + Array("--".utf8)
        var parts: [Range<Int>] = []
        var current: Int?
        var closed = false
        var index = range.lowerBound
        while index < range.upperBound {
            let (content, next) = line(bytes, index, range.upperBound)
            let candidate = trimmed(bytes, content)
            let isClose = equals(bytes, candidate, close)
            if isClose || equals(bytes, candidate, open) {
                if let start = current {
                    parts.append(start..<index)
                    guard parts.count <= limit else { throw tooMany() }
                }
                current = next
                if isClose {
                    closed = true
                    break
                }
            }
            index = next
        }
        guard closed, !parts.isEmpty else {
            throw ODataError(400, "-1015", "Expected batch boundary '\(boundary)'")
        }
        return parts
    }

    /// MIME headers up to the first blank line, and the rest.
    static func headers(_ bytes: Bytes, _ range: Range<Int>) throws -> ([(name: String, value: String)], Range<Int>) {
        var headers: [(name: String, value: String)] = []
        var index = range.lowerBound
        var lines = 0
        while index < range.upperBound {
            let (content, next) = line(bytes, index, range.upperBound)
            index = next
            if trimmed(bytes, content).isEmpty { break }
            lines += 1
            guard lines <= maxHeaderLines else {
                throw ODataError(400, "-1033", "Unexpected batch part: more than \(maxHeaderLines) header lines")
            }
            // A bare CR would end the line for some readers: a value echoed into the answer (`Host` in a `Location`)
            // could then add a header of its own.
            guard !bytes[content].contains(0x0D) else {
                throw ODataError(400, "-1033", "Unexpected batch part: a carriage return inside a header line")
            }
            if let colon = content.first(where: { bytes[$0] == UInt8(ascii: ":") }) {
                headers.append((trimSpaces(text(bytes, content.lowerBound..<colon)), trimSpaces(text(bytes, colon + 1..<content.upperBound))))
            }
        }
        return (headers, index..<range.upperBound)
    }

    static func header(_ headers: [(name: String, value: String)], _ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Parses a `$batch` body.
    static func parse(_ body: Data, contentType: String?) throws -> [ODataBatchPart] {
        guard let boundary = boundary(contentType) else {
            throw ODataError(400, "-1015", "Expected batch boundary: the Content-Type must be multipart/mixed with a boundary")
        }
        guard String(data: body, encoding: .utf8) != nil else { throw ODataError(400, "-1002", "Error: the batch body is not UTF-8") }
        return try [UInt8](body).withUnsafeBufferPointer { bytes in
            var parts: [ODataBatchPart] = []
            var count = 0
            for part in try split(bytes, 0..<bytes.count, boundary: boundary, limit: maxRequests) {
                let (mime, rest) = try headers(bytes, part)
                if let inner = ODataBatchParser.boundary(header(mime, "Content-Type")) {
                    var requests: [ODataBatchRequest] = []
                    for sub in try split(bytes, rest, boundary: inner, limit: maxRequests) {
                        let (subMime, subRest) = try headers(bytes, sub)
                        requests.append(try request(bytes, subRest, mime: subMime))
                    }
                    count += requests.count
                    parts.append(.changeset(requests))
                } else {
                    count += 1
                    parts.append(.request(try request(bytes, rest, mime: mime)))
                }
                if count > maxRequests { throw tooMany() }
            }
            return parts
        }
    }

    /// An `application/http` part: request line, headers, blank line, body.
    static func request(_ bytes: Bytes, _ range: Range<Int>, mime: [(name: String, value: String)]) throws -> ODataBatchRequest {
        guard mediaType(header(mime, "Content-Type")) == "application/http" else {
            throw ODataError(400, "-1033", "Unexpected batch part: Content-Type must be application/http")
        }
        var start = range.lowerBound
        while start < range.upperBound, isSpace(bytes[start]) { start += 1 }
        guard start < range.upperBound else { throw ODataError(400, "-1033", "Unexpected batch boundary: a part without a request") }
        let (lineRange, next) = line(bytes, start, range.upperBound)
        let line = text(bytes, lineRange)
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 3 || words.count == 2, ["GET", "POST", "PATCH", "PUT", "DELETE"].contains(String(words[0]).uppercased()) else {
            throw ODataError(400, "-1033", "Unexpected request line '\(line.prefix(80))'")
        }
        let (headers, body) = try ODataBatchParser.headers(bytes, next..<range.upperBound)
        var end = body.upperBound
        while end > body.lowerBound, isSpace(bytes[end - 1]) { end -= 1 }
        return ODataBatchRequest(method: String(words[0]).uppercased(), url: String(words[1]), headers: headers,
                                 body: Data(Bytes(rebasing: bytes[body.lowerBound..<end])), contentID: header(mime, "Content-ID"))
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

    /// `POST /{db}/$batch`: the body is parsed here, under the lock; its parts run after the lock is released,
    /// each taking it on its own (``ODataBatchRun``).
    mutating func odataBatch(_ ctx: ODataContext) throws -> StagedResponse {
        let parts = try ODataBatchParser.parse(ctx.request.body, contentType: ctx.request.header("Content-Type"))
        let run = ODataBatchRun(parts: parts, ctx: ctx, continueOnError: ctx.preferences["odata.continue-on-error"] != nil,
                                cap: maxAnswerBytes)
        return StagedResponse(response: HTTPResponse(status: 200, headers: [("Content-Type", "multipart/mixed; boundary=\(run.boundary)"),
                                                                           ("OData-Version", "4.0")]),
                              relockingBody: run.body, refusal: EmulatorState.odataError(.tooLarge))
    }

    /// Runs one request of a batch (the lock held by the caller) at the emulator's time `now` (when the part runs, not
    /// when the batch came: its writes are stamped with it) with at most `limit` bytes of answer; a read's rows are left
    /// to the answer's ``StagedResponse/pendingBody``.
    mutating func odataBatchPart(_ request: ODataBatchRequest, ctx: ODataContext, now: Date, limit: Int) -> StagedResponse {
        let savedPrepared = prepared, savedCap = maxAnswerBytes
        prepared = nil
        maxAnswerBytes = limit
        defer {
            prepared = savedPrepared
            maxAnswerBytes = savedCap
        }
        return odataSubRequest(request, ctx: ctx, now: now)
    }

    /// Runs the requests of a change set in one hold of the lock (the caller's), all at the emulator's time `now` (when
    /// the lock was taken): all or nothing. A failing request (or a GET) rolls the change set back and answers for it
    /// alone; `room` is what is left of the batch's answer cap, and a change set whose answers would pass it is rolled
    /// back too (`tooLarge`).
    mutating func odataChangeset(_ requests: [ODataBatchRequest], ctx: ODataContext, now: Date,
                                 room: Int) -> (responses: [(HTTPResponse, String?)], failure: HTTPResponse?, tooLarge: Bool) {
        // All or nothing: the whole state as it was (records, containers, webhook notes and deliveries, and the schema
        // with its OData ids and indexes, which a reset rebuilds the records from).
        let saved = self
        var responses: [(HTTPResponse, String?)] = []
        var failure: HTTPResponse?
        var tooLarge = false
        var size = 0
        for request in requests {
            guard request.method != "GET" else {
                failure = EmulatorState.odataError(ODataError(400, "-1002", "Error: a change set may not contain GET requests"))
                break
            }
            // The change set's answers so far count too (they are written after it).
            let used = size + ODataBatchRun.headRoom
            let staged = odataBatchPart(request, ctx: ctx, now: now, limit: max(0, room - used))
            let (r, _, refusedAsTooLarge) = staged.finishedTelling { body in body(&self, now) }
            guard !refusedAsTooLarge, used + r.body.count <= room else {
                failure = EmulatorState.odataError(.tooLarge)
                tooLarge = true
                break
            }
            if r.status >= 400 { failure = r; break }
            size += r.body.count + ODataBatchRun.headRoom
            responses.append((r, request.contentID))
        }
        if failure != nil { self = saved }
        return (responses, failure, tooLarge)
    }

    /// Runs one request of a batch as if it came alone at `now`, with the batch's credentials (a read's rows still to be
    /// written: ``StagedResponse/finishedOrRefused(_:)``).
    mutating func odataSubRequest(_ sub: ODataBatchRequest, ctx: ODataContext, now: Date) -> StagedResponse {
        var target = sub.url
        if let scheme = target.range(of: "://"), target.lowercased().hasPrefix("http") {
            let afterHost = target[scheme.upperBound...].firstIndex(of: "/") ?? target.endIndex
            target = String(target[afterHost...])
        } else if !target.hasPrefix("/") {
            target = "/fmi/odata/v4/" + ODataContext.encode(ctx.dbSegment) + "/" + target
        }
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        guard let segments = EmulatorState.odataSegments(path), segments.count >= 2 else {
            return StagedResponse(response: EmulatorState.odataError(ODataError(400, "-1002", "Error: syntax error in URL at: '\(sub.url.prefix(80))'")))
        }
        if segments[1] == "$batch" {
            return StagedResponse(response: EmulatorState.odataError(ODataError(400, "-1003", "Unsupported OData operation - nested $batch")))
        }
        var headers = sub.headers
        for name in ["Authorization", "Host", "OData-Version", "OData-MaxVersion", "X-Forwarded-Proto", "X-Forwarded-Host"] {
            if ODataBatchParser.header(headers, name) == nil, let value = ctx.request.header(name) { headers.append((name, value)) }
        }
        let request = HTTPRequest(method: sub.method, target: target, headers: headers, body: sub.body)
        return odataRouteStaged(request, segments: segments, now: now)
    }
}

/// A `$batch` being answered, after the lock the request was parsed under is released: the requests in order, each
/// under the state lock on its own, so other clients are answered between them; a read's rows are filtered and
/// written after it is released again, from a snapshot, as a read alone is. A change set runs under one hold of the
/// lock (all or nothing; ``EmulatorState/odataChangeset(_:ctx:room:)``). Before, a batch held the lock for all its
/// parts: one read with a 7 KB `$filter` over 2,000 records of 1 KB held it 3.5 s (debug build), and a batch of
/// 1,000 such reads would have held every other client for about 1.5 hours.
///
/// Processing stops at the first failure unless `Prefer: odata.continue-on-error`. Sub-request URLs may be
/// absolute, path-absolute or relative to the service root; they carry the batch's credentials.
///
/// The whole answer is held to the emulator's answer cap (`cap`): each request may write what the parts before it
/// left, and the first one that would pass it answers 500/953 in its place and ends the batch, whatever
/// `continue-on-error` says (a change set that would pass it is rolled back). Without the cap, 1,000 reads of a large
/// set (or of one large container's `$value`) built an answer of 1,000 times their size.
struct ODataBatchRun {
    let parts: [ODataBatchPart]
    let ctx: ODataContext
    let continueOnError: Bool
    /// The most bytes the answer may hold (``EmulatorState/maxAnswerBytes`` when the batch came).
    let cap: Int
    let boundary = "batch_" + UUID().uuidString.lowercased()

    /// Room for a part's MIME and HTTP heads.
    static let headRoom = 1024

    /// The body of the answer: every part's answer, or up to the first that ends the batch; `locker` takes the state
    /// lock for each request (or change set).
    func body(_ locker: StateLocker) throws -> Data {
        var out = Data()
        for part in parts {
            switch part {
            case let .request(request):
                let answer = try run(request, used: out.count + ODataBatchRun.headRoom, locker)
                add("--\(boundary)\r\n", to: &out)
                guard let r = answer else {
                    ODataBatchRun.render(EmulatorState.odataError(.tooLarge), contentID: request.contentID, into: &out)
                    return closed(out)
                }
                ODataBatchRun.render(r, contentID: request.contentID, into: &out)
                if r.status >= 400, !continueOnError { return closed(out) }
            case let .changeset(requests):
                let room = cap - out.count
                let result = try underLock(locker) { s, now in s.odataChangeset(requests, ctx: ctx, now: now, room: room) }
                if let failure = result.failure {
                    add("--\(boundary)\r\n", to: &out)
                    ODataBatchRun.render(failure, contentID: nil, into: &out)
                    if !continueOnError || result.tooLarge { return closed(out) }
                    continue
                }
                let inner = "changeset_" + UUID().uuidString.lowercased()
                add("--\(boundary)\r\nContent-Type: multipart/mixed; boundary=\(inner)\r\n\r\n", to: &out)
                for (r, id) in result.responses {
                    add("--\(inner)\r\n", to: &out)
                    ODataBatchRun.render(r, contentID: id, into: &out)
                }
                add("--\(inner)--\r\n", to: &out)
            }
        }
        return closed(out)
    }

    /// Runs one request under the lock, then writes its rows outside it, with what is left of the cap after `used`
    /// bytes; `nil` when its answer would not fit.
    private func run(_ request: ODataBatchRequest, used: Int, _ locker: StateLocker) throws -> HTTPResponse? {
        let limit = max(0, cap - used)
        let staged = try underLock(locker) { s, now in s.odataBatchPart(request, ctx: ctx, now: now, limit: limit) }
        let (r, _, tooLarge) = staged.finishedTelling(locker)
        guard !tooLarge, used + r.body.count <= cap else { return nil }
        return r
    }

    private func add(_ text: String, to out: inout Data) {
        out.append(contentsOf: Array(text.utf8))
    }

    /// `out` with the batch's closing delimiter.
    private func closed(_ out: Data) -> Data {
        out + Data("--\(boundary)--\r\n".utf8)
    }

    /// Writes one answer as a part (the body as it is: a container's `$value` is not text).
    static func render(_ r: HTTPResponse, contentID: String?, into out: inout Data) {
        var s = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
        if let contentID { s += "Content-ID: \(contentID)\r\n" }
        s += "\r\nHTTP/1.1 \(r.status) \(EmulatorState.reasonPhrase(r.status))\r\n"
        for (name, value) in r.headers where name.caseInsensitiveCompare("OData-Version") != .orderedSame {
            s += "\(name): \(value)\r\n"
        }
        out.append(contentsOf: Array((s + "\r\n").utf8))
        out.append(r.body)
        out.append(contentsOf: Array("\r\n".utf8))
    }
}

import Foundation

/// Several OData requests in one `POST /{db}/$batch`: reads, and change sets whose writes FileMaker applies
/// atomically (all or none).
///
/// ```swift
/// var batch = FMODataBatch()
/// batch.changeset([.create(in: "Artists", fields: ["name": "Nina"]), .update(in: "Artists", key: 7, fields: ["city": "Paris"])])
/// batch.read(from: "Artists", query: FMODataQuery(top: 1))
/// let results = try await odata.batch(batch)   // one result per operation, in order
/// ```
public struct FMODataBatch: Sendable {
    /// A write inside a change set.
    public struct Change: Sendable {
        let method: String
        let path: Result<String, FMError>
        let body: Result<Data, FMError>?

        /// `POST /{set}` with `fields`.
        public static func create(in set: String, fields: [String: Any]) -> Change {
            let (path, invalid) = FMOData.collectionPath(set, query: FMODataQuery())
            return Change(method: "POST", path: invalid.map { .failure($0) } ?? .success(path), body: JSONPayload.serialize(fields))
        }

        /// `PATCH /{set}({key})` with `fields`.
        public static func update(in set: String, key: FMODataKey, fields: [String: Any]) -> Change {
            let (path, invalid) = FMOData.recordPath(set, key: key)
            return Change(method: "PATCH", path: invalid.map { .failure($0) } ?? .success(path), body: JSONPayload.serialize(fields))
        }

        /// `DELETE /{set}({key})`.
        public static func delete(in set: String, key: FMODataKey) -> Change {
            let (path, invalid) = FMOData.recordPath(set, key: key)
            return Change(method: "DELETE", path: invalid.map { .failure($0) } ?? .success(path), body: nil)
        }
    }

    enum Part: Sendable {
        case read(Result<String, FMError>)
        case changeset([Change])
    }

    var parts: [Part] = []

    /// An empty batch.
    public init() {}

    /// The number of operations (each read, each change of each change set).
    public var operationCount: Int {
        parts.reduce(0) { total, part in
            switch part {
            case .read: return total + 1
            case .changeset(let changes): return total + changes.count
            }
        }
    }

    /// Adds a read of `set` (`GET /{set}?…`); its result's body is the collection.
    public mutating func read(from set: String, query: FMODataQuery = FMODataQuery()) {
        let (path, invalid) = FMOData.collectionPath(set, query: query)
        parts.append(.read(invalid.map { .failure($0) } ?? .success(path)))
    }

    /// Adds a read of one record (`GET /{set}({key})`).
    public mutating func read(from set: String, key: FMODataKey) {
        let (path, invalid) = FMOData.recordPath(set, key: key)
        parts.append(.read(invalid.map { .failure($0) } ?? .success(path)))
    }

    /// Adds a change set: its writes succeed together or not at all.
    public mutating func changeset(_ changes: [Change]) {
        parts.append(.changeset(changes))
    }
}

/// The result of one operation of an ``FMODataBatch``.
///
/// `@unchecked Sendable`: the body is `JSONSerialization`-shaped values stored in a `let`, never mutated.
public struct FMODataBatchResult: @unchecked Sendable, CustomStringConvertible {
    /// The operation's HTTP status (0 when the server did not answer it: it stops at the first failure; 0
    /// too when its answer could not be read).
    public let status: Int
    /// `"0"` for a 2xx status, else FileMaker's code from the part's error body (`-1008` for an operation
    /// the server did not answer, `-1007` for an answer that could not be read or did not fit the operations,
    /// or a 2xx answer whose body is not a JSON object).
    public let code: String
    /// The part's JSON body (a collection, a record, an error), or `nil` when it had none.
    public let body: [String: Any]?
    /// The part's headers (`Location`, `fmodata.affected_rows`, …).
    public let headers: [String: String]

    /// Creates a result.
    public init(status: Int, code: String, body: [String: Any]?, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.body = body
        self.headers = headers
    }

    /// `"FMODataBatchResult(status, code)"`.
    public var description: String { "FMODataBatchResult(\(status), code: \(code))" }
}

enum ODataBatchWire {
    /// The multipart body (CRLF lines, path-absolute sub-request URLs, `Content-Length` on bodies), or the
    /// first operation's error.
    static func body(_ batch: FMODataBatch, prefix: String, boundary: String) -> Result<Data, FMError> {
        var data = Data()
        func add(_ text: String) { data.append(contentsOf: Array(text.utf8)) }
        func request(_ method: String, _ path: String, _ body: Data?) {
            add("\(method) \(prefix)\(path) HTTP/1.1\r\nAccept: application/json\r\n")
            if let body {
                add("Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
                data.append(body)
                add("\r\n")
            } else {
                add("\r\n\r\n")
            }
        }
        var contentID = 0
        for part in batch.parts {
            add("--\(boundary)\r\n")
            switch part {
            case .read(.failure(let error)):
                return .failure(error)
            case .read(.success(let path)):
                add("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
                request("GET", path, nil)
            case .changeset(let changes):
                let changeset = "changeset_\(UUID().uuidString.lowercased())"
                add("Content-Type: multipart/mixed; boundary=\(changeset)\r\n\r\n")
                for change in changes {
                    contentID += 1
                    let path: String
                    switch change.path {
                    case .success(let value): path = value
                    case .failure(let error): return .failure(error)
                    }
                    var body: Data?
                    switch change.body {
                    case .success(let json)?: body = json
                    case .failure(let error)?: return .failure(error)
                    case nil: body = nil
                    }
                    add("--\(changeset)\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n")
                    add("Content-ID: \(contentID)\r\n\r\n")
                    request(change.method, path, body)
                }
                add("--\(changeset)--\r\n")
            }
        }
        add("--\(boundary)--\r\n")
        return .success(data)
    }

    /// One HTTP response inside the answer.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    /// The answers of a `multipart/mixed` body, change sets flattened, in order; the change sets' sizes alongside.
    /// A part that is not a readable answer keeps its place as `nil`, so that the answers after it stay with their
    /// own operations. At most `limit` parts are read (the ones past the batch's operations are not needed).
    /// `nil` when the framing is ambiguous: a change set's boundary that starts with the batch's, whose lines the
    /// batch's split has already taken for its own (the answers after it would land on the wrong operations).
    static func answers(_ body: Data, boundary: String, limit: Int = .max) -> [[Answer?]]? {
        var groups: [[Answer?]] = []
        for part in split(body, boundary: boundary, limit: limit) {
            if startsWithStatusLine(part) {
                // No MIME headers: the part is the HTTP answer itself.
                groups.append([http(part)])
                continue
            }
            let (headers, content, _) = head(part)
            let type = HTTPHeader.value("Content-Type", in: headers) ?? ""
            if type.lowercased().hasPrefix("multipart/mixed"), let inner = parameter("boundary", of: type), !inner.isEmpty {
                if inner.hasPrefix(boundary) { return nil }
                groups.append(split(content, boundary: inner).map { startsWithStatusLine($0) ? http($0) : http(head($0).rest) })
            } else {
                groups.append([http(content)])
            }
        }
        return groups
    }

    /// Whether the first line that is not blank starts with `HTTP/`.
    static func startsWithStatusLine(_ part: Data) -> Bool {
        guard let start = part.firstIndex(where: { $0 != 0x0D && $0 != 0x0A }) else { return false }
        return part[start...].starts(with: Array("HTTP/".utf8))
    }

    /// The parts between `--boundary` lines (the preamble and the epilogue left out); the first `limit` only (the
    /// body is not scanned past them).
    static func split(_ body: Data, boundary: String, limit: Int = .max) -> [Data] {
        guard limit > 0 else { return [] }
        let text = [UInt8](body)
        let marker = [UInt8](("--" + boundary).utf8)
        var starts: [Int] = []
        var index = 0
        while index + marker.count <= text.count, starts.count <= limit {
            if (index == 0 || text[index - 1] == 0x0A) && text[index..<index + marker.count].elementsEqual(marker) {
                starts.append(index)
                index += marker.count
            } else {
                index += 1
            }
        }
        var parts: [Data] = []
        for (number, start) in starts.enumerated() {
            var from = start + marker.count
            if from + 1 < text.count, text[from] == UInt8(ascii: "-"), text[from + 1] == UInt8(ascii: "-") { break }   // the closing line
            while from < text.count, text[from] != 0x0A { from += 1 }   // the rest of the boundary line
            from += 1
            var end = number + 1 < starts.count ? starts[number + 1] : text.count
            if end > 0, end <= text.count, end - 1 >= from, text[end - 1] == 0x0A { end -= 1 }
            if end > from, text[end - 1] == 0x0D { end -= 1 }
            parts.append(from < end ? Data(text[from..<end]) : Data())
            if parts.count == limit { break }
        }
        return parts
    }

    /// A part's headers and the rest; `wellFormed` is false when a line before the blank one is not a header
    /// (`name: value`, the name a token): a body that ran into the headers.
    static func head(_ part: Data) -> (headers: [String: String], rest: Data, wellFormed: Bool) {
        let bytes = [UInt8](part)
        var headers: [String: String] = [:]
        var wellFormed = true
        var index = 0
        while index < bytes.count {
            var end = index
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var line = String(decoding: bytes[index..<end], as: UTF8.self)
            if line.hasSuffix("\r") { line.removeLast() }
            index = end + 1
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
                if name.isEmpty || !name.utf8.allSatisfy(isTokenByte) { wellFormed = false }
                headers[name] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            } else {
                wellFormed = false
            }
        }
        return (headers, index < bytes.count ? Data(bytes[index...]) : Data(), wellFormed)
    }

    /// A byte of an HTTP token (RFC 9110 `tchar`).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// `HTTP/1.1 200 OK`, headers, body.
    static func http(_ content: Data) -> Answer? {
        let bytes = [UInt8](content)
        var start = 0
        while start < bytes.count, bytes[start] == 0x0D || bytes[start] == 0x0A { start += 1 }
        var end = start
        while end < bytes.count, bytes[end] != 0x0A { end += 1 }
        let statusLine = String(decoding: bytes[start..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let fields = statusLine.split(separator: " ")
        // A status is three digits (RFC 9110): `0`, `-1` or `99999` is not one (nor the "not answered" status 0).
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/"), fields[1].utf8.count == 3, let status = Int(fields[1]),
              (100...999).contains(status) else { return nil }
        let rest = end + 1 < bytes.count ? Data(bytes[(end + 1)...]) : Data()
        let (headers, body, wellFormed) = head(rest)
        guard wellFormed else { return nil }
        // Trimmed as bytes: bytes that are not UTF-8 stay as they came (for the JSON reader to refuse).
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = body.firstIndex(where: { !isSpace($0) }), let last = body.lastIndex(where: { !isSpace($0) }) else {
            return Answer(status: status, headers: headers, body: Data())
        }
        return Answer(status: status, headers: headers, body: Data(body[first...last]))
    }

    /// A `name=value` parameter of a header value (quotes removed).
    static func parameter(_ name: String, of value: String) -> String? {
        for item in value.split(separator: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == name {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// One result per operation of `batch`: a change set answered by one error gives every change that
    /// error; operations without an answer get status 0 and `-1008`; an unreadable answer, or a change set's
    /// answers that do not fit its changes, status 0 and `-1007`.
    static func results(_ batch: FMODataBatch, response: Endpoint<[FMODataBatchResult]>.Response) throws(FMError) -> [FMODataBatchResult] {
        let type = response.header("Content-Type") ?? ""
        var boundary = parameter("boundary", of: type)
        if boundary == nil {
            // No header boundary: the body's first `--` line names it.
            let text = String(decoding: response.body.prefix(512), as: UTF8.self)
            boundary = text.split(whereSeparator: \.isNewline).first { $0.hasPrefix("--") }.map { String($0.dropFirst(2)).trimmingCharacters(in: .whitespaces) }
        }
        guard let boundary, !boundary.isEmpty else { throw .malformed("the $batch answer is not multipart", status: response.status) }
        guard let groups = answers(response.body, boundary: boundary, limit: batch.parts.count) else {
            throw .malformed("a change set of the $batch answer has a boundary that starts with the batch's", status: response.status)
        }
        var results: [FMODataBatchResult] = []
        results.reserveCapacity(batch.operationCount)
        for (index, part) in batch.parts.enumerated() {
            let count: Int
            switch part {
            case .read: count = 1
            case .changeset(let changes): count = changes.count
            }
            guard index < groups.count else {
                // Not answered: the server stops at the first failure.
                results.append(contentsOf: repeatElement(FMODataBatchResult(status: 0, code: FMError.ClientCode.emptyResult, body: nil), count: count))
                continue
            }
            let group = groups[index]
            for number in 0..<count {
                if group.count == count {
                    results.append(result(group[number]))
                } else if group.count == 1, let only = group[0], only.status >= 400 {
                    // A change set refused as a whole: each of its changes gets the error.
                    results.append(result(only))
                } else {
                    // Answers that do not fit the operations: which belongs to which is unknown.
                    results.append(result(nil))
                }
            }
        }
        return results
    }

    /// The result of one answer; `nil` (an unreadable answer) is status 0 and `-1007`.
    private static func result(_ answer: Answer?) -> FMODataBatchResult {
        guard let answer else { return FMODataBatchResult(status: 0, code: FMError.ClientCode.malformedResponse, body: nil) }
        let object = answer.body.isEmpty ? nil : (try? JSONReader.parse(answer.body)) as? [String: Any]
        let code: String
        if (200...299).contains(answer.status) {
            // A success's body is a JSON object or nothing: anything else is not the answer it claims to be.
            code = answer.body.isEmpty || object != nil ? "0" : FMError.ClientCode.malformedResponse
        } else {
            code = ODataEnvelope.error(status: answer.status, body: answer.body).code
        }
        return FMODataBatchResult(status: answer.status, code: code, body: object, headers: answer.headers)
    }
}

extension FMOData {
    func batchCall(_ batch: FMODataBatch) -> ODataCall<[FMODataBatchResult]> {
        let boundary = "batch_\(UUID().uuidString.lowercased())"
        var prefix = "/fmi/odata/v4/"
        if case .success(let base) = configuration.resolvedBase() {
            var path = base.percentEncodedPath
            while path.hasSuffix("/") { path.removeLast() }
            prefix = path + prefix
        }
        prefix += ODataText.encodePath(configuration.database) + "/"
        let decode: @Sendable (Endpoint<[FMODataBatchResult]>.Response) throws -> [FMODataBatchResult] = {
            try ODataBatchWire.results(batch, response: $0)
        }
        guard batch.operationCount > 0 else {
            return ODataCall(method: .post, path: "$batch", kind: "$batch", invalid: .invalidArgument("An empty batch"), decode: decode)
        }
        switch ODataBatchWire.body(batch, prefix: prefix, boundary: boundary) {
        case .success(let data):
            return ODataCall(method: .post, path: "$batch", kind: "$batch", body: .raw(data, contentType: "multipart/mixed; boundary=\(boundary)"),
                             accept: "multipart/mixed", accepting: { $0 == 200 }, decode: decode)
        case .failure(let error):
            return ODataCall(method: .post, path: "$batch", kind: "$batch", invalid: error, decode: decode)
        }
    }

    /// Sends `batch` as one `POST /{db}/$batch`: one result per operation, in order, each with its own
    /// status and code (a change set FileMaker refused gives each of its changes the error). Not retried.
    /// - Parameters:
    ///   - batch: the reads and change sets.
    ///   - completion: the results or `nil` (the batch itself failed), and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func batch(_ batch: FMODataBatch, completion: sending @escaping ([FMODataBatchResult]?, String) -> Void) -> FMRequest {
        send(batchCall(batch)) { completion($0.value, $0.code) }
    }

    /// Sends `batch`; returns one result per operation. Throws ``FMError`` when the batch itself fails.
    public func batch(_ batch: FMODataBatch) async throws -> [FMODataBatchResult] {
        try await sendAsync(batchCall(batch))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Size limits the socket layer enforces while reading requests.
struct HTTPParserLimits: Sendable {
    /// Largest request line + header block (and chunked trailer block), in bytes.
    var maxHeaderBytes: Int
    /// Largest request body, in bytes (after de-chunking).
    var maxBodyBytes: Int
    /// Largest `multipart/form-data` body with a `Content-Length` (a container upload), in bytes; such
    /// bodies are spooled (see ``spoolBodyBytes``), so this may exceed ``maxBodyBytes``.
    var maxUploadBytes: Int? = nil
    /// A body with a `Content-Length` above this many bytes goes to an unlinked temporary file as it
    /// arrives and is handed over memory-mapped (file-backed pages, not the process's heap).
    var spoolBodyBytes = 4 * 1024 * 1024
}

/// An incremental HTTP/1.1 request parser: feed it bytes with ``append(_:)``, then pull events
/// with ``next()`` until it returns `nil` (more bytes needed). Pipelined requests come out one by
/// one. After a `.failure` the parser stays failed; the connection must answer and close.
struct HTTPRequestParser {
    /// What the parser produced.
    enum Event {
        /// A complete request, and whether the connection may stay open after answering it.
        case request(HTTPRequest, keepAlive: Bool)
        /// The client sent `Expect: 100-continue` and waits for `HTTP/1.1 100 Continue`.
        case sendContinue
        /// The input is not acceptable: answer with this status and close.
        case failure(status: Int, message: String)
    }

    private struct Head {
        var method: String
        var target: String
        var headers: [(name: String, value: String)]
        var keepAlive: Bool
    }

    private enum State {
        /// Looking for the end of the header block; `scan` is how far (relative to `start`) we
        /// looked, `lineStart` where the current line begins (relative too).
        case head(scan: Int, lineStart: Int)
        case fixedBody(Head, length: Int)
        /// A large fixed-length body going to ``HTTPRequestParser/spool``; `remaining` bytes still to come.
        case spooledBody(Head, length: Int, remaining: Int)
        case chunkSize(Head)
        case chunkData(Head, remaining: Int)
        case chunkDataEnd(Head)
        case trailers(Head, scan: Int, lineStart: Int)
        case failed
    }

    let limits: HTTPParserLimits
    private var buffer: [UInt8] = []
    private var start = 0
    private var state: State = .head(scan: 0, lineStart: 0)
    private var chunkedBody: [UInt8] = []
    private var spool: BodySpool?
    private var pendingContinue = false

    init(limits: HTTPParserLimits) {
        self.limits = limits
    }

    /// Bytes received but not yet consumed.
    var bufferedCount: Int { buffer.count - start }

    /// Adds received bytes.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && (start == buffer.count || start >= 64 * 1024) {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next event, or `nil` when more input is needed.
    mutating func next() -> Event? {
        while true {
            switch state {
            case .failed:
                return nil

            case let .head(scan, lineStart):
                if scan == 0 && !skipLeadingBlankLines() { return nil }
                if scan <= Self.maxMethodBytes, let refusal = refuseNonHTTP() { return refusal }
                switch findBlankLine(scan: scan, lineStart: lineStart) {
                case let .needMore(newScan, newLineStart):
                    if newScan > limits.maxHeaderBytes {
                        return fail(431, "Request header fields too large")
                    }
                    state = .head(scan: newScan, lineStart: newLineStart)
                    return nil
                case let .found(end):
                    if end > limits.maxHeaderBytes {
                        return fail(431, "Request header fields too large")
                    }
                    let headBytes = Array(buffer[start..<(start + end)])
                    start += end
                    if let event = beginRequest(headBytes) { return event }
                }

            case let .fixedBody(head, length):
                return fixedBody(head, length: length)

            case let .spooledBody(head, length, remaining):
                return spoolBody(head, length: length, remaining: remaining)

            case let .chunkSize(head):
                if pendingContinue {
                    pendingContinue = false
                    if bufferedCount == 0 { return .sendContinue }
                }
                guard let lf = indexOfLF(from: start) else {
                    if bufferedCount > 4096 { return fail(400, "Chunk size line too long") }
                    return nil
                }
                guard lf - start <= 4096 else { return fail(400, "Chunk size line too long") }
                guard let size = parseChunkSize(start..<lf) else {
                    return fail(400, "Malformed chunk size")
                }
                start = lf + 1
                if size == 0 {
                    state = .trailers(head, scan: 0, lineStart: 0)
                } else {
                    if chunkedBody.count + size > limits.maxBodyBytes {
                        return fail(413, "Request body too large")
                    }
                    state = .chunkData(head, remaining: size)
                }

            case let .chunkData(head, remaining):
                let available = min(bufferedCount, remaining)
                if available == 0 { return nil }
                chunkedBody.append(contentsOf: buffer[start..<(start + available)])
                start += available
                if available == remaining {
                    state = .chunkDataEnd(head)
                } else {
                    state = .chunkData(head, remaining: remaining - available)
                    return nil
                }

            case let .chunkDataEnd(head):
                guard bufferedCount >= 1 else { return nil }
                if buffer[start] == 0x0A {
                    start += 1
                } else if buffer[start] == 0x0D {
                    guard bufferedCount >= 2 else { return nil }
                    guard buffer[start + 1] == 0x0A else { return fail(400, "Malformed chunk") }
                    start += 2
                } else {
                    return fail(400, "Malformed chunk")
                }
                state = .chunkSize(head)

            case let .trailers(head, scan, lineStart):
                switch findBlankLine(scan: scan, lineStart: lineStart) {
                case let .needMore(newScan, newLineStart):
                    if newScan > limits.maxHeaderBytes { return fail(431, "Trailer fields too large") }
                    state = .trailers(head, scan: newScan, lineStart: newLineStart)
                    return nil
                case let .found(end):
                    if end > limits.maxHeaderBytes { return fail(431, "Trailer fields too large") }
                    start += end
                    let body = Data(chunkedBody)
                    chunkedBody = []
                    return finish(head, body: body)
                }
            }
        }
    }

    // MARK: - Steps

    /// A body held in memory: the request once all `length` bytes are in (asking for them with
    /// `100 Continue` when the client waits for it).
    private mutating func fixedBody(_ head: Head, length: Int) -> Event? {
        guard bufferedCount >= length else {
            if pendingContinue {
                pendingContinue = false
                if bufferedCount == 0 { return .sendContinue }
            }
            return nil
        }
        let body = Data(buffer[start..<(start + length)])
        start += length
        return finish(head, body: body)
    }

    /// Moves what arrived of a large fixed-length body into the spool; the request once it is complete.
    private mutating func spoolBody(_ head: Head, length: Int, remaining: Int) -> Event? {
        if pendingContinue {
            pendingContinue = false
            if bufferedCount == 0 { return .sendContinue }
        }
        if spool == nil {
            guard let created = BodySpool() else { return fail(500, "Cannot store the request body") }
            spool = created
        }
        guard let file = spool else { return fail(500, "Cannot store the request body") }
        let available = min(bufferedCount, remaining)
        if available > 0 {
            let written = buffer.withUnsafeBytes { file.append(UnsafeRawBufferPointer(rebasing: $0[start..<(start + available)])) }
            guard written else { return fail(500, "Cannot store the request body") }
            start += available
        }
        if remaining > available {
            state = .spooledBody(head, length: length, remaining: remaining - available)
            return nil
        }
        spool = nil
        guard let body = file.mapped(length: length) else { return fail(500, "Cannot store the request body") }
        return finish(head, body: body)
    }

    private mutating func fail(_ status: Int, _ message: String) -> Event {
        state = .failed
        return .failure(status: status, message: message)
    }

    private mutating func finish(_ head: Head, body: Data) -> Event {
        state = .head(scan: 0, lineStart: 0)
        pendingContinue = false
        let request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, body: body)
        return .request(request, keepAlive: head.keepAlive)
    }

    /// Parses a complete header block. Returns an event to emit now, or `nil` after switching to a
    /// body state.
    private mutating func beginRequest(_ bytes: [UInt8]) -> Event? {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        for i in 0..<bytes.count where bytes[i] == 0x0A {
            var end = i
            if end > lineStart && bytes[end - 1] == 0x0D { end -= 1 }
            lines.append(bytes[lineStart..<end])
            lineStart = i + 1
        }
        // Skip blank lines before the request line (RFC 9112 §2.2), drop the terminating blank line.
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        if let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let requestLine = lines.first else { return fail(400, "Missing request line") }

        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return fail(400, "Malformed request line") }
        let methodBytes = parts[0], targetBytes = parts[1], versionBytes = parts[2]
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(Self.isTokenByte) else {
            return fail(400, "Malformed method")
        }
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            return fail(400, "Malformed request target")
        }
        let version = String(decoding: versionBytes, as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            if version.hasPrefix("HTTP/"), version.count == 8 {
                return fail(505, "HTTP version not supported")
            }
            return fail(400, "Malformed HTTP version")
        }

        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count - 1)
        var contentLength: Int?
        var transferEncoding: [String] = []
        var connectionTokens: [String] = []
        var expectContinue = false
        var isMultipart = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A) else { return fail(400, "Malformed header line") }
            let nameBytes = line[line.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(Self.isTokenByte) else {
                return fail(400, "Malformed header name")
            }
            var valueBytes = line[(colon + 1)...]
            while let f = valueBytes.first, f == 0x20 || f == 0x09 { valueBytes.removeFirst() }
            while let l = valueBytes.last, l == 0x20 || l == 0x09 { valueBytes.removeLast() }
            if valueBytes.contains(where: { $0 == 0x00 || $0 == 0x0D || $0 == 0x0A }) {
                return fail(400, "Malformed header value")
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            let value = String(decoding: valueBytes, as: UTF8.self)
            headers.append((name: name, value: value))

            switch name.lowercased() {
            case "content-length":
                let (n, problem) = Self.contentLength(value, existing: contentLength)
                if let problem { return fail(400, problem) }
                contentLength = n
            case "content-type":
                isMultipart = value.lowercased().hasPrefix("multipart/form-data")
            case "transfer-encoding":
                transferEncoding += Self.tokens(value)
            case "connection":
                connectionTokens += Self.tokens(value)
            case "expect":
                if value.lowercased() == "100-continue" {
                    expectContinue = true
                } else {
                    return fail(417, "Expectation failed")
                }
            default:
                break
            }
        }

        let keepAlive = minor == 1 ? !connectionTokens.contains("close") : connectionTokens.contains("keep-alive")
        let method = String(decoding: methodBytes, as: UTF8.self)
        let target = Self.originForm(String(decoding: targetBytes, as: UTF8.self))

        return beginBody(Head(method: method, target: target, headers: headers, keepAlive: keepAlive),
                         transferEncoding: transferEncoding, contentLength: contentLength, isMultipart: isMultipart,
                         expectContinue: expectContinue)
    }

    /// Chooses how the body of a parsed head is read: chunked, fixed-length in memory, or spooled.
    private mutating func beginBody(_ parsedHead: Head, transferEncoding: [String], contentLength: Int?, isMultipart: Bool,
                                    expectContinue: Bool) -> Event? {
        var head = parsedHead
        if !transferEncoding.isEmpty {
            guard transferEncoding == ["chunked"] else {
                return fail(501, "Unsupported Transfer-Encoding")
            }
            // RFC 9112 §6.1: with both, Transfer-Encoding wins, and the connection must close.
            if contentLength != nil { head.keepAlive = false }
            chunkedBody = []
            pendingContinue = expectContinue
            state = .chunkSize(head)
            return nil
        }
        let length = contentLength ?? 0
        let cap = isMultipart ? max(limits.maxBodyBytes, limits.maxUploadBytes ?? 0) : limits.maxBodyBytes
        if length > cap {
            return fail(413, "Request body too large")
        }
        pendingContinue = expectContinue && length > 0
        state = length > limits.spoolBodyBytes ? .spooledBody(head, length: length, remaining: length) : .fixedBody(head, length: length)
        return nil
    }

    /// A `Content-Length` value (a comma-separated list of equal numbers is one number), with the one
    /// already read; the problem when it is malformed or conflicting.
    private static func contentLength(_ value: String, existing: Int?) -> (Int?, String?) {
        var length = existing
        for item in value.split(separator: ",") {
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed.count <= 18, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let n = Int(trimmed) else { return (length, "Malformed Content-Length") }
            if let length, length != n { return (length, "Conflicting Content-Length") }
            length = n
        }
        return (length, nil)
    }

    // MARK: - Byte helpers

    private enum BlankLineScan {
        case needMore(scan: Int, lineStart: Int)
        /// The block ends `end` bytes after `start` (just past the blank line).
        case found(end: Int)
    }

    /// Scans for an empty line (`CRLF` or bare `LF`) ending a header or trailer block.
    private func findBlankLine(scan: Int, lineStart: Int) -> BlankLineScan {
        buffer.withUnsafeBufferPointer { all in
            let p = UnsafeBufferPointer(rebasing: all[start...])
            var pos = scan
            var ls = lineStart
            while pos < p.count {
                if p[pos] == 0x0A {
                    if pos == ls || (pos == ls + 1 && p[ls] == 0x0D) { return .found(end: pos + 1) }
                    ls = pos + 1
                }
                pos += 1
            }
            return .needMore(scan: pos, lineStart: ls)
        }
    }

    /// The longest method accepted before the first space of a request line.
    static let maxMethodBytes = 32

    /// Fails at once (400) when the bytes of a request line so far cannot begin one: a byte before the
    /// first space that is not a token character (a TLS ClientHello begins `16 03 01`), or a method longer
    /// than ``maxMethodBytes``. nginx answers such bytes 400 and closes without waiting for a line end;
    /// waiting would keep a client that speaks TLS to a plain-HTTP port hanging until a timeout.
    private mutating func refuseNonHTTP() -> Event? {
        var i = start
        let end = min(buffer.count, start + Self.maxMethodBytes + 1)
        while i < end {
            let b = buffer[i]
            if b == 0x20 { return i == start ? fail(400, "Bad Request: not an HTTP request") : nil }
            guard Self.isTokenByte(b) else { return fail(400, "Bad Request: not an HTTP request") }
            i += 1
        }
        return i - start > Self.maxMethodBytes ? fail(400, "Bad Request: not an HTTP request") : nil
    }

    /// Where the parser is between requests, for the connection's deadlines.
    enum Phase: Equatable {
        /// Between requests: nothing of the next request has arrived.
        case idle
        /// Part of a request head has arrived.
        case head
        /// The head is complete; (part of) the body is still to come.
        case body
        /// The input was refused; the connection is closing.
        case failed
    }

    /// Where the parser is: see ``Phase``.
    var phase: Phase {
        switch state {
        case .head: return bufferedCount == 0 ? .idle : .head
        case .failed: return .failed
        default: return .body
        }
    }

    /// Drops blank lines before a request line (RFC 9112 §2.2). Returns `false` if a lone CR
    /// leaves it undecided.
    private mutating func skipLeadingBlankLines() -> Bool {
        while start < buffer.count {
            if buffer[start] == 0x0A {
                start += 1
            } else if buffer[start] == 0x0D {
                guard start + 1 < buffer.count else { return false }
                guard buffer[start + 1] == 0x0A else { return true }
                start += 2
            } else {
                return true
            }
        }
        return false
    }

    private func indexOfLF(from index: Int) -> Int? {
        buffer.withUnsafeBufferPointer { p in
            var i = index
            while i < p.count {
                if p[i] == 0x0A { return i }
                i += 1
            }
            return nil
        }
    }

    /// Parses `1a;ext=v` (optionally CR-terminated) as a hexadecimal size.
    private func parseChunkSize(_ range: Range<Int>) -> Int? {
        var size = 0
        var digits = 0
        var i = range.lowerBound
        var end = range.upperBound
        if end > i && buffer[end - 1] == 0x0D { end -= 1 }
        while i < end {
            let b = buffer[i]
            let v: Int
            switch b {
            case 0x30...0x39: v = Int(b - 0x30)
            case 0x41...0x46: v = Int(b - 0x41 + 10)
            case 0x61...0x66: v = Int(b - 0x61 + 10)
            default: v = -1
            }
            if v < 0 { break }
            digits += 1
            if digits > 15 { return nil }
            size = size * 16 + v
            i += 1
        }
        guard digits > 0 else { return nil }
        // What follows the digits may only be whitespace and chunk extensions.
        while i < end, buffer[i] == 0x20 || buffer[i] == 0x09 { i += 1 }
        if i < end && buffer[i] != 0x3B { return nil }
        return size
    }

    /// Turns an absolute-form target (`http://host:port/path?q`) into origin form (`/path?q`).
    private static func originForm(_ target: String) -> String {
        guard !target.hasPrefix("/") else { return target }
        let lower = target.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            let rest = target.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
            let tail = String(rest[slash...])
            return tail.hasPrefix("?") ? "/" + tail : tail
        }
        return target
    }

    private static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }
}

/// An unlinked temporary file that receives a large request body as it arrives, then hands it over as
/// `Data` over a private memory mapping of the file: the pages are the page cache's, not the heap's,
/// and the file's space is freed when the last `Data` sharing the mapping goes away (or the parser does).
final class BodySpool {
    private let fd: Int32

    /// Creates the file in the temporary directory and unlinks it at once; `nil` when that fails.
    init?() {
        var template = Array((NSTemporaryDirectory() + "/fm-emulator-body-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Appends `bytes`; `false` on a write error (a full disk).
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var base = bytes.baseAddress else { return true }
        var left = bytes.count
        while left > 0 {
            let n = write(fd, base, left)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            base += n
            left -= n
        }
        return true
    }

    /// The first `length` bytes of the file, memory-mapped; `nil` when mapping fails.
    func mapped(length: Int) -> Data? {
        guard length > 0 else { return Data() }
        // Writable but private: a uniquely held `Data` may be mutated in place; that never reaches the file.
        let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)
        guard let address, address != MAP_FAILED else { return nil }
        return Data(bytesNoCopy: address, count: length, deallocator: .custom { pointer, count in
            _ = munmap(pointer, count)
        })
    }
}

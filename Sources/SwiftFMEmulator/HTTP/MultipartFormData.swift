#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A `multipart/form-data` body parser (RFC 7578), as used by container uploads.
///
/// ```swift
/// let parts = try MultipartFormData.parse(body: request.body, contentType: request.header("Content-Type") ?? "")
/// if let upload = parts.first(where: { $0.name == "upload" }) { store(upload.data, upload.filename) }
/// ```
public enum MultipartFormData {
    /// One part of a `multipart/form-data` body.
    public struct Part: Sendable {
        /// The `name` parameter of the part's `Content-Disposition` (`upload`), if any.
        public var name: String?
        /// The `filename` parameter (or a decoded `filename*`), if any.
        public var filename: String?
        /// The part's own `Content-Type`, if it has one.
        public var contentType: String?
        /// All header fields of the part, in order, names as sent.
        public var headers: [(name: String, value: String)]
        /// The part's content, byte for byte.
        public var data: Data

        /// Creates a part.
        public init(name: String?, filename: String?, contentType: String?,
                    headers: [(name: String, value: String)], data: Data) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.headers = headers
            self.data = data
        }

        /// The first value of the part header `name`, compared case-insensitively.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// Why a body could not be parsed.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The `Content-Type` is not `multipart/form-data`.
        case notMultipart
        /// The `Content-Type` has no (or an empty) `boundary` parameter.
        case missingBoundary
        /// The body never contains the opening boundary.
        case missingOpeningBoundary
        /// The body ends before the closing `--boundary--`.
        case missingFinalBoundary
        /// A part's header block is malformed.
        case malformedPartHeaders

        /// A readable explanation.
        public var description: String {
            switch self {
            case .notMultipart: return "the content type is not multipart/form-data"
            case .missingBoundary: return "the content type has no boundary parameter"
            case .missingOpeningBoundary: return "the body does not start with the boundary"
            case .missingFinalBoundary: return "the body ends before the final boundary"
            case .malformedPartHeaders: return "a part has malformed headers"
            }
        }
    }

    /// The `boundary` parameter of a `multipart/form-data` content type (quoted or not), or `nil`.
    public static func boundary(fromContentType contentType: String) -> String? {
        let (type, params) = parseHeaderValue(contentType)
        guard type == "multipart/form-data" else { return nil }
        guard let b = params["boundary"], !b.isEmpty else { return nil }
        return b
    }

    /// Splits a `multipart/form-data` body into its parts.
    ///
    /// - Parameters:
    ///   - body: the raw request body.
    ///   - contentType: the request's `Content-Type` value, carrying the boundary.
    /// - Returns: the parts in order.
    /// - Throws: ``ParseError``.
    public static func parse(body: Data, contentType: String) throws(ParseError) -> [Part] {
        try parse(body: body, contentType: contentType, sharing: false)
    }

    /// ``parse(body:contentType:)``; with `sharing`, a part of ``sharedPartBytes`` or more is a slice of
    /// `body` (its storage shared, not copied; its indices are the body's) — the emulator's container uploads.
    static func parse(body: Data, contentType: String, sharing: Bool) throws(ParseError) -> [Part] {
        let (type, params) = parseHeaderValue(contentType)
        guard type == "multipart/form-data" else { throw .notMultipart }
        guard let boundary = params["boundary"], !boundary.isEmpty else { throw .missingBoundary }
        return try parse(body: body, boundary: boundary, sharing: sharing)
    }

    /// Splits a multipart body delimited by `boundary` (without the leading `--`) into its parts.
    /// - Throws: ``ParseError``.
    public static func parse(body: Data, boundary: String) throws(ParseError) -> [Part] {
        try parse(body: body, boundary: boundary, sharing: false)
    }

    /// With `sharing`, parts of at least this many bytes are slices of the body instead of copies.
    static let sharedPartBytes = 4 * 1024 * 1024

    static func parse(body: Data, boundary: String, sharing: Bool) throws(ParseError) -> [Part] {
        // No copy of the body: it is scanned in place (a large upload arrives memory-mapped).
        let result = body.withUnsafeBytes { raw in
            parse(bytes: raw.assumingMemoryBound(to: UInt8.self), boundary: boundary, owner: sharing ? body : nil)
        }
        return try result.get()
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>, boundary: String, owner: Data?) -> Result<[Part], ParseError> {
        let dash = Array("--".utf8) + Array(boundary.utf8)
        let delimiter = Array("\r\n".utf8) + dash

        // The first boundary may start the body, or follow a preamble ending in CRLF.
        var pos: Int
        if bytes.starts(with: dash) {
            pos = dash.count
        } else if let found = find(delimiter, in: bytes, from: 0) {
            pos = found + delimiter.count
        } else {
            return .failure(.missingOpeningBoundary)
        }

        var parts: [Part] = []
        while true {
            // After a boundary: `--` ends the body, otherwise optional whitespace then CRLF.
            if pos + 1 < bytes.count, bytes[pos] == 0x2D, bytes[pos + 1] == 0x2D {
                return .success(parts)
            }
            while pos < bytes.count, bytes[pos] == 0x20 || bytes[pos] == 0x09 { pos += 1 }
            guard pos + 1 < bytes.count, bytes[pos] == 0x0D, bytes[pos + 1] == 0x0A else {
                return .failure(.missingFinalBoundary)
            }
            pos += 2

            // Part headers end at the first empty line (which may come immediately).
            var headers: [(name: String, value: String)] = []
            if pos + 1 < bytes.count, bytes[pos] == 0x0D, bytes[pos + 1] == 0x0A {
                pos += 2
            } else {
                guard let headerEnd = find(Array("\r\n\r\n".utf8), in: bytes, from: pos) else {
                    return .failure(.missingFinalBoundary)
                }
                let block = String(decoding: bytes[pos..<headerEnd], as: UTF8.self)
                for line in block.components(separatedBy: "\r\n") {
                    guard let colon = line.firstIndex(of: ":") else { return .failure(.malformedPartHeaders) }
                    let name = line[..<colon].trimmingCharacters(in: .whitespaces)
                    guard !name.isEmpty else { return .failure(.malformedPartHeaders) }
                    let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    headers.append((name: name, value: value))
                }
                pos = headerEnd + 4
            }

            guard let dataEnd = find(delimiter, in: bytes, from: pos) else { return .failure(.missingFinalBoundary) }
            let data: Data
            if let owner, dataEnd - pos >= sharedPartBytes {
                // A slice shares the body's storage (copy-on-write keeps both values intact).
                data = owner[(owner.startIndex + pos)..<(owner.startIndex + dataEnd)]
            } else {
                data = Data(bytes[pos..<dataEnd])
            }
            pos = dataEnd + delimiter.count

            var name: String?
            var filename: String?
            var contentType: String?
            for (headerName, value) in headers {
                switch headerName.lowercased() {
                case "content-disposition":
                    let (_, dispositionParams) = parseHeaderValue(value)
                    name = dispositionParams["name"]
                    if let extended = dispositionParams["filename*"], let decoded = decodeExtendedValue(extended) {
                        filename = decoded
                    } else {
                        filename = dispositionParams["filename"]
                    }
                case "content-type":
                    contentType = value
                default:
                    break
                }
            }
            parts.append(Part(name: name, filename: filename, contentType: contentType, headers: headers, data: data))
        }
    }

    // MARK: - Helpers

    /// Splits `type/subtype; a=b; c="d"` into the lower-cased value and its parameters
    /// (names lower-cased, quoted values unescaped).
    static func parseHeaderValue(_ value: String) -> (String, [String: String]) {
        let chars = Array(value)
        var i = 0
        func skipSpaces() { while i < chars.count, chars[i] == " " || chars[i] == "\t" { i += 1 } }
        var main = ""
        while i < chars.count, chars[i] != ";" { main.append(chars[i]); i += 1 }
        var params: [String: String] = [:]
        while i < chars.count {
            i += 1 // skip ';'
            skipSpaces()
            var key = ""
            while i < chars.count, chars[i] != "=", chars[i] != ";" { key.append(chars[i]); i += 1 }
            key = key.trimmingCharacters(in: .whitespaces).lowercased()
            var val = ""
            if i < chars.count, chars[i] == "=" {
                i += 1
                skipSpaces()
                if i < chars.count, chars[i] == "\"" {
                    i += 1
                    while i < chars.count, chars[i] != "\"" {
                        if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                        val.append(chars[i])
                        i += 1
                    }
                    if i < chars.count { i += 1 } // closing quote
                    while i < chars.count, chars[i] != ";" { i += 1 }
                } else {
                    while i < chars.count, chars[i] != ";" { val.append(chars[i]); i += 1 }
                    val = val.trimmingCharacters(in: .whitespaces)
                }
            }
            if !key.isEmpty, params[key] == nil { params[key] = val }
        }
        return (main.trimmingCharacters(in: .whitespaces).lowercased(), params)
    }

    /// Decodes an RFC 8187 value such as `UTF-8''na%C3%AFve.txt`.
    private static func decodeExtendedValue(_ value: String) -> String? {
        let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        return String(pieces[2]).removingPercentEncoding
    }

    /// The index of the first occurrence of `needle` in `haystack` at or after `from`.
    private static func find(_ needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard !needle.isEmpty, from >= 0, needle.count <= haystack.count - from, let base = haystack.baseAddress else { return nil }
        return needle.withUnsafeBufferPointer { n -> Int? in
            guard let first = n.first, let nb = n.baseAddress else { return nil }
            // memchr finds candidates for the first byte (fast on a large body), memcmp checks the rest.
            var i = from
            let last = haystack.count - n.count
            while i <= last {
                guard let hit = memchr(base + i, Int32(first), last - i + 1) else { return nil }
                let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if memcmp(base + at, nb, n.count) == 0 { return at }
                i = at + 1
            }
            return nil
        }
    }
}

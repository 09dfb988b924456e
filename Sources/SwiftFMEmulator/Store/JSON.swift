import Foundation

/// An order-preserving JSON value used for request bodies, schema files and responses.
///
/// Foundation's `JSONSerialization` loses key order and blurs numbers and booleans on Linux; the
/// emulator needs both (layout order in schema files, `null` detection in `fieldData`), so it
/// parses and writes JSON itself.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    /// A number kept as its exact decimal text (plain notation, no exponent), written verbatim:
    /// FileMaker numbers are decimals of up to 400 digits, not binary doubles (WIRE.md §17).
    case decimal(String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])
    /// JSON text already written (by ``RecordWriter``), copied as is when serialising. Never produced
    /// by the parser.
    case raw([UInt8])

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.decimal(a), .decimal(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.raw(a), .raw(b)): return a == b
        default: return false
        }
    }

    /// The value for `key` in an object (exact key), or `nil`.
    subscript(key: String) -> JSON? {
        guard case let .object(pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    /// The value for `key` in an object, compared case-insensitively.
    func value(forCaseInsensitiveKey key: String) -> JSON? {
        guard case let .object(pairs) = self else { return nil }
        return pairs.first { $0.0.caseInsensitiveCompare(key) == .orderedSame }?.1
    }

    var objectPairs: [(String, JSON)]? { if case let .object(p) = self { return p }; return nil }
    var arrayValue: [JSON]? { if case let .array(a) = self { return a }; return nil }
    var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    var isNull: Bool { if case .null = self { return true }; return false }

    /// A scalar rendered as FileMaker would read it from a request: strings as-is, numbers without
    /// a trailing `.0`, booleans as `1`/`0`. `nil` for null, arrays and objects.
    var scalarText: String? {
        switch self {
        case let .string(s): return s
        case let .number(n): return n.isFinite ? JSON.format(number: n) : String(n)
        case let .decimal(text): return text
        case let .bool(b): return b ? "1" : "0"
        default: return nil
        }
    }

    // MARK: Writing

    /// Serialises the value compactly.
    func serialized() -> String {
        String(decoding: bytes(), as: UTF8.self)
    }

    /// The UTF-8 bytes of ``serialized()``.
    ///
    /// A large ``raw(_:)`` part (a found set's records) is copied once, straight into the `Data`,
    /// instead of first into the text of the whole value and then into the `Data`.
    var data: Data {
        let rawCount = largeRawByteCount
        guard rawCount > 0 else { return Data(bytes()) }
        var data = Data(capacity: rawCount + 4096)
        var pending: [UInt8] = []
        pending.reserveCapacity(1024)
        write(into: &data, pending: &pending)
        data.append(contentsOf: pending)
        return data
    }

    /// The bytes of the ``raw(_:)`` parts of at least ``largeRaw`` bytes in the value.
    private var largeRawByteCount: Int {
        switch self {
        case let .raw(bytes): return bytes.count >= JSON.largeRaw ? bytes.count : 0
        case let .array(items): return items.reduce(0) { $0 + $1.largeRawByteCount }
        case let .object(pairs): return pairs.reduce(0) { $0 + $1.1.largeRawByteCount }
        default: return 0
        }
    }

    /// From this size on a ``raw(_:)`` part is appended to `Data` directly by ``data``.
    private static let largeRaw = 64 * 1024

    /// ``write(into:)`` with large raw parts appended straight to `data`; the text before one is
    /// collected in `pending` and flushed first.
    private func write(into data: inout Data, pending: inout [UInt8]) {
        switch self {
        case let .raw(bytes) where bytes.count >= JSON.largeRaw:
            data.append(contentsOf: pending)
            pending.removeAll(keepingCapacity: true)
            data.append(contentsOf: bytes)
        case let .array(items):
            pending.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                item.write(into: &data, pending: &pending)
            }
            pending.append(UInt8(ascii: "]"))
        case let .object(pairs):
            pending.append(UInt8(ascii: "{"))
            for (i, pair) in pairs.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                JSON.writeString(pair.0, into: &pending)
                pending.append(UInt8(ascii: ":"))
                pair.1.write(into: &data, pending: &pending)
            }
            pending.append(UInt8(ascii: "}"))
        default:
            write(into: &pending)
        }
    }

    private func bytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    /// Appends the compact text of the value to `out`.
    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case let .bool(b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case let .number(n): JSON.writeNumber(n, into: &out)
        case let .decimal(text): out.append(contentsOf: text.utf8)
        case let .raw(bytes): out.append(contentsOf: bytes)
        case let .string(s): JSON.writeString(s, into: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(pairs):
            out.append(UInt8(ascii: "{"))
            for (i, pair) in pairs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(pair.0, into: &out)
                out.append(UInt8(ascii: ":"))
                pair.1.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends the UTF-8 bytes of `s` as they are (no quotes, no escapes).
    static func appendUTF8(_ s: String, into out: inout [UInt8]) {
        if s.utf8.withContiguousStorageIfAvailable({ out.append(contentsOf: $0) }) == nil {
            out.append(contentsOf: s.utf8)
        }
    }

    /// Appends `s` as a JSON string (quotes, escapes for `"`, `\\` and control characters).
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Copy runs without escapes whole; escape the rest byte by byte.
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { bytes in
            var start = 0
            for i in bytes.indices {
                let byte = bytes[i]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
                writeEscaped(byte, into: &out)
                start = i + 1
            }
            if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
        }
        if done == nil {
            for byte in s.utf8 { writeEscaped(byte, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends one byte of a JSON string, escaped when it must be.
    @inline(__always)
    private static func writeEscaped(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case 0x22: out.append(0x5C); out.append(0x22)
        case 0x5C: out.append(0x5C); out.append(0x5C)
        case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
        case 0..<0x20:
            out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
        default: out.append(byte)
        }
    }

    /// Formats a number the way FileMaker writes stored numbers: plain decimal notation, integers
    /// without a fraction, never an exponent (`1e+16`, `1e-05`) and never `-0`.
    static func format(number n: Double) -> String {
        var out: [UInt8] = []
        writeNumber(n, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends ``format(number:)`` of `n` to `out` without building a `String` for integers (the
    /// common case) and without rewriting Swift's text unless it has an exponent.
    static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        guard n.isFinite, n != 0 else { out.append(UInt8(ascii: "0")); return }
        if n == n.rounded(), abs(n) < 9e18 {
            writeInteger(Int64(n), into: &out)
            return
        }
        // Swift's shortest round-trip text of a non-integral double is already plain decimal (no
        // trailing zeros) unless it has an exponent (`1e-05`, `1.5e+20`).
        let text = n.description
        if text.utf8.contains(UInt8(ascii: "e")) {
            out.append(contentsOf: plainDecimal(text).utf8)
        } else {
            out.append(contentsOf: text.utf8)
        }
    }

    /// Appends the decimal digits of `n` (with `-` when negative) to `out`.
    static func writeInteger(_ n: Int64, into out: inout [UInt8]) {
        if n < 0 {
            out.append(UInt8(ascii: "-"))
            guard n != .min else { out.append(contentsOf: "9223372036854775808".utf8); return }
        }
        var v = n.magnitude
        if v < 10 { out.append(UInt8(ascii: "0") + UInt8(v)); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while v > 0 {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                count += 1
            }
            out.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// Rewrites Swift's shortest round-trip text of a double (`1.5e+20`, `-1e-05`, `0.25`) without
    /// an exponent, keeping exactly its significant digits.
    static func plainDecimal(_ text: String) -> String {
        var s = Substring(text)
        var sign = ""
        if s.first == "-" { sign = "-"; s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(s[s.index(after: e)...]) ?? 0
            s = s[..<e]
        }
        let parts = s.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let integerPart = parts.first.map(String.init) ?? "0"
        let digits = integerPart + (parts.count > 1 ? String(parts[1]) : "")
        let point = integerPart.count + exponent
        var out: String
        if point <= 0 {
            out = "0." + String(repeating: "0", count: -point) + digits
        } else if point >= digits.count {
            out = digits + String(repeating: "0", count: point - digits.count)
        } else {
            out = String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
        }
        if out.contains(".") {
            while out.last == "0" { out.removeLast() }
            if out.last == "." { out.removeLast() }
        }
        while out.count > 1, out.first == "0", out.dropFirst().first != "." { out.removeFirst() }
        return sign + out
    }

    // MARK: Parsing

    /// An error in a JSON text, with the byte offset where it was found.
    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Parses a complete JSON text.
    static func parse(_ data: Data) throws -> JSON {
        try parse(data, binary64Numbers: false)
    }

    /// Parses JSON text; with `binary64Numbers`, every number is read as the nearest double (a request
    /// body: "the FileMaker Data API treats numeric data values as if they were in double-precision
    /// floating-point format (binary64)", Claris FileMaker Data API Guide, "URL and data format notes";
    /// Docs/FILEMAKER-BEHAVIOUR.md), otherwise numbers a double would change are kept as exact decimals.
    static func parse(_ data: Data, binary64Numbers: Bool) throws -> JSON {
        var parser = Parser(bytes: [UInt8](data), binary64Numbers: binary64Numbers)
        parser.skipSpace()
        let value = try parser.parseValue(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        let binary64Numbers: Bool

        init(bytes: [UInt8], binary64Numbers: Bool = false) {
            self.bytes = bytes
            self.binary64Numbers = binary64Numbers
            // Skip a UTF-8 byte order mark.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        }

        func error(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func parseValue(depth: Int) throws -> JSON {
            guard depth < 200 else { throw error("nesting too deep") }
            guard index < bytes.count else { throw error("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth)
            case UInt8(ascii: "["): return try parseArray(depth: depth)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return try parseNumber()
            }
        }

        mutating func expect(_ word: String) throws {
            let w = Array(word.utf8)
            guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else {
                throw error("expected \(word)")
            }
            index += w.count
        }

        mutating func parseObject(depth: Int) throws -> JSON {
            index += 1
            var pairs: [(String, JSON)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
                let key = try parseString()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipSpace()
                let value = try parseValue(depth: depth + 1)
                pairs.append((key, value))
                skipSpace()
                guard index < bytes.count else { throw error("unexpected end in object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
                throw error("expected ',' or '}'")
            }
        }

        mutating func parseArray(depth: Int) throws -> JSON {
            index += 1
            var items: [JSON] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try parseValue(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw error("unexpected end in array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw error("expected ',' or ']'")
            }
        }

        mutating func parseHex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("bad \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[index]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw error("bad hex digit")
                }
                v = v * 16 + d
                index += 1
            }
            return v
        }

        mutating func parseString() throws -> String {
            index += 1
            var buffer: [UInt8] = []
            while true {
                guard index < bytes.count else { throw error("unterminated string") }
                let c = bytes[index]
                if c == UInt8(ascii: "\"") { index += 1; break }
                if c < 0x20 { throw error("control character in string") }
                if c == UInt8(ascii: "\\") {
                    index += 1
                    guard index < bytes.count else { throw error("bad escape") }
                    let e = bytes[index]
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): buffer.append(0x22)
                    case UInt8(ascii: "\\"): buffer.append(0x5C)
                    case UInt8(ascii: "/"): buffer.append(0x2F)
                    case UInt8(ascii: "b"): buffer.append(0x08)
                    case UInt8(ascii: "f"): buffer.append(0x0C)
                    case UInt8(ascii: "n"): buffer.append(0x0A)
                    case UInt8(ascii: "r"): buffer.append(0x0D)
                    case UInt8(ascii: "t"): buffer.append(0x09)
                    case UInt8(ascii: "u"):
                        var code = try parseHex4()
                        if (0xD800...0xDBFF).contains(code) {
                            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u") else { throw error("lone surrogate") }
                            index += 2
                            let low = try parseHex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw error("bad surrogate pair") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw error("bad code point") }
                        buffer.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: throw error("bad escape")
                    }
                } else {
                    buffer.append(c)
                    index += 1
                }
            }
            guard let s = String(validating: buffer, as: UTF8.self) else { throw error("invalid UTF-8") }
            return s
        }

        mutating func parseNumber() throws -> JSON {
            // RFC 8259 §6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
            let start = index
            func isDigit(_ i: Int) -> Bool { i < bytes.count && (0x30...0x39).contains(bytes[i]) }
            func digits() -> Bool {
                let from = index
                while isDigit(index) { index += 1 }
                return index > from
            }
            func fail() -> ParseError {
                index = start
                return error("invalid number")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            if index < bytes.count, bytes[index] == UInt8(ascii: "0") {
                index += 1
                if isDigit(index) { throw fail() }
            } else if !digits() {
                throw fail()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() else { throw fail() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() else { throw fail() }
            }
            guard let text = String(bytes: bytes[start..<index], encoding: .utf8), let value = Double(text) else { throw fail() }
            // Keep the exact decimal when a double would change it (`12345678901234567890`, `0.1000000000000000055`).
            if !binary64Numbers, value.isFinite, let exact = FMNumber(text), exact.text != JSON.format(number: value) {
                return .decimal(exact.text)
            }
            return .number(value)
        }
    }
}

import Foundation

/// A JSON reader written for Data API answers: one pass over the bytes straight into the values
/// `JSONSerialization` gives (`[String: Any]`, `[Any]`, `String`, `NSNumber`, `NSNull`), without the
/// intermediate representation `JSONSerialization` builds first. Old callers see the same types.
///
/// Why: a 10,000-record found set spends most of its client time in `JSONSerialization` (fm-bench's
/// found-set scenario; about 2.4× Python's `json.loads` on the same bytes on Linux).
///
/// Agreement with `JSONSerialization` (the oracle of the fuzz test in `JSONReaderTests`):
/// * RFC 8259 grammar; a UTF-8 byte order mark and surrounding whitespace are skipped; a trailing comma
///   before `]` or `}` is accepted (as `JSONSerialization` on Linux does); duplicate keys: the last wins.
/// * Strings must be valid UTF-8 with no raw control characters; `\u` escapes are decoded with surrogate
///   pairs, and a lone surrogate is an error.
/// * Numbers: `JSONSerialization`'s types: an integer is an `Int` (or `UInt64`) `NSNumber` when it fits,
///   a long number (more than 17 characters) an `NSDecimalNumber`, any other a `Double` `NSNumber` (an
///   overflow to infinity is an error); `true`/`false` are boolean `NSNumber`s.
/// * Nesting deeper than ``maxDepth`` is an error, never a stack overflow.
enum JSONReader {
    /// The deepest nesting accepted (arrays and objects), as `JSONSerialization`.
    static let maxDepth = 512

    /// Why the bytes are not JSON, and where.
    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses `data`; `fragments` allows a scalar at the top level.
    static func parse(_ data: Data, fragments: Bool = false) throws(Failure) -> Any {
        let result: Result<Any, Failure> = data.withUnsafeBytes { buffer in
            var parser = Parser(buffer)
            do throws(Failure) {
                return .success(try parser.document(fragments: fragments))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses a Data API answer that must be a JSON object.
    static func object(_ data: Data) throws(Failure) -> [String: Any] {
        guard let object = try parse(data) as? [String: Any] else {
            throw Failure(offset: 0, reason: "the top level is not an object")
        }
        return object
    }

    // Shared immutable values: booleans, null and small integers are the same objects every time.
    static let trueValue = NSNumber(value: true)
    static let falseValue = NSNumber(value: false)
    static let null = NSNull()
    static let smallIntegers: [NSNumber] = (0..<256).map { NSNumber(value: $0) }

    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        var depth = 0
        /// The size of the last container closed at each of the first depths: the capacity to start with.
        var sizes: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

        @inline(__always) func hint(_ depth: Int) -> Int {
            switch depth {
            case 1: return sizes.0
            case 2: return sizes.1
            case 3: return sizes.2
            case 4: return sizes.3
            case 5: return sizes.4
            case 6: return sizes.5
            case 7: return sizes.6
            case 8: return sizes.7
            default: return 0
            }
        }

        @inline(__always) mutating func remember(_ count: Int, _ depth: Int) {
            let size = Swift.min(count, 4096)
            switch depth {
            case 1: sizes.0 = size
            case 2: sizes.1 = size
            case 3: sizes.2 = size
            case 4: sizes.3 = size
            case 5: sizes.4 = size
            case 6: sizes.5 = size
            case 7: sizes.6 = size
            case 8: sizes.7 = size
            default: break
            }
        }

        init(_ bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        @inline(__always) func fail(_ reason: String) -> Failure {
            Failure(offset: index, reason: reason)
        }

        @inline(__always) func peek() -> UInt8? {
            index < bytes.count ? bytes[index] : nil
        }

        @inline(__always) mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func document(fragments: Bool) throws(Failure) -> Any {
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
            skipSpace()
            guard let first = peek() else { throw fail("empty input") }
            if !fragments, first != UInt8(ascii: "{"), first != UInt8(ascii: "[") {
                throw fail("the top level is not an object or an array")
            }
            let value = try self.value()
            skipSpace()
            guard index == bytes.count else { throw fail("garbage after the value") }
            return value
        }

        mutating func value() throws(Failure) -> Any {
            guard let byte = peek() else { throw fail("unexpected end") }
            switch byte {
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "t"): try literal("true"); return JSONReader.trueValue
            case UInt8(ascii: "f"): try literal("false"); return JSONReader.falseValue
            case UInt8(ascii: "n"): try literal("null"); return JSONReader.null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("unexpected end") }
            let expected = word.utf8Start
            for offset in 0..<count where bytes[index + offset] != expected[offset] {
                throw fail("invalid literal")
            }
            index += count
        }

        mutating func enter() throws(Failure) {
            depth += 1
            if depth > JSONReader.maxDepth { throw fail("nesting deeper than \(JSONReader.maxDepth)") }
        }

        mutating func object() throws(Failure) -> [String: Any] {
            try enter()
            index += 1 // {
            skipSpace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return [:]
            }
            // Sized like the last object at this depth (the records of a found set share one shape), so the
            // dictionary is not re-hashed at each doubling while it grows.
            var object = [String: Any](minimumCapacity: hint(depth))
            while true {
                guard peek() == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                skipSpace()
                guard peek() == UInt8(ascii: ":") else { throw fail("expected ':'") }
                index += 1
                skipSpace()
                object[key] = try value() // duplicate keys: the last wins
                skipSpace()
                guard let next = peek() else { throw fail("unexpected end in an object") }
                index += 1
                if next == UInt8(ascii: "}") { break }
                guard next == UInt8(ascii: ",") else { throw fail("expected ',' or '}'") }
                skipSpace()
                if peek() == UInt8(ascii: "}") { // a trailing comma, as JSONSerialization accepts
                    index += 1
                    break
                }
            }
            remember(object.count, depth)
            depth -= 1
            return object
        }

        mutating func array() throws(Failure) -> [Any] {
            try enter()
            index += 1 // [
            skipSpace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return []
            }
            var array: [Any] = []
            array.reserveCapacity(hint(depth))
            while true {
                array.append(try value())
                skipSpace()
                guard let next = peek() else { throw fail("unexpected end in an array") }
                index += 1
                if next == UInt8(ascii: "]") { break }
                guard next == UInt8(ascii: ",") else { throw fail("expected ',' or ']'") }
                skipSpace()
                if peek() == UInt8(ascii: "]") {
                    index += 1
                    break
                }
            }
            remember(array.count, depth)
            depth -= 1
            return array
        }

        // MARK: Strings

        mutating func string() throws(Failure) -> String {
            index += 1 // opening quote
            let start = index
            var ascii = true
            // Fast path: no escape; the bytes are taken as they are (validated when not ASCII).
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    if ascii { return String(decoding: slice, as: UTF8.self) }
                    guard let text = String(validating: slice, as: UTF8.self) else {
                        index = start
                        throw fail("invalid UTF-8 in a string")
                    }
                    return text
                }
                if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
                if byte < 0x20 { throw fail("a control character in a string") }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            throw fail("unterminated string")
        }

        /// The slow path: a string with escapes, rebuilt byte by byte.
        mutating func escapedString(from start: Int) throws(Failure) -> String {
            var buffer: [UInt8] = []
            buffer.reserveCapacity(index - start + 16)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let text = String(validating: buffer, as: UTF8.self) else {
                        throw fail("invalid UTF-8 in a string")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escape = peek() else { throw fail("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
                    case UInt8(ascii: "b"): buffer.append(0x08)
                    case UInt8(ascii: "f"): buffer.append(0x0C)
                    case UInt8(ascii: "n"): buffer.append(0x0A)
                    case UInt8(ascii: "r"): buffer.append(0x0D)
                    case UInt8(ascii: "t"): buffer.append(0x09)
                    case UInt8(ascii: "u"): try unicodeEscape(into: &buffer)
                    default: throw fail("invalid escape")
                    }
                case 0..<0x20:
                    throw fail("a control character in a string")
                default:
                    buffer.append(byte)
                    index += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("a short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw fail("invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        mutating func unicodeEscape(into buffer: inout [UInt8]) throws(Failure) {
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("a lone high surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("a high surrogate without its low half") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("a lone low surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
            UTF8.encode(unicode) { buffer.append($0) }
        }

        // MARK: Numbers

        mutating func number() throws(Failure) -> Any {
            let start = index
            var negative = false
            if bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            // Integer part: 0, or a non-zero digit then digits.
            guard let first = peek(), first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { throw fail("invalid number") }
            var mantissa: UInt64 = 0
            var digits = 0
            var overflow = false
            if first == UInt8(ascii: "0") {
                index += 1
                if let next = peek(), next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9") { throw fail("a leading zero") }
            } else {
                while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    if digits < 19 {
                        mantissa = mantissa &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                    } else {
                        overflow = true
                    }
                    digits += 1
                    index += 1
                }
            }
            var isInteger = true
            var fractionDigits = 0
            if peek() == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw fail("a fraction without digits") }
                while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    if digits < 19 {
                        mantissa = mantissa &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                        if mantissa != 0 || digits > 0 { digits += 1 }
                        fractionDigits += 1
                    } else {
                        overflow = true
                    }
                    index += 1
                }
            }
            var exponent = 0
            var hasExponent = false
            var lowercaseExponentAt: Int?
            if let byte = peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                isInteger = false
                hasExponent = true
                if byte == UInt8(ascii: "e") { lowercaseExponentAt = index }
                index += 1
                var negativeExponent = false
                if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                    negativeExponent = sign == UInt8(ascii: "-")
                    index += 1
                }
                guard let digit = peek(), digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { throw fail("an exponent without digits") }
                while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    if exponent < 100_000 { exponent = exponent * 10 + Int(byte - UInt8(ascii: "0")) }
                    index += 1
                }
                if negativeExponent { exponent = -exponent }
            }
            // The number type follows JSONSerialization's choice: it counts the characters before a
            // lowercase `e` (sign and point included); integers of up to 19 (negative) or 20 characters are
            // Int64/UInt64, longer numbers with a small exponent are decimals, the rest doubles.
            let length = (lowercaseExponentAt ?? index) - start
            if isInteger, !overflow {
                if negative, length <= 19 { return NSNumber(value: -Int(mantissa)) }
                if !negative, length <= 20 {
                    if mantissa < 256 { return JSONReader.smallIntegers[Int(mantissa)] }
                    if mantissa <= UInt64(Int.max) { return NSNumber(value: Int(mantissa)) }
                    return NSNumber(value: mantissa)
                }
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger, !negative, length <= 20, let value = UInt64(text) {
                return value <= UInt64(Int.max) ? NSNumber(value: Int(value)) : NSNumber(value: value)
            }
            let decimalExponent = lowercaseExponentAt == nil ? 0 : exponent
            if length > 17, (-128...127).contains(decimalExponent),
               let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), decimal.isFinite {
                return NSDecimalNumber(decimal: decimal)
            }
            // Exact fast path (Clinger): a mantissa below 2^53 scaled by an exact power of ten.
            let scale = (hasExponent ? exponent : 0) - fractionDigits
            if !overflow, mantissa < 1 << 53, scale >= -22, scale <= 22 {
                var value = Double(mantissa)
                value = scale < 0 ? value / JSONReader.powersOfTen[-scale] : value * JSONReader.powersOfTen[scale]
                return NSNumber(value: negative ? -value : value)
            }
            guard let value = Double(text), value.isFinite else { throw fail("a number out of range") }
            return NSNumber(value: value)
        }
    }

    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }
}

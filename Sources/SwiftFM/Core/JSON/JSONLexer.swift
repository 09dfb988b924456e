import Foundation

/// The lexical layer shared by ``JSONReader`` (which builds `JSONSerialization`'s value tree) and
/// ``JSONTape`` (which indexes the bytes for the typed decoder): whitespace, punctuation, literals,
/// strings and numbers, with RFC 8259's rules and `JSONSerialization`'s choices (see ``JSONReader``).
struct JSONLexer {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    @inline(__always) func fail(_ reason: String) -> JSONReader.Failure {
        JSONReader.Failure(offset: index, reason: reason)
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

    /// Skips a byte order mark and whitespace; the first value must be a container unless `fragments`.
    mutating func start(fragments: Bool) throws(JSONReader.Failure) {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipSpace()
        guard let first = peek() else { throw fail("empty input") }
        if !fragments, first != UInt8(ascii: "{"), first != UInt8(ascii: "[") {
            throw fail("the top level is not an object or an array")
        }
    }

    /// Only whitespace may follow the top-level value.
    mutating func finish() throws(JSONReader.Failure) {
        skipSpace()
        guard index == bytes.count else { throw fail("garbage after the value") }
    }

    /// The `:` between a key and its value, with the whitespace around it.
    @inline(__always) mutating func colon() throws(JSONReader.Failure) {
        skipSpace()
        guard peek() == UInt8(ascii: ":") else { throw fail("expected ':'") }
        index += 1
        skipSpace()
    }

    /// After a member of a container: `true` at its end (`closing`, a trailing comma accepted as
    /// `JSONSerialization` on Linux does), `false` after a `,` with another member to come.
    @inline(__always) mutating func endOfMember(closing: UInt8) throws(JSONReader.Failure) -> Bool {
        skipSpace()
        guard let next = peek() else {
            throw fail(closing == UInt8(ascii: "}") ? "unexpected end in an object" : "unexpected end in an array")
        }
        index += 1
        if next == closing { return true }
        guard next == UInt8(ascii: ",") else {
            throw fail(closing == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
        }
        skipSpace()
        if peek() == closing {
            index += 1
            return true
        }
        return false
    }

    mutating func literal(_ word: StaticString) throws(JSONReader.Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end") }
        let expected = word.utf8Start
        for offset in 0..<count where bytes[index + offset] != expected[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    // MARK: Strings

    /// Where a string's content lies (between the quotes) and what reading it needs.
    struct StringToken {
        var start: Int
        var end: Int
        /// Backslash escapes to decode.
        var escaped: Bool
        /// Bytes above 0x7F (validated by the lexer when asked to, else when the string is made).
        var nonASCII: Bool

        /// The text; `nil` only for invalid UTF-8 that the lexer was not asked to validate.
        func makeString(_ bytes: UnsafeRawBufferPointer, scratch: inout [UInt8]) -> String? {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            if !escaped {
                return nonASCII ? String(validating: raw, as: UTF8.self) : String(decoding: raw, as: UTF8.self)
            }
            scratch.removeAll(keepingCapacity: true)
            JSONLexer.unescape(raw, into: &scratch)
            return nonASCII ? String(validating: scratch, as: UTF8.self) : String(decoding: scratch, as: UTF8.self)
        }

        /// Whether the content equals `text` (compared as bytes when there is no escape).
        func equals(_ text: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
            if escaped {
                var scratch: [UInt8] = []
                return makeString(bytes, scratch: &scratch) == text
            }
            var text = text
            return text.withUTF8 { utf8 in
                utf8.count == end - start && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress! + start, utf8.count) == 0)
            }
        }
    }

    /// Scans a string from its opening quote: escapes are checked (surrogate pairs included) and, when
    /// `validating`, non-ASCII bytes are checked to be UTF-8; nothing is allocated.
    mutating func string(validating: Bool) throws(JSONReader.Failure) -> StringToken {
        index += 1 // opening quote
        let start = index
        var escaped = false
        var nonASCII = false
        while index < bytes.count {
            // Eight bytes at a time, straight to the first that ends, escapes or needs a check (most are plain).
            if index &+ 8 <= bytes.count {
                let plain = JSONLexer.plainBytes(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                index &+= plain
                if plain == 8 { continue }
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let token = StringToken(start: start, end: index, escaped: escaped, nonASCII: nonASCII)
                if validating, nonASCII, !JSONLexer.isValidUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<index])) {
                    index = start
                    throw fail("invalid UTF-8 in a string")
                }
                index += 1
                return token
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try checkEscape()
                continue
            }
            if byte < 0x20 { throw fail("a control character in a string") }
            if byte >= 0x80 { nonASCII = true }
            index += 1
        }
        throw fail("unterminated string")
    }

    /// How many of the eight bytes of `word` (in memory order, read little-endian) come before the first that ends
    /// or escapes a string or needs a check: `"`, `\`, a byte below 0x20 or above 0x7F; 8 when there is none. The
    /// classic test for a zero byte, on the word XORed with each byte sought, flags the first such byte exactly
    /// (a borrow can flag a wrong byte only above a right one).
    @inline(__always) static func plainBytes(_ word: UInt64) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* UInt64(UInt8(ascii: "\""))), backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word) | word
        return (found & highs).trailingZeroBitCount &>> 3
    }

    /// Checks one escape at `index` (the backslash) and moves past it.
    private mutating func checkEscape() throws(JSONReader.Failure) {
        index += 1
        guard let escape = peek() else { throw fail("unterminated escape") }
        index += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            let scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("a lone high surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("a high surrogate without its low half") }
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("a lone low surrogate")
            }
        default:
            throw fail("invalid escape")
        }
    }

    private mutating func hex4() throws(JSONReader.Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = JSONLexer.hexDigit(bytes[index]) else { throw fail("invalid \\u escape") }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    @inline(__always) static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// Decodes the escapes of a string the lexer checked.
    static func unescape(_ raw: UnsafeRawBufferPointer, into buffer: inout [UInt8]) {
        buffer.reserveCapacity(raw.count)
        var index = 0
        func hex(_ at: Int) -> UInt32 {
            (0..<4).reduce(0) { value, offset in value << 4 | (hexDigit(raw[at + offset]) ?? 0) }
        }
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < raw.count else {
                buffer.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u") where index + 4 <= raw.count:
                var scalar = hex(index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar), index + 6 <= raw.count {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (hex(index + 2) - 0xDC00)
                    index += 6
                }
                if let unicode = Unicode.Scalar(scalar) { UTF8.encode(unicode) { buffer.append($0) } }
            default: buffer.append(escape) // " \ /
            }
        }
    }

    /// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
    static func isValidUTF8(_ raw: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = raw.count
        while index < count {
            let lead = raw[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            @inline(__always) func continuation(_ at: Int) -> Bool { at < count && raw[at] & 0xC0 == 0x80 }
            switch lead {
            case 0xC2...0xDF:
                guard continuation(index + 1) else { return false }
                index += 2
            case 0xE0...0xEF:
                guard continuation(index + 1), continuation(index + 2) else { return false }
                let second = raw[index + 1]
                if lead == 0xE0, second < 0xA0 { return false } // overlong
                if lead == 0xED, second > 0x9F { return false } // a surrogate
                index += 3
            case 0xF0...0xF4:
                guard continuation(index + 1), continuation(index + 2), continuation(index + 3) else { return false }
                let second = raw[index + 1]
                if lead == 0xF0, second < 0x90 { return false } // overlong
                if lead == 0xF4, second > 0x8F { return false } // above U+10FFFF
                index += 4
            default:
                return false
            }
        }
        return true
    }

    // MARK: Arrays read in parts

    /// Where an array's parts are: the byte after its `[`, the commas between parts, its `]`.
    struct Split {
        var start: Int
        var commas: [Int]
        var close: Int
    }

    /// Finds the top-level commas of the array opened at `open` nearest to equal shares of its bytes, and
    /// its closing bracket, by following only quotes, escapes and brackets; `nil` when it does not close
    /// (the bytes are then read in one part, which reports the error).
    static func split(_ bytes: UnsafeRawBufferPointer, open: Int, parts: Int) -> Split? {
        var commas: [Int] = []
        var nextShare = 0
        var share = 0
        var level = 0
        var index = open + 1
        let count = bytes.count
        // A first pass is not worth it: the share is estimated from the bytes left in the document.
        share = (count - open) / parts
        nextShare = open + share
        while index < count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                while index < count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                level += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if level == 0 {
                    guard byte == UInt8(ascii: "]"), !commas.isEmpty else { return nil }
                    return Split(start: open + 1, commas: commas, close: index)
                }
                level -= 1
            case UInt8(ascii: ","):
                if level == 0, index >= nextShare, commas.count < parts - 1 {
                    commas.append(index)
                    nextShare = index + share
                }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    // MARK: Numbers

    /// 10^0 … 10^10, each exact in a `Float`.
    static let floatPowersOfTen: [Float] = (0...10).map { exponent in
        var value: Float = 1
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// A number's text and what reading it needs (the lexer has checked its grammar).
    struct NumberToken {
        var start: Int
        var end: Int
        var negative: Bool
        /// The first 19 significant digits.
        var mantissa: UInt64
        /// More digits than ``mantissa`` holds.
        var overflow: Bool
        /// No fraction and no exponent.
        var isInteger: Bool
        var fractionDigits: Int
        var exponent: Int
        var hasExponent: Bool
        /// Where a lowercase `e` is (`JSONSerialization` counts the characters before it).
        var lowercaseExponentAt: Int?

        /// The characters `JSONSerialization` counts to choose the type.
        var length: Int { (lowercaseExponentAt ?? end) - start }

        func text(_ bytes: UnsafeRawBufferPointer) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }

        /// The value as an exact integer, when it is one that fits in 64 bits.
        var exactInt64: Int64? {
            guard isInteger, !overflow else { return nil }
            if negative { return mantissa <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- mantissa) : nil }
            return mantissa <= UInt64(Int64.max) ? Int64(mantissa) : nil
        }

        /// The value as an exact unsigned integer, when it is a non-negative one that fits in 64 bits.
        var exactUInt64: UInt64? {
            guard isInteger, !overflow else { return nil }
            return negative ? (mantissa == 0 ? 0 : nil) : mantissa
        }

        /// The nearest `Double` (infinite when out of range).
        func double(_ bytes: UnsafeRawBufferPointer) -> Double {
            // Exact fast path (Clinger): a mantissa below 2^53 scaled by an exact power of ten.
            let scale = (hasExponent ? exponent : 0) - fractionDigits
            if !overflow, mantissa < 1 << 53, scale >= -22, scale <= 22 {
                var value = Double(mantissa)
                value = scale < 0 ? value / JSONReader.powersOfTen[-scale] : value * JSONReader.powersOfTen[scale]
                return negative ? -value : value
            }
            return Double(text(bytes)) ?? .nan
        }

        /// The nearest `Float` (infinite when out of range), from the characters: never through `Double`,
        /// whose rounding then `Float`'s can be one unit off.
        func float(_ bytes: UnsafeRawBufferPointer) -> Float {
            // Exact fast path (Clinger): a mantissa below 2^24 scaled by an exact power of ten (up to 10^10).
            let scale = (hasExponent ? exponent : 0) - fractionDigits
            if !overflow, mantissa < 1 << 24, scale >= -10, scale <= 10 {
                var value = Float(mantissa)
                value = scale < 0 ? value / JSONLexer.floatPowersOfTen[-scale] : value * JSONLexer.floatPowersOfTen[scale]
                return negative ? -value : value
            }
            return Float(text(bytes)) ?? .nan
        }

        /// What a number is, by `JSONSerialization`'s rules.
        enum Value {
            case int(Int)
            case uint(UInt64)
            case decimal(Decimal)
            case double(Double)
        }

        /// The value by `JSONSerialization`'s choice of type: an integer that fits is an `Int` (or a
        /// `UInt64`), a long number (more than 17 characters) a `Decimal`, any other a `Double`; a number
        /// out of the `Double` range is an error.
        func classify(_ bytes: UnsafeRawBufferPointer) throws(JSONReader.Failure) -> Value {
            if isInteger, !overflow {
                if negative, length <= 19 { return .int(-Int(mantissa)) }
                if !negative, length <= 20 {
                    return mantissa <= UInt64(Int.max) ? .int(Int(mantissa)) : .uint(mantissa)
                }
            }
            if !overflow, length <= 17 { // the usual case: no text to make
                let value = double(bytes)
                guard value.isFinite else { throw JSONReader.Failure(offset: start, reason: "a number out of range") }
                return .double(value)
            }
            let text = self.text(bytes)
            if isInteger, !negative, length <= 20, let value = UInt64(text) {
                return value <= UInt64(Int.max) ? .int(Int(value)) : .uint(value)
            }
            let decimalExponent = lowercaseExponentAt == nil ? 0 : exponent
            if length > 17, (-128...127).contains(decimalExponent),
               let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), decimal.isFinite {
                return .decimal(overflow ? Self.faithful(decimal, to: text) : decimal)
            }
            let value = double(bytes)
            guard value.isFinite else { throw JSONReader.Failure(offset: start, reason: "a number out of range") }
            return .double(value)
        }

        /// A `Decimal` holds 38 digits: for a number with more, the one of `decimal` (the text cut to 38
        /// digits) and its neighbours in the last digit whose text reads as the same `Double` and `Float` as
        /// the number's own characters (`Double(String)`, `Float(String)`), so a raw record's long number
        /// decodes typed to the bits the server's text gives. Cutting can cross the midpoint between two
        /// doubles (or two floats) only when the text lies within 10^-37 of it, and those points are at least
        /// half a double's unit apart, so one of the three is always right.
        static func faithful(_ decimal: Decimal, to text: String) -> Decimal {
            guard let double = Double(text), let float = Float(text) else { return decimal }
            for candidate in [decimal, decimal.nextUp, decimal.nextDown] {
                let written = candidate.description
                if let readDouble = Double(written), readDouble.bitPattern == double.bitPattern,
                   let readFloat = Float(written), readFloat.bitPattern == float.bitPattern {
                    return candidate
                }
            }
            return decimal
        }

        /// The `JSONSerialization` value: an `Int`/`UInt64` `NSNumber`, an `NSDecimalNumber` or a `Double`
        /// `NSNumber` (``classify(_:)``); small integers are shared objects.
        @inline(__always) func object(_ bytes: UnsafeRawBufferPointer) throws(JSONReader.Failure) -> Any {
            switch try classify(bytes) {
            case .int(let value):
                if value >= 0, value < 256 { return JSONReader.smallIntegers[value] }
                return NSNumber(value: value)
            case .uint(let value): return NSNumber(value: value)
            case .decimal(let value): return NSDecimalNumber(decimal: value)
            case .double(let value): return NSNumber(value: value)
            }
        }
    }

    /// Scans a number (RFC 8259 grammar) from its first character.
    mutating func number() throws(JSONReader.Failure) -> NumberToken {
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
        return NumberToken(start: start, end: index, negative: negative, mantissa: mantissa, overflow: overflow, isInteger: isInteger,
                           fractionDigits: fractionDigits, exponent: exponent, hasExponent: hasExponent,
                           lowercaseExponentAt: lowercaseExponentAt)
    }
}

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
    ///
    /// Objects reuse the shape of the previous object at their depth (see `Parser.Template`) in documents
    /// of at least `templatesFrom` bytes: in a small answer every object is new and the bookkeeping would
    /// cost more than it saves.
    ///
    /// With `parts` above 1 (``FMConfiguration/parallelDecoding``), an array of at least `splitFrom` bytes (the
    /// `data` of a large found set) is read in up to `parts` parts on as many threads (``ParallelParts``): its
    /// element boundaries are found by a quick structural scan, each part is read (and checked) by its own
    /// parser, and the parts are joined in order. With 1 (the default), all is read on the calling thread.
    static func parse(_ data: Data, fragments: Bool = false, templatesFrom: Int = 32_768, splitFrom: Int = 1 << 20,
                      parts: Int = 1) throws(Failure) -> Any {
        let result: Result<Any, Failure> = data.withUnsafeBytes { buffer in
            var parser = Parser(buffer, templates: buffer.count >= templatesFrom)
            parser.splitFrom = splitFrom
            parser.parts = parts
            do throws(Failure) {
                return .success(try parser.document(fragments: fragments))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The most parts a large array is read in when ``FMConfiguration/parallelDecoding`` is on: the active
    /// cores, at most 8 (asked once: on Linux the answer may come from reading files).
    static let cores = max(1, min(8, ProcessInfo.processInfo.activeProcessorCount))

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

    /// Builds the `JSONSerialization`-typed tree; the lexing is ``JSONLexer``'s.
    private struct Parser {
        var lexer: JSONLexer
        var depth = 0
        /// Reused by strings with escapes.
        var scratch: [UInt8] = []
        /// The size of the last container closed at each of the first depths: the capacity to start with. Eight
        /// before any: grown one member at a time from empty, the dictionaries of one record's answer were re-hashed
        /// about 40 times (3 from eight).
        var sizes: (Int, Int, Int, Int, Int, Int, Int, Int) = (8, 8, 8, 8, 8, 8, 8, 8)

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

        init(_ bytes: UnsafeRawBufferPointer, templates: Bool) {
            lexer = JSONLexer(bytes)
            if templates { shelves = Array(repeating: Shelf(), count: 8) }
        }

        mutating func document(fragments: Bool) throws(Failure) -> Any {
            try lexer.start(fragments: fragments)
            let value = try self.value()
            try lexer.finish()
            return value
        }

        mutating func value() throws(Failure) -> Any {
            guard let byte = lexer.peek() else { throw lexer.fail("unexpected end") }
            switch byte {
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "t"): try lexer.literal("true"); return JSONReader.trueValue
            case UInt8(ascii: "f"): try lexer.literal("false"); return JSONReader.falseValue
            case UInt8(ascii: "n"): try lexer.literal("null"); return JSONReader.null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try lexer.number().object(lexer.bytes)
            default: throw lexer.fail("unexpected character")
            }
        }

        @inline(__always) mutating func string() throws(Failure) -> String {
            let token = try lexer.string(validating: false)
            guard let text = token.makeString(lexer.bytes, scratch: &scratch) else {
                throw Failure(offset: token.start, reason: "invalid UTF-8 in a string")
            }
            return text
        }

        mutating func enter() throws(Failure) {
            depth += 1
            if depth > JSONReader.maxDepth { throw lexer.fail("nesting deeper than \(JSONReader.maxDepth)") }
        }

        /// The last object read at a depth: its keys (as byte ranges of the document) and where each sits in
        /// the dictionary. The next object at that depth with the same keys in the same order (the records
        /// of a found set, their `fieldData`) starts as a copy of it and has its values replaced in place:
        /// no key is hashed again.
        final class Template {
            var object: [String: Any]
            var keys: [Range<Int>]
            var indices: [Dictionary<String, Any>.Index]

            init(object: [String: Any], keys: [Range<Int>], indices: [Dictionary<String, Any>.Index]) {
                self.object = object
                self.keys = keys
                self.indices = indices
            }
        }

        /// The templates of one depth: a few shapes (a record's `fieldData` and `portalData` are at the same
        /// depth), found by their first key; given up where shapes keep changing (then it would cost more
        /// than it saves).
        struct Shelf {
            var templates: [Template] = []
            var next = 0
            var hits = 0
            var misses = 0

            var isWorthIt: Bool { misses <= hits + 16 }

            func template(startingWith key: Range<Int>, _ same: (Range<Int>, Range<Int>) -> Bool) -> Template? {
                templates.first { !$0.keys.isEmpty && same($0.keys[0], key) }
            }

            mutating func add(_ template: Template) {
                if templates.count < 4 {
                    templates.append(template)
                } else {
                    templates[next] = template
                    next = (next + 1) % 4
                }
            }
        }

        /// Templates for the first depths (index `depth - 1`).
        var shelves: [Shelf] = []

        @inline(__always) func sameBytes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
            a.count == b.count && (a.isEmpty || memcmp(lexer.bytes.baseAddress! + a.lowerBound, lexer.bytes.baseAddress! + b.lowerBound, a.count) == 0)
        }

        mutating func object() throws(Failure) -> [String: Any] {
            try enter()
            lexer.index += 1 // {
            lexer.skipSpace()
            if lexer.peek() == UInt8(ascii: "}") {
                lexer.index += 1
                depth -= 1
                return [:]
            }
            let shelved = depth <= shelves.count && shelves[depth - 1].isWorthIt
            guard lexer.peek() == UInt8(ascii: "\"") else { throw lexer.fail("expected a key") }
            var keyToken = try lexer.string(validating: false)
            let template = shelved ? shelves[depth - 1].template(startingWith: keyToken.start..<keyToken.end, sameBytes) : nil
            var keys: [Range<Int>] = []
            var object: [String: Any]
            var matched = 0 // members read into the copy of the template so far
            if let template {
                object = template.object
                keys = template.keys
            } else {
                // Sized like the last object at this depth, so the dictionary is not re-hashed while it grows.
                object = [String: Any](minimumCapacity: hint(depth))
            }
            var inTemplate = template != nil
            var members = 0
            while true {
                let keyRange = keyToken.start..<keyToken.end
                if inTemplate, let template, matched < template.keys.count, sameBytes(keyRange, template.keys[matched]) {
                    try lexer.colon()
                    object.values[template.indices[matched]] = try value()
                    matched += 1
                } else {
                    if inTemplate, let template {
                        // The shape differs: keep what was read, drop the template's other keys.
                        object = Self.prefix(of: template, count: matched, from: object)
                        keys = Array(template.keys[..<matched])
                        inTemplate = false
                    }
                    guard let key = keyToken.makeString(lexer.bytes, scratch: &scratch) else {
                        throw Failure(offset: keyToken.start, reason: "invalid UTF-8 in a string")
                    }
                    try lexer.colon()
                    object[key] = try value() // duplicate keys: the last wins
                    if shelved { keys.append(keyRange) }
                }
                members += 1
                if try lexer.endOfMember(closing: UInt8(ascii: "}")) { break }
                guard lexer.peek() == UInt8(ascii: "\"") else { throw lexer.fail("expected a key") }
                keyToken = try lexer.string(validating: false)
            }
            if shelved {
                if inTemplate, let template, matched == template.keys.count {
                    shelves[depth - 1].hits += 1
                } else {
                    if inTemplate, let template {
                        object = Self.prefix(of: template, count: matched, from: object) // fewer keys than the template
                    }
                    shelves[depth - 1].misses += 1
                    if object.count == members, members <= 256 { shelveTemplate(object: object, keys: keys) }
                }
            }
            remember(object.count, depth)
            depth -= 1
            return object
        }

        /// Makes `object` (no duplicate key) the template of its shape at this depth.
        mutating func shelveTemplate(object: [String: Any], keys: [Range<Int>]) {
            var indices: [Dictionary<String, Any>.Index] = []
            indices.reserveCapacity(keys.count)
            for range in keys {
                let key = JSONLexer.StringToken(start: range.lowerBound, end: range.upperBound, escaped: true, nonASCII: true)
                    .makeString(lexer.bytes, scratch: &scratch)
                guard let key, let index = object.index(forKey: key) else { return }
                indices.append(index)
            }
            shelves[depth - 1].add(Template(object: object, keys: keys, indices: indices))
        }

        /// A new dictionary with the first `count` keys of `template` and their values read into `object`.
        static func prefix(of template: Template, count: Int, from object: [String: Any]) -> [String: Any] {
            var fresh = [String: Any](minimumCapacity: template.keys.count)
            for index in template.indices[..<count] {
                let (key, value) = object[index]
                fresh[key] = value
            }
            return fresh
        }

        mutating func array() throws(Failure) -> [Any] {
            try enter()
            let open = lexer.index
            lexer.index += 1 // [
            lexer.skipSpace()
            if lexer.peek() == UInt8(ascii: "]") {
                lexer.index += 1
                depth -= 1
                return []
            }
            if parts > 1, depth <= 4, lexer.bytes.count - open >= splitFrom, let split = JSONLexer.split(lexer.bytes, open: open, parts: parts) {
                let array = try readInParts(split)
                depth -= 1
                return array
            }
            var array: [Any] = []
            array.reserveCapacity(hint(depth))
            while true {
                array.append(try value())
                if try lexer.endOfMember(closing: UInt8(ascii: "]")) { break }
            }
            remember(array.count, depth)
            depth -= 1
            return array
        }

        // MARK: An array read in parts

        /// Arrays of at least this many bytes are read in parts (when ``parts`` is above 1).
        var splitFrom = Int.max
        /// How many parts at most (the cores).
        var parts = 1

        /// Reads the parts of `split` at once, each with its own parser, and joins them in order; the lexer
        /// ends after the `]`.
        mutating func readInParts(_ split: JSONLexer.Split) throws(Failure) -> [Any] {
            let reader = PartReader(depth: depth, templates: !shelves.isEmpty)
            guard let results = ParallelParts.read(lexer.bytes, split, with: reader) else {
                throw Failure(offset: split.start, reason: "a part of an array was not read")
            }
            var array: [Any] = []
            for result in results {
                switch result {
                case .success(let elements):
                    if array.isEmpty { array.reserveCapacity(elements.count * results.count) }
                    array.append(contentsOf: elements)
                case .failure(let failure):
                    throw failure
                }
            }
            lexer.index = split.close + 1
            return array
        }

        /// The elements from here to the end of the bytes (one part of an array): values separated by commas;
        /// a trailing comma only in the `last` part (as before `]`).
        mutating func elements(last: Bool) -> Result<[Any], Failure> {
            var array: [Any] = []
            do throws(Failure) {
                lexer.skipSpace()
                if last, lexer.peek() == nil { return .success(array) } // the part began after a trailing comma
                while true {
                    lexer.skipSpace()
                    array.append(try value())
                    lexer.skipSpace()
                    guard let next = lexer.peek() else { return .success(array) }
                    guard next == UInt8(ascii: ",") else { throw lexer.fail("expected ',' or ']'") }
                    lexer.index += 1
                    lexer.skipSpace()
                    if last, lexer.peek() == nil { return .success(array) } // a trailing comma before ]
                }
            } catch {
                return .failure(error)
            }
        }
    }

    /// Reads one part of an array at `depth`, with its own parser.
    private struct PartReader: PartReading {
        let depth: Int
        let templates: Bool

        func read(_ bytes: UnsafeRawBufferPointer, start: Int, last: Bool) -> Result<[Any], Failure> {
            var parser = Parser(bytes, templates: templates)
            parser.lexer.index = start
            parser.depth = depth
            return parser.elements(last: last)
        }
    }

    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }
}

/// Readers of the values ``JSONReader`` (and `JSONSerialization`) give: a string or an exact integer out of `Any`.
enum RawJSON {
    static func string(_ value: Any?) -> String? {
        switch value {
        case let text as String: return text
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }

    /// An integer, or `nil` when `value` is not one that `Int` holds exactly: `1e300`, `2^63` or `3.5`
    /// read as absent rather than wrapped (`NSNumber.intValue` would give `Int.min` or truncate).
    static func int(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber: return exactInt(number)
        case let text as String: return Int(text)
        default: return nil
        }
    }

    /// Whether a parsed JSON number is a boolean (`true`/`false`) rather than a number.
    static func isBoolean(_ number: NSNumber) -> Bool {
        if number === JSONReader.trueValue || number === JSONReader.falseValue { return true }
        // Plain NSNumbers are never booleans; only the (rare) subclasses need the type code.
        return type(of: number) != NSNumber.self && !(number is NSDecimalNumber) && String(cString: number.objCType) == "c"
    }

    /// A count of `object` (a `dataInfo` or `portalDataInfo`, named `name`): 0 when absent or `null`, the whole
    /// number (or digits as text) it holds; `-1007` for anything else (a fraction, a number beyond `Int`, words, a
    /// boolean, an array), as the `Decodable` readings of the same object say.
    static func count(_ object: [String: Any], _ key: String, in name: String, status: Int) throws(FMError) -> Int {
        switch object[key] {
        case nil, is NSNull:
            return 0
        case let number as NSNumber where isBoolean(number):
            throw FMError.malformed("\(name).\(key) is not an integer (a boolean)", status: status)
        case let value:
            guard let count = int(value) else { throw FMError.malformed("\(name).\(key) is not an integer", status: status) }
            return count
        }
    }

    /// The exact `Int` value of a JSON number, or `nil` when it has none.
    static func exactInt(_ number: NSNumber) -> Int? {
        // Integers (also beyond 2^53) keep every digit in their decimal text.
        if let integer = Int(number.stringValue) { return integer }
        // Integral doubles (`7.0`); beyond 2^53 a double no longer says which integer was sent.
        let double = number.doubleValue
        guard abs(double) <= 9_007_199_254_740_992 else { return nil }
        return Int(exactly: double)
    }
}

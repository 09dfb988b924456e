import Foundation

/// A JSON document indexed in one pass: a flat array of nodes pointing into the bytes, so the typed
/// decoder reads each value straight from the bytes, only when asked, with no intermediate tree,
/// dictionary or string for what it does not read.
///
/// The scan accepts and rejects exactly what ``JSONReader`` does (both use ``JSONLexer``; the fuzz test
/// checks both against `JSONSerialization`): every string is checked (escapes and UTF-8) and every number
/// classified while indexing, so reading a node later cannot fail on the bytes.
///
/// Layout: a container's node is followed by its members' nodes (for an object: a `key` node then the
/// value's nodes, for each member); ``Node/end`` of a container is the index of the node after its last
/// member's, so siblings are reached without walking their contents.
struct JSONTape {
    enum Kind: UInt8 {
        case object, array, string, key, number, `true`, `false`, null
    }

    struct Node {
        var kind: Kind
        /// Strings and keys: backslash escapes to decode.
        var escaped: Bool
        /// Strings and keys: bytes above 0x7F.
        var nonASCII: Bool
        /// Objects: a key appears more than once (lookups then take the last, as `JSONSerialization`). Kept
        /// beside the flags above, in what would be padding: a node stays 32 bytes.
        var duplicateKeys = false
        /// Nesting depth (the top-level value is at depth 0).
        var depth: UInt16
        /// Containers: the number of members.
        var count: UInt32
        /// Scalars: the first byte (a string's first byte after the quote).
        var start: Int
        /// Scalars: the byte after the last; containers: the index of the node after the container.
        var end: Int

        var isContainer: Bool { kind == .object || kind == .array }
    }

    private(set) var nodes: [Node] = []

    /// An array the scan left unread (``init(_:splitFrom:parts:)``): its node, which has no members, and where
    /// its parts are. Each part is indexed by ``init(part:start:last:depth:)``.
    struct Deferred {
        var node: Int
        var split: JSONLexer.Split
    }

    /// The array left unread, if any.
    private(set) var deferred: Deferred?

    /// Indexes `bytes`; `fragments` allows a scalar at the top level.
    init(_ bytes: UnsafeRawBufferPointer, fragments: Bool = false) throws(JSONReader.Failure) {
        var builder = Builder(bytes)
        // A found set takes a node for about every 8 bytes: reserving for 12 made a copy of the whole array.
        builder.nodes.reserveCapacity(Swift.max(16, bytes.count / 8))
        try builder.lexer.start(fragments: fragments)
        try builder.value()
        try builder.lexer.finish()
        nodes = builder.nodes
    }

    /// Indexes an object whose first array at depth 2 (a found set's `response.data`) of at least `splitFrom`
    /// bytes is left unread when it splits into `parts`: ``deferred`` then says where (that node has no members).
    init(_ bytes: UnsafeRawBufferPointer, splitFrom: Int, parts: Int) throws(JSONReader.Failure) {
        var builder = Builder(bytes)
        builder.splitFrom = splitFrom
        builder.parts = parts
        builder.nodes.reserveCapacity(64)
        try builder.lexer.start(fragments: false)
        try builder.value()
        try builder.lexer.finish()
        nodes = builder.nodes
        deferred = builder.deferred
    }

    /// Indexes one part of a deferred array: the elements from `start` to the end of `bytes` (a trailing comma
    /// only in the `last` part, as before `]`), under a root array node at `depth` (the array's own), so that
    /// nesting limits and offsets are the whole document's. Accepts and rejects what the whole scan would.
    init(part bytes: UnsafeRawBufferPointer, start: Int, last: Bool, depth: Int) throws(JSONReader.Failure) {
        var builder = Builder(bytes)
        builder.nodes.reserveCapacity(Swift.max(16, (bytes.count - start) / 8))
        builder.nodes.append(Node(kind: .array, escaped: false, nonASCII: false, depth: UInt16(depth), count: 0, start: start, end: 0))
        builder.depth = depth + 1
        builder.lexer.index = start
        builder.lexer.skipSpace()
        var count: UInt32 = 0
        if !(last && builder.lexer.peek() == nil) { // a last part may begin after a trailing comma
            while true {
                builder.lexer.skipSpace()
                try builder.value()
                count += 1
                builder.lexer.skipSpace()
                guard let next = builder.lexer.peek() else { break }
                guard next == UInt8(ascii: ",") else { throw builder.lexer.fail("expected ',' or ']'") }
                builder.lexer.index += 1
                builder.lexer.skipSpace()
                if last, builder.lexer.peek() == nil { break } // a trailing comma before ]
            }
        }
        builder.nodes[0].count = count
        builder.nodes[0].end = builder.nodes.count
        nodes = builder.nodes
    }

    private struct Builder {
        var lexer: JSONLexer
        var nodes: [Node] = []
        var depth = 0
        /// Arrays at depth 2 of at least this many bytes are left for ``JSONTape/init(part:start:last:depth:)``.
        var splitFrom = Int.max
        var parts = 1
        var deferred: Deferred?

        init(_ bytes: UnsafeRawBufferPointer) {
            lexer = JSONLexer(bytes)
        }

        @inline(__always) mutating func scalar(_ kind: Kind, _ start: Int, _ end: Int) {
            nodes.append(Node(kind: kind, escaped: false, nonASCII: false, depth: UInt16(depth), count: 0, start: start, end: end))
        }

        @inline(__always) mutating func string(_ kind: Kind) throws(JSONReader.Failure) {
            let token = try lexer.string(validating: true)
            nodes.append(Node(kind: kind, escaped: token.escaped, nonASCII: token.nonASCII, depth: UInt16(depth), count: 0,
                              start: token.start, end: token.end))
        }

        mutating func value() throws(JSONReader.Failure) {
            guard let byte = lexer.peek() else { throw lexer.fail("unexpected end") }
            let start = lexer.index
            switch byte {
            case UInt8(ascii: "\""): try string(.string)
            case UInt8(ascii: "{"): try container(.object)
            case UInt8(ascii: "["): try container(.array)
            case UInt8(ascii: "t"): try lexer.literal("true"); scalar(.true, start, lexer.index)
            case UInt8(ascii: "f"): try lexer.literal("false"); scalar(.false, start, lexer.index)
            case UInt8(ascii: "n"): try lexer.literal("null"); scalar(.null, start, lexer.index)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let token = try lexer.number()
                _ = try token.classify(lexer.bytes) // out of range is an error now, never when read
                scalar(.number, token.start, token.end)
            default: throw lexer.fail("unexpected character")
            }
        }

        mutating func container(_ kind: Kind) throws(JSONReader.Failure) {
            let closing = kind == .object ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let at = nodes.count
            nodes.append(Node(kind: kind, escaped: false, nonASCII: false, depth: UInt16(depth), count: 0, start: lexer.index, end: 0))
            if kind == .array, depth == 2, parts > 1, deferred == nil, lexer.bytes.count - lexer.index >= splitFrom,
               let split = JSONLexer.split(lexer.bytes, open: lexer.index, parts: parts) {
                deferred = Deferred(node: at, split: split)
                nodes[at].end = nodes.count
                lexer.index = split.close + 1
                return
            }
            depth += 1
            if depth > JSONReader.maxDepth { throw lexer.fail("nesting deeper than \(JSONReader.maxDepth)") }
            lexer.index += 1
            lexer.skipSpace()
            var count: UInt32 = 0
            if lexer.peek() == closing {
                lexer.index += 1
            } else {
                while true {
                    if kind == .object {
                        guard lexer.peek() == UInt8(ascii: "\"") else { throw lexer.fail("expected a key") }
                        try string(.key)
                        try lexer.colon()
                    }
                    try value()
                    count += 1
                    if try lexer.endOfMember(closing: closing) { break }
                }
            }
            depth -= 1
            nodes[at].count = count
            nodes[at].end = nodes.count
            if kind == .object, count > 1 { nodes[at].duplicateKeys = hasDuplicateKeys(at) }
        }

        /// Whether a key of object `object` repeats. Plain ASCII keys: a 64-bit filter on length and end
        /// bytes, the bytes compared only when it says maybe (a hash set above 32 keys, so a hostile object
        /// stays linear); escaped or non-ASCII keys: their text, compared as `String`s are (canonical
        /// equivalence, as the decoder's key lookup does).
        private func hasDuplicateKeys(_ object: Int) -> Bool {
            let end = nodes[object].end
            let bytes = lexer.bytes
            var plain = true
            var at = object + 1
            while at < end {
                if nodes[at].escaped || nodes[at].nonASCII { plain = false; break }
                at = nodes[at + 1].isContainer ? nodes[at + 1].end : at + 2
            }
            if !plain {
                var seen = Set<String>()
                var scratch: [UInt8] = []
                at = object + 1
                while at < end {
                    let node = nodes[at]
                    let token = JSONLexer.StringToken(start: node.start, end: node.end, escaped: node.escaped, nonASCII: node.nonASCII)
                    if !seen.insert(token.makeString(bytes, scratch: &scratch) ?? "").inserted { return true }
                    at = nodes[at + 1].isContainer ? nodes[at + 1].end : at + 2
                }
                return false
            }
            func same(_ a: Int, _ b: Int) -> Bool {
                let x = nodes[a], y = nodes[b]
                return x.end - x.start == y.end - y.start
                    && (x.end == x.start || memcmp(bytes.baseAddress! + x.start, bytes.baseAddress! + y.start, x.end - x.start) == 0)
            }
            if nodes[object].count > 32 {
                var seen: [Int: [Int]] = [:]
                at = object + 1
                while at < end {
                    let node = nodes[at]
                    var hasher = Hasher()
                    hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[node.start..<node.end]))
                    let hash = hasher.finalize()
                    if let earlier = seen[hash], earlier.contains(where: { same($0, at) }) { return true }
                    seen[hash, default: []].append(at)
                    at = nodes[at + 1].isContainer ? nodes[at + 1].end : at + 2
                }
                return false
            }
            var filter: UInt64 = 0
            at = object + 1
            while at < end {
                let node = nodes[at]
                let length = node.end - node.start
                let hash = length == 0 ? 0 : (length &* 31 &+ Int(bytes[node.start]) &* 7 &+ Int(bytes[node.end - 1])) & 63
                let bit: UInt64 = 1 << UInt64(hash)
                if filter & bit != 0 {
                    var earlier = object + 1
                    while earlier < at {
                        if same(earlier, at) { return true }
                        earlier = nodes[earlier + 1].isContainer ? nodes[earlier + 1].end : earlier + 2
                    }
                }
                filter |= bit
                at = nodes[at + 1].isContainer ? nodes[at + 1].end : at + 2
            }
            return false
        }
    }
}

/// Reads a ``JSONTape``'s nodes from the bytes they index. Valid only while those bytes are (the typed
/// decoder makes one inside `Data.withUnsafeBytes` and closes it before leaving).
final class JSONTapeReader {
    let bytes: UnsafeRawBufferPointer
    let nodes: [JSONTape.Node]
    /// Cleared when the bytes are gone; reading then throws instead of touching freed memory.
    ///
    /// This and `scratch` are touched for every value read, so they are not checked for overlapping accesses at run
    /// time: nothing else runs while one is accessed (no closure is called) and a reader belongs to one decode on
    /// one thread.
    @exclusivity(unchecked) private(set) var isOpen = true
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    /// The object members searched key by key (not the predicted lookups): tests check it stays linear.
    var scannedMembers = 0

    /// How many more repetitions a typed decode may read as empty values because the layout did not send them
    /// (``Rules/repetitions(of:in:_:_:)``): the answer's size in bytes, and at least FileMaker's most repetitions
    /// of one field, so that a few bytes of a hostile answer cannot make a decode hold far more than the answer.
    var gapsLeft: Int
    /// The reader of one empty string (``emptyValue()``), made when first asked for.
    private var empty: JSONTapeReader?

    init(bytes: UnsafeRawBufferPointer, tape: JSONTape) {
        self.bytes = bytes
        self.nodes = tape.nodes
        gapsLeft = Swift.max(bytes.count, 32_000)
    }

    /// A reader whose one node, 0, is the empty string `""` (it reads none of `bytes`).
    private init(emptyStringOver bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        nodes = [JSONTape.Node(kind: .string, escaped: false, nonASCII: false, depth: 0, count: 0, start: 0, end: 0)]
        gapsLeft = 0
    }

    /// A reader whose node 0 is an empty value (`""`), closed with this one: how a repetition the layout did not
    /// send is read.
    func emptyValue() -> JSONTapeReader {
        if let empty { return empty }
        let made = JSONTapeReader(emptyStringOver: bytes)
        if !isOpen { made.close() }
        empty = made
        return made
    }

    func close() {
        isOpen = false
        empty?.close()
    }

    /// The node after `index` and everything inside it: the next sibling.
    @inline(__always) func next(after index: Int) -> Int {
        let node = nodes[index]
        return node.isContainer ? node.end : index + 1
    }

    /// The nodes of an array's elements, or of an object's values.
    func members(of index: Int) -> [Int] {
        let container = nodes[index]
        var result: [Int] = []
        result.reserveCapacity(Int(container.count))
        var at = index + 1
        while at < container.end {
            if container.kind == .object { at += 1 } // the key
            result.append(at)
            at = next(after: at)
        }
        return result
    }

    /// Calls `body` with each member of an object: the key node and the value node.
    @inline(__always) func forEachMember(of object: Int, _ body: (_ key: Int, _ value: Int) throws -> Void) rethrows {
        let end = nodes[object].end
        var at = object + 1
        while at < end {
            try body(at, at + 1)
            at = next(after: at + 1)
        }
    }

    /// The value node of `key` in `object` (the last one when a key repeats, as `JSONSerialization`).
    func value(forKey key: String, in object: Int) -> Int? {
        scannedMembers &+= Int(nodes[object].count)
        var found: Int?
        forEachMember(of: object) { keyNode, value in
            if keyEquals(keyNode, key) { found = value }
        }
        return found
    }

    @inline(__always) func token(_ index: Int) -> JSONLexer.StringToken {
        let node = nodes[index]
        return JSONLexer.StringToken(start: node.start, end: node.end, escaped: node.escaped, nonASCII: node.nonASCII)
    }

    /// Whether key node `index` names `key`: the same bytes or, when either side is not ASCII or the key is
    /// escaped, the same text by `String`'s `==` (Unicode canonical equivalence: `é` precomposed or
    /// decomposed), as the dictionaries of `JSONSerialization` and `JSONDecoder` compare keys.
    @inline(__always) func keyEquals(_ index: Int, _ key: String) -> Bool {
        let node = nodes[index]
        if !node.escaped {
            var key = key
            let (same, ascii) = key.withUTF8 { utf8 -> (Bool, Bool) in
                if utf8.count == node.end - node.start, utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress! + node.start, utf8.count) == 0 {
                    return (true, true)
                }
                return (false, !node.nonASCII && utf8.allSatisfy { $0 < 0x80 })
            }
            if same { return true }
            if ascii { return false }
        }
        return string(index) == key
    }

    /// A string or key node's text.
    func string(_ index: Int) -> String {
        token(index).makeString(bytes, scratch: &scratch) ?? "" // the tape validated it: never nil
    }

    /// Whether a string node is `""`.
    @inline(__always) func isEmptyString(_ index: Int) -> Bool {
        let node = nodes[index]
        return node.kind == .string && node.start == node.end
    }

    /// A number node's token.
    func number(_ index: Int) -> JSONLexer.NumberToken? {
        var lexer = JSONLexer(bytes)
        lexer.index = nodes[index].start
        return try? lexer.number()
    }

    /// A string node's bytes when it has no escape (dates are read from them without making a `String`).
    func withRawText<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let node = nodes[index]
        if !node.escaped { return body(UnsafeRawBufferPointer(rebasing: bytes[node.start..<node.end])) }
        var text = string(index)
        return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// The node as `JSONSerialization`'s values (small parts of an answer: `dataInfo`, script results).
    func any(_ index: Int) -> Any {
        let node = nodes[index]
        switch node.kind {
        case .string, .key: return string(index)
        case .true: return JSONReader.trueValue
        case .false: return JSONReader.falseValue
        case .null: return JSONReader.null
        case .number: return (number(index).flatMap { try? $0.object(bytes) }) ?? JSONReader.null
        case .array: return members(of: index).map(any)
        case .object:
            var object: [String: Any] = [:]
            forEachMember(of: index) { key, value in object[string(key)] = any(value) }
            return object
        }
    }
}

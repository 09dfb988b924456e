// MARK: - Content decoding: gzip and deflate (RFC 1950, 1951, 1952), in Swift, streamed

/// Why a compressed body could not be decoded.
struct InflateError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Decodes an HTTP body sent with `Content-Encoding: gzip` (or `x-gzip`) or `deflate` (the zlib format,
/// RFC 1950, or — as some servers send it, and libcurl accepts — raw deflate, RFC 1951), streamed: it pulls
/// the compressed bytes from `input` as it needs them and pushes the decoded bytes to `output` in pieces of at
/// most 64 KiB. Memory stays bounded whatever the input (a 96 KiB window and a few tables): a decompression
/// bomb only produces pieces, and `output` throwing (SwiftFM's size cap refused one) stops it at once.
///
/// Checked: block types, Huffman tables (over-subscribed, incomplete, missing end-of-block), lengths and
/// distances (never before the start of the output), stored-block lengths, the gzip header (magic, method,
/// reserved flags, header CRC when present), CRC-32 and size (gzip), Adler-32 (zlib), truncation, and bytes
/// after the end (only further gzip members, or zero padding, may follow). Each failure is an
/// ``InflateError`` saying what was wrong.
struct Inflater {
    enum Format { case gzip, deflate }

    private let format: Format
    private var bits = BitSource()
    private let window = InflateWindow()

    /// `input` returns the next compressed bytes, `nil` at the end of the body; `output` takes decoded bytes.
    init(format: Format, input: @escaping () throws -> ArraySlice<UInt8>?, output: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void) {
        self.format = format
        bits.source = input
        window.sink = output
    }

    /// Decodes the whole body (an empty body decodes to nothing).
    mutating func run() throws {
        guard try bits.hasMore() else { return }
        switch format {
        case .gzip:
            repeat {
                try gzipHeader()
                window.checksum = .crc32(0)
                try inflate()
                try window.emit()
                bits.alignToByte()
                let crc = try bits.littleEndian32()
                let size = try bits.littleEndian32()
                guard case .crc32(let computed) = window.checksum, computed == crc else { throw InflateError("gzip CRC-32 mismatch") }
                guard UInt32(truncatingIfNeeded: window.total) == size else { throw InflateError("gzip size mismatch") }
                window.total = 0
            } while try moreMembers()
        case .deflate:
            // The zlib format when the first two bytes are a zlib header (as libcurl decides), else raw deflate.
            var zlib = false
            if let method = try bits.peekByte(0), let flags = try bits.peekByte(1),
               method & 0x0F == 8, method >> 4 <= 7, (UInt16(method) << 8 | UInt16(flags)) % 31 == 0 {
                zlib = true
                _ = try bits.take(16)
                guard flags & 0x20 == 0 else { throw InflateError("zlib stream needs a preset dictionary") }
                window.checksum = .adler32(1)
            }
            try inflate()
            try window.emit()
            if zlib {
                bits.alignToByte()
                var expected: UInt32 = 0
                for _ in 0..<4 { expected = expected << 8 | UInt32(try bits.take(8)) }
                guard case .adler32(let computed) = window.checksum, computed == expected else { throw InflateError("zlib Adler-32 mismatch") }
            }
            bits.alignToByte()
            guard try !bits.hasNonZero() else { throw InflateError("data after the end of the deflate stream") }
        }
    }

    /// After a gzip member: another member follows (`true`), or only zero padding, or nothing.
    private mutating func moreMembers() throws -> Bool {
        guard let next = try bits.peekByte(0) else { return false }
        if next == 0x1F { return true }
        guard try !bits.hasNonZero() else { throw InflateError("data after the end of the gzip member") }
        return false
    }

    private mutating func gzipHeader() throws {
        var header = CRC32()
        func byte() throws -> UInt8 {
            let value = UInt8(try bits.take(8))
            header.update(value)
            return value
        }
        guard try byte() == 0x1F, try byte() == 0x8B else { throw InflateError("not gzip data (bad magic)") }
        guard try byte() == 8 else { throw InflateError("gzip compression method is not deflate") }
        let flags = try byte()
        guard flags & 0xE0 == 0 else { throw InflateError("gzip header has reserved flags set") }
        for _ in 0..<6 { _ = try byte() } // MTIME, XFL, OS
        if flags & 0x04 != 0 { // FEXTRA
            let length = Int(try byte()) | Int(try byte()) << 8
            for _ in 0..<length { _ = try byte() }
        }
        for flag in [UInt8(0x08), 0x10] where flags & flag != 0 { // FNAME, FCOMMENT: zero-terminated
            var length = 0
            while try byte() != 0 {
                length += 1
                guard length <= 1 << 20 else { throw InflateError("gzip header name or comment longer than 1 MiB") }
            }
        }
        if flags & 0x02 != 0 { // FHCRC: the low 16 bits of the header's CRC-32
            let expected = UInt16(header.value & 0xFFFF)
            let stored = UInt16(try bits.take(8)) | UInt16(try bits.take(8)) << 8
            guard stored == expected else { throw InflateError("gzip header CRC mismatch") }
        }
    }

    // MARK: deflate blocks

    private mutating func inflate() throws {
        var last = false
        repeat {
            last = try bits.take(1) == 1
            switch try bits.take(2) {
            case 0: try stored()
            case 1: try codes(Huffman.fixedLiterals, Huffman.fixedDistances)
            case 2:
                let (literals, distances) = try dynamicTables()
                try codes(literals, distances)
            default: throw InflateError("invalid deflate block type 3")
            }
        } while !last
    }

    private mutating func stored() throws {
        bits.alignToByte()
        let length = try bits.take(16)
        let complement = try bits.take(16)
        guard length == ~complement & 0xFFFF else { throw InflateError("stored block length does not match its complement") }
        var left = Int(length)
        while left > 0 {
            let piece = try bits.bytes(upTo: left)
            try window.append(piece)
            left -= piece.count
        }
    }

    private static let lengthBase: [UInt16] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                               67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase: [UInt16] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                                 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra: [UInt8] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    private mutating func codes(_ literals: Huffman, _ distances: Huffman) throws {
        // The window's position and count in locals for the loop (written back at every exit and before each emit).
        let window = self.window
        let storage = window.storage
        var end = window.end
        var total = window.total
        defer {
            window.end = end
            window.total = total
        }
        while true {
            let symbol = try literals.decode(&bits)
            if symbol < 256 {
                if end == InflateWindow.capacity {
                    window.end = end
                    try window.emit()
                    end = window.end
                }
                storage[end] = UInt8(truncatingIfNeeded: symbol)
                end += 1
                total += 1
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < 29 else { throw InflateError("invalid length symbol \(symbol)") }
                let length = Int(Self.lengthBase[index]) + Int(try bits.take(Int(Self.lengthExtra[index])))
                let code = try distances.decode(&bits)
                guard code < 30 else { throw InflateError("invalid distance symbol \(code)") }
                let distance = Int(Self.distanceBase[code]) + Int(try bits.take(Int(Self.distanceExtra[code])))
                guard distance <= min(total, InflateWindow.history) else {
                    throw InflateError("distance \(distance) is before the start of the output")
                }
                if end + length > InflateWindow.capacity {
                    window.end = end
                    try window.emit()
                    end = window.end
                }
                var from = end - distance
                let stop = end + length
                while end < stop {
                    storage[end] = storage[from]
                    end += 1
                    from += 1
                }
                total += length
            }
        }
    }

    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    private mutating func dynamicTables() throws -> (Huffman, Huffman) {
        let literalCount = Int(try bits.take(5)) + 257
        let distanceCount = Int(try bits.take(5)) + 1
        let lengthCodeCount = Int(try bits.take(4)) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw InflateError("too many length or distance codes") }
        var lengthCodeLengths = [UInt8](repeating: 0, count: 19)
        for i in 0..<lengthCodeCount { lengthCodeLengths[Self.codeLengthOrder[i]] = UInt8(try bits.take(3)) }
        let lengthCode = try Huffman(lengths: lengthCodeLengths, kind: .codeLengths)
        var lengths = [UInt8]()
        lengths.reserveCapacity(literalCount + distanceCount)
        while lengths.count < literalCount + distanceCount {
            let symbol = try lengthCode.decode(&bits)
            switch symbol {
            case 0...15:
                lengths.append(UInt8(symbol))
            case 16:
                guard let previous = lengths.last else { throw InflateError("repeat of a code length with none before") }
                let repeats = 3 + Int(try bits.take(2))
                guard lengths.count + repeats <= literalCount + distanceCount else { throw InflateError("code lengths overflow") }
                lengths.append(contentsOf: repeatElement(previous, count: repeats))
            default:
                let repeats = symbol == 17 ? 3 + Int(try bits.take(3)) : 11 + Int(try bits.take(7))
                guard lengths.count + repeats <= literalCount + distanceCount else { throw InflateError("code lengths overflow") }
                lengths.append(contentsOf: repeatElement(0, count: repeats))
            }
        }
        guard lengths[256] != 0 else { throw InflateError("no end-of-block code") }
        let literals = try Huffman(lengths: Array(lengths[0..<literalCount]), kind: .literals)
        let distances = try Huffman(lengths: Array(lengths[literalCount...]), kind: .distances)
        return (literals, distances)
    }
}

// MARK: - Huffman decoding

/// A canonical Huffman code (RFC 1951 §3.2.2): a 10-bit lookup table for the short codes, counted
/// decoding for the longer ones.
private struct Huffman: Sendable {
    static let fastBits = 10
    /// `symbol << 4 | length` for every code of at most ``fastBits`` bits (indexed by its bits as they arrive); 0 else.
    private var fast = [UInt16](repeating: 0, count: 1 << Huffman.fastBits)
    /// How many codes have each length (0...15).
    private var counts = [Int](repeating: 0, count: 16)
    /// The symbols, ordered by code.
    private var symbols: [UInt16] = []
    private var longest = 0

    static let fixedLiterals: Huffman = {
        var lengths = [UInt8](repeating: 8, count: 288)
        for i in 144..<256 { lengths[i] = 9 }
        for i in 256..<280 { lengths[i] = 7 }
        return (try? Huffman(lengths: lengths, kind: .literals)) ?? Huffman() // complete by construction
    }()

    static let fixedDistances: Huffman = {
        (try? Huffman(lengths: [UInt8](repeating: 5, count: 32), kind: .distances)) ?? Huffman()
    }()

    enum Kind: String { case codeLengths = "code-length", literals = "literal/length", distances = "distance" }

    private init() {}

    /// The code with these code lengths (0: the symbol is unused). As zlib decides: an over-subscribed code is
    /// refused; an incomplete one (bit patterns left unused) too, except a literal/length or distance code
    /// whose codes all have 1 bit (a single code); a distance code may have no code at all (a block of
    /// literals only).
    init(lengths: [UInt8], kind: Kind) throws {
        let what = kind.rawValue
        for length in lengths { counts[Int(length)] += 1 }
        counts[0] = 0
        var left = 1
        for length in 1...15 {
            left <<= 1
            left -= counts[length]
            guard left >= 0 else { throw InflateError("over-subscribed \(what) code") }
        }
        let used = lengths.count - lengths.filter { $0 == 0 }.count
        let single = used > 0 && counts[1] == used
        if left > 0 && !(used == 0 && kind == .distances) && (kind == .codeLengths || !single) {
            throw InflateError("incomplete \(what) code")
        }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        symbols = [UInt16](repeating: 0, count: used)
        for (symbol, length) in lengths.enumerated() where length != 0 {
            symbols[offsets[Int(length)]] = UInt16(symbol)
            offsets[Int(length)] += 1
        }
        // The fast table: walk the canonical codes in order.
        var code = 0
        var index = 0
        for length in 1...15 {
            for _ in 0..<counts[length] {
                longest = length
                if length <= Self.fastBits {
                    var reversed = 0
                    for bit in 0..<length where code & (1 << bit) != 0 { reversed |= 1 << (length - 1 - bit) }
                    let entry = symbols[index] << 4 | UInt16(length)
                    var slot = reversed
                    while slot < 1 << Self.fastBits {
                        fast[slot] = entry
                        slot += 1 << length
                    }
                }
                code += 1
                index += 1
            }
            code <<= 1
        }
    }

    /// The next symbol.
    func decode(_ bits: inout BitSource) throws -> Int {
        let available = try bits.fill(15)
        let entry = fast[Int(bits.peek(Self.fastBits))]
        if entry != 0 {
            let length = Int(entry & 15)
            guard length <= available else { throw InflateError("truncated compressed data") }
            bits.drop(length)
            return Int(entry >> 4)
        }
        // A code longer than the table's bits (or an unused pattern): count it out, bit by bit.
        let peeked = bits.peek(15)
        var code = 0
        var first = 0
        var index = 0
        for length in 1...15 {
            code |= Int((peeked >> UInt64(length - 1)) & 1)
            let count = counts[length]
            if code - first < count {
                guard length <= available else { throw InflateError("truncated compressed data") }
                bits.drop(length)
                return Int(symbols[index + code - first])
            }
            index += count
            first = (first + count) << 1
            code <<= 1
            if length >= longest { break }
        }
        throw available < 15 ? InflateError("truncated compressed data") : InflateError("invalid Huffman code")
    }
}

// MARK: - Bits in

/// The compressed bytes, read least significant bit first, refilled from the source as needed.
struct BitSource {
    var source: () throws -> ArraySlice<UInt8>? = { nil }
    /// The current piece of input (copied: the source's buffer is free again at once) and where reading is.
    private var bytes: [UInt8] = []
    private var position = 0
    private var ended = false
    private var buffer: UInt64 = 0
    private var count = 0

    /// Refills `bytes` from the source; `false` at the end.
    private mutating func refill() throws -> Bool {
        while position == bytes.count {
            if ended { return false }
            bytes.removeAll(keepingCapacity: true)
            position = 0
            if let next = try source() { bytes.append(contentsOf: next) } else { ended = true }
        }
        return true
    }

    /// Loads bits until at least `wanted` (at most 56) are buffered or the input ended; how many are buffered.
    @inline(__always)
    mutating func fill(_ wanted: Int) throws -> Int {
        while count < wanted {
            if position == bytes.count { guard try refill() else { break } }
            let end = bytes.count
            bytes.withUnsafeBufferPointer { input in
                while count <= 48 && position < end {
                    buffer |= UInt64(input[position]) << UInt64(count)
                    position += 1
                    count += 8
                }
            }
        }
        return count
    }

    @inline(__always) func peek(_ bitCount: Int) -> UInt64 { buffer & ((1 << UInt64(bitCount)) - 1) }

    @inline(__always) mutating func drop(_ bitCount: Int) {
        buffer >>= UInt64(bitCount)
        count -= bitCount
    }

    /// The next `bitCount` bits (at most 32) as a number.
    @inline(__always)
    mutating func take(_ bitCount: Int) throws -> UInt32 {
        if bitCount == 0 { return 0 }
        guard try fill(bitCount) >= bitCount else { throw InflateError("truncated compressed data") }
        let value = UInt32(peek(bitCount))
        drop(bitCount)
        return value
    }

    mutating func alignToByte() { drop(count % 8) }

    mutating func littleEndian32() throws -> UInt32 {
        var value: UInt32 = 0
        for shift in stride(from: 0, to: 32, by: 8) { value |= try take(8) << UInt32(shift) }
        return value
    }

    /// Whether any byte is left (after `alignToByte`).
    mutating func hasMore() throws -> Bool { try peekByte(0) != nil }

    /// Byte `offset` (0 or 1) ahead, without taking it (after `alignToByte`).
    mutating func peekByte(_ offset: Int) throws -> UInt8? {
        guard try fill(8 * (offset + 1)) >= 8 * (offset + 1) else { return nil }
        return UInt8((buffer >> UInt64(8 * offset)) & 0xFF)
    }

    /// Reads the rest of the input: whether any of it is not zero.
    mutating func hasNonZero() throws -> Bool {
        if buffer != 0 { return true }
        drop(count)
        while try refill() {
            if bytes[position...].contains(where: { $0 != 0 }) { return true }
            position = bytes.count
        }
        return false
    }

    /// Up to `limit` whole bytes (after `alignToByte`): those buffered first, then straight from the input.
    mutating func bytes(upTo limit: Int) throws -> [UInt8] {
        if count > 0 {
            var out = [UInt8]()
            while count >= 8 && out.count < limit { out.append(UInt8(try take(8))) }
            return out
        }
        guard try refill() else { throw InflateError("truncated stored block") }
        let taken = min(limit, bytes.count - position)
        defer { position += taken }
        return Array(bytes[position..<(position + taken)])
    }
}

// MARK: - Bytes out

/// The sliding window (the last 32 KiB, for back references) and the decoded bytes not yet handed on.
private final class InflateWindow {
    enum Checksum { case none, crc32(UInt32), adler32(UInt32) }
    static let history = 32 * 1024
    static let capacity = 96 * 1024 + 512
    let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: InflateWindow.capacity)
    /// Bytes in `storage`; those from `emitted` on are not handed on yet.
    var end = 0
    private var emitted = 0
    /// Whether the window holds the whole output so far (for the distance check).
    var total = 0
    var checksum = Checksum.none
    var sink: (UnsafeBufferPointer<UInt8>) throws -> Void = { _ in }

    deinit { storage.deallocate() }

    func append(_ bytes: [UInt8]) throws {
        var from = 0
        while from < bytes.count {
            if end == Self.capacity { try emit() }
            let take = min(bytes.count - from, Self.capacity - end)
            bytes.withUnsafeBufferPointer { source in (storage + end).update(from: source.baseAddress! + from, count: take) }
            end += take
            total += take
            from += take
        }
    }

    /// Hands on the bytes not yet handed on (in pieces of at most 64 KiB), then keeps only the history.
    func emit() throws {
        while emitted < end {
            let piece = UnsafeBufferPointer(start: storage + emitted, count: min(64 * 1024, end - emitted))
            update(piece)
            emitted += piece.count
            try sink(piece)
        }
        if end > Self.history {
            let keep = Self.history
            (storage).update(from: storage + (end - keep), count: keep)
            end = keep
            emitted = keep
        }
    }

    private func update(_ piece: UnsafeBufferPointer<UInt8>) {
        switch checksum {
        case .none: break
        case .crc32(let value):
            var crc = CRC32(value)
            for byte in piece { crc.update(byte) }
            checksum = .crc32(crc.value)
        case .adler32(let value):
            var a = value & 0xFFFF
            var b = value >> 16
            var index = 0
            while index < piece.count {
                let stop = min(piece.count, index + 5552) // the most sums before b could overflow 32 bits
                while index < stop {
                    a += UInt32(piece[index])
                    b += a
                    index += 1
                }
                a %= 65521
                b %= 65521
            }
            checksum = .adler32(b << 16 | a)
        }
    }
}

/// CRC-32 as gzip uses it (ISO-HDLC: reflected polynomial 0xEDB88320).
struct CRC32 {
    private static let table: [UInt32] = (0..<256).map { index -> UInt32 in
        var c = UInt32(index)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
    private var state: UInt32

    /// Continues from a finished `value` (0 to start).
    init(_ value: UInt32 = 0) { state = ~value }

    @inline(__always)
    mutating func update(_ byte: UInt8) {
        state = Self.table[Int((state ^ UInt32(byte)) & 0xFF)] ^ (state >> 8)
    }

    var value: UInt32 { ~state }
}

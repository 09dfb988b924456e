import Foundation
import Testing
import TestSupport
@testable import SwiftFM

/// The socket transport's content decoding (gzip and deflate, RFC 1950–1952) against streams made by
/// Python's zlib and gzip modules (``InflateFixtures``), hand-built edge cases, every truncation, random
/// corruption and a decompression bomb. Errors are ``InflateError``s, never a crash, a hang or unbounded memory.
@Suite("Inflate (gzip, deflate)")
struct InflateTests {
    /// The sink refused a piece (what SwiftFM's size cap does).
    struct Refused: Error {}

    /// Decodes `data` fed in pieces of `pieceSize` bytes; every piece handed out is checked to be at most 64 KiB.
    static func inflate(_ data: [UInt8], gzip: Bool, pieceSize: Int = 4096, cap: Int = .max) throws -> [UInt8] {
        var offset = 0
        var out = [UInt8]()
        var largest = 0
        var inflater = Inflater(format: gzip ? .gzip : .deflate, input: {
            guard offset < data.count else { return nil }
            let end = min(data.count, offset + pieceSize)
            defer { offset = end }
            return data[offset..<end]
        }, output: { piece in
            largest = max(largest, piece.count)
            out.append(contentsOf: piece)
            if out.count > cap { throw Refused() }
        })
        try inflater.run()
        #expect(largest <= 64 * 1024)
        return out
    }

    static func crc(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32()
        for byte in bytes { crc.update(byte) }
        return crc.value
    }

    static func bytes(_ fixture: InflateFixtures.Case) -> [UInt8] {
        [UInt8](Data(base64Encoded: fixture.base64.filter { !$0.isWhitespace }) ?? Data())
    }

    static func fixture(_ name: String) -> InflateFixtures.Case {
        InflateFixtures.cases.first { $0.name == name } ?? InflateFixtures.cases[0]
    }

    /// The message of the ``InflateError`` `body` throws (`nil`: it threw none).
    static func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as InflateError {
            return error.description
        } catch {
            return "not an InflateError: \(error)"
        }
    }

    @Test func checkValueOfCRC32() {
        #expect(Self.crc(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test(arguments: InflateFixtures.cases.map(\.name), [1, 7, 4096, 1 << 20])
    func decodesWhatPythonEncoded(_ name: String, pieceSize: Int) throws {
        let fixture = Self.fixture(name)
        let out = try Self.inflate(Self.bytes(fixture), gzip: fixture.gzip, pieceSize: pieceSize)
        #expect(out.count == fixture.length)
        #expect(Self.crc(out) == fixture.crc32)
        if name == "gzipFixed" { #expect(String(decoding: out, as: UTF8.self) == InflateFixtures.text) }
    }

    @Test func theFixturesCoverEveryBlockType() {
        // The first block's type: bits 1-2 of the first deflate byte.
        func firstBlockType(_ name: String, skip: Int) -> UInt8 { (Self.bytes(Self.fixture(name))[skip] >> 1) & 3 }
        #expect(firstBlockType("rawDeflateStored", skip: 0) == 0)
        #expect(firstBlockType("gzipStored", skip: 10) == 0)
        #expect(firstBlockType("zlibFixedOnly", skip: 2) == 1)
        #expect(firstBlockType("gzipFixed", skip: 10) == 1)
        #expect(firstBlockType("zlibDynamic", skip: 2) == 2)
        #expect(firstBlockType("rawDeflateSkewed", skip: 0) == 2)
    }

    @Test func storedBlocksOfEveryLengthUpToTheMost() throws {
        // Three raw stored blocks: 65 535, 0 and 100 bytes (the last one final).
        var stream = [UInt8]()
        var plain = [UInt8]()
        for (index, length) in [65_535, 0, 100].enumerated() {
            stream.append(index == 2 ? 1 : 0)
            stream += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            let block = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            stream += block
            plain += block
        }
        #expect(try Self.inflate(stream, gzip: false, pieceSize: 1000) == plain)
    }

    @Test func emptyBodiesDecodeToNothing() throws {
        #expect(try Self.inflate([], gzip: true).isEmpty)
        #expect(try Self.inflate([], gzip: false).isEmpty)
    }

    @Test func everyTruncationIsAnError() {
        for name in ["gzipFixed", "gzipAllHeaderFields", "gzipTwoMembers", "rawDeflateStored"] {
            let whole = Self.bytes(Self.fixture(name))
            for end in 1..<whole.count {
                // A gzip stream cut right after a complete member is a whole (shorter) stream.
                if name == "gzipTwoMembers" && end + 1 < whole.count && whole[end] == 0x1F && whole[end + 1] == 0x8B { continue }
                let message = Self.failure { _ = try Self.inflate(Array(whole[..<end]), gzip: Self.fixture(name).gzip, pieceSize: 3) }
                #expect(message != nil, "\(name) cut at \(end) of \(whole.count) decoded")
                #expect(message?.hasPrefix("not an") != true, "\(name) cut at \(end): \(message ?? "")")
            }
        }
        for name in ["gzipDynamicBig", "zlibDynamic", "zlibHuffmanOnly"] {
            let whole = Self.bytes(Self.fixture(name))
            for end in stride(from: 1, to: whole.count, by: max(1, whole.count / 97)) {
                let message = Self.failure { _ = try Self.inflate(Array(whole[..<end]), gzip: Self.fixture(name).gzip) }
                #expect(message?.contains("truncated") == true, "\(name) cut at \(end): \(message ?? "decoded")")
            }
        }
    }

    @Test func randomCorruptionIsCaughtOrHarmless() {
        var random = SplitMix64(seed: 16)
        for name in ["gzipFixed", "gzipAllHeaderFields", "gzipDynamicBig", "zlibDynamic", "rawDeflateSkewed", "zlibFixedOnly"] {
            let fixture = Self.fixture(name)
            let whole = Self.bytes(fixture)
            for _ in 0..<150 {
                var bytes = whole
                var lowest = bytes.count
                for _ in 0..<(1 + Int(random.next() % 3)) {
                    let index = Int(random.next() % UInt64(bytes.count))
                    bytes[index] ^= UInt8(1 << (random.next() % 8))
                    lowest = min(lowest, index)
                }
                // A checksum guards gzip, and zlib while its header still reads as one: what decodes is the original.
                let guarded = fixture.gzip || (name.hasPrefix("zlib") && lowest >= 2)
                do {
                    let out = try Self.inflate(bytes, gzip: fixture.gzip, cap: 4 * fixture.length + 1024)
                    if guarded {
                        #expect(out.count == fixture.length && Self.crc(out) == fixture.crc32, "\(name): corrupted stream decoded to other bytes")
                    }
                } catch is InflateError {
                } catch is Refused { // raw deflate, no checksum: it may decode to more bytes, which the cap stops
                    #expect(!guarded, "\(name): a guarded stream decoded past 4x its size")
                } catch {
                    Issue.record("\(name): \(error)")
                }
            }
        }
    }

    // MARK: each check

    static let gzipFixed = bytes(fixture("gzipFixed"))

    static func changed(_ bytes: [UInt8], _ index: Int, _ value: UInt8) -> [UInt8] {
        var copy = bytes
        copy[index < 0 ? copy.count + index : index] = value
        return copy
    }

    @Test func gzipHeaderChecks() {
        #expect(Self.failure { _ = try Self.inflate(Self.changed(Self.gzipFixed, 1, 0x8C), gzip: true) }?.contains("magic") == true)
        #expect(Self.failure { _ = try Self.inflate(Self.changed(Self.gzipFixed, 2, 7), gzip: true) }?.contains("method") == true)
        #expect(Self.failure { _ = try Self.inflate(Self.changed(Self.gzipFixed, 3, 0x20), gzip: true) }?.contains("reserved") == true)
        let all = Self.bytes(Self.fixture("gzipAllHeaderFields"))
        let headerCRC = 10 + 8 + 10 + 10 // after the fixed header, FEXTRA (2 + 6), FNAME, FCOMMENT
        #expect(Self.failure { _ = try Self.inflate(Self.changed(all, headerCRC, all[headerCRC] ^ 1), gzip: true) }?.contains("header CRC") == true)
        #expect(Self.failure { _ = try Self.inflate(Array("{\"not\":\"gzip\"}".utf8), gzip: true) }?.contains("magic") == true)
    }

    @Test func gzipTrailerChecks() {
        let crcByte = Self.gzipFixed.count - 8
        #expect(Self.failure { _ = try Self.inflate(Self.changed(Self.gzipFixed, crcByte, Self.gzipFixed[crcByte] ^ 1), gzip: true) }?.contains("CRC-32") == true)
        #expect(Self.failure { _ = try Self.inflate(Self.changed(Self.gzipFixed, -1, Self.gzipFixed.last! ^ 1), gzip: true) }?.contains("size") == true)
        #expect(Self.failure { _ = try Self.inflate(Self.gzipFixed + [0x41, 0x42], gzip: true) }?.contains("after the end") == true)
        #expect(Self.failure { _ = try Self.inflate(Self.gzipFixed + [0, 0, 0, 0], gzip: true) } == nil, "zero padding after a member is ignored")
    }

    @Test func zlibChecks() {
        let zlib = Self.bytes(Self.fixture("zlibFixedOnly"))
        #expect(Self.failure { _ = try Self.inflate(Self.changed(zlib, -1, zlib.last! ^ 1), gzip: false) }?.contains("Adler-32") == true)
        // FDICT set (and the header check bits fixed up): a preset dictionary is never available.
        var withDictionary = zlib
        withDictionary[1] = 0x20
        withDictionary[1] += UInt8(31 - (UInt16(withDictionary[0]) << 8 | UInt16(withDictionary[1])) % 31)
        #expect(Self.failure { _ = try Self.inflate(withDictionary, gzip: false) }?.contains("dictionary") == true)
        #expect(Self.failure { _ = try Self.inflate(zlib + [7], gzip: false) }?.contains("after the end") == true)
    }

    @Test func deflateBlockChecks() {
        // BFINAL 1, BTYPE 11.
        #expect(Self.failure { _ = try Self.inflate([0x07, 0, 0], gzip: false) }?.contains("block type") == true)
        // A final stored block whose NLEN is not the complement of LEN.
        #expect(Self.failure { _ = try Self.inflate([0x01, 0x05, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5], gzip: false) }?.contains("complement") == true)
        // A fixed block starting with a back reference: length code 257 (0000001), distance code 0.
        #expect(Self.failure { _ = try Self.inflate([0x03, 0x02, 0x00, 0x00], gzip: false) }?.contains("before the start") == true)
        // A dynamic block whose code-length code gives 19 codes of 1 bit: over-subscribed.
        var bits = TestBits()
        bits.write(1, 1); bits.write(2, 2)            // BFINAL, BTYPE 10
        bits.write(0, 5); bits.write(0, 5); bits.write(15, 4) // HLIT 257, HDIST 1, HCLEN 19
        for _ in 0..<19 { bits.write(1, 3) }
        #expect(Self.failure { _ = try Self.inflate(bits.bytes + [0, 0, 0, 0], gzip: false) }?.contains("over-subscribed") == true)
        // A dynamic block whose code-length code is a single 1-bit code: incomplete.
        var single = TestBits()
        single.write(1, 1); single.write(2, 2)
        single.write(0, 5); single.write(0, 5); single.write(0, 4) // HCLEN 4: lengths of 16, 17, 18, 0
        single.write(0, 3); single.write(0, 3); single.write(0, 3); single.write(1, 3)
        #expect(Self.failure { _ = try Self.inflate(single.bytes + [0, 0, 0, 0], gzip: false) }?.contains("incomplete") == true)
    }

    @Test func aDecompressionBombStopsAtTheCap() throws {
        // 400 units that each inflate to 2.58 MB: about 1 GB, fed lazily, refused past 1 MiB.
        let unit = [UInt8](DeflateBomb.unit(runs: 10_000))
        var sent = 0
        var delivered = 0
        var pieces = 0
        var inflater = Inflater(format: .gzip, input: {
            defer { sent += 1 }
            if sent == 0 { return [UInt8](DeflateBomb.gzipHeader)[...] }
            return sent <= 400 ? unit[...] : nil
        }, output: { piece in
            pieces += 1
            #expect(piece.count <= 64 * 1024)
            delivered += piece.count
            if delivered > 1 << 20 { throw Refused() }
        })
        #expect(throws: Refused.self) { try inflater.run() }
        #expect(delivered <= (1 << 20) + 64 * 1024)
        #expect(sent < 10, "it stopped reading input once the cap was passed (read \(sent) pieces)")
    }
}

/// Bits for hand-built deflate streams, least significant first.
struct TestBits {
    var bytes: [UInt8] = []
    private var filled = 0
    mutating func write(_ value: UInt32, _ count: Int) {
        for i in 0..<count {
            if filled == 0 { bytes.append(0) }
            bytes[bytes.count - 1] |= UInt8((value >> UInt32(i)) & 1) << UInt8(filled)
            filled = (filled + 1) % 8
        }
    }
}


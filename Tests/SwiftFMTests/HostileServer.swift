import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Builds deflate data that inflates to many zero bytes: a "compression bomb".
///
/// One *unit* is a fixed-Huffman block (RFC 1951 §3.2.6) holding a literal 0 then `runs` copies of
/// ⟨length 258, distance 1⟩, followed by an empty stored block that pads to a byte boundary — so units can
/// be sent back to back, for ever. Each unit inflates to `1 + 258 × runs` bytes from about `13 × runs / 8`.
enum DeflateBomb {
    /// The 10-byte gzip member header (RFC 1952), deflate, no name, unknown OS.
    static let gzipHeader = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF])

    static func unit(runs: Int) -> Data {
        var bits = BitWriter()
        bits.write(0, count: 1)             // BFINAL 0
        bits.write(1, count: 2)             // BTYPE 01: fixed Huffman
        bits.huffman(0x30, count: 8)        // literal 0 (0x30 + 0, 8 bits)
        for _ in 0..<runs {
            bits.huffman(0xC5, count: 8)    // length code 285 = 258 (11000101), no extra bits
            bits.huffman(0, count: 5)       // distance code 0 = distance 1
        }
        bits.huffman(0, count: 7)           // end of block (256)
        bits.write(0, count: 1)             // BFINAL 0
        bits.write(0, count: 2)             // BTYPE 00: stored, then pad to a byte
        bits.align()
        bits.bytes.append(contentsOf: [0x00, 0x00, 0xFF, 0xFF])   // LEN 0, NLEN 0xFFFF
        return Data(bits.bytes)
    }

    /// How many bytes one unit inflates to.
    static func inflatedSize(runs: Int) -> Int { 1 + 258 * runs }

    private struct BitWriter {
        var bytes: [UInt8] = []
        var current: UInt32 = 0
        var filled = 0

        /// Writes `count` bits of `value`, least significant first (header fields, extra bits).
        mutating func write(_ value: UInt32, count: Int) {
            for i in 0..<count { push((value >> UInt32(i)) & 1) }
        }

        /// Writes a Huffman code, most significant bit first.
        mutating func huffman(_ code: UInt32, count: Int) {
            for i in stride(from: count - 1, through: 0, by: -1) { push((code >> UInt32(i)) & 1) }
        }

        mutating func align() { while filled != 0 { push(0) } }

        private mutating func push(_ bit: UInt32) {
            current |= bit << UInt32(filled)
            filled += 1
            if filled == 8 {
                bytes.append(UInt8(current))
                current = 0
                filled = 0
            }
        }
    }
}

/// An ``FMTransport`` around a real one (URLSession by default) that counts the body bytes handed to SwiftFM, and those
/// handed after SwiftFM asked to stop (the transport must stop reading then).
final class CountingTransport: FMTransport, @unchecked Sendable {
    private let base: any FMTransport

    init(_ wire: Wire = .urlSession) { base = wire.transport(idleTimeout: 60) }
    private let lock = NSLock()
    private var _delivered = 0
    private var _afterRefusal = 0
    private var _refused = 0
    private var _requests = 0

    /// Body bytes handed to SwiftFM (after content decoding).
    var delivered: Int { lock.withLock { _delivered } }
    /// Body bytes handed to SwiftFM after it had answered `false` once.
    var afterRefusal: Int { lock.withLock { _afterRefusal } }
    /// How many times SwiftFM answered `false`.
    var refusals: Int { lock.withLock { _refused } }
    /// Requests sent.
    var requests: Int { lock.withLock { _requests } }

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        lock.withLock { _requests += 1 }
        let refused = Locked(false)
        let counted = FMTransportEvents(
            response: events.response,
            data: { [self] data in
                let already = refused.withLock { $0 }
                lock.withLock {
                    _delivered += data.count
                    if already { _afterRefusal += data.count }
                }
                let proceed = events.data(data)
                if !proceed {
                    refused.withLock { $0 = true }
                    lock.withLock { _refused += 1 }
                }
                return proceed
            },
            complete: events.complete
        )
        return base.send(request, events: counted)
    }
}

import Foundation

/// A minimal gzip writer (RFC 1952 around RFC 1951 *stored* blocks): valid gzip that any decoder
/// reads, without compressing. Enough to play `Content-Encoding: gzip` with zero dependencies.
enum Gzip {
    /// `data` as a gzip member: a 10-byte header, deflate stored blocks of at most 65 535 bytes,
    /// then the CRC-32 and the length modulo 2³², little-endian.
    static func encode(_ data: Data) -> Data {
        let bytes = [UInt8](data)
        var out: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]
        out.reserveCapacity(bytes.count + bytes.count / 65_535 * 5 + 32)
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let final: UInt8 = offset + count == bytes.count ? 1 : 0
            // BFINAL in bit 0, BTYPE 00 (stored); the rest of the byte pads to the boundary.
            out.append(final)
            out.append(UInt8(count & 0xff))
            out.append(UInt8(count >> 8))
            out.append(UInt8(~count & 0xff))
            out.append(UInt8((~count >> 8) & 0xff))
            out.append(contentsOf: bytes[offset..<(offset + count)])
            offset += count
        } while offset < bytes.count
        appendLittleEndian(crc32(bytes), to: &out)
        appendLittleEndian(UInt32(truncatingIfNeeded: bytes.count), to: &out)
        return Data(out)
    }

    private static func appendLittleEndian(_ value: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }

    /// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320), as gzip uses.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8)
        }
        return ~crc
    }

    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xedb8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}

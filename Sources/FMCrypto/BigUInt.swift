// An unsigned big integer, just enough for SRP over RFC 5054's 3072-bit group and RSA signatures:
// 64-bit limbs, schoolbook arithmetic, and modular exponentiation by Montgomery multiplication.

/// An unsigned integer of any size (64-bit limbs, least significant first, no high zero limbs).
package struct BigUInt: Sendable, Equatable, Comparable {
    /// Limbs, least significant first; empty for zero.
    package private(set) var limbs: [UInt64]

    /// Zero.
    package static let zero = BigUInt(limbs: [])

    /// The value of `limbs` (least significant first).
    package init(limbs: [UInt64]) {
        self.limbs = limbs
        normalize()
    }

    /// A machine word.
    package init(_ value: UInt64) {
        self.init(limbs: [value])
    }

    /// The big-endian unsigned number in `bytes`.
    package init<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        var result: [UInt64] = []
        result.reserveCapacity(bytes.count / 8 + 1)
        var word: UInt64 = 0, shift: UInt64 = 0
        for byte in bytes.reversed() {
            word |= UInt64(byte) << shift
            shift += 8
            if shift == 64 {
                result.append(word)
                word = 0
                shift = 0
            }
        }
        if shift > 0 { result.append(word) }
        self.init(limbs: result)
    }

    /// The number written in hexadecimal (either case, no prefix); `nil` for an empty or invalid string.
    package init?(hex: String) {
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(hex.utf8.count)
        for c in hex.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(c - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        guard !nibbles.isEmpty else { return nil }
        var result: [UInt64] = []
        result.reserveCapacity(nibbles.count / 16 + 1)
        var word: UInt64 = 0, shift: UInt64 = 0
        for nibble in nibbles.reversed() {
            word |= UInt64(nibble) << shift
            shift += 4
            if shift == 64 {
                result.append(word)
                word = 0
                shift = 0
            }
        }
        if shift > 0 { result.append(word) }
        self.init(limbs: result)
    }

    private mutating func normalize() {
        while let last = limbs.last, last == 0 { limbs.removeLast() }
    }

    /// Whether the value is zero.
    package var isZero: Bool { limbs.isEmpty }

    /// The number of significant bits.
    package var bitWidth: Int {
        guard let top = limbs.last else { return 0 }
        return limbs.count * 64 - top.leadingZeroBitCount
    }

    /// Bit `i` (0 is the least significant).
    package func bit(_ i: Int) -> Bool {
        let limb = i / 64
        guard limb < limbs.count else { return false }
        return (limbs[limb] >> UInt64(i % 64)) & 1 == 1
    }

    /// Big-endian bytes without leading zeros (empty for zero).
    package var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(limbs.count * 8)
        for limb in limbs.reversed() {
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: limb >> UInt64(shift))) }
        }
        return Array(out.drop { $0 == 0 })
    }

    /// Big-endian bytes left-padded with zeros to `count` (longer when the value needs more).
    package func bytes(paddedTo count: Int) -> [UInt8] {
        let raw = bytes
        return raw.count >= count ? raw : [UInt8](repeating: 0, count: count - raw.count) + raw
    }

    /// Lower-case hexadecimal without leading zeros (`"0"` for zero).
    package var hex: String {
        guard let top = limbs.last else { return "0" }
        var out = String(top, radix: 16)
        for limb in limbs.dropLast().reversed() {
            let part = String(limb, radix: 16)
            out += String(repeating: "0", count: 16 - part.count) + part
        }
        return out
    }

    // MARK: Arithmetic

    package static func < (lhs: BigUInt, rhs: BigUInt) -> Bool { compare(lhs.limbs, rhs.limbs) < 0 }

    /// -1, 0 or 1 as `a` is below, equal to or above `b` (both normalized).
    static func compare(_ a: [UInt64], _ b: [UInt64]) -> Int {
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        var i = a.count - 1
        while i >= 0 {
            if a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
            i -= 1
        }
        return 0
    }

    package static func + (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        let (long, short) = lhs.limbs.count >= rhs.limbs.count ? (lhs.limbs, rhs.limbs) : (rhs.limbs, lhs.limbs)
        var out = long
        var carry: UInt64 = 0
        for i in 0..<out.count {
            let (s1, o1) = out[i].addingReportingOverflow(i < short.count ? short[i] : 0)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            out[i] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            if carry == 0, i >= short.count { break }
        }
        if carry > 0 { out.append(carry) }
        return BigUInt(limbs: out)
    }

    /// `lhs - rhs`; `rhs` must not exceed `lhs` (the result is then wrong, never a crash).
    package static func - (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        var out = lhs.limbs
        var borrow: UInt64 = 0
        for i in 0..<out.count {
            let (d1, o1) = out[i].subtractingReportingOverflow(i < rhs.limbs.count ? rhs.limbs[i] : 0)
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            out[i] = d2
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return BigUInt(limbs: out)
    }

    package static func * (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        guard !lhs.isZero, !rhs.isZero else { return .zero }
        let a = lhs.limbs, b = rhs.limbs
        var out = [UInt64](repeating: 0, count: a.count + b.count)
        for i in 0..<a.count {
            var carry: UInt64 = 0
            let ai = a[i]
            for j in 0..<b.count {
                let (hi, lo) = ai.multipliedFullWidth(by: b[j])
                let (s1, o1) = lo.addingReportingOverflow(out[i + j])
                let (s2, o2) = s1.addingReportingOverflow(carry)
                out[i + j] = s2
                carry = hi &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            }
            out[i + b.count] = carry
        }
        return BigUInt(limbs: out)
    }

    /// `lhs mod rhs` by binary long division (used rarely: reductions, Montgomery set-up). Zero for a
    /// zero modulus.
    package static func % (lhs: BigUInt, rhs: BigUInt) -> BigUInt {
        guard !rhs.isZero else { return .zero }
        guard compare(lhs.limbs, rhs.limbs) >= 0 else { return lhs }
        let m = rhs.limbs
        var r = [UInt64](repeating: 0, count: m.count + 1)
        var i = lhs.bitWidth - 1
        while i >= 0 {
            // r = r << 1 | bit
            var carry: UInt64 = lhs.bit(i) ? 1 : 0
            for j in 0..<r.count {
                let next = r[j] >> 63
                r[j] = r[j] << 1 | carry
                carry = next
            }
            if !lessThan(r, m) { subtractInPlace(&r, m) }
            i -= 1
        }
        return BigUInt(limbs: r)
    }

    /// `a < m` where `a` may carry extra (possibly zero) high limbs.
    private static func lessThan(_ a: [UInt64], _ m: [UInt64]) -> Bool {
        var i = a.count - 1
        while i >= m.count {
            if a[i] != 0 { return false }
            i -= 1
        }
        while i >= 0 {
            if a[i] != m[i] { return a[i] < m[i] }
            i -= 1
        }
        return false
    }

    private static func subtractInPlace(_ a: inout [UInt64], _ m: [UInt64]) {
        var borrow: UInt64 = 0
        for i in 0..<a.count {
            let (d1, o1) = a[i].subtractingReportingOverflow(i < m.count ? m[i] : 0)
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            a[i] = d2
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
    }

    /// `self ^ exponent mod modulus`; the modulus must be odd and above 1 (else zero).
    package func power(_ exponent: BigUInt, modulus: BigUInt) -> BigUInt {
        guard let context = MontgomeryContext(modulus: modulus) else { return .zero }
        return context.power(self, exponent)
    }
}

/// Montgomery arithmetic for one odd modulus (R = 2^(64·n)), to exponentiate without divisions.
package struct MontgomeryContext: Sendable {
    /// The modulus.
    package let modulus: BigUInt
    private let n: [UInt64]
    private let nPrime: UInt64
    private let rSquared: [UInt64]

    /// The context for `modulus`; `nil` when it is even or below 3.
    package init?(modulus: BigUInt) {
        guard let low = modulus.limbs.first, low & 1 == 1, modulus > BigUInt(1) else { return nil }
        self.modulus = modulus
        n = modulus.limbs
        // Newton's iteration for low⁻¹ mod 2^64 (each step doubles the correct bits: 1 → 64 in 6).
        var inverse: UInt64 = 1
        for _ in 0..<6 { inverse = inverse &* (2 &- low &* inverse) }
        nPrime = 0 &- inverse
        var r2 = [UInt64](repeating: 0, count: 2 * n.count + 1)
        r2[2 * n.count] = 1
        rSquared = MontgomeryContext.padded((BigUInt(limbs: r2) % modulus).limbs, n.count)
    }

    private static func padded(_ limbs: [UInt64], _ count: Int) -> [UInt64] {
        limbs.count >= count ? Array(limbs.prefix(count)) : limbs + [UInt64](repeating: 0, count: count - limbs.count)
    }

    /// `a · b · R⁻¹ mod n` (CIOS), for `a, b < n` given as `n.count` limbs.
    private func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let count = n.count
        var t = [UInt64](repeating: 0, count: count + 2)
        t.withUnsafeMutableBufferPointer { t in
            a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in
                    n.withUnsafeBufferPointer { n in
                        for i in 0..<count {
                            let bi = b[i]
                            var carry: UInt64 = 0
                            for j in 0..<count {
                                let (hi, lo) = a[j].multipliedFullWidth(by: bi)
                                let (s1, o1) = lo.addingReportingOverflow(t[j])
                                let (s2, o2) = s1.addingReportingOverflow(carry)
                                t[j] = s2
                                carry = hi &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
                            }
                            let (s, o) = t[count].addingReportingOverflow(carry)
                            t[count] = s
                            t[count + 1] = o ? 1 : 0
                            let m = t[0] &* nPrime
                            let (h0, l0) = m.multipliedFullWidth(by: n[0])
                            let (_, c0) = l0.addingReportingOverflow(t[0])
                            carry = h0 &+ (c0 ? 1 : 0)
                            for j in 1..<count {
                                let (hi, lo) = m.multipliedFullWidth(by: n[j])
                                let (s1, o1) = lo.addingReportingOverflow(t[j])
                                let (s2, o2) = s1.addingReportingOverflow(carry)
                                t[j - 1] = s2
                                carry = hi &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
                            }
                            let (s3, o3) = t[count].addingReportingOverflow(carry)
                            t[count - 1] = s3
                            t[count] = t[count + 1] &+ (o3 ? 1 : 0)
                        }
                    }
                }
            }
        }
        // t < 2n: subtract n once when t ≥ n.
        var geq = t[count] != 0
        if !geq {
            geq = true
            var i = count - 1
            while i >= 0 {
                if t[i] != n[i] {
                    geq = t[i] > n[i]
                    break
                }
                i -= 1
            }
        }
        var out = Array(t.prefix(count))
        if geq {
            var borrow: UInt64 = 0
            for i in 0..<count {
                let (d1, o1) = out[i].subtractingReportingOverflow(n[i])
                let (d2, o2) = d1.subtractingReportingOverflow(borrow)
                out[i] = d2
                borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            }
        }
        return out
    }

    /// `base ^ exponent mod modulus` (fixed 4-bit windows).
    package func power(_ base: BigUInt, _ exponent: BigUInt) -> BigUInt {
        let count = n.count
        let reduced = base < modulus ? base : base % modulus
        var one = [UInt64](repeating: 0, count: count)
        one[0] = 1
        let oneMont = multiply(one, rSquared)
        if exponent.isZero { return BigUInt(limbs: multiply(oneMont, one)) }
        let baseMont = multiply(MontgomeryContext.padded(reduced.limbs, count), rSquared)
        var table = [oneMont, baseMont]
        for i in 2..<16 { table.append(multiply(table[i - 1], baseMont)) }
        var acc = oneMont
        let windows = (exponent.bitWidth + 3) / 4
        var w = windows - 1
        var started = false
        while w >= 0 {
            if started { for _ in 0..<4 { acc = multiply(acc, acc) } }
            var digit = 0
            for b in 0..<4 where exponent.bit(w * 4 + b) { digit |= 1 << b }
            if digit != 0 {
                acc = started ? multiply(acc, table[digit]) : table[digit]
                started = true
            }
            w -= 1
        }
        return BigUInt(limbs: multiply(acc, one))
    }
}

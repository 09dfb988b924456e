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
        self.init(limbs: Self.limbs(leastSignificantFirst: bytes.reversed(), bitsPerDigit: 8, count: bytes.count))
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
        self.init(limbs: Self.limbs(leastSignificantFirst: nibbles.reversed(), bitsPerDigit: 4, count: nibbles.count))
    }

    /// Packs `count` digits of `bitsPerDigit` bits (8 or 4: a divisor of 64), least significant first, into
    /// 64-bit limbs, least significant first.
    private static func limbs<Digits: Sequence>(leastSignificantFirst digits: Digits, bitsPerDigit: UInt64, count: Int)
        -> [UInt64] where Digits.Element == UInt8 {
        var result: [UInt64] = []
        result.reserveCapacity(count * Int(bitsPerDigit) / 64 + 1)
        var word: UInt64 = 0, shift: UInt64 = 0
        for digit in digits {
            word |= UInt64(digit) << shift
            shift += bitsPerDigit
            if shift == 64 {
                result.append(word)
                word = 0
                shift = 0
            }
        }
        if shift > 0 { result.append(word) }
        return result
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
///
/// The work is done on raw limb buffers allocated once per exponentiation: products by schoolbook
/// multiplication (a dedicated squaring computes each cross product once), then a separate Montgomery
/// reduction (SOS). Carries are written so that the compiler emits add-with-carry, not branches. The
/// exponent is walked in fixed windows with a masked table look-up, so the sequence of operations and
/// the memory touched do not depend on the exponent's bits (only on its length).
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

    // MARK: Kernels (raw buffers of `count` limbs, least significant first)

    /// `t[0..<2count] = a · b`.
    @inline(__always)
    private static func product(_ t: UnsafeMutablePointer<UInt64>, _ a: UnsafePointer<UInt64>, _ b: UnsafePointer<UInt64>, _ count: Int) {
        t.update(repeating: 0, count: 2 * count)
        for i in 0..<count {
            let ai = a[i]
            var carry: UInt64 = 0
            let row = t + i
            for j in 0..<count {
                var (hi, lo) = ai.multipliedFullWidth(by: b[j])
                var overflow: Bool
                (lo, overflow) = lo.addingReportingOverflow(row[j])
                hi &+= overflow ? 1 : 0
                (lo, overflow) = lo.addingReportingOverflow(carry)
                hi &+= overflow ? 1 : 0
                row[j] = lo
                carry = hi
            }
            row[count] = carry
        }
    }

    /// `t[0..<2count] = a²`: each cross product once, doubled by a shift, then the squares on the diagonal.
    @inline(__always)
    private static func square(_ t: UnsafeMutablePointer<UInt64>, _ a: UnsafePointer<UInt64>, _ count: Int) {
        t.update(repeating: 0, count: 2 * count)
        for i in 0..<(count - 1) {
            let ai = a[i]
            var carry: UInt64 = 0
            let row = t + i
            for j in (i + 1)..<count {
                var (hi, lo) = ai.multipliedFullWidth(by: a[j])
                var overflow: Bool
                (lo, overflow) = lo.addingReportingOverflow(row[j])
                hi &+= overflow ? 1 : 0
                (lo, overflow) = lo.addingReportingOverflow(carry)
                hi &+= overflow ? 1 : 0
                row[j] = lo
                carry = hi
            }
            row[count] = carry
        }
        var shifted: UInt64 = 0
        for i in 0..<(2 * count) {
            let word = t[i]
            t[i] = word << 1 | shifted
            shifted = word >> 63
        }
        var carry: UInt64 = 0
        for i in 0..<count {
            let (hi, lo) = a[i].multipliedFullWidth(by: a[i])
            var overflow: Bool
            var low = lo, high = hi
            (low, overflow) = low.addingReportingOverflow(carry)
            high &+= overflow ? 1 : 0
            (t[2 * i], overflow) = t[2 * i].addingReportingOverflow(low)
            high &+= overflow ? 1 : 0
            (t[2 * i + 1], overflow) = t[2 * i + 1].addingReportingOverflow(high)
            carry = overflow ? 1 : 0
        }
    }

    /// `r = t · R⁻¹ mod n` for `t < n·R` (`t` holds `2count` limbs and is overwritten).
    @inline(__always)
    private static func reduce(_ r: UnsafeMutablePointer<UInt64>, _ t: UnsafeMutablePointer<UInt64>, _ n: UnsafePointer<UInt64>,
                               _ nPrime: UInt64, _ count: Int) {
        var top: UInt64 = 0
        for i in 0..<count {
            let m = t[i] &* nPrime
            var carry: UInt64 = 0
            let row = t + i
            for j in 0..<count {
                var (hi, lo) = m.multipliedFullWidth(by: n[j])
                var overflow: Bool
                (lo, overflow) = lo.addingReportingOverflow(row[j])
                hi &+= overflow ? 1 : 0
                (lo, overflow) = lo.addingReportingOverflow(carry)
                hi &+= overflow ? 1 : 0
                row[j] = lo
                carry = hi
            }
            // The carry out of word i+count goes into word i+count+1 at the next step.
            var overflow: Bool
            var sum: UInt64
            (sum, overflow) = row[count].addingReportingOverflow(carry)
            var next: UInt64 = overflow ? 1 : 0
            (sum, overflow) = sum.addingReportingOverflow(top)
            next &+= overflow ? 1 : 0
            row[count] = sum
            top = next
        }
        // The value is top·R + t[count..<2count] < 2n: subtract n once when it is at least n (masked).
        let high = t + count
        let borrow = subtract(high, n, into: r, count)
        // Keep the difference unless it borrowed past a zero top word.
        select(r, high, 0 &- (borrow & ~top & 1), count)
    }

    /// `r = 2r mod n` for `r < n`.
    @inline(__always)
    private static func double(_ r: UnsafeMutablePointer<UInt64>, _ scratch: UnsafeMutablePointer<UInt64>, _ n: UnsafePointer<UInt64>, _ count: Int) {
        var shifted: UInt64 = 0
        for i in 0..<count {
            let word = r[i]
            r[i] = word << 1 | shifted
            shifted = word >> 63
        }
        let borrow = subtract(r, n, into: scratch, count)
        // Take the difference unless it borrowed past a zero shifted-out bit.
        select(r, scratch, ~(0 &- (borrow & ~shifted & 1)), count)
    }

    /// `out = a − b` over `count` words; returns the borrow out of the top word (0 or 1). `out` may be `a`.
    @inline(__always)
    private static func subtract(_ a: UnsafePointer<UInt64>, _ b: UnsafePointer<UInt64>, into out: UnsafeMutablePointer<UInt64>,
                                 _ count: Int) -> UInt64 {
        var borrow: UInt64 = 0
        for i in 0..<count {
            var overflow: Bool
            var difference: UInt64
            (difference, overflow) = a[i].subtractingReportingOverflow(b[i])
            var borrowOut: UInt64 = overflow ? 1 : 0
            (difference, overflow) = difference.subtractingReportingOverflow(borrow)
            borrowOut &+= overflow ? 1 : 0
            out[i] = difference
            borrow = borrowOut
        }
        return borrow
    }

    /// `r = mask == all ones ? source : r` (mask is 0 or all ones).
    @inline(__always)
    private static func select(_ r: UnsafeMutablePointer<UInt64>, _ source: UnsafePointer<UInt64>, _ mask: UInt64, _ count: Int) {
        for i in 0..<count { r[i] = (source[i] & mask) | (r[i] & ~mask) }
    }

    // MARK: Exponentiation

    /// `base ^ exponent mod modulus`.
    package func power(_ base: BigUInt, _ exponent: BigUInt) -> BigUInt {
        let count = n.count
        if exponent.isZero { return BigUInt(1) }
        let reduced = MontgomeryContext.padded((base < modulus ? base : base % modulus).limbs, count)
        let bits = exponent.bitWidth
        let nPrime = self.nPrime
        let two = BigUInt(2)
        let result: [UInt64] = n.withUnsafeBufferPointer { nBuffer in
            rSquared.withUnsafeBufferPointer { r2Buffer in
                reduced.withUnsafeBufferPointer { baseBuffer in
                    guard let n = nBuffer.baseAddress, let r2 = r2Buffer.baseAddress, let b = baseBuffer.baseAddress else { return [] }
                    let window = base == two ? 1 : (bits > 512 ? 5 : bits > 128 ? 4 : bits > 32 ? 3 : 1)
                    let entries = base == two ? 0 : 1 << window
                    // acc, scratch, wide (2count), table (entries · count)
                    let storage = UnsafeMutablePointer<UInt64>.allocate(capacity: count * (4 + entries))
                    defer { storage.deallocate() }
                    let acc = storage, scratch = storage + count, wide = storage + 2 * count, table = storage + 4 * count
                    // oneMont = R mod n = reduce(R²); baseMont = reduce(base · R²).
                    wide.update(repeating: 0, count: 2 * count)
                    wide.update(from: r2, count: count)
                    MontgomeryContext.reduce(acc, wide, n, nPrime, count)
                    if base == two {
                        // 2^e: per bit, square, then double and keep the double when the bit is set.
                        var i = bits - 1
                        while i >= 0 {
                            MontgomeryContext.square(wide, acc, count)
                            MontgomeryContext.reduce(acc, wide, n, nPrime, count)
                            scratch.update(from: acc, count: count)
                            MontgomeryContext.double(scratch, wide, n, count)
                            let mask = 0 &- ((exponent.limbs[i >> 6] >> UInt64(i & 63)) & 1)
                            MontgomeryContext.select(acc, scratch, mask, count)
                            i -= 1
                        }
                    } else {
                        // table[d] = base^d (Montgomery form), d < 2^window.
                        table.update(from: acc, count: count)
                        MontgomeryContext.product(wide, b, r2, count)
                        MontgomeryContext.reduce(table + count, wide, n, nPrime, count)
                        var d = 2
                        while d < entries {
                            MontgomeryContext.product(wide, table + (d - 1) * count, table + count, count)
                            MontgomeryContext.reduce(table + d * count, wide, n, nPrime, count)
                            d += 1
                        }
                        // Fixed windows from the top; every window squares `window` times and multiplies
                        // once (by base^0 for a zero digit), the entry read with a mask over the whole table.
                        var position = ((bits + window - 1) / window - 1) * window
                        var first = true
                        while position >= 0 {
                            var digit: UInt64 = 0
                            for k in 0..<window where position + k < bits {
                                let bit = position + k
                                digit |= ((exponent.limbs[bit >> 6] >> UInt64(bit & 63)) & 1) << UInt64(k)
                            }
                            for e in 0..<entries {
                                // All ones when e == digit: (e XOR digit) - 1 borrows only from zero.
                                let difference = UInt64(e) ^ digit
                                let mask = 0 &- ((difference &- 1) >> 63)
                                MontgomeryContext.select(scratch, table + e * count, mask, count)
                            }
                            if first {
                                acc.update(from: scratch, count: count)
                                first = false
                            } else {
                                for _ in 0..<window {
                                    MontgomeryContext.square(wide, acc, count)
                                    MontgomeryContext.reduce(acc, wide, n, nPrime, count)
                                }
                                MontgomeryContext.product(wide, acc, scratch, count)
                                MontgomeryContext.reduce(acc, wide, n, nPrime, count)
                            }
                            position -= window
                        }
                    }
                    // Out of Montgomery form: reduce(acc · 1).
                    wide.update(repeating: 0, count: 2 * count)
                    wide.update(from: acc, count: count)
                    MontgomeryContext.reduce(acc, wide, n, nPrime, count)
                    return Array(UnsafeBufferPointer(start: acc, count: count))
                }
            }
        }
        return BigUInt(limbs: result)
    }
}

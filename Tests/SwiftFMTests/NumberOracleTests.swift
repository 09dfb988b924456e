import Foundation
import Testing
import TestSupport
@testable import SwiftFM

/// Typed `Double` and `Float` are correctly rounded: for every number, from a JSON number and
/// from text, the decoder gives the bits Swift's `Double(String)` / `Float(String)` (the oracle) give for
/// the same characters. Fuzzed with random values in several spellings plus a fixed list of hard cases.
@Suite("Typed numbers against Double(String) and Float(String)")
struct NumberOracleTests {
    struct D: Decodable { var n: Double; var t: Double }
    struct F: Decodable { var n: Float; var t: Float }

    /// One answer holding every value twice: as a JSON number (`n`) and as text (`t`, padded with spaces
    /// now and then, as FileMaker text fields may be).
    static func body(_ numbers: [String]) -> Data {
        let records = numbers.enumerated().map { index, number in
            let text = index % 3 == 0 ? " \(number) " : number
            return #"{"fieldData":{"n":\#(number),"t":"\#(text)"},"portalData":{},"recordId":"\#(index + 1)","modId":"1"}"#
        }
        return Data(#"{"response":{"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    /// Decodes `numbers` as `Double` both ways and returns the spellings whose bits differ from the oracle.
    static func doubleMismatches(_ numbers: [String]) throws -> [String] {
        let set = try FMTypedFoundSet<D>(responseBody: body(numbers))
        return zip(numbers, set.records).compactMap { number, record in
            let oracle = Double(number)!.bitPattern
            return record.fieldData.n.bitPattern == oracle && record.fieldData.t.bitPattern == oracle ? nil : number
        }
    }

    static func floatMismatches(_ numbers: [String]) throws -> [String] {
        let set = try FMTypedFoundSet<F>(responseBody: body(numbers))
        return zip(numbers, set.records).compactMap { number, record in
            let oracle = Float(number)!.bitPattern
            return record.fieldData.n.bitPattern == oracle && record.fieldData.t.bitPattern == oracle ? nil : number
        }
    }

    // MARK: exact decimal expansions (the hardest inputs: halfway between two neighbours)

    /// The exact decimal expansion of `m × 2^e` (`m > 0`), as a JSON number.
    static func exactDecimal(_ m: UInt64, _ e: Int) -> String {
        let base: UInt64 = 1_000_000_000
        var limbs: [UInt64] = [m % base, (m / base) % base, m / (base * base)] // little-endian, base 10^9
        func multiply(_ factor: UInt64) {
            var carry: UInt64 = 0
            for index in limbs.indices {
                let value = limbs[index] * factor + carry
                limbs[index] = value % base
                carry = value / base
            }
            while carry > 0 { limbs.append(carry % base); carry /= base }
        }
        func power(_ factor: UInt64, _ count: Int, chunk: Int, _ chunkFactor: UInt64) {
            var left = count
            while left >= chunk { multiply(chunkFactor); left -= chunk }
            for _ in 0..<left { multiply(factor) }
        }
        var point = 0
        if e >= 0 {
            power(2, e, chunk: 29, 1 << 29)
        } else {
            power(5, -e, chunk: 13, 1_220_703_125) // 5^13
            point = -e
        }
        while limbs.count > 1, limbs.last == 0 { limbs.removeLast() }
        var digits = String(limbs.last!) + limbs.dropLast().reversed().map { limb in
            let text = String(limb)
            return String(repeating: "0", count: 9 - text.count) + text
        }.joined()
        if point > 0 {
            if digits.count <= point { digits = String(repeating: "0", count: point - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -point))
            while digits.hasSuffix("0") { digits.removeLast() }
            if digits.hasSuffix(".") { digits.removeLast() }
        }
        return digits
    }

    /// The exact midpoint between `value` and the next larger magnitude of its type (`significandBits`
    /// stored bits), and the same nudged just below and just above: correct rounding is tested at its edge.
    static func midpoints(significand: UInt64, exponent: Int, negative: Bool) -> [String] {
        let exact = exactDecimal(2 * significand + 1, exponent - 1)
        let sign = negative ? "-" : ""
        // Below: one unit of the last digit less (borrowing), then 9s: just under the midpoint.
        var digits = Array(exact)
        var index = digits.count - 1
        while index >= 0 {
            if digits[index] == "." { index -= 1; continue }
            if digits[index] == "0" { digits[index] = "9"; index -= 1; continue }
            digits[index] = Character(String(digits[index].wholeNumberValue! - 1))
            break
        }
        while digits.count > 1, digits[0] == "0", digits[1] != "." { digits.removeFirst() }
        let below = String(digits) + (exact.contains(".") ? "9999999" : ".9999999")
        let above = exact + (exact.contains(".") ? "000001" : ".000001")
        return [sign + exact, sign + below, sign + above]
    }

    static let hardCases: [String] = [
        "0", "-0", "-0.0", "0e10", "-0e-10", "1", "-1", "0.1", "0.2", "0.3", "0.30000000000000004", "0.3000000000000001",
        "0.1000000000000000055511151231257827021181583404541015625",              // the exact value of 0.1
        "0.1000000000000000055511151231257827021181583404541015624",
        "0.1000000000000000055511151231257827021181583404541015626",
        "1.00000000000000011102230246251565404236316680908203125",                // halfway 1 ↔ next: even (1)
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995", "18014398509481985",
        "123456789012345678901234567890", "12345678901234567890.123456789", "1e22", "1e23", "8.98846567431158e307",
        "1.7976931348623157e308", "1.7976931348623158e308", "1.797693134862315807e308", "-1.7976931348623157e308",
        "2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308", "2.225073858507201136057409796709131975934819546351645648e-308",
        "4.9406564584124654e-324", "5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "3e-324", "7.4e-324",
        "1e-400", "-1e-400", "4.35679828e-308", "0.000000000000000000000000000000000000001",
        "3.4028234663852886e38", "3.4028235e38", "3.40282356779733661637539395458142568447e38", "1.17549435e-38", "1.1754942e-38",
        "1.4e-45", "1.401298464324817e-45", "7.006492321624085e-46", "7.006492321624086e-46", "1e-46",
        "16777216", "16777217", "16777218", "16777219", "33554433", "0.1e1", "100e-2", "1234567.1234567",
        "0.000001", "1e-7", "123456789", "4294967295", "4294967296", "18446744073709551615", "18446744073709551616",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "2.5", "3.5", "0.5e-1", "1E5", "1E+5", "1e-5",
    ]

    // MARK: the fuzz

    @Test func doublesFromNumbersAndTextAreCorrectlyRounded() throws {
        var random = SplitMix64(state: 0x18_D0B1E)
        var numbers: [String] = Self.hardCases.filter { Double($0)!.isFinite }
        func randomDouble() -> Double {
            while true {
                let value = Double(bitPattern: random.next())
                if value.isFinite { return value }
            }
        }
        for _ in 0..<8_000 { numbers.append(String(format: "%.17g", randomDouble())) }
        for _ in 0..<4_000 { numbers.append("\(randomDouble())") }
        for _ in 0..<4_000 { numbers.append(String(format: "%.\(1 + random.below(25))e", randomDouble())) }
        // Random decimal spellings: 1 to 40 digits, any point, any exponent (beyond the range left out).
        for _ in 0..<4_000 {
            let count = 1 + random.below(40)
            let text = Self.randomSpelling(&random, digitCount: count, exponentChance: 70, exponents: -340..<320)
            if Double(text)!.isFinite { numbers.append(text) }
        }
        // Exact midpoints between neighbours (normal and subnormal), and just below and above them.
        for index in 0..<2_000 {
            let value = randomDouble()
            let bits = value.bitPattern
            let biased = Int((bits >> 52) & 0x7FF)
            guard biased < 0x7FE else { continue }
            let fraction = bits & ((1 << 52) - 1)
            let significand = biased == 0 ? fraction : fraction | (1 << 52)
            let exponent = (biased == 0 ? 1 : biased) - 1075
            let subnormal = index % 4 == 0 // a quarter in the subnormal range, where rounding is coarsest
            numbers += Self.midpoints(significand: subnormal ? fraction >> 3 : significand,
                                      exponent: subnormal ? -1074 : exponent, negative: value.sign == .minus)
        }
        #expect(numbers.count >= 20_000)
        let wrong = try Self.doubleMismatches(numbers)
        #expect(wrong.isEmpty, "\(wrong.count) of \(numbers.count) differ from Double(String), for example \(wrong.prefix(5))")
    }

    @Test func floatsFromNumbersAndTextAreCorrectlyRounded() throws {
        var random = SplitMix64(state: 0xF10A7)
        var numbers: [String] = Self.hardCases.filter { Float($0)!.isFinite }
        func randomFloat() -> Float {
            while true {
                let value = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
                if value.isFinite { return value }
            }
        }
        for _ in 0..<6_000 { numbers.append(String(format: "%.9g", Double(randomFloat()))) }
        for _ in 0..<3_000 { numbers.append("\(randomFloat())") }
        // Doubles that are not floats: rounding them through Double first is where a decoder goes one off.
        for _ in 0..<3_000 { numbers.append(String(format: "%.17g", Double(randomFloat()) * (1 + Double(random.below(1000)) * 1e-12))) }
        for index in 0..<2_000 {
            let value = randomFloat()
            let bits = value.bitPattern
            let biased = Int((bits >> 23) & 0xFF)
            guard biased < 0xFE else { continue }
            let fraction = UInt64(bits & ((1 << 23) - 1))
            let significand = biased == 0 ? fraction : fraction | (1 << 23)
            let exponent = (biased == 0 ? 1 : biased) - 150
            let subnormal = index % 4 == 0
            numbers += Self.midpoints(significand: subnormal ? fraction >> 3 : significand,
                                      exponent: subnormal ? -149 : exponent, negative: value.sign == .minus)
        }
        let unread = numbers.filter { Float($0) == nil }
        #expect(unread.isEmpty, "the oracle reads every spelling: \(unread.prefix(5))")
        numbers = numbers.filter { Float($0)?.isFinite == true }
        let wrong = try Self.floatMismatches(numbers)
        #expect(wrong.isEmpty, "\(wrong.count) of \(numbers.count) differ from Float(String), for example \(wrong.prefix(5))")
    }

    /// A random decimal spelling: `digitCount` digits (the first not 0) with the point after any of them, an
    /// exponent from `exponents` with a chance of `exponentChance` in 100, and a minus sign with 30 in 100.
    static func randomSpelling(_ random: inout SplitMix64, digitCount: Int, exponentChance: Int, exponents: Range<Int>) -> String {
        var digits = String(1 + random.below(9))
        for _ in 1..<digitCount { digits += String(random.below(10)) }
        let point = random.below(digitCount) + 1
        var text = String(digits.prefix(point))
        if point < digitCount { text += "." + digits.dropFirst(point) }
        if random.chance(exponentChance) { text += "e" + String(exponents.lowerBound + random.below(exponents.count)) }
        if random.chance(30) { text = "-" + text }
        return text
    }

    // MARK: raw records (long numbers are NSDecimalNumbers there) decoded typed

    /// Numbers of 18 to 800 digits (exact expansions, midpoints and their neighbours, random long spellings).
    static func longNumbers(seed: UInt64, doubles: Bool) -> [String] {
        var random = SplitMix64(state: seed)
        var numbers = hardCases.filter { $0.count > 17 }
        for _ in 0..<400 {
            let count = 18 + random.below(60)
            numbers.append(randomSpelling(&random, digitCount: count, exponentChance: 50, exponents: -50..<50))
        }
        for _ in 0..<(doubles ? 3_000 : 400) {
            let bits = random.next()
            if doubles {
                let value = Double(bitPattern: bits)
                let biased = Int((bits >> 52) & 0x7FF)
                guard value.isFinite, biased > 900, biased < 1200 else { continue } // exponents a Decimal holds
                numbers += midpoints(significand: (bits & ((1 << 52) - 1)) | (1 << 52), exponent: biased - 1075, negative: value.sign == .minus)
            } else {
                let value = Float(bitPattern: UInt32(truncatingIfNeeded: bits))
                let biased = Int((bits >> 23) & 0xFF)
                guard value.isFinite, biased > 0 else { continue }
                numbers += midpoints(significand: (bits & ((1 << 23) - 1)) | (1 << 23), exponent: biased - 150, negative: value.sign == .minus)
            }
        }
        return numbers
    }

    /// A found set made in code from raw records (whose numbers of more than 17 characters are
    /// `NSDecimalNumber`s, which hold 38 digits) decodes `Double` and `Float` with the bits `Double(String)` and
    /// `Float(String)` give for the characters the server sent, beyond 38 digits too (before, the 38 digits
    /// the decimal kept could fall on the other side of a midpoint: 465 of 631 differed); so does a raw
    /// field read as an ``FMFieldValue`` (once through `NSDecimalNumber.doubleValue`, not correctly rounded).
    @Test func rawRecordsDecodeLongNumbersExactly() throws {
        for doubles in [true, false] {
            // Floats: only numbers the raw record keeps as an `NSDecimalNumber` (more than 17 characters before
            // the exponent); a shorter one is a `Double` there, and a `Float` read from it is rounded twice.
            let numbers = Self.longNumbers(seed: doubles ? 0xDEC1 : 0xDEC2, doubles: doubles)
                .filter { doubles ? Double($0)!.isFinite : Float($0)!.isFinite && $0.split(separator: "e")[0].count > 17 }
            let raw = try FMFoundSet(responseBody: Self.body(numbers))
            let madeInCode = FMFoundSet(records: raw.records, dataInfo: nil)
            var wrong: [String] = []
            if doubles {
                for (number, record) in zip(numbers, try madeInCode.decode(D.self)) where record.fieldData.n.bitPattern != Double(number)!.bitPattern {
                    wrong.append(number)
                }
                for (number, record) in zip(numbers, raw.records) {
                    let value = FMFieldValue(any: (record["fieldData"] as? [String: Any])?["n"] as Any)
                    if value != .number(Double(number)!) { wrong.append("FMFieldValue \(number)") }
                }
            } else {
                for (number, record) in zip(numbers, try madeInCode.decode(F.self)) where record.fieldData.n.bitPattern != Float(number)!.bitPattern {
                    wrong.append(number)
                }
            }
            #expect(numbers.count > 1_000)
            #expect(wrong.isEmpty, "\(doubles ? "Double" : "Float"): \(wrong.count) of \(numbers.count) differ, for example \(wrong.prefix(3))")
        }
    }

    @Test func theExpansionHelperIsExact() {
        #expect(Self.exactDecimal(1, -1) == "0.5")
        #expect(Self.exactDecimal(3, 4) == "48")
        #expect(Self.exactDecimal(0x1999_9999_9999_9A, -56) == "0.1000000000000000055511151231257827021181583404541015625")
        #expect(Double(Self.exactDecimal(1, -1074)) == Double.leastNonzeroMagnitude)
    }

    // MARK: -0, and one rule for text that is not a decimal number

    @Test func negativeZeroKeepsItsSign() throws {
        for zero in ["-0", "-0.0", "-0e5", "-0.000"] {
            let doubles = try FMTypedFoundSet<D>(responseBody: Self.body([zero]))
            #expect(doubles.records[0].fieldData.n.sign == .minus && doubles.records[0].fieldData.n == 0, "\(zero)")
            #expect(doubles.records[0].fieldData.t.sign == .minus, "\(zero) as text")
            let floats = try FMTypedFoundSet<F>(responseBody: Self.body([zero]))
            #expect(floats.records[0].fieldData.n.sign == .minus && floats.records[0].fieldData.t.sign == .minus, "\(zero)")
        }
    }

    struct One<V: Decodable>: Decodable { var v: V }

    static func field<T: Decodable>(_ type: T.Type, text: String) -> Result<T, Error> {
        do {
            return .success(try FileMakerDecoder().decode(One<T>.self, from: ["v": text]).v)
        } catch {
            return .failure(error)
        }
    }

    /// Hex, infinities, NaN, grouping and words are not numbers for any numeric type (once `Int` read
    /// `"0x10"` as 16 while `Decimal` read 0); the decoder says so instead of guessing.
    @Test(arguments: ["0x10", "0X1F", "0x1p3", "inf", "-inf", "infinity", "Infinity", "nan", "NaN", "1,000", "ten", "1e", "--1", "+-1", ".", "e5", "1.2.3", "12abc", "١٢"])
    func textThatIsNotADecimalNumberIsAMismatchForEveryNumericType(text: String) {
        func isMismatch<T>(_ result: Result<T, Error>) -> Bool {
            guard case .failure(let error) = result, case DecodingError.typeMismatch = error else { return false }
            return true
        }
        #expect(isMismatch(Self.field(Int.self, text: text)), "Int")
        #expect(isMismatch(Self.field(Int8.self, text: text)), "Int8")
        #expect(isMismatch(Self.field(UInt.self, text: text)), "UInt")
        #expect(isMismatch(Self.field(Double.self, text: text)), "Double")
        #expect(isMismatch(Self.field(Float.self, text: text)), "Float")
        #expect(isMismatch(Self.field(Decimal.self, text: text)), "Decimal")
    }

    /// Decimal text reads the same in every numeric type that can hold it.
    @Test(arguments: ["16", " 16 ", "+16", "16.0", "1.6e1", "160e-1"])
    func decimalTextReadsTheSameEverywhere(text: String) throws {
        #expect(try Self.field(Int.self, text: text).get() == 16)
        #expect(try Self.field(UInt.self, text: text).get() == 16)
        #expect(try Self.field(Double.self, text: text).get() == 16)
        #expect(try Self.field(Float.self, text: text).get() == 16)
        #expect(try Self.field(Decimal.self, text: text).get() == Decimal(16))
    }

    @Test func textBeyondTheRangeOfATypeSaysSo() {
        for (result, type) in [(Self.field(Double.self, text: "1e400").map { _ in () }, "Double"),
                               (Self.field(Float.self, text: "1e39").map { _ in () }, "Float"),
                               (Self.field(Int8.self, text: "300").map { _ in () }, "Int8")] {
            guard case .failure(DecodingError.dataCorrupted(let context)) = result else {
                Issue.record("\(type): expected dataCorrupted, got \(result)")
                continue
            }
            #expect(context.debugDescription == "the number does not fit in \(type)")
        }
    }

    // MARK: duplicate keys

    struct Pair: Decodable { var a: Int; var b: String }

    /// A key sent twice reads its last value, typed as raw (`JSONSerialization`'s rule), whichever path the
    /// typed decoder takes (first record, predicted shape, escaped or non-ASCII keys).
    @Test func duplicateKeysTakeTheLastValueTypedAndRaw() throws {
        let records = [
            #"{"a":1,"b":"x"}"#,                      // teaches the decoder the shape a, b
            #"{"a":1,"b":"x","a":2}"#,                // same positions, a later duplicate
            #"{"a":1,"a":3,"b":"x"}"#,
            #"{"b":"x","a":1,"\u0061":4}"#,           // an escaped spelling of the same key
            #"{"a":1,"b":"y","b":"x","a":5}"#,
        ]
        let body = NumberOracleTests.envelope(records)
        let typed = try FMTypedFoundSet<Pair>(responseBody: body)
        #expect(typed.records.map(\.fieldData.a) == [1, 2, 3, 4, 5])
        #expect(typed.records.map(\.fieldData.b) == ["x", "x", "x", "x", "x"])
        let raw = try FMFoundSet(responseBody: body)
        #expect(raw.records.map { ($0["fieldData"] as? [String: Any])?["a"] as? Int } == [1, 2, 3, 4, 5])
        // Canonically equivalent keys are one key (é precomposed, then decomposed), as in a Swift dictionary.
        struct Accent: Decodable { var é: Int } // swiftlint:disable:this identifier_name
        let accent = NumberOracleTests.envelope([#"{"\u00e9":1,"e\u0301":2}"#])
        #expect(try FMTypedFoundSet<Accent>(responseBody: accent).records[0].fieldData.é == 2)
        #expect((try FMFoundSet(responseBody: accent).records[0]["fieldData"] as? [String: Any])?["é"] as? Int == 2)
        // Many keys (the hashed check): the duplicate at the end wins.
        let many = (0..<100).map { #""k\#($0)":"\#($0)""# }.joined(separator: ",") + #","a":1,"b":"x","k7":"last""#
        struct Seven: Decodable { var k7: String; var a: Int }
        #expect(try FMTypedFoundSet<Seven>(responseBody: NumberOracleTests.envelope(["{" + many + "}"])).records[0].fieldData.k7 == "last")
    }

    static func envelope(_ fieldData: [String]) -> Data {
        let data = fieldData.enumerated().map { #"{"fieldData":\#($1),"portalData":{},"recordId":"\#($0 + 1)","modId":"1"}"# }
        return Data(#"{"response":{"data":[\#(data.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }
}

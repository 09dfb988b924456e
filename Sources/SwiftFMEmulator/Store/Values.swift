import Foundation

/// A calendar date without a time zone.
struct FMDate: Hashable, Comparable, Sendable {
    var year: Int
    var month: Int
    var day: Int

    static func < (a: FMDate, b: FMDate) -> Bool { a.ordinal < b.ordinal }

    /// Days since 1970-01-01 (proleptic Gregorian).
    var ordinal: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func isValid(year: Int, month: Int, day: Int) -> Bool {
        guard (1...4000).contains(year), (1...12).contains(month), day >= 1 else { return false }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days
    }

    /// The UTC calendar date of `date`.
    init(_ date: Date) {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC") ?? cal.timeZone
        let c = cal.dateComponents([.year, .month, .day], from: date)
        self.init(year: c.year ?? 1970, month: c.month ?? 1, day: c.day ?? 1)
    }

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    func formatted(_ dateformats: Int) -> String {
        dateformats == 2
            ? pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
            : pad(month, 2) + "/" + pad(day, 2) + "/" + pad(year, 4)
    }
}

/// An exact decimal number, kept as canonical text: optional `-`, integer digits without leading
/// zeros, and a fraction without trailing zeros (`0.5`, `-12`, `12345678901234567890`). FileMaker
/// number fields are decimals (up to 400 significant digits), so nothing goes through a binary double.
struct FMNumber: Hashable, Sendable, Comparable, ExpressibleByIntegerLiteral {
    /// The canonical text, written as is into JSON.
    let text: String
    let negative: Bool
    let integerDigits: Substring
    let fractionDigits: Substring

    /// The most digits a number may expand to (an exponent cannot make a huge string).
    static let maxDigits = 1000

    /// Parses decimal text: optional sign, digits with an optional point, optional exponent
    /// (`12`, `-3.50`, `+.5`, `1e3`, `1.2E-4`); surrounding spaces are ignored. `nil` for anything else.
    init?(_ raw: String) {
        var chars = Substring(raw.trimmingCharacters(in: .whitespaces))
        var negative = false
        if let f = chars.first, f == "-" || f == "+" {
            negative = f == "-"
            chars = chars.dropFirst()
        }
        var exponent = 0
        if let e = chars.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            let expText = chars[chars.index(after: e)...]
            guard let v = Int(expText), abs(v) <= FMNumber.maxDigits, !expText.hasPrefix("+-") else { return nil }
            exponent = v
            chars = chars[..<e]
        }
        let parts = chars.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let intPart = parts.first ?? "", fracPart = parts.count > 1 ? parts[1] : ""
        guard !(intPart.isEmpty && fracPart.isEmpty), intPart.allSatisfy(\.isASCIIDigit), fracPart.allSatisfy(\.isASCIIDigit),
              intPart.count + fracPart.count <= FMNumber.maxDigits else { return nil }
        var digits = String(intPart) + String(fracPart)
        var point = intPart.count + exponent
        if point < 0 { digits = String(repeating: "0", count: -point) + digits; point = 0 }
        if point > digits.count { digits += String(repeating: "0", count: point - digits.count) }
        var integer = Substring(digits.prefix(point))
        var fraction = Substring(digits.dropFirst(point))
        while integer.first == "0" { integer = integer.dropFirst() }
        while fraction.last == "0" { fraction = fraction.dropLast() }
        // FileMaker's range: magnitudes below 10^400.
        guard integer.count <= 400 else { return nil }
        let isZero = integer.isEmpty && fraction.isEmpty
        self.negative = negative && !isZero
        self.integerDigits = integer
        self.fractionDigits = fraction
        let body = (integer.isEmpty ? "0" : String(integer)) + (fraction.isEmpty ? "" : "." + fraction)
        text = (self.negative ? "-" : "") + body
    }

    /// An integer.
    init(_ n: Int) {
        self.init(integerLiteral: n)
    }

    /// An integer literal.
    init(integerLiteral n: Int) {
        let magnitude = String(n.magnitude)
        negative = n < 0
        integerDigits = n == 0 ? "" : Substring(magnitude)
        fractionDigits = ""
        text = String(n)
    }

    /// FileMaker's reading of text as a number (`GetAsNumber`): its digits and first decimal point,
    /// negative when a `-` comes before the first digit (`"25abc"` → 25, `"a1b2"` → 12); `nil` without digits.
    init?(extractingFrom text: String) {
        var out = "", seenPoint = false, negative = false
        for ch in text {
            if ch.isASCIIDigit { out.append(ch) }
            else if ch == ".", !seenPoint { seenPoint = true; out.append(ch) }
            else if ch == "-", out.allSatisfy({ $0 == "." }) { negative = true }
        }
        guard out.contains(where: \.isASCIIDigit) else { return nil }
        self.init((negative ? "-" : "") + (out.hasPrefix(".") ? "0" + out : out))
    }

    /// The value as an `Int` when it is a whole number that fits, else `nil`.
    var intValue: Int? { fractionDigits.isEmpty ? Int(text) : nil }

    /// The nearest double (for callers that want a Swift number).
    var doubleValue: Double { Double(text) ?? 0 }

    static func < (a: FMNumber, b: FMNumber) -> Bool {
        if a.negative != b.negative { return a.negative }
        let magnitude = FMNumber.compareMagnitude(a, b)
        return a.negative ? magnitude == .orderedDescending : magnitude == .orderedAscending
    }

    private static func compareMagnitude(_ a: FMNumber, _ b: FMNumber) -> ComparisonResult {
        if a.integerDigits.count != b.integerDigits.count {
            return a.integerDigits.count < b.integerDigits.count ? .orderedAscending : .orderedDescending
        }
        if a.integerDigits != b.integerDigits { return a.integerDigits < b.integerDigits ? .orderedAscending : .orderedDescending }
        if a.fractionDigits == b.fractionDigits { return .orderedSame }
        // Fractions without trailing zeros compare as plain strings ("05" < "5", "5" < "51").
        return a.fractionDigits < b.fractionDigits ? .orderedAscending : .orderedDescending
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// A stored container: the bytes live in the store under `key`.
struct ContainerRef: Hashable, Sendable {
    var key: String
    var filename: String
    var contentType: String
    /// The file extension used in the streaming URL (may be empty).
    var fileExtension: String
}

/// A typed field value as the emulator stores it.
enum FMValue: Hashable, Sendable {
    case empty
    /// Text; in a number field, text that is not a number (stored as written, like FileMaker).
    case text(String)
    case number(FMNumber)
    case date(FMDate)
    /// Seconds (may exceed one day: FileMaker times are durations too).
    case time(Int)
    case timestamp(FMDate, Int)
    case container(ContainerRef)

    var isEmpty: Bool { if case .empty = self { return true }; return false }

    /// The value as FileMaker text (US formats), used for word matching and uniqueness.
    var text: String {
        switch self {
        case .empty: return ""
        case let .text(s): return s
        case let .number(n): return n.text
        case let .date(d): return d.formatted(0)
        case let .time(t): return FMValue.formatTime(t)
        case let .timestamp(d, t): return d.formatted(0) + " " + FMValue.formatTime(t)
        case let .container(c): return c.filename
        }
    }

    static func formatTime(_ seconds: Int) -> String {
        let s = abs(seconds)
        return (seconds < 0 ? "-" : "") + pad(s / 3600, 2) + ":" + pad((s / 60) % 60, 2) + ":" + pad(s % 60, 2)
    }

    /// The JSON written in `fieldData` for this value.
    func json(dateformats: Int, containerURL: (ContainerRef) -> String) -> JSON {
        switch self {
        case .empty: return .string("")
        case let .text(s): return .string(s)
        case let .number(n): return .decimal(n.text)
        case let .date(d): return .string(d.formatted(dateformats))
        case let .time(t): return .string(FMValue.formatTime(t))
        case let .timestamp(d, t): return .string(d.formatted(dateformats) + (dateformats == 2 ? "T" : " ") + FMValue.formatTime(t))
        case let .container(c): return .string(containerURL(c))
        }
    }

    /// A plain Swift value for ``Emulator/records(inTable:)``.
    var plain: Any {
        switch self {
        case let .number(n):
            return n.intValue.map { $0 as Any } ?? n.doubleValue
        default: return text
        }
    }

    // MARK: Parsing request values

    /// Converts request text to a value of `type`; `nil` when it does not parse.
    static func parse(_ raw: String, as type: EmulatorSchema.FieldType, dateformats: Int) -> FMValue? {
        // Text is stored as sent: only "" is empty (spaces are content, as in FileMaker).
        if type == .text { return raw.isEmpty ? .empty : .text(raw) }
        let s = raw.trimmingCharacters(in: .whitespaces)
        if s.isEmpty { return .empty }
        switch type {
        case .text: return .text(raw)
        case .number:
            // FileMaker number fields hold any text: what is not a number is kept as written (§17).
            if let n = FMNumber(s) { return .number(n) }
            return .text(raw)
        case .date:
            return parseDate(s, dateformats: dateformats).map { .date($0) }
        case .time:
            return parseTime(s).map { .time($0) }
        case .timestamp:
            return parseTimestamp(s, dateformats: dateformats).map { .timestamp($0.0, $0.1) }
        case .container:
            return nil
        }
    }

    /// Whether `c` may separate date parts: FileMaker takes any character other than a letter, a
    /// digit, `:` or `+` (`04/11/2017`, `04.11.2017`, `04-11-2017`; WIRE.md §17).
    static func isDateSeparator(_ c: Character) -> Bool {
        !(c.isLetter || c.isNumber || c == ":" || c == "+")
    }

    /// The digit groups of a date, or `nil` when it holds a letter, `:` or `+`, or two separators in a row.
    static func dateParts(_ s: String) -> [Substring]? {
        guard !s.contains(where: { $0.isLetter || $0 == ":" || $0 == "+" }) else { return nil }
        let parts = s.split(omittingEmptySubsequences: false, whereSeparator: isDateSeparator)
        guard parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else { return nil }
        return parts
    }

    static func parseDate(_ s: String, dateformats: Int) -> FMDate? {
        guard let parts = dateParts(s), parts.count == 3 else { return nil }
        if dateformats == 2 {
            guard parts[0].count == 4, (1...2).contains(parts[1].count), (1...2).contains(parts[2].count),
                  let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
                  FMDate.isValid(year: y, month: m, day: d) else { return nil }
            return FMDate(year: y, month: m, day: d)
        }
        guard (1...2).contains(parts[0].count), (1...2).contains(parts[1].count), parts[2].count == 4 || parts[2].count == 2,
              let m = Int(parts[0]), let d = Int(parts[1]), let written = Int(parts[2]) else { return nil }
        let y = parts[2].count == 2 ? fourDigitYear(written, enteredIn: DateEntry.year ?? DateEntry.currentYear()) : written
        guard FMDate.isValid(year: y, month: m, day: d) else { return nil }
        return FMDate(year: y, month: m, day: d)
    }

    /// The four-digit year FileMaker makes of a two-digit one entered in `year`: the one within the next
    /// 30 years or the preceding 70 (Claris FileMaker Pro Help, "Entering dates with two-digit years":
    /// in 2015, 45 is 2045 and 46 is 1946; in 2030, 50 is 2050 and 76 is 1976), i.e. in
    /// `year - 69 … year + 30`.
    static func fourDigitYear(_ twoDigits: Int, enteredIn year: Int) -> Int {
        let latest = year + 30
        return latest - ((latest - twoDigits) % 100 + 100) % 100
    }

    static func parseTime(_ input: String) -> Int? {
        var s = input.uppercased()
        var meridiem: String?
        for suffix in ["AM", "PM"] where s.hasSuffix(suffix) {
            meridiem = suffix
            s = String(s.dropLast(2)).trimmingCharacters(in: .whitespaces)
        }
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), let h = Int(parts[0]), (0..<10_000_000).contains(h),
              let m = Int(parts[1]), (0..<60).contains(m) else { return nil }
        var sec = 0
        if parts.count == 3 {
            guard let v = Double(parts[2]), v >= 0, v < 60 else { return nil }
            sec = Int(v)
        }
        var hour = h
        if let meridiem {
            guard (1...12).contains(h) else { return nil }
            hour = h % 12 + (meridiem == "PM" ? 12 : 0)
        }
        return hour * 3600 + m * 60 + sec
    }

    static func parseTimestamp(_ s: String, dateformats: Int) -> (FMDate, Int)? {
        // The time starts after the last space (or, in ISO form, the `T`) before its first `:`; date
        // separators may themselves be spaces.
        let split: String.Index?
        if dateformats == 2, let t = s.firstIndex(where: { $0 == "T" || $0 == "t" }) {
            split = t
        } else if let colon = s.firstIndex(of: ":") {
            split = s[..<colon].lastIndex(of: " ")
        } else {
            split = nil
        }
        guard let i = split else {
            return s.contains(":") ? nil : parseDate(s, dateformats: dateformats).map { ($0, 0) }
        }
        guard let d = parseDate(trimSpaces(String(s[..<i])), dateformats: dateformats),
              let t = parseTime(String(s[s.index(after: i)...]).trimmingCharacters(in: .whitespaces)), t < 86400 else { return nil }
        return (d, t)
    }

    // MARK: Ordering

    /// FileMaker-like ordering: empty first, then by type (numbers numerically, text case-insensitively).
    static func compare(_ a: FMValue, _ b: FMValue) -> ComparisonResult {
        switch (a, b) {
        case (.empty, .empty): return .orderedSame
        case (.empty, _): return .orderedAscending
        case (_, .empty): return .orderedDescending
        case let (.number(x), .number(y)): return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.number(x), .text(t)):
            // Text in a number field orders by the number FileMaker reads from it; text without digits first.
            guard let y = FMNumber(extractingFrom: t) else { return .orderedDescending }
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case (.text, .number): return compare(b, a) == .orderedAscending ? .orderedDescending
            : (compare(b, a) == .orderedDescending ? .orderedAscending : .orderedSame)
        case let (.date(x), .date(y)): return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.time(x), .time(y)): return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.timestamp(dx, tx), .timestamp(dy, ty)):
            let x = dx.ordinal * 86400 + tx, y = dy.ordinal * 86400 + ty
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        default:
            return a.text.compare(b.text, options: [.caseInsensitive, .diacriticInsensitive])
        }
    }
}

/// `n` in decimal, left-padded with zeros to `width` digits (faster than `String(format:)` on Linux).
func pad(_ n: Int, _ width: Int) -> String {
    let digits = String(n)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

/// Guesses a MIME type from a file extension.
func mimeType(forExtension ext: String) -> String {
    switch ext.lowercased() {
    case "png": return "image/png"
    case "jpg", "jpeg": return "image/jpeg"
    case "gif": return "image/gif"
    case "pdf": return "application/pdf"
    case "txt": return "text/plain"
    case "json": return "application/json"
    case "mp3": return "audio/mpeg"
    case "mp4": return "video/mp4"
    default: return "application/octet-stream"
    }
}

extension FMValue {
    /// What a value of `field` must look like, for error messages (seed records in schema files).
    static func expectedFormat(_ field: EmulatorSchema.Field) -> String {
        switch field.type {
        case .text: return "text"
        case .number: return "a number (digits with an optional sign and decimal point, e.g. 42 or -3.5)"
        case .date: return "a date MM/dd/yyyy (e.g. 03/14/1975; any separator other than a letter, ':' or '+')"
        case .time: return "a time HH:mm:ss or HH:mm, optionally with AM/PM (e.g. 14:30:00)"
        case .timestamp: return "a timestamp MM/dd/yyyy HH:mm:ss (e.g. 03/14/1975 14:30:00)"
        case .container: return "empty (container fields cannot be seeded; upload files over HTTP)"
        }
    }
}

/// The values of one sort column, decorated once per sort so that comparing two of them is cheap, with
/// exactly the order of ``FMValue/compare(_:_:)``: text is folded (case- and diacritic-insensitive) once
/// per value instead of once per comparison, text in a number field has its number extracted once, and
/// numbers of at most 15 significant digits compare as doubles (exact: such decimals round-trip).
struct SortKeys {
    enum Key {
        case empty
        /// A number, with its double when that is exact.
        case number(FMNumber, Double?)
        /// Text, with the number FileMaker reads from it (only computed when the column has numbers).
        case text(FMNumber?)
        case date(Int)
        case time(Int)
        case timestamp(Int)
        /// Anything else (containers): compares as text.
        case other
    }

    private(set) var keys: [Key]
    /// The folded text of each value, where a comparison may need it (empty otherwise).
    private(set) var folded: [String]

    init(_ values: [FMValue]) {
        let hasNumbers = values.contains { if case .number = $0 { return true }; return false }
        var kinds = Set<Int>()
        keys = values.map { value -> Key in
            switch value {
            case .empty: return .empty
            case let .number(n):
                kinds.insert(1)
                let digits = n.integerDigits.utf8.count + n.fractionDigits.utf8.count
                return .number(n, digits <= 15 ? Double(n.text) : nil)
            case let .text(t):
                kinds.insert(2)
                return .text(hasNumbers ? FMNumber(extractingFrom: t) : nil)
            case let .date(d): kinds.insert(3); return .date(d.ordinal)
            case let .time(t): kinds.insert(4); return .time(t)
            case let .timestamp(d, t): kinds.insert(5); return .timestamp(d.ordinal * 86400 + t)
            case .container: kinds.insert(6); return .other
            }
        }
        // Text comparison happens between text values, and between values of different kinds.
        let textKindsOnly = kinds.count <= 1
        folded = values.map { value in
            switch value {
            case .empty: return ""
            case .text, .container: return SortKeys.fold(value.text)
            default: return textKindsOnly ? "" : SortKeys.fold(value.text)
            }
        }
    }

    /// FileMaker's text order: case- and diacritic-insensitive. Comparing folded strings gives the order of
    /// `compare(_:options: [.caseInsensitive, .diacriticInsensitive])` (checked by a test).
    static func fold(_ text: String) -> String {
        text.utf8.allSatisfy({ $0 < 0x80 && !(0x41...0x5A).contains($0) })
            ? text : text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }

    /// Compares the values at `a` and `b` as ``FMValue/compare(_:_:)`` compares the values themselves.
    func compare(_ a: Int, _ b: Int) -> ComparisonResult {
        switch (keys[a], keys[b]) {
        case (.empty, .empty): return .orderedSame
        case (.empty, _): return .orderedAscending
        case (_, .empty): return .orderedDescending
        case let (.number(x, dx), .number(y, dy)):
            if let dx, let dy { return dx < dy ? .orderedAscending : (dx > dy ? .orderedDescending : .orderedSame) }
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.number(x, _), .text(extracted)):
            guard let y = extracted else { return .orderedDescending }
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case (.text, .number):
            switch compare(b, a) {
            case .orderedAscending: return .orderedDescending
            case .orderedDescending: return .orderedAscending
            case .orderedSame: return .orderedSame
            }
        case let (.date(x), .date(y)), let (.time(x), .time(y)), let (.timestamp(x), .timestamp(y)):
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        default:
            let x = folded[a], y = folded[b]
            return x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
        }
    }
}

/// The year dates are entered in, for two-digit years: the emulator's clock (``Emulator/now``) while it
/// handles a request, bound around the request by the emulator; the system clock otherwise.
enum DateEntry {
    @TaskLocal static var year: Int?

    /// The year of `date` in UTC.
    static func year(of date: Date) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.component(.year, from: date)
    }

    /// The current year of the system clock.
    static func currentYear() -> Int { year(of: Date()) }
}

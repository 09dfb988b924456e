import Foundation

/// A parsed OData `$filter` expression (the part of OData v4's grammar FileMaker supports: ODATA.md §3.3).
///
/// Parsing is linear in the text and bounded: at most ``ODataFilter/maxLength`` characters and
/// ``ODataFilter/maxDepth`` levels of nesting; anything longer, deeper or malformed is an
/// ``ODataError`` (HTTP 400, code `-1002`), never a crash or a hang.
indirect enum ODataExpr: Equatable {
    case literal(ODataLiteral)
    /// A field by name (as written, unquoted) or `FMFID:<n>`.
    case field(String)
    case not(ODataExpr)
    case and(ODataExpr, ODataExpr)
    case or(ODataExpr, ODataExpr)
    case compare(String, ODataExpr, ODataExpr)
    case isIn(ODataExpr, [ODataExpr])
    case call(String, [ODataExpr])
}

/// A literal of a `$filter`.
enum ODataLiteral: Equatable {
    case null
    case string(String)
    case number(FMNumber)
    case bool(Bool)
    /// A date (`2024-01-02`).
    case date(FMDate)
    /// A time of day in seconds (`13:45:00`).
    case time(Int)
    /// A timestamp as (date, seconds of the day), in UTC (`2024-01-02T13:45:00Z`).
    case timestamp(FMDate, Int)
}

/// An OData failure: HTTP status, FileMaker's code (a string) and message, written as
/// `{"error":{"code":…,"message":…}}`.
struct ODataError: Error, Equatable {
    var status: Int
    var code: String
    var message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// A malformed URL part: `400`, `-1002`, `Error: syntax error in URL at: '<near>'`.
    static func syntax(_ near: String) -> ODataError {
        let shown = near.count > 60 ? String(near.prefix(60)) : near
        return ODataError(400, "-1002", "Error: syntax error in URL at: '\(shown)'")
    }

    /// An unknown field: `400`, `8309`.
    static func noField(_ name: String) -> ODataError {
        ODataError(400, "8309", "The field named '\(name)' does not exist in a specified table (9)")
    }

    /// An answer that would pass ``EmulatorState/maxAnswerBytes`` (``AnswerTooLarge``): `500`, FileMaker's `953`.
    static let tooLarge = ODataError(500, "953", FMError.text(for: "953"))

    /// An unsupported feature: `400`, `-1003`, `Unsupported OData operation`.
    static func unsupported(_ what: String) -> ODataError {
        ODataError(400, "-1003", "Unsupported OData operation: \(what)")
    }
}

enum ODataFilter {
    /// The longest `$filter` accepted (characters); FileMaker limits whole URLs to 2,000.
    static let maxLength = 8_000
    /// The deepest nesting of parentheses, `not` and function calls accepted.
    static let maxDepth = 64

    /// The functions FileMaker's `$filter` supports (its `FilterFunctions` annotation, ODATA.md §3.3),
    /// with their argument counts. `isof`, the `geo.` functions and lambdas are refused, and so are the
    /// advertised `fractionalseconds` (Claris lists it as unsupported), `totalseconds` (FileMaker has no
    /// durations) and `cast`.
    static let functions: [String: ClosedRange<Int>] = [
        "contains": 2...2, "startswith": 2...2, "endswith": 2...2, "length": 1...1, "indexof": 2...2,
        "substring": 2...3, "tolower": 1...1, "toupper": 1...1, "trim": 1...1, "concat": 2...2,
        "year": 1...1, "month": 1...1, "day": 1...1, "hour": 1...1, "minute": 1...1, "second": 1...1,
        "round": 1...1, "floor": 1...1, "ceiling": 1...1,
        "date": 1...1, "time": 1...1, "totaloffsetminutes": 1...1, "now": 0...0, "mindatetime": 0...0, "maxdatetime": 0...0,
    ]

    static let comparisons: Set<String> = ["eq", "ne", "gt", "ge", "lt", "le"]

    /// Parses `text`; throws ``ODataError`` (400) on anything malformed or unsupported.
    static func parse(_ text: String) throws -> ODataExpr {
        guard text.count <= maxLength else { throw ODataError(400, "-1002", "Error: $filter is too long") }
        var parser = Parser(tokens: try tokenize(text))
        let expr = try parser.orExpr(depth: 0)
        guard parser.position == parser.tokens.count else { throw ODataError.syntax(parser.tokens[parser.position].text) }
        return expr
    }

    // MARK: Tokens

    enum Kind: Equatable { case word, quotedName, literal, open, close, comma }

    struct Token {
        var kind: Kind
        var text: String
        var literal: ODataLiteral?
    }

    static func tokenize(_ text: String) throws -> [Token] {
        let chars = Array(text.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        func isWordChar(_ c: Unicode.Scalar) -> Bool {
            CharacterSet.alphanumerics.contains(c) || c == "_" || c == "." || c == ":" || c == "-" || c == "+" || c == "/"
        }
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" || c == "\r" || c == "\n" { i += 1; continue }
            switch c {
            case "(": tokens.append(Token(kind: .open, text: "(")); i += 1
            case ")": tokens.append(Token(kind: .close, text: ")")); i += 1
            case ",": tokens.append(Token(kind: .comma, text: ",")); i += 1
            case "'", "\"":
                // 'text' with '' for a quote; "field name" with "" for a double quote.
                var out = String.UnicodeScalarView()
                var j = i + 1
                var closed = false
                while j < chars.count {
                    if chars[j] == c {
                        if j + 1 < chars.count, chars[j + 1] == c { out.append(c); j += 2; continue }
                        closed = true
                        break
                    }
                    out.append(chars[j])
                    j += 1
                }
                guard closed else { throw ODataError.syntax(String(String.UnicodeScalarView(chars[i...].prefix(40)))) }
                let s = String(out)
                tokens.append(c == "'" ? Token(kind: .literal, text: s, literal: .string(s)) : Token(kind: .quotedName, text: s))
                i = j + 1
            default:
                guard isWordChar(c) else { throw ODataError.syntax(String(c)) }
                var j = i
                while j < chars.count, isWordChar(chars[j]) { j += 1 }
                let word = String(String.UnicodeScalarView(chars[i..<j]))
                i = j
                if let literal = literal(word) {
                    tokens.append(Token(kind: .literal, text: word, literal: literal))
                } else {
                    tokens.append(Token(kind: .word, text: word))
                }
            }
        }
        return tokens
    }

    /// An unquoted literal: `null`, `true`/`false`, a number, a date, a time or a timestamp.
    static func literal(_ word: String) -> ODataLiteral? {
        let lower = word.lowercased()
        if lower == "null" { return .null }
        if lower == "true" { return .bool(true) }
        if lower == "false" { return .bool(false) }
        guard let first = word.unicodeScalars.first, first == "-" || first == "+" || ("0"..."9").contains(first) || first == "." else {
            return nil
        }
        if let ts = timestamp(word) { return .timestamp(ts.0, ts.1) }
        if let d = date(word) { return .date(d) }
        if let t = time(word) { return .time(t) }
        if isNumber(word), let n = FMNumber(word) { return .number(n) }
        return nil
    }

    static func isNumber(_ w: String) -> Bool {
        var s = Substring(w)
        if s.first == "-" || s.first == "+" { s = s.dropFirst() }
        guard !s.isEmpty else { return false }
        let parts = s.lowercased().split(separator: "e", maxSplits: 1, omittingEmptySubsequences: false)
        let mantissa = parts[0].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard mantissa.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }), mantissa.contains(where: { !$0.isEmpty }) else { return false }
        if parts.count == 2 {
            var e = parts[1]
            if e.first == "-" || e.first == "+" { e = e.dropFirst() }
            guard !e.isEmpty, e.count <= 3, e.allSatisfy(\.isASCIIDigit) else { return false }
        }
        return true
    }

    /// `YYYY-MM-DD`.
    static func date(_ s: String) -> FMDate? {
        let p = s.split(separator: "-", omittingEmptySubsequences: false)
        guard p.count == 3, p[0].count == 4, p[1].count == 2, p[2].count == 2,
              let y = Int(p[0]), let m = Int(p[1]), let d = Int(p[2]), FMDate.isValid(year: y, month: m, day: d) else { return nil }
        return FMDate(year: y, month: m, day: d)
    }

    /// `HH:mm[:ss[.fff]]`, seconds of the day.
    static func time(_ s: String) -> Int? {
        let p = s.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(p.count), p[0].count == 2, p[1].count == 2, let h = Int(p[0]), let m = Int(p[1]),
              h < 24, m < 60 else { return nil }
        var sec = 0
        if p.count == 3 {
            let whole = p[2].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            guard whole[0].count == 2, let v = Int(whole[0]), v < 60 else { return nil }
            if whole.count == 2 { guard !whole[1].isEmpty, whole[1].count <= 12, whole[1].allSatisfy(\.isASCIIDigit) else { return nil } }
            sec = v
        }
        return h * 3600 + m * 60 + sec
    }

    /// `YYYY-MM-DDTHH:mm[:ss[.fff]](Z|±hh:mm)` (the zone may be left out), normalised to UTC.
    static func timestamp(_ s: String) -> (FMDate, Int)? {
        guard let t = s.firstIndex(where: { $0 == "T" || $0 == "t" }), let d = date(String(s[..<t])) else { return nil }
        var rest = String(s[s.index(after: t)...])
        var offset = 0
        if rest.hasSuffix("Z") || rest.hasSuffix("z") {
            rest.removeLast()
        } else if let sign = rest.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            let zone = rest[rest.index(after: sign)...].split(separator: ":")
            guard zone.count == 2, zone[0].count == 2, zone[1].count == 2, let zh = Int(zone[0]), let zm = Int(zone[1]),
                  zh < 24, zm < 60 else { return nil }
            offset = (zh * 3600 + zm * 60) * (rest[sign] == "-" ? -1 : 1)
            rest = String(rest[..<sign])
        }
        guard let secs = time(rest) else { return nil }
        let total = d.ordinal * 86400 + secs - offset
        let day = Int((Double(total) / 86400).rounded(.down))
        return (FMDate(ordinal: day), total - day * 86400)
    }

    // MARK: Grammar

    struct Parser {
        let tokens: [Token]
        var position = 0

        var peek: Token? { position < tokens.count ? tokens[position] : nil }

        func isWord(_ w: String) -> Bool {
            guard let t = peek, t.kind == .word else { return false }
            return t.text.lowercased() == w
        }

        mutating func expect(_ kind: Kind) throws {
            guard let t = peek else { throw ODataError.syntax("end of $filter") }
            guard t.kind == kind else { throw ODataError.syntax(t.text) }
            position += 1
        }

        func guardDepth(_ depth: Int) throws {
            if depth > ODataFilter.maxDepth { throw ODataError(400, "-1002", "Error: $filter is nested too deeply") }
        }

        mutating func orExpr(depth: Int) throws -> ODataExpr {
            try guardDepth(depth)
            var left = try andExpr(depth: depth)
            while isWord("or") {
                position += 1
                left = .or(left, try andExpr(depth: depth))
            }
            return left
        }

        mutating func andExpr(depth: Int) throws -> ODataExpr {
            var left = try notExpr(depth: depth)
            while isWord("and") {
                position += 1
                left = .and(left, try notExpr(depth: depth))
            }
            return left
        }

        mutating func notExpr(depth: Int) throws -> ODataExpr {
            if isWord("not") {
                position += 1
                try guardDepth(depth + 1)
                return .not(try notExpr(depth: depth + 1))
            }
            return try comparison(depth: depth)
        }

        mutating func comparison(depth: Int) throws -> ODataExpr {
            let left = try operand(depth: depth)
            guard let t = peek, t.kind == .word else { return left }
            let op = t.text.lowercased()
            if ODataFilter.comparisons.contains(op) {
                position += 1
                return .compare(op, left, try operand(depth: depth))
            }
            if op == "in" {
                position += 1
                try expect(.open)
                var items: [ODataExpr] = [try operand(depth: depth + 1)]
                while peek?.kind == .comma {
                    position += 1
                    items.append(try operand(depth: depth + 1))
                }
                try expect(.close)
                return .isIn(left, items)
            }
            if ["has", "add", "sub", "mul", "div", "divby", "mod"].contains(op) { throw ODataError.syntax(t.text) }
            return left
        }

        mutating func operand(depth: Int) throws -> ODataExpr {
            try guardDepth(depth)
            guard let t = peek else { throw ODataError.syntax("end of $filter") }
            switch t.kind {
            case .literal:
                position += 1
                return .literal(t.literal ?? .null)
            case .quotedName:
                position += 1
                return .field(t.text)
            case .open:
                position += 1
                let inner = try orExpr(depth: depth + 1)
                try expect(.close)
                return inner
            case .close, .comma:
                throw ODataError.syntax(t.text)
            case .word:
                position += 1
                let lower = t.text.lowercased()
                if peek?.kind == .open {
                    // A function call; lambdas (`Nav/any(…)`), isof and geo functions are unsupported.
                    guard let arity = ODataFilter.functions[lower] else { throw ODataError.syntax(t.text) }
                    position += 1
                    var args: [ODataExpr] = []
                    if peek?.kind != .close {
                        args.append(try orExpr(depth: depth + 1))
                        while peek?.kind == .comma {
                            position += 1
                            args.append(try orExpr(depth: depth + 1))
                        }
                    }
                    try expect(.close)
                    guard arity.contains(args.count) else { throw ODataError.syntax(t.text) }
                    return .call(lower, args)
                }
                if ["and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "in"].contains(lower) { throw ODataError.syntax(t.text) }
                guard let first = t.text.unicodeScalars.first, CharacterSet.letters.contains(first) || first == "_" else {
                    throw ODataError.syntax(t.text)
                }
                // FileMaker fails a field named `id` (lower case) unless it is quoted (`"id" eq 942`; ODATA.md §3.3,
                // hooks: `ID`, `Id` are fine).
                if t.text == "id" { throw ODataError.syntax(t.text) }
                return .field(t.text)
            }
        }
    }
}

extension FMDate {
    /// The date `ordinal` days after 1970-01-01 (the inverse of ``ordinal``).
    init(ordinal: Int) {
        // Civil-from-days (proleptic Gregorian).
        let z = ordinal + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d)
    }
}

import Foundation

/// A value while a `$filter` is evaluated.
enum ODataValue: Equatable {
    case null
    case string(String)
    case number(FMNumber)
    case bool(Bool)
    case date(Int)
    case time(Int)
    /// Seconds since 1970-01-01 (UTC).
    case timestamp(Int)

    init(_ literal: ODataLiteral) {
        switch literal {
        case .null: self = .null
        case let .string(s): self = .string(s)
        case let .number(n): self = .number(n)
        case let .bool(b): self = .bool(b)
        case let .date(d): self = .date(d.ordinal)
        case let .time(t): self = .time(t)
        case let .timestamp(d, t): self = .timestamp(d.ordinal * 86400 + t)
        }
    }

    init(_ value: FMValue) {
        switch value {
        case .empty: self = .null
        case let .text(s): self = .string(s)
        case let .number(n): self = .number(n)
        case let .date(d): self = .date(d.ordinal)
        case let .time(t): self = .time(t)
        case let .timestamp(d, t): self = .timestamp(d.ordinal * 86400 + t)
        case let .container(c): self = .string(c.filename)
        }
    }

    /// The value as text (for string functions).
    var text: String? {
        switch self {
        case .null: return nil
        case let .string(s): return s
        case let .number(n): return n.text
        case let .bool(b): return b ? "1" : "0"
        case let .date(d): return FMDate(ordinal: d).formatted(2)
        case let .time(t): return FMValue.formatTime(t)
        case let .timestamp(s):
            let day = Int((Double(s) / 86400).rounded(.down))
            return FMDate(ordinal: day).formatted(2) + "T" + FMValue.formatTime(s - day * 86400) + "Z"
        }
    }

    var number: FMNumber? {
        switch self {
        case let .number(n): return n
        case let .bool(b): return FMNumber(b ? 1 : 0)
        case let .string(s): return FMNumber(s)
        default: return nil
        }
    }
}

/// Evaluates a parsed `$filter` against the records of one entity set.
struct ODataEvaluator {
    /// The fields the expression names, resolved once (lower-cased name → field).
    let fields: [String: EmulatorSchema.Field]
    /// `now()`: seconds since 1970-01-01 (UTC) on the emulator's clock.
    var now = Int(Date().timeIntervalSince1970.rounded(.down))
    let value: (EmulatorSchema.Field) -> FMValue

    init(fields: [String: EmulatorSchema.Field], now: Date? = nil, value: @escaping (EmulatorSchema.Field) -> FMValue) {
        self.fields = fields
        self.value = value
        if let now { self.now = Int(now.timeIntervalSince1970.rounded(.down)) }
    }

    /// Resolves every field name in `expr` against `set`; 8309 for an unknown one.
    static func resolve(_ expr: ODataExpr, in set: ODataSet) throws -> [String: EmulatorSchema.Field] {
        var out: [String: EmulatorSchema.Field] = [:]
        // `Set/field`: a field disambiguated by the name (or FMTID) of the set filtered (CG:navigate-related-tables).
        func qualified(_ name: String) -> EmulatorSchema.Field? {
            guard let slash = name.firstIndex(of: "/") else { return nil }
            let table = String(name[..<slash])
            guard table.caseInsensitiveCompare(set.name) == .orderedSame || table.caseInsensitiveCompare("FMTID:\(set.tableID)") == .orderedSame
            else { return nil }
            return set.field(String(name[name.index(after: slash)...]))
        }
        func walk(_ e: ODataExpr) throws {
            switch e {
            case .literal: return
            case let .field(name):
                guard let f = set.field(name) ?? qualified(name) else { throw ODataError.noField(name) }
                out[name.lowercased()] = f
            case let .not(a): try walk(a)
            case let .and(a, b), let .or(a, b), let .compare(_, a, b): try walk(a); try walk(b)
            case let .isIn(a, items): try walk(a); for i in items { try walk(i) }
            case let .call(_, args): for a in args { try walk(a) }
            }
        }
        try walk(expr)
        return out
    }

    func matches(_ expr: ODataExpr) -> Bool { evaluate(expr) == .bool(true) }

    func evaluate(_ expr: ODataExpr) -> ODataValue {
        switch expr {
        case let .literal(l): return ODataValue(l)
        case let .field(name):
            guard let f = fields[name.lowercased()] else { return .null }
            return ODataValue(value(f))
        case let .not(a):
            if case let .bool(b) = evaluate(a) { return .bool(!b) }
            return .null
        case let .and(a, b):
            let x = evaluate(a), y = evaluate(b)
            return .bool(x == .bool(true) && y == .bool(true))
        case let .or(a, b):
            let x = evaluate(a), y = evaluate(b)
            return .bool(x == .bool(true) || y == .bool(true))
        case let .compare(op, a, b):
            return .bool(ODataEvaluator.compare(op, evaluate(a), evaluate(b)))
        case let .isIn(a, items):
            let x = evaluate(a)
            return .bool(items.contains { ODataEvaluator.compare("eq", x, evaluate($0)) })
        case let .call(name, args):
            return call(name, args.map(evaluate))
        }
    }

    /// OData comparison with SQL-like nulls: `eq null` is true only for an empty value, and an empty
    /// value never orders. Strings compare exactly (case-sensitively); other kinds convert to the kind of
    /// the other side when they can.
    static func compare(_ op: String, _ a: ODataValue, _ b: ODataValue) -> Bool {
        let aNull = a == .null || a == .string(""), bNull = b == .null || b == .string("")
        if aNull || bNull {
            switch op {
            case "eq": return aNull && bNull
            case "ne": return aNull != bNull
            default: return false
            }
        }
        guard let order = order(a, b) else { return op == "ne" }
        switch op {
        case "eq": return order == .orderedSame
        case "ne": return order != .orderedSame
        case "gt": return order == .orderedDescending
        case "ge": return order != .orderedAscending
        case "lt": return order == .orderedAscending
        case "le": return order != .orderedDescending
        default: return false
        }
    }

    static func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
        x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
    }

    static func order(_ a: ODataValue, _ b: ODataValue) -> ComparisonResult? {
        switch (a, b) {
        case let (.string(x), .string(y)): return order(x, y)
        case let (.date(x), .date(y)), let (.time(x), .time(y)), let (.timestamp(x), .timestamp(y)): return order(x, y)
        case let (.date(x), .timestamp(y)): return order(x * 86400, y)
        case let (.timestamp(x), .date(y)): return order(x, y * 86400)
        case let (.string(s), .date), let (.string(s), .time), let (.string(s), .timestamp):
            guard let parsed = ODataFilter.literal(s).map(ODataValue.init), parsed != .string(s) else { return nil }
            if case .number = parsed { return nil }
            return order(parsed, b)
        case (.date, .string), (.time, .string), (.timestamp, .string):
            return order(b, a).map { $0 == .orderedAscending ? .orderedDescending : ($0 == .orderedDescending ? .orderedAscending : .orderedSame) }
        default:
            if let x = a.number, let y = b.number, a.isNumeric || b.isNumeric { return order(x, y) }
            guard let x = a.text, let y = b.text else { return nil }
            return order(x, y)
        }
    }

    func call(_ name: String, _ args: [ODataValue]) -> ODataValue {
        func text(_ i: Int) -> String? { args[i].text }
        func int(_ i: Int) -> Int? { args[i].number?.intValue }
        switch name {
        case "contains", "startswith", "endswith":
            guard let s = text(0), let t = text(1) else { return .bool(false) }
            if name == "contains" { return .bool(t.isEmpty || s.contains(t)) }
            return .bool(name == "startswith" ? s.hasPrefix(t) : s.hasSuffix(t))
        case "length": return text(0).map { .number(FMNumber($0.count)) } ?? .null
        case "indexof":
            guard let s = text(0), let t = text(1) else { return .null }
            guard let r = s.range(of: t) else { return .number(FMNumber(-1)) }
            return .number(FMNumber(s.distance(from: s.startIndex, to: r.lowerBound)))
        case "substring":
            guard let s = text(0), let start = int(1) else { return .null }
            let chars = Array(s)
            let from = max(0, min(start, chars.count))
            var to = chars.count
            if args.count == 3 { guard let n = int(2) else { return .null }; to = from + min(max(0, n), chars.count - from) }
            return .string(String(chars[from..<to]))
        case "tolower": return text(0).map { .string($0.lowercased()) } ?? .null
        case "toupper": return text(0).map { .string($0.uppercased()) } ?? .null
        case "trim": return text(0).map { .string($0.trimmingCharacters(in: .whitespaces)) } ?? .null
        case "concat":
            return .string((text(0) ?? "") + (text(1) ?? ""))
        case "year", "month", "day":
            let ordinal: Int
            switch args[0] {
            case let .date(d): ordinal = d
            case let .timestamp(s): ordinal = Int((Double(s) / 86400).rounded(.down))
            default: return .null
            }
            let d = FMDate(ordinal: ordinal)
            return .number(FMNumber(name == "year" ? d.year : (name == "month" ? d.month : d.day)))
        case "hour", "minute", "second":
            let secs: Int
            switch args[0] {
            case let .time(t): secs = t
            case let .timestamp(s): secs = s - Int((Double(s) / 86400).rounded(.down)) * 86400
            default: return .null
            }
            return .number(FMNumber(name == "hour" ? secs / 3600 : (name == "minute" ? (secs / 60) % 60 : secs % 60)))
        case "now": return .timestamp(now)
        case "mindatetime": return .timestamp(FMDate(year: 1, month: 1, day: 1).ordinal * 86400)
        case "maxdatetime": return .timestamp(FMDate(year: 9999, month: 12, day: 31).ordinal * 86400 + 86399)
        case "date":
            switch args[0] {
            case .date: return args[0]
            case let .timestamp(s): return .date(Int((Double(s) / 86400).rounded(.down)))
            default: return .null
            }
        case "time":
            switch args[0] {
            case .time: return args[0]
            case let .timestamp(s): return .time(s - Int((Double(s) / 86400).rounded(.down)) * 86400)
            default: return .null
            }
        // The store keeps timestamps in UTC.
        case "totaloffsetminutes":
            if case .timestamp = args[0] { return .number(FMNumber(0)) }
            return .null
        case "round", "floor", "ceiling":
            guard let n = args[0].number, let d = Double(n.text), d.isFinite else { return .null }
            let r = name == "round" ? d.rounded(.toNearestOrAwayFromZero) : (name == "floor" ? d.rounded(.down) : d.rounded(.up))
            return FMNumber(JSON.format(number: r)).map { .number($0) } ?? .null
        default:
            return .null
        }
    }
}

extension ODataValue {
    var isNumeric: Bool {
        switch self {
        case .number, .bool: return true
        default: return false
        }
    }
}

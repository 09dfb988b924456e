import Foundation

/// A value computed by a script expression: text or a number, like a FileMaker calculation result.
enum ScriptValue: Sendable, Equatable {
    case text(String)
    case number(Double)

    /// The value as text (numbers without a trailing `.0`).
    var text: String {
        switch self {
        case let .text(s): return s
        case let .number(n): return JSON.format(number: n)
        }
    }

    /// The value as a number when it is one or is text that reads fully as a number.
    var numeric: Double? {
        switch self {
        case let .number(n): return n
        case let .text(s):
            let t = s.trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty, let n = Double(t), n.isFinite else { return nil }
            return n
        }
    }

    /// FileMaker truth: a non-zero number (text that is not a number is false).
    var isTrue: Bool { (numeric ?? 0) != 0 }

    static func bool(_ b: Bool) -> ScriptValue { .number(b ? 1 : 0) }
}

/// A parsed script expression (see SCHEMA.md "Script expressions").
indirect enum ScriptExpr: Sendable {
    case literal(ScriptValue)
    case variable(String)
    /// A field: `TO::field` or a bare field of the current layout's occurrence, with a repetition.
    case field(String, repetition: Int)
    case get(String)
    case call(String, [ScriptExpr])
    case unary(String, ScriptExpr)
    case binary(String, ScriptExpr, ScriptExpr)

    /// The `Get(…)` functions understood.
    static let getFunctions: Set<String> = ["scriptparameter", "foundcount", "lasterror", "recordid", "scriptresult",
                                            "layoutname", "scriptname", "recordnumber", "totalrecordcount"]
    /// Other functions understood, with their argument counts.
    static let functions: [String: ClosedRange<Int>] = ["if": 3...3, "length": 1...1, "getasnumber": 1...1,
                                                        "getastext": 1...1, "int": 1...1, "upper": 1...1, "lower": 1...1]

    /// Parses expression text; throws a message naming the problem.
    static func parse(_ text: String) throws -> ScriptExpr {
        var p = ExprParser(Array(text))
        let e = try p.parseOr()
        p.skipSpace()
        guard p.atEnd else { throw ExprError("unexpected \"\(String(p.chars[p.i...]))\" in expression \(text)") }
        return e
    }
}

struct ExprError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A small recursive-descent parser. Precedence (FileMaker's): unary − and `not` → `* /` → `+ −` → `&` →
/// comparisons → `and` → `or`.
struct ExprParser {
    let chars: [Character]
    var i = 0

    init(_ chars: [Character]) { self.chars = chars }

    var atEnd: Bool { i >= chars.count }

    mutating func skipSpace() {
        while i < chars.count, chars[i].isWhitespace { i += 1 }
    }

    mutating func peekWord() -> String? {
        skipSpace()
        var j = i
        var w = ""
        while j < chars.count, chars[j].isLetter { w.append(chars[j]); j += 1 }
        if j < chars.count, chars[j].isNumber || chars[j] == "_" { return nil }
        return w.isEmpty ? nil : w.lowercased()
    }

    mutating func eat(_ s: String) -> Bool {
        skipSpace()
        let a = Array(s)
        guard i + a.count <= chars.count, Array(chars[i..<(i + a.count)]) == a else { return false }
        i += a.count
        return true
    }

    mutating func eatWord(_ w: String) -> Bool {
        guard peekWord() == w else { return false }
        i += w.count
        return true
    }

    mutating func parseOr() throws -> ScriptExpr {
        var e = try parseAnd()
        while eatWord("or") { e = .binary("or", e, try parseAnd()) }
        return e
    }

    mutating func parseAnd() throws -> ScriptExpr {
        var e = try parseComparison()
        while eatWord("and") { e = .binary("and", e, try parseComparison()) }
        return e
    }

    mutating func parseComparison() throws -> ScriptExpr {
        var e = try parseConcat()
        while true {
            var op: String?
            for candidate in ["<>", "<=", ">=", "≠", "≤", "≥", "=", "<", ">"] where eat(candidate) {
                op = candidate
                break
            }
            guard let op else { return e }
            let normal = ["<>": "≠", "<=": "≤", ">=": "≥"][op] ?? op
            e = .binary(normal, e, try parseConcat())
        }
    }

    mutating func parseConcat() throws -> ScriptExpr {
        var e = try parseAdditive()
        while eat("&") { e = .binary("&", e, try parseAdditive()) }
        return e
    }

    mutating func parseAdditive() throws -> ScriptExpr {
        var e = try parseMultiplicative()
        while true {
            if eat("+") { e = .binary("+", e, try parseMultiplicative()) } else if eat("-") {
                e = .binary("-", e, try parseMultiplicative())
            } else { return e }
        }
    }

    mutating func parseMultiplicative() throws -> ScriptExpr {
        var e = try parseUnary()
        while true {
            if eat("*") { e = .binary("*", e, try parseUnary()) } else if eat("/") {
                e = .binary("/", e, try parseUnary())
            } else { return e }
        }
    }

    mutating func parseUnary() throws -> ScriptExpr {
        if eat("-") { return .unary("-", try parseUnary()) }
        if eatWord("not") { return .unary("not", try parseUnary()) }
        return try parsePrimary()
    }

    mutating func parsePrimary() throws -> ScriptExpr {
        skipSpace()
        guard i < chars.count else { throw ExprError("expression ends too early") }
        let c = chars[i]
        if c == "(" {
            i += 1
            let e = try parseOr()
            guard eat(")") else { throw ExprError("missing )") }
            return e
        }
        if c == "\"" {
            i += 1
            var s = ""
            while i < chars.count, chars[i] != "\"" {
                if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                s.append(chars[i] == "¶" ? "\r" : chars[i])
                i += 1
            }
            guard i < chars.count else { throw ExprError("unterminated string") }
            i += 1
            return .literal(.text(s))
        }
        if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber) {
            var s = ""
            while i < chars.count, chars[i].isNumber || chars[i] == "." { s.append(chars[i]); i += 1 }
            guard let n = Double(s) else { throw ExprError("bad number \(s)") }
            return .literal(.number(n))
        }
        if c == "¶" { i += 1; return .literal(.text("\r")) }
        if c == "$" {
            i += 1
            var name = "$"
            if i < chars.count, chars[i] == "$" { name.append("$"); i += 1 }
            while i < chars.count, Self.isNameChar(chars[i]) { name.append(chars[i]); i += 1 }
            guard name.count > (name.hasPrefix("$$") ? 2 : 1) else { throw ExprError("a variable needs a name after $") }
            return .variable(name.lowercased())
        }
        guard Self.isNameChar(c) else { throw ExprError("unexpected \"\(c)\"") }
        var name = ""
        while i < chars.count, Self.isNameChar(chars[i]) { name.append(chars[i]); i += 1 }
        // `TO::field`
        if i + 1 < chars.count, chars[i] == ":", chars[i + 1] == ":" {
            i += 2
            var field = ""
            while i < chars.count, Self.isNameChar(chars[i]) { field.append(chars[i]); i += 1 }
            guard !field.isEmpty else { throw ExprError("a field name must follow \(name)::") }
            return .field("\(name)::\(field)", repetition: try repetitionSuffix())
        }
        skipSpace()
        if i < chars.count, chars[i] == "(" {
            let lower = name.lowercased()
            i += 1
            if lower == "get" {
                skipSpace()
                var arg = ""
                while i < chars.count, chars[i] != ")" { arg.append(chars[i]); i += 1 }
                guard eat(")") else { throw ExprError("missing ) after Get(") }
                let key = arg.trimmingCharacters(in: .whitespaces).lowercased()
                guard ScriptExpr.getFunctions.contains(key) else { throw ExprError("unsupported function Get(\(arg))") }
                return .get(key)
            }
            guard let arity = ScriptExpr.functions[lower] else { throw ExprError("unsupported function \(name)") }
            var args: [ScriptExpr] = []
            if !eat(")") {
                repeat { args.append(try parseOr()) } while eat(";") || eat(",")
                guard eat(")") else { throw ExprError("missing ) after the arguments of \(name)") }
            }
            guard arity.contains(args.count) else { throw ExprError("\(name) takes \(arity.lowerBound) argument(s)") }
            return .call(lower, args)
        }
        return .field(name, repetition: try repetitionSuffix())
    }

    /// An optional `[n]` after a field name.
    mutating func repetitionSuffix() throws -> Int {
        guard i < chars.count, chars[i] == "[" else { return 1 }
        i += 1
        var digits = ""
        while i < chars.count, chars[i].isNumber { digits.append(chars[i]); i += 1 }
        guard eat("]"), let n = Int(digits), n >= 1 else { throw ExprError("a repetition is written [n] with n ≥ 1") }
        return n
    }

    static func isNameChar(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "." }
}

/// Evaluates expressions against a script's state.
protocol ScriptScope {
    func variable(_ name: String) -> ScriptValue
    func field(_ name: String, repetition: Int) -> ScriptValue
    func get(_ name: String) -> ScriptValue
}

extension ScriptExpr {
    func evaluate(_ scope: ScriptScope) -> ScriptValue {
        switch self {
        case let .literal(v): return v
        case let .variable(n): return scope.variable(n)
        case let .field(n, rep): return scope.field(n, repetition: rep)
        case let .get(n): return scope.get(n)
        case let .unary(op, e):
            let v = e.evaluate(scope)
            if op == "not" { return .bool(!v.isTrue) }
            return .number(-(v.numeric ?? 0))
        case let .call(name, args):
            switch name {
            case "if": return args[0].evaluate(scope).isTrue ? args[1].evaluate(scope) : args[2].evaluate(scope)
            case "length": return .number(Double(args[0].evaluate(scope).text.count))
            case "getasnumber":
                let v = args[0].evaluate(scope)
                if let n = v.numeric { return .number(n) }
                let digits = v.text.filter { $0.isNumber || $0 == "." || $0 == "-" }
                return Double(digits).map { .number($0) } ?? .text("")
            case "getastext": return .text(args[0].evaluate(scope).text)
            case "int": return .number((args[0].evaluate(scope).numeric ?? 0).rounded(.towardZero))
            case "upper": return .text(args[0].evaluate(scope).text.uppercased())
            case "lower": return .text(args[0].evaluate(scope).text.lowercased())
            default: return .text("")
            }
        case let .binary(op, l, r):
            let a = l.evaluate(scope)
            if op == "and" { return .bool(a.isTrue && r.evaluate(scope).isTrue) }
            if op == "or" { return .bool(a.isTrue || r.evaluate(scope).isTrue) }
            let b = r.evaluate(scope)
            switch op {
            case "&": return .text(a.text + b.text)
            case "+":
                // Addition when both sides are numbers, else concatenation ("Output with param " + parameter).
                // An empty side counts as 0 next to a number, as in FileMaker.
                if let x = a.numeric ?? (a.text.isEmpty ? 0 : nil), let y = b.numeric ?? (b.text.isEmpty ? 0 : nil),
                   !(a.text.isEmpty && b.text.isEmpty) { return .number(x + y) }
                return .text(a.text + b.text)
            case "-": return .number((a.numeric ?? 0) - (b.numeric ?? 0))
            case "*": return .number((a.numeric ?? 0) * (b.numeric ?? 0))
            case "/":
                let d = b.numeric ?? 0
                return d == 0 ? .text("?") : .number((a.numeric ?? 0) / d)
            default:
                let c: ComparisonResult
                if let x = a.numeric, let y = b.numeric {
                    c = x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
                } else {
                    c = a.text.compare(b.text, options: [.caseInsensitive, .diacriticInsensitive])
                }
                switch op {
                case "=": return .bool(c == .orderedSame)
                case "≠": return .bool(c != .orderedSame)
                case "<": return .bool(c == .orderedAscending)
                case "≤": return .bool(c != .orderedDescending)
                case ">": return .bool(c == .orderedDescending)
                case "≥": return .bool(c != .orderedAscending)
                default: return .text("")
                }
            }
        }
    }
}

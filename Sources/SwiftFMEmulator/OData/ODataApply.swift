import Foundation

/// A parsed `$apply` (the transformations FileMaker 22.0.1+ documents, ODATA.md §3.7): `filter(…)`,
/// `aggregate(f with m as a, …)` and `groupby((f, …)[,aggregate(…)])`, separated by `/`.
///
/// Parsing is bounded (``ODataApply/maxLength`` characters, ``ODataApply/maxSteps`` transformations, the
/// filter parser's own bounds) and never crashes: malformed text is `400 -1002`, a transformation or
/// method the emulator does not serve (`nest`, `compute`, `concat`, `join`, `topcount`, `$count as`, …)
/// is `400 -1003 Unsupported OData operation`, as FileMaker refuses an option it does not support.
struct ODataApply: Equatable {
    /// An aggregation method.
    enum Method: String, CaseIterable {
        case sum, min, max, average, countdistinct
    }

    /// `field with method as alias`.
    struct Aggregate: Equatable {
        var field: String
        var method: Method
        var alias: String
    }

    enum Step: Equatable {
        case filter(ODataExpr)
        case aggregate([Aggregate])
        case groupBy([String], [Aggregate])
    }

    var steps: [Step]

    static let maxLength = 8_000
    static let maxSteps = 16
    /// Transformations of OData's aggregation extension that the emulator refuses as unsupported.
    static let unsupported: Set<String> = ["nest", "compute", "addnested", "join", "outerjoin", "concat", "topcount", "topsum",
                                           "toppercent", "bottomcount", "bottomsum", "bottompercent", "identity", "search",
                                           "orderby", "top", "skip", "expand", "ancestors", "descendants", "traverse"]

    /// Parses `text`; throws ``ODataError``.
    static func parse(_ text: String) throws -> ODataApply {
        guard text.count <= maxLength else { throw ODataError(400, "-1002", "Error: $apply is too long") }
        let parts = EmulatorState.splitTopLevel(text, on: "/")
        guard parts.count <= maxSteps else { throw ODataError(400, "-1002", "Error: $apply has too many transformations") }
        return ODataApply(steps: try parts.map(step))
    }

    /// `name(inner)` → (`name` lower-cased, `inner`); the parentheses must close at the very end.
    static func call(_ text: String) throws -> (String, String) {
        let t = trimSpaces(text)
        guard let open = t.firstIndex(of: "("), t.hasSuffix(")"), t.count >= 2 else { throw ODataError.syntax(t.isEmpty ? "$apply" : t) }
        let name = trimSpaces(String(t[..<open])).lowercased()
        let inner = String(t[t.index(after: open)..<t.index(before: t.endIndex)])
        // The opening parenthesis must be the one the last closes: `a(b)c(d)` is malformed.
        guard balanced(inner) else { throw ODataError.syntax(t) }
        return (name, inner)
    }

    /// `true` when every parenthesis outside quotes is matched and quotes close.
    static func balanced(_ text: String) -> Bool {
        guard let scan = ODataReadOptions.parenthesesOutsideQuotes(text) else { return false }
        return scan.open == 0 && !scan.quoteOpen
    }

    static func step(_ text: String) throws -> Step {
        let (name, inner) = try call(text)
        switch name {
        case "filter":
            guard !trimSpaces(inner).isEmpty else { throw ODataError.syntax(text) }
            return .filter(try ODataFilter.parse(inner))
        case "aggregate":
            return .aggregate(try aggregates(inner))
        case "groupby":
            let items = EmulatorState.splitTopLevel(inner, on: ",")
            guard let first = items.first else { throw ODataError.syntax(text) }
            let group = trimSpaces(first)
            guard group.hasPrefix("("), group.hasSuffix(")"), group.count >= 2 else { throw ODataError.syntax(group) }
            let fields = try EmulatorState.splitTopLevel(String(group.dropFirst().dropLast()), on: ",").map(fieldName)
            guard items.count <= 2 else { throw ODataError.syntax(text) }
            var aggregates: [Aggregate] = []
            if items.count == 2 {
                let (sub, subInner) = try call(items[1])
                guard sub == "aggregate" else {
                    if unsupported.contains(sub) { throw ODataError.unsupported("$apply \(sub)") }
                    throw ODataError.syntax(trimSpaces(items[1]))
                }
                aggregates = try self.aggregates(subInner)
            }
            return .groupBy(fields, aggregates)
        default:
            if unsupported.contains(name) { throw ODataError.unsupported("$apply \(name)") }
            throw ODataError.syntax(trimSpaces(text))
        }
    }

    /// A field or alias name: plain, or in double quotes (`""` for a quote).
    static func fieldName(_ raw: String) throws -> String {
        let t = trimSpaces(raw)
        guard !t.isEmpty else { throw ODataError.syntax("$apply") }
        if t.hasPrefix("\"") {
            guard t.count >= 2, t.hasSuffix("\""), !t.dropFirst().dropLast().replacingOccurrences(of: "\"\"", with: "").contains("\"") else {
                throw ODataError.syntax(t)
            }
            let name = EmulatorState.unquoteName(t)
            guard !name.isEmpty else { throw ODataError.syntax(t) }
            return name
        }
        guard let head = t.unicodeScalars.first, CharacterSet.letters.contains(head) || head == "_",
              t.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == ":" }) else {
            throw ODataError.syntax(t)
        }
        return t
    }

    /// `f with m as a, …`: at least one; aliases distinct.
    static func aggregates(_ text: String) throws -> [Aggregate] {
        var result: [Aggregate] = []
        for item in EmulatorState.splitTopLevel(text, on: ",") {
            let words = tokens(item)
            if let first = words.first, first.lowercased() == "$count" { throw ODataError.unsupported("$apply $count") }
            guard words.count == 5, words[1].lowercased() == "with", words[3].lowercased() == "as" else {
                throw ODataError.syntax(trimSpaces(item).isEmpty ? "aggregate" : trimSpaces(item))
            }
            guard let method = Method(rawValue: words[2].lowercased()) else {
                // A custom aggregate (`Namespace.method`) or one FileMaker does not list.
                throw ODataError.unsupported("$apply aggregation method \(words[2])")
            }
            let aggregate = Aggregate(field: try fieldName(words[0]), method: method, alias: try fieldName(words[4]))
            guard !result.contains(where: { $0.alias.caseInsensitiveCompare(aggregate.alias) == .orderedSame }) else {
                throw ODataError.syntax(words[4])
            }
            result.append(aggregate)
        }
        return result
    }

    /// Words separated by spaces, a double-quoted name being one word.
    static func tokens(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        for c in text {
            if c == "\"" { quoted.toggle(); current.append(c); continue }
            if !quoted, c == " " || c == "\t" {
                if !current.isEmpty { words.append(current); current = "" }
                continue
            }
            current.append(c)
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}

/// A `$apply` checked under the state lock (``EmulatorState/odataApplyPlan(_:_:)``), evaluated by
/// ``EmulatorState/odataApplied(_:)`` on a snapshot after the lock is released (as a `$filter` is, ``ODataFilterPlan``):
/// other clients do not wait for its filtering, grouping and aggregating.
struct ODataApplyPlan {
    let set: ODataSet
    let apply: ODataApply
    /// Whether a `groupby` or `aggregate` makes the answer rows of its own; else the records that pass its filters are
    /// read as a collection is.
    let aggregates: Bool
    /// The time `now()` stands for: the request's.
    var now: Date?
}

/// A row of an aggregated result: column → value, in column order.
struct ODataAggregateRow {
    var values: [(String, ODataValue)]
}

extension EmulatorState {
    /// `true` when the configured OData engine is 22.0.1 or later (`$apply` arrived in 22.0.1).
    var odataSupportsApply: Bool {
        let parts = odataVersion.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
        let padded = parts + Array(repeating: 0, count: max(0, 3 - parts.count))
        return padded.lexicographicallyPrecedes([22, 0, 1]) == false
    }

    /// `GET /{db}/{set}?$apply=…`, checked under the lock: the engine's version, the text parsed, and what the records
    /// cannot change checked (``odataCheckApply(_:_:_:)``); a malformed `$apply` is refused here. Evaluated by
    /// ``odataApplied(_:)`` (on a snapshot, after the lock is released).
    func odataApplyPlan(_ set: ODataSet, _ ctx: ODataContext) throws -> ODataApplyPlan {
        guard odataSupportsApply else { throw ODataError.unsupported("$apply (OData Engine \(odataVersion))") }
        let apply = try ODataApply.parse(ctx.options["apply"] ?? "")
        // Without the table there are no records: a read of none (nothing else is checked).
        guard table(set.table) != nil else { return ODataApplyPlan(set: set, apply: apply, aggregates: false, now: ctx.now) }
        try odataCheckApply(apply, set, ctx)
        let aggregates = apply.steps.contains { step in
            if case .filter = step { return false }
            return true
        }
        return ODataApplyPlan(set: set, apply: apply, aggregates: aggregates, now: ctx.now)
    }

    /// Checks `apply` on `set` in the order ``odataApplied(_:)`` and ``odataAggregatedAnswer(_:rows:_:)`` do, up to the
    /// first check whose outcome the records decide (a `sum` or `average` of a value that is not a number, a column
    /// of grouped rows, which exists only when there are rows): whatever it refuses, the evaluation would have refused
    /// first, with the same answer; what it leaves, the evaluation still checks.
    func odataCheckApply(_ apply: ODataApply, _ set: ODataSet, _ ctx: ODataContext) throws {
        var aggregated = false
        for step in apply.steps {
            switch step {
            case .filter(let expr):
                // After an aggregation, a filter names the rows' columns, checked only when there are rows.
                guard !aggregated else { return }
                _ = try ODataEvaluator.resolve(expr, in: set)
            case .aggregate(let aggregates):
                // After an aggregation, over the rows' columns (as above).
                guard !aggregated else { return }
                guard !aggregates.isEmpty else { throw ODataError.syntax("aggregate()") }
                for a in aggregates {
                    guard let f = set.field(a.field) else { throw ODataError.noField(a.field) }
                    guard a.method == .sum || a.method == .average else { continue }
                    if f.type != .number {
                        throw ODataError(400, "-1002", "Error: \(a.method.rawValue) needs a number field: '\(f.name)'")
                    }
                    // Its values may hold text that is not a number.
                    return
                }
                aggregated = true
            case .groupBy(let names, let aggregates):
                guard !aggregated else { throw ODataError.unsupported("$apply groupby after an aggregation") }
                let fields = try odataFields(set, names)
                guard !fields.isEmpty else { throw ODataError.syntax("groupby(()") }
                for a in aggregates where fields.contains(where: { $0.name.caseInsensitiveCompare(a.alias) == .orderedSame }) {
                    throw ODataError.syntax(a.alias)
                }
                // Its aggregates are checked per group: not at all without records.
                guard aggregates.isEmpty else { return }
                aggregated = true
            }
        }
        guard aggregated else { return }
        try odataCheckAggregatedOptions(ctx)
    }

    /// The options an aggregated answer refuses (`$select`, `$expand`, `$filter`, `$skiptoken`) and those it reads
    /// (`$top`, `$skip`, `$count`).
    private func odataCheckAggregatedOptions(_ ctx: ODataContext) throws {
        for option in ["select", "expand", "filter", "skiptoken"] where ctx.options[option] != nil {
            throw ODataError.unsupported("$\(option) with an aggregating $apply")
        }
        _ = try ODataReadOptions(ctx.options.filter { ["top", "skip", "count"].contains($0.key) })
    }

    /// Evaluates `plan` on this state (a snapshot, after the lock is released): the transformations in order. Gives the
    /// records that pass its filters (`rows` `nil`: a read of them continues, with the caller's `$filter`, `$select`,
    /// `$orderby` and paging), or the rows of its aggregation (``odataAggregatedAnswer(_:rows:_:)``).
    func odataApplied(_ plan: ODataApplyPlan) throws -> (ids: [Int], rows: [ODataAggregateRow]?) {
        let set = plan.set
        guard let table = table(set.table) else { return ([], nil) }
        var ids = table.order
        var rows: [ODataAggregateRow]?
        odataWillApply?()
        for step in plan.apply.steps {
            switch step {
            case .filter(let expr):
                if var current = rows {
                    current = try odataFilterAggregated(current, expr)
                    rows = current
                } else {
                    let fields = try ODataEvaluator.resolve(expr, in: set)
                    ids = ids.filter { id in
                        guard let record = table.records[id] else { return false }
                        return ODataEvaluator(fields: fields, now: plan.now) { f in f.global ? .empty : record.value(f) }.matches(expr)
                    }
                }
            case .aggregate(let aggregates):
                if let current = rows {
                    rows = [try odataAggregate(columns: current, aggregates)]
                } else {
                    rows = [try odataAggregate(set, records: ids.compactMap { table.records[$0] }, aggregates)]
                }
            case .groupBy(let fields, let aggregates):
                guard rows == nil else { throw ODataError.unsupported("$apply groupby after an aggregation") }
                rows = try odataGroup(set, records: ids.compactMap { table.records[$0] }, fields: fields, aggregates: aggregates)
            }
        }
        return (ids, rows)
    }

    /// The answer of an aggregating `$apply`: rows of the grouping fields and aliases, sorted by the grouping fields
    /// (or `$orderby`), windowed by `$top`/`$skip` and counted by `$count`.
    func odataAggregatedAnswer(_ set: ODataSet, rows aggregated: [ODataAggregateRow], _ ctx: ODataContext) throws -> HTTPResponse {
        try odataCheckAggregatedOptions(ctx)
        let read = try ODataReadOptions(ctx.options.filter { ["top", "skip", "count"].contains($0.key) })
        var sorted = aggregated
        if let orderby = ctx.options["orderby"], !trimSpaces(orderby).isEmpty {
            sorted = try odataSortAggregated(aggregated, orderby)
        }
        let end = read.windowEnd(sorted.count)
        let start = min(read.skip, end)
        let columns = aggregated.first?.values.map(\.0) ?? []
        var pairs: [(String, JSON)] = [(ctx.annotation("context"), .string(ctx.base + "/$metadata#" + ODataContext.encode(set.name)
            + "(" + columns.map { "\"" + $0 + "\"" }.joined(separator: ",") + ")"))]
        if read.count { pairs.append(("@odata.count", .number(Double(sorted.count)))) }
        pairs.append(("value", .array(sorted[start..<end].map { row in
            .object(row.values.map { ($0.0, EmulatorState.odataAggregateJSON($0.1, ieee754: ctx.ieee754)) })
        })))
        return EmulatorState.odataJSON(200, .object(pairs))
    }

    static func odataAggregateJSON(_ value: ODataValue, ieee754: Bool) -> JSON {
        switch value {
        case .null: return .null
        case .number(let n): return ieee754 ? .string(n.text) : .decimal(n.text)
        case .bool(let b): return .bool(b)
        case .string(let s): return .string(s)
        case .date, .time, .timestamp: return value.text.map(JSON.string) ?? .null
        }
    }

    /// The grouping fields resolved on `set`; 8309 for an unknown one.
    private func odataFields(_ set: ODataSet, _ names: [String]) throws -> [EmulatorSchema.Field] {
        try names.map { name in
            guard let f = set.field(name) else { throw ODataError.noField(name) }
            return f
        }
    }

    func odataGroup(_ set: ODataSet, records: [StoredRecord], fields names: [String], aggregates: [ODataApply.Aggregate]) throws -> [ODataAggregateRow] {
        let fields = try odataFields(set, names)
        guard !fields.isEmpty else { throw ODataError.syntax("groupby(()") }
        for a in aggregates where fields.contains(where: { $0.name.caseInsensitiveCompare(a.alias) == .orderedSame }) {
            throw ODataError.syntax(a.alias)
        }
        var groups: [[FMValue]] = []
        var members: [[StoredRecord]] = []
        var index: [[String]: Int] = [:]
        for record in records {
            let key = fields.map { f in f.global ? FMValue.empty : record.value(f) }
            let textKey = key.map { v -> String in v.isEmpty ? "\u{0}" : v.text }
            if let i = index[textKey] {
                members[i].append(record)
            } else {
                index[textKey] = groups.count
                groups.append(key)
                members.append([record])
            }
        }
        var rows: [ODataAggregateRow] = []
        for (i, key) in groups.enumerated() {
            var values = zip(fields, key).map { ($0.0.name, ODataValue($0.1)) }
            if !aggregates.isEmpty { values += try odataAggregate(set, records: members[i], aggregates).values }
            rows.append(ODataAggregateRow(values: values))
        }
        // Groups in the order of their values (FileMaker's order; empty first), field by field.
        let order = rows.indices.sorted { a, b in
            for (x, y) in zip(groups[a], groups[b]) {
                let r = FMValue.compare(x, y)
                if r != .orderedSame { return r == .orderedAscending }
            }
            return a < b
        }
        return order.map { rows[$0] }
    }

    /// One row of `aggregates` over `records`.
    func odataAggregate(_ set: ODataSet, records: [StoredRecord], _ aggregates: [ODataApply.Aggregate]) throws -> ODataAggregateRow {
        guard !aggregates.isEmpty else { throw ODataError.syntax("aggregate()") }
        var values: [(String, ODataValue)] = []
        for a in aggregates {
            guard let f = set.field(a.field) else { throw ODataError.noField(a.field) }
            let column = records.map { r in ODataValue(f.global ? FMValue.empty : r.value(f)) }
            if (a.method == .sum || a.method == .average) && f.type != .number {
                throw ODataError(400, "-1002", "Error: \(a.method.rawValue) needs a number field: '\(f.name)'")
            }
            values.append((a.alias, try EmulatorState.odataAggregate(column, a.method)))
        }
        return ODataAggregateRow(values: values)
    }

    /// `aggregate(...)` after a `groupby`: over the grouped rows' columns (an alias or a grouping field).
    func odataAggregate(columns rows: [ODataAggregateRow], _ aggregates: [ODataApply.Aggregate]) throws -> ODataAggregateRow {
        guard !aggregates.isEmpty else { throw ODataError.syntax("aggregate()") }
        var values: [(String, ODataValue)] = []
        for a in aggregates {
            let known = rows.first?.values.contains { $0.0.caseInsensitiveCompare(a.field) == .orderedSame } ?? true
            guard known else { throw ODataError.noField(a.field) }
            let column = rows.map { row in row.values.first { $0.0.caseInsensitiveCompare(a.field) == .orderedSame }?.1 ?? .null }
            values.append((a.alias, try EmulatorState.odataAggregate(column, a.method)))
        }
        return ODataAggregateRow(values: values)
    }

    /// One aggregate of `column`, empty values left out (SQL's rule): `sum`/`average`/`min`/`max` of no
    /// value are `null`, `countdistinct` counts distinct non-empty values.
    static func odataAggregate(_ column: [ODataValue], _ method: ODataApply.Method) throws -> ODataValue {
        let present = column.filter { $0 != .null && $0 != .string("") }
        switch method {
        case .countdistinct:
            var seen = Set<String>()
            for v in present { seen.insert(v.text ?? "") }
            return .number(FMNumber(seen.count))
        case .min, .max:
            var best: ODataValue?
            for v in present {
                guard let current = best else { best = v; continue }
                guard let r = ODataEvaluator.order(v, current) else { continue }
                if (method == .min && r == .orderedAscending) || (method == .max && r == .orderedDescending) { best = v }
            }
            return best ?? .null
        case .sum, .average:
            var total = Decimal(0)
            var count = 0
            for v in present {
                guard let n = v.number, let d = Decimal(string: n.text, locale: Locale(identifier: "en_US_POSIX")) else {
                    throw ODataError(400, "-1002", "Error: \(method.rawValue) of a value that is not a number")
                }
                total += d
                count += 1
            }
            guard count > 0 else { return .null }
            var result = method == .sum ? total : total / Decimal(count)
            var rounded = Decimal()
            NSDecimalRound(&rounded, &result, 15, .plain)
            return FMNumber(NSDecimalString(&rounded, Locale(identifier: "en_US_POSIX"))).map(ODataValue.number) ?? .null
        }
    }

    /// `filter(...)` after an aggregation: over the rows' columns.
    func odataFilterAggregated(_ rows: [ODataAggregateRow], _ expr: ODataExpr) throws -> [ODataAggregateRow] {
        let names = Set(rows.first?.values.map { $0.0.lowercased() } ?? [])
        func check(_ e: ODataExpr) throws {
            switch e {
            case .literal: return
            case .field(let name): if !rows.isEmpty, !names.contains(name.lowercased()) { throw ODataError.noField(name) }
            case .not(let a): try check(a)
            case .and(let a, let b), .or(let a, let b), .compare(_, let a, let b): try check(a); try check(b)
            case .isIn(let a, let items): try check(a); for i in items { try check(i) }
            case .call(_, let args): for a in args { try check(a) }
            }
        }
        try check(expr)
        return rows.filter { row in
            ODataRowEvaluator(row: row).evaluate(expr) == .bool(true)
        }
    }

    /// `$orderby` over aggregated rows: by column name (`desc`/`asc`), stable.
    func odataSortAggregated(_ rows: [ODataAggregateRow], _ orderby: String) throws -> [ODataAggregateRow] {
        var keys: [(String, Bool)] = []
        for item in EmulatorState.splitTopLevel(orderby, on: ",") {
            var text = trimSpaces(item)
            var ascending = true
            let lower = text.lowercased()
            if lower.hasSuffix(" desc") { ascending = false; text = String(text.dropLast(5)) } else if lower.hasSuffix(" asc") { text = String(text.dropLast(4)) }
            let name = EmulatorState.unquoteName(text)
            if let first = rows.first, !first.values.contains(where: { $0.0.caseInsensitiveCompare(name) == .orderedSame }) {
                throw ODataError.noField(name)
            }
            keys.append((name, ascending))
        }
        return rows.enumerated().sorted { a, b in
            for (name, ascending) in keys {
                let x = a.element.values.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1 ?? .null
                let y = b.element.values.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1 ?? .null
                let r: ComparisonResult
                switch (x == .null, y == .null) {
                case (true, true): r = .orderedSame
                case (true, false): r = .orderedAscending
                case (false, true): r = .orderedDescending
                case (false, false): r = ODataEvaluator.order(x, y) ?? .orderedSame
                }
                if r == .orderedSame { continue }
                return ascending ? r == .orderedAscending : r == .orderedDescending
            }
            return a.offset < b.offset
        }.map(\.element)
    }
}

/// Evaluates a `filter(...)` over an aggregated row (its columns by name, case-insensitively).
struct ODataRowEvaluator {
    let row: ODataAggregateRow

    func evaluate(_ expr: ODataExpr) -> ODataValue {
        let fields: [String: EmulatorSchema.Field] = [:]
        // Columns are values already: substitute them as literals, then evaluate with the filter's rules.
        func substitute(_ e: ODataExpr) -> ODataExpr {
            switch e {
            case .literal: return e
            case .field(let name):
                let v = row.values.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1 ?? .null
                return .literal(ODataRowEvaluator.literal(v))
            case .not(let a): return .not(substitute(a))
            case .and(let a, let b): return .and(substitute(a), substitute(b))
            case .or(let a, let b): return .or(substitute(a), substitute(b))
            case .compare(let op, let a, let b): return .compare(op, substitute(a), substitute(b))
            case .isIn(let a, let items): return .isIn(substitute(a), items.map(substitute))
            case .call(let name, let args): return .call(name, args.map(substitute))
            }
        }
        return ODataEvaluator(fields: fields) { _ in .empty }.evaluate(substitute(expr))
    }

    static func literal(_ v: ODataValue) -> ODataLiteral {
        switch v {
        case .null: return .null
        case .string(let s): return .string(s)
        case .number(let n): return .number(n)
        case .bool(let b): return .bool(b)
        case .date(let d): return .date(FMDate(ordinal: d))
        case .time(let t): return .time(t)
        case .timestamp(let s):
            let day = Int((Double(s) / 86400).rounded(.down))
            return .timestamp(FMDate(ordinal: day), s - day * 86400)
        }
    }
}

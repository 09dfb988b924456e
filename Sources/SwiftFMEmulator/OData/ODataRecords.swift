import Foundation

/// The query options that shape a read (top level, or inside `$expand=Nav(…)`).
struct ODataReadOptions {
    var filter: String?
    var select: String?
    var orderby: String?
    var top: Int?
    var skip = 0
    var count = false
    var expand: String?

    init(_ options: [String: String]) throws {
        filter = options["filter"]
        select = options["select"]
        orderby = options["orderby"]
        expand = options["expand"]
        if let t = options["top"] {
            guard let n = Int(trimSpaces(t)), n >= 0 else { throw ODataError.syntax("$top") }
            top = n
        }
        if let s = options["skip"] {
            guard let n = Int(trimSpaces(s)), n >= 0 else { throw ODataError.syntax("$skip") }
            skip = n
        }
        if let c = options["count"] {
            switch trimSpaces(c).lowercased() {
            case "true": count = true
            case "false": count = false
            default: throw ODataError.syntax("$count")
            }
        }
    }

    /// Where the `$skip`/`$top` window over `count` rows ends: `skip + top`, or `count` when that is past it
    /// (computed without adding, so no `$top` or `$skip` overflows).
    func windowEnd(_ count: Int) -> Int {
        guard let top, top < count - min(skip, count) else { return count }
        return skip + top
    }

    /// `true` when every parenthesis of `text` outside quotes is matched (a quote left open is the options' to refuse:
    /// a `$filter`'s string literal is told as the top level tells it).
    static func parenthesesPair(_ text: String) -> Bool {
        guard let scan = parenthesesOutsideQuotes(text) else { return false }
        return scan.open == 0 || scan.quoteOpen
    }

    /// How the parentheses of `text` outside quotes (`'…'`, `"…"`) stand: `nil` when one closes before it opened,
    /// else how many are left open and whether a quote is.
    static func parenthesesOutsideQuotes(_ text: String) -> (open: Int, quoteOpen: Bool)? {
        var depth = 0
        var quote: Character?
        for c in text {
            if let q = quote {
                if c == q { quote = nil }
                continue
            }
            switch c {
            case "'", "\"": quote = c
            case "(": depth += 1
            case ")":
                depth -= 1
                if depth < 0 { return nil }
            default: break
            }
        }
        return (depth, quote != nil)
    }

    /// The options inside `Nav(…)`: `;`-separated, `$` optional; an unknown or repeated one is a syntax error (as at the
    /// top level).
    static func nested(_ text: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for item in EmulatorState.splitTopLevel(text, on: ";") where !trimSpaces(item).isEmpty {
            guard let eq = item.firstIndex(of: "=") else { throw ODataError.syntax(item) }
            var key = trimSpaces(String(item[..<eq])).lowercased()
            if key.hasPrefix("$") { key.removeFirst() }
            guard ["filter", "select", "orderby", "top", "skip", "count", "expand"].contains(key), out[key] == nil else {
                throw ODataError.syntax(item)
            }
            out[key] = String(item[item.index(after: eq)...])
        }
        return out
    }
}

/// A column of `$select`: a field, or `ROWID` / `ROWMODID`.
enum ODataColumn {
    case field(EmulatorSchema.Field)
    case rowID
    case rowModID

    var name: String {
        switch self {
        case let .field(f): return f.name
        case .rowID: return "ROWID"
        case .rowModID: return "ROWMODID"
        }
    }
}

extension EmulatorState {
    /// The version `$metadata` reports (`ServerVersion`).
    var odataServerVersion: String { odataVersion }

    /// A name of `$select`/`$orderby`, unquoted (`"a b"` → `a b`, `""` → `"`).
    static func unquoteName(_ raw: String) -> String {
        let t = trimSpaces(raw)
        guard t.count >= 2, t.hasPrefix("\""), t.hasSuffix("\"") else { return t }
        return String(t.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }

    /// The columns of a read: `$select`, else every field but containers (and globals' first repetition).
    func odataColumns(_ set: ODataSet, select: String?, ctx: ODataContext) throws -> [ODataColumn] {
        guard let select, !trimSpaces(select).isEmpty else {
            var columns = set.fields.filter { $0.type != .container }.map(ODataColumn.field)
            if ctx.preferences["fmodata.include-specialcolumns"] != nil { columns += [.rowID, .rowModID] }
            return columns
        }
        return try EmulatorState.splitTopLevel(select, on: ",").map { raw in
            let name = EmulatorState.unquoteName(raw)
            if name.caseInsensitiveCompare("ROWID") == .orderedSame { return .rowID }
            if name.caseInsensitiveCompare("ROWMODID") == .orderedSame { return .rowModID }
            guard let f = set.field(name) else { throw ODataError.noField(name) }
            return .field(f)
        }
    }

    /// A stored value as OData JSON: empty is `null`, numbers JSON numbers (strings with
    /// `IEEE754Compatible=true`), dates `YYYY-MM-DD`, times `HH:mm:ss`, timestamps `…Z`, containers base64.
    func odataJSONValue(_ value: FMValue, ieee754: Bool) -> JSON {
        switch value {
        case .empty: return .null
        case let .text(s): return .string(s)
        case let .number(n): return ieee754 ? .string(n.text) : .decimal(n.text)
        case let .date(d): return .string(d.formatted(2))
        case let .time(t): return .string(FMValue.formatTime(t))
        case let .timestamp(d, t): return .string(d.formatted(2) + "T" + FMValue.formatTime(t) + "Z")
        case let .container(c): return blobs[c.key].map { .string($0.data.base64EncodedString()) } ?? .null
        }
    }

    /// The key of a record in URLs: `('text')`, `(12)`, `(a,'b')`, or the ROWID for a set without a key.
    func odataKeyText(_ set: ODataSet, record: StoredRecord) -> String {
        guard !set.keys.isEmpty else { return String(record.id) }
        return set.keys.map { f -> String in
            let v = record.value(f)
            if case let .number(n) = v { return n.text }
            return "'" + v.text.replacingOccurrences(of: "'", with: "''") + "'"
        }.joined(separator: ",")
    }

    func odataEntityURL(_ set: ODataSet, record: StoredRecord, ctx: ODataContext) -> String {
        ctx.base + "/" + ODataContext.encode(set.name) + "(" + ODataContext.encode(odataKeyText(set, record: record)) + ")"
    }

    /// The ids of `set` matching `filter`, in creation order, in this state.
    func odataFilteredIDs(_ set: ODataSet, filter: String?, candidates: [Int]? = nil) throws -> [Int] {
        try odataFilterPlan(set, filter: filter).ids(of: set, in: self, candidates: candidates)
    }

    /// `filter` checked against `set` (``ODataFilterPlan``); not parsed when the set's table is missing (no records
    /// to match).
    func odataFilterPlan(_ set: ODataSet, filter: String?, now: Date? = nil) throws -> ODataFilterPlan {
        try ODataFilterPlan(set, filter: table(set.table) == nil ? nil : filter, now: now)
    }

    /// The keys of `$orderby` (a `nil` field is `ROWID`), each with its direction; empty without `$orderby`. A key
    /// on a field an earlier key sorts by (in either direction) is dropped: it cannot change the order, and each key
    /// is a step of every comparison (a `$batch` body holds `$orderby`s of millions of keys).
    func odataSortKeys(_ set: ODataSet, orderby: String?) throws -> [ODataSortKey] {
        guard let orderby, !trimSpaces(orderby).isEmpty else { return [] }
        var keys: [ODataSortKey] = []
        var seen = Set<String>()
        for item in EmulatorState.splitTopLevel(orderby, on: ",") {
            var text = trimSpaces(item)
            var ascending = true
            let lower = text.lowercased()
            if lower.hasSuffix(" desc") { ascending = false; text = String(text.dropLast(5)) } else if lower.hasSuffix(" asc") { text = String(text.dropLast(4)) }
            let name = EmulatorState.unquoteName(text)
            if name.caseInsensitiveCompare("ROWID") == .orderedSame {
                if seen.insert("").inserted { keys.append(ODataSortKey(field: nil, ascending: ascending)) }
                continue
            }
            guard let f = set.field(name) else { throw ODataError.noField(name) }
            if seen.insert("f:" + f.name).inserted { keys.append(ODataSortKey(field: f, ascending: ascending)) }
        }
        return keys
    }

    /// Sorts `ids` by `keys` (``odataSortKeys(_:orderby:)``; FileMaker's value order; stable); `ids` as they are without keys.
    static func odataSorted(_ ids: [Int], keys: [ODataSortKey], table: TableState) -> [Int] {
        guard !keys.isEmpty else { return ids }
        let records = ids.compactMap { table.records[$0] }
        return records.enumerated().sorted { a, b in
            for key in keys {
                let r: ComparisonResult
                if let field = key.field {
                    r = FMValue.compare(a.element.value(field), b.element.value(field))
                } else {
                    r = ODataEvaluator.order(a.element.id, b.element.id)
                }
                if r == .orderedSame { continue }
                return key.ascending ? r == .orderedAscending : r == .orderedDescending
            }
            return a.offset < b.offset
        }.map(\.element.id)
    }

    /// Checks the options of a read (for a collection, a navigation or an expansion): what
    /// ``ODataRows/found(in:)`` needs to find its records and ``ODataRows/write(_:from:limit:)`` to write the page,
    /// from this state or a snapshot of it.
    func odataPlanRows(_ set: ODataSet, candidates: [Int]?, options: [String: String], ctx: ODataContext, depth: Int,
                       pageStart: Int? = nil, pageSize: Int? = nil) throws -> ODataRows {
        guard depth <= 8 else { throw ODataError.syntax("$expand") }
        let read = try ODataReadOptions(options)
        let (select, expand) = try odataSelectAndExpansions(set, select: read.select, expand: read.expand)
        let columns = try odataColumns(set, select: select, ctx: ctx)
        let filter = try odataFilterPlan(set, filter: read.filter, now: ctx.now)
        let sortKeys = try odataSortKeys(set, orderby: read.orderby)
        // The expansions' own options are checked here, under the lock, for the whole request (they are read again as
        // each expansion's rows are written).
        if depth == 0 { try odataCheckExpansions(expand, depth: 0) }
        return ODataRows(set: set, columns: columns, expand: expand, ctx: ctx, depth: depth, candidates: candidates, filter: filter,
                         sortKeys: sortKeys, read: read, pageStart: pageStart, pageSize: pageSize)
    }

    /// Filters, sorts, windows and writes rows of `set` at once (an expansion, while its row is written):
    /// `bytes` is the JSON array of the rows, `total` the matching records, `next` where the next page starts.
    func odataSelectRows(_ set: ODataSet, candidates: [Int]?, options: [String: String], ctx: ODataContext, depth: Int,
                         limit: Int = .max) throws -> (bytes: [UInt8], total: Int, next: Int?) {
        let rows = try odataPlanRows(set, candidates: candidates, options: options, ctx: ctx, depth: depth)
        let found = rows.found(in: self)
        return (try rows.write(found, from: self, limit: limit), found.total, found.next)
    }

    /// A state to write an answer from after the lock is released: ``readSnapshot(session:)`` with the
    /// blobs (a selected container is written as base64).
    func odataReadSnapshot() -> EmulatorState {
        var s = readSnapshot(session: nil)
        s.blobs = blobs
        return s
    }

    /// `body`'s result; an ``ODataError`` it throws (found on a snapshot, after the lock is released: a `$apply`'s) becomes
    /// ``AnsweredOtherwise``, the request's answer in the error's place.
    static func answeringODataErrors<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let e as ODataError {
            throw AnsweredOtherwise(response: odataError(e))
        }
    }

    /// A JSON answer whose body `body` writes after the lock is released (from a snapshot it captured).
    static func odataStagedJSON(_ status: Int, body: @escaping () throws -> Data) -> StagedResponse {
        StagedResponse(response: HTTPResponse(status: status, headers: [("Content-Type", "application/json;charset=utf-8"), ("OData-Version", "4.0")]),
                       pendingBody: body, refusal: odataError(.tooLarge))
    }

    /// `$expand=A,B($select=x;$top=2)`: the navigation properties and their options (checked by
    /// ``odataCheckExpansions(_:depth:)``). Parentheses must pair up: `A($top=1))` is a syntax error.
    func odataExpansions(_ set: ODataSet, _ text: String?) throws -> [ODataExpansion] {
        guard let text, !trimSpaces(text).isEmpty else { return [] }
        return try EmulatorState.splitTopLevel(text, on: ",").map { item in
            let t = trimSpaces(item)
            var name = t
            var options: [String: String] = [:]
            if let open = t.firstIndex(of: "(") {
                guard t.hasSuffix(")") else { throw ODataError.syntax(t) }
                name = String(t[..<open])
                let inner = String(t[t.index(after: open)..<t.index(before: t.endIndex)])
                // The opening parenthesis must be the one the last closes: `A(x)(y)` and `A(x))` are malformed.
                guard ODataReadOptions.parenthesesPair(inner) else { throw ODataError.syntax(t) }
                options = try ODataReadOptions.nested(inner)
            } else if !t.hasPrefix("\""), t.contains(")") {
                // A closing parenthesis without its opening one (a quoted name may hold one).
                throw ODataError.syntax(t)
            }
            name = EmulatorState.unquoteName(name)
            guard let nav = set.nav(name) else { throw ODataError.noField(name) }
            return ODataExpansion(nav: nav, options: options)
        }
    }

    /// The expansions of `expand` and what `select` leaves to the set itself: `Nav/field` in `$select`, for an expanded
    /// `Nav`, selects `field` in that expansion's rows (CG:query-option-select: `$expand=Products&$select=Name,Products/Name`),
    /// after the expansion's own `$select`. `nil` when nothing is left (every field).
    func odataSelectAndExpansions(_ set: ODataSet, select: String?, expand text: String?) throws -> (String?, [ODataExpansion]) {
        var expand = try odataExpansions(set, text)
        guard let select, !expand.isEmpty, select.contains("/") else { return (select, expand) }
        var own: [String] = []
        for item in EmulatorState.splitTopLevel(select, on: ",") {
            let t = trimSpaces(item)
            if let slash = EmulatorState.topLevelIndex(of: "/", in: t) {
                let navName = EmulatorState.unquoteName(String(t[..<slash]))
                if let i = expand.firstIndex(where: { $0.nav.name.caseInsensitiveCompare(navName) == .orderedSame }) {
                    let field = String(t[t.index(after: slash)...])
                    let existing = trimSpaces(expand[i].options["select"] ?? "")
                    expand[i].options["select"] = existing.isEmpty ? field : existing + "," + field
                    continue
                }
            }
            own.append(item)
        }
        return (own.isEmpty ? nil : own.joined(separator: ","), expand)
    }

    /// Checks the options of `expansions` (at `depth`: 0 for those of the request) and of the expansions inside them, at
    /// every depth, as the same options of a read are checked: a malformed `$filter`, `$top`, `$skip` or `$count`, an
    /// unknown navigation property (or one past the depth ``odataPlanRows(_:candidates:options:ctx:depth:pageStart:pageSize:)``
    /// allows) is refused (400, the code the top level answers). An unknown *field* inside an expansion is not refused
    /// here: FileMaker answers it in the row, as an `error` (ODATA.md §3.5), and so does ``ODataRowWriter``.
    func odataCheckExpansions(_ expansions: [ODataExpansion], depth: Int) throws {
        for e in expansions {
            // A navigation whose table is gone writes nothing (``ODataRowWriter``).
            guard let target = odataSet(e.nav.name) else { continue }
            guard depth < 8 else { throw ODataError.syntax("$expand") }
            let read = try ODataReadOptions(e.options)
            // Parsed only, its fields not resolved; not at all when the table is gone (as ``odataFilterPlan(_:filter:)``).
            if let filter = read.filter, !trimSpaces(filter).isEmpty, table(target.table) != nil { _ = try ODataFilter.parse(filter) }
            try odataCheckExpansions(try odataExpansions(target, read.expand), depth: depth + 1)
        }
    }

    /// The `@context` of a collection: `…/$metadata#Set` or `…#Set("a","b")` with `$select`.
    func odataCollectionContext(_ set: ODataSet, select: String?, ctx: ODataContext) -> String {
        var s = ctx.base + "/$metadata#" + ODataContext.encode(set.name)
        if let select, !trimSpaces(select).isEmpty {
            s += "(" + EmulatorState.splitTopLevel(select, on: ",").map { "\"" + EmulatorState.unquoteName($0) + "\"" }.joined(separator: ",") + ")"
        }
        return s
    }

    // MARK: Reads

    /// `GET /{db}/{set}`: a page of rows, `@odata.count` when asked, `@odata.nextLink` past a page. The
    /// options are checked here, under the lock; the records are filtered (`$apply`, then `$filter`), sorted and written
    /// after it is released, from a snapshot (``ODataRows``, ``ODataApplyPlan``): a long `$filter` or `$apply` over many
    /// records does not hold other clients.
    func odataCollection(_ set: ODataSet, _ ctx: ODataContext) throws -> StagedResponse {
        // `$apply`: an aggregation answers rows of its own; filters only leave the records that pass, read below.
        var apply: ODataApplyPlan?
        if ctx.options["apply"] != nil {
            let plan = try odataApplyPlan(set, ctx)
            if plan.aggregates {
                let snapshot = odataReadSnapshot()
                return EmulatorState.odataStagedJSON(200) {
                    try EmulatorState.answeringODataErrors {
                        try snapshot.odataAggregatedAnswer(set, rows: try snapshot.odataApplied(plan).rows ?? [], ctx).body
                    }
                }
            }
            apply = plan
        }
        var pageSize = max(1, odataMaxPageSize)
        if let p = ctx.preferences["odata.maxpagesize"].flatMap({ Int($0) }), p > 0 { pageSize = min(pageSize, p) }
        var pageStart: Int?
        if let token = ctx.options["skiptoken"] {
            guard let n = Int(trimSpaces(token)), n >= 0 else { throw ODataError.syntax("$skiptoken") }
            pageStart = n
        }
        var options = ctx.options
        options["skiptoken"] = nil
        options["apply"] = nil
        let planned = try odataPlanRows(set, candidates: nil, options: options, ctx: ctx, depth: 0, pageStart: pageStart, pageSize: pageSize)
        let context = odataCollectionContext(set, select: ctx.options["select"], ctx: ctx)
        let nextLink = { (next: Int) -> String in
            var query = (ctx.request.rawQuery ?? "").split(separator: "&").filter {
                let name = ($0.split(separator: "=", maxSplits: 1).first ?? "").lowercased()
                return name != "$skiptoken" && name != "skiptoken" && name != "%24skiptoken"
            }.map(String.init)
            query.append("$skiptoken=\(next)")
            return ctx.base + "/" + ODataContext.encode(set.name) + "?" + query.joined(separator: "&")
        }
        let snapshot = odataReadSnapshot()
        return EmulatorState.odataStagedJSON(200) {
            var rows = planned
            if let apply { rows = rows.narrowed(to: try EmulatorState.answeringODataErrors { try snapshot.odataApplied(apply).ids }) }
            let found = rows.found(in: snapshot)
            var head: [(String, JSON)] = [(ctx.annotation("context"), .string(context))]
            if rows.read.count { head.append(("@odata.count", .number(Double(found.total)))) }
            let tail: [(String, JSON)] = found.next.map { [("@odata.nextLink", .string(nextLink($0)))] } ?? []
            return JSON.object(head + [("value", .raw(try rows.write(found, from: snapshot, limit: snapshot.maxAnswerBytes)))] + tail).data
        }
    }

    /// The writer of one entity of `set` (`@context` first), with the columns and expansions `ctx` asks for.
    func odataEntityWriter(_ set: ODataSet, options: [String: String], ctx: ODataContext, state: EmulatorState) throws -> ODataRowWriter {
        let read = try ODataReadOptions(options)
        let (select, expand) = try odataSelectAndExpansions(set, select: read.select, expand: read.expand)
        let columns = try odataColumns(set, select: select, ctx: ctx)
        try odataCheckExpansions(expand, depth: 0)
        let context = ctx.base + "/$metadata#" + ODataContext.encode(set.name) + "/$entity"
        return ODataRowWriter(state: state, set: set, columns: columns, expand: expand, ctx: ctx, depth: 0, context: context)
    }

    /// `GET /{db}/{set}(key)`: written after the lock is released, from a snapshot.
    func odataEntity(_ set: ODataSet, id: Int, _ ctx: ODataContext) throws -> StagedResponse {
        guard let record = table(set.table)?.records[id] else { throw ODataError(404, "-1023", "Record not found") }
        let writer = try odataEntityWriter(set, options: ctx.options, ctx: ctx, state: odataReadSnapshot())
        let limit = maxAnswerBytes
        return EmulatorState.odataStagedJSON(200) { Data(try writer.writeEntity(record, limit: limit)) }
    }

    /// `GET /{db}/{set}(key)/{nav}`: the related rows, written after the lock is released.
    func odataNavigation(_ set: ODataSet, id: Int, nav: (name: String, relationship: Int, forward: Bool), _ ctx: ODataContext) throws -> StagedResponse {
        guard let record = table(set.table)?.records[id], let target = odataSet(nav.name),
              let h = hop(nav.relationship, forward: nav.forward) else { throw ODataError(404, "-1023", "Record not found") }
        let related = follow(RelPath(hops: [h]), from: record, table: set.table, session: nil).map(\.id)
        let rows = try odataPlanRows(target, candidates: related, options: ctx.options, ctx: ctx, depth: 0)
        let context = odataCollectionContext(target, select: ctx.options["select"], ctx: ctx)
        let snapshot = odataReadSnapshot()
        return EmulatorState.odataStagedJSON(200) {
            let found = rows.found(in: snapshot)
            var head: [(String, JSON)] = [(ctx.annotation("context"), .string(context))]
            if rows.read.count { head.append(("@odata.count", .number(Double(found.total)))) }
            return JSON.object(head + [("value", .raw(try rows.write(found, from: snapshot, limit: snapshot.maxAnswerBytes)))]).data
        }
    }

    /// `GET /{db}/{set}(key)/{field}` (`{"value": …}`) or `…/{field}/$value` (the raw value or the container's bytes).
    func odataFieldValue(_ set: ODataSet, id: Int, field: EmulatorSchema.Field, repetition: Int = 1, raw: Bool, _ ctx: ODataContext) throws -> HTTPResponse {
        guard let record = table(set.table)?.records[id] else { throw ODataError(404, "-1023", "Record not found") }
        let value = field.global ? FMValue.empty : record.value(field, repetition: repetition)
        if raw {
            if case let .container(c) = value, let blob = blobs[c.key] {
                let accept = (ctx.request.header("Accept") ?? "").lowercased()
                if odataOctetStreamQuirk, mediaType(accept) == "application/octet-stream" {
                    return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain;charset=utf-8")], body: Data(blob.filename.utf8))
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", blob.contentType),
                                                           ("Content-Disposition", "attachment; filename=\"\(blob.filename)\"")],
                                    body: ctx.request.method == "HEAD" ? Data() : blob.data)
            }
            if field.type == .container { throw ODataError(404, "-1023", "Container field '\(field.name)' is empty") }
            let text = odataJSONValue(value, ieee754: true).scalarText ?? ""
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain;charset=utf-8")], body: Data(text.utf8))
        }
        let context = ctx.base + "/$metadata#" + ODataContext.encode(set.name) + "(" + ODataContext.encode(odataKeyText(set, record: record)) + ")/" + field.name + (repetition == 1 ? "" : "[\(repetition)]")
        return EmulatorState.odataJSON(200, .object([(ctx.annotation("context"), .string(context)),
                                                     ("value", odataJSONValue(value, ieee754: ctx.ieee754))]))
    }
}

/// One `$expand` item.
struct ODataExpansion {
    var nav: (name: String, relationship: Int, forward: Bool)
    var options: [String: String]
}

/// One key of `$orderby`: a field (`nil`: `ROWID`) and its direction.
struct ODataSortKey {
    var field: EmulatorSchema.Field?
    var ascending: Bool
}

/// A `$filter` checked under the state lock (parsed, its fields resolved against the set): ``ids(of:in:candidates:)``
/// applies it on a snapshot after the lock is released (a read, and a write by `$filter` before it takes the lock again
/// to write), or under the lock (a write matching again because the records changed meanwhile).
struct ODataFilterPlan {
    /// The expression and its resolved fields; `nil` without a `$filter` (every record matches).
    let parsed: (expr: ODataExpr, fields: [String: EmulatorSchema.Field])?
    /// The time `now()` stands for (the request's, on the emulator's clock); `nil`: the system clock's.
    let now: Date?

    /// Parses `filter` and resolves its fields in `set`; throws ``ODataError`` (400) when it is malformed.
    init(_ set: ODataSet, filter: String?, now: Date? = nil) throws {
        self.now = now
        guard let filter, !trimSpaces(filter).isEmpty else {
            parsed = nil
            return
        }
        let expr = try ODataFilter.parse(filter)
        parsed = (expr, try ODataEvaluator.resolve(expr, in: set))
    }

    /// The ids among `candidates` (all records of `set` without) that match, in their order.
    func ids(of set: ODataSet, in state: EmulatorState, candidates: [Int]? = nil) -> [Int] {
        guard let table = state.table(set.table) else { return [] }
        let ids = candidates ?? table.order
        guard let (expr, fields) = parsed else { return ids }
        state.odataWillFilter?()
        return ids.filter { id in
            guard let record = table.records[id] else { return false }
            let evaluator = ODataEvaluator(fields: fields, now: now) { f in f.global ? .empty : record.value(f) }
            return evaluator.matches(expr)
        }
    }
}

/// A read checked under the state lock (``EmulatorState/odataPlanRows(_:candidates:options:ctx:depth:pageStart:pageSize:)``),
/// filtered by ``found(in:)``, sorted and written by ``write(_:from:limit:)``, which a collection or navigation runs after the
/// lock is released, on a snapshot (as the Data API's ``RecordWriter`` pages are): other clients do not wait for a
/// read's filtering or writing.
struct ODataRows {
    /// The set read, its columns (`$select`) and expansions (`$expand`): what ``ODataRowWriter`` writes of each row.
    let set: ODataSet, columns: [ODataColumn], expand: [ODataExpansion]
    /// The request (annotations, `IEEE754Compatible`) and the depth of the read (0, or that of an expansion).
    let ctx: ODataContext, depth: Int
    /// The records to filter (`nil`: all of the set's).
    let candidates: [Int]?
    let filter: ODataFilterPlan
    let sortKeys: [ODataSortKey]
    /// The read's options (`$skip`, `$top`, `$count`).
    let read: ODataReadOptions
    /// Where the page starts (`$skiptoken`; `$skip` without) and the most rows it holds (`nil`: no limit).
    let pageStart: Int?, pageSize: Int?

    /// The records a read found: the matching ids in creation order (unsorted), the page (positions in the sorted
    /// ids), and where the next page starts, when there is one.
    struct Found {
        let ids: [Int]
        let window: Range<Int>
        let next: Int?

        /// The number of matching records (`@odata.count`).
        var total: Int { ids.count }
    }

    /// The same read of `ids` (in their order) instead of its candidates: the records a `$apply`'s filters left.
    func narrowed(to ids: [Int]) -> ODataRows {
        ODataRows(set: set, columns: columns, expand: expand, ctx: ctx, depth: depth, candidates: ids, filter: filter,
                  sortKeys: sortKeys, read: read, pageStart: pageStart, pageSize: pageSize)
    }

    /// Filters the records of `state` and places the page.
    func found(in state: EmulatorState) -> Found {
        let ids = filter.ids(of: set, in: state, candidates: candidates)
        let end = read.windowEnd(ids.count)
        let start = min(pageStart ?? read.skip, end)
        var stop = end
        var next: Int?
        if let pageSize, end - start > pageSize {
            stop = start + pageSize
            next = stop
        }
        return Found(ids: ids, window: start..<stop, next: next)
    }

    /// The page of `found` as a JSON array (`[row,…]`), written from `state`; ``AnswerTooLarge`` past `limit` bytes.
    func write(_ found: Found, from state: EmulatorState, limit: Int = .max) throws -> [UInt8] {
        guard let table = state.table(set.table) else { return Array("[]".utf8) }
        let sorted = EmulatorState.odataSorted(found.ids, keys: sortKeys, table: table)
        let writer = ODataRowWriter(state: state, set: set, columns: columns, expand: expand, ctx: ctx, depth: depth)
        return try writer.writeArray(sorted[found.window.clamped(to: sorted.indices)], table: table, limit: limit)
    }
}

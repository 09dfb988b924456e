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

    /// The options inside `Nav(…)`: `;`-separated, `$` optional.
    static func nested(_ text: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for item in EmulatorState.splitTopLevel(text, on: ";") where !trimSpaces(item).isEmpty {
            guard let eq = item.firstIndex(of: "=") else { throw ODataError.syntax(item) }
            var key = trimSpaces(String(item[..<eq])).lowercased()
            if key.hasPrefix("$") { key.removeFirst() }
            guard ["filter", "select", "orderby", "top", "skip", "count", "expand"].contains(key) else { throw ODataError.syntax(item) }
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

    /// One row: `@id`/`@editLink` (unless `odata.metadata=none`), the columns, then any expansions.
    func odataRow(_ set: ODataSet, record: StoredRecord, columns: [ODataColumn], expand: [ODataExpansion],
                  ctx: ODataContext, depth: Int) -> JSON {
        var pairs: [(String, JSON)] = []
        if !ctx.noMetadata {
            let url = odataEntityURL(set, record: record, ctx: ctx)
            pairs.append((ctx.annotation("id"), .string(url)))
            pairs.append((ctx.annotation("editLink"), .string(url)))
        }
        for column in columns {
            switch column {
            case let .field(f):
                let v = f.global ? FMValue.empty : record.value(f)
                pairs.append((f.name, odataJSONValue(v, ieee754: ctx.ieee754)))
            case .rowID: pairs.append(("ROWID", .number(Double(record.id))))
            case .rowModID: pairs.append(("ROWMODID", .number(Double(record.modId))))
            }
        }
        for e in expand {
            guard let target = odataSet(e.nav.name), let h = hop(e.nav.relationship, forward: e.nav.forward) else { continue }
            let related = follow(RelPath(hops: [h]), from: record, table: set.table, session: nil)
            do {
                let rows = try odataSelectRows(target, candidates: related.map(\.id), options: e.options, ctx: ctx, depth: depth + 1)
                pairs.append((e.nav.name, .raw(rows.bytes)))
            } catch let error as ODataError {
                // An error inside an expansion does not fail the request (ODATA.md §3.5).
                pairs.append(("error", .array([.object([("error", .object([("code", .string(error.code)),
                                                                            ("message", .string(error.message))]))])])))
            } catch {
                continue
            }
        }
        return .object(pairs)
    }

    /// The ids of `set` matching `filter`, in creation order.
    func odataFilteredIDs(_ set: ODataSet, filter: String?, candidates: [Int]? = nil) throws -> [Int] {
        guard let table = table(set.table) else { return [] }
        let ids = candidates ?? table.order
        guard let filter, !trimSpaces(filter).isEmpty else { return ids }
        let expr = try ODataFilter.parse(filter)
        let fields = try ODataEvaluator.resolve(expr, in: set)
        return ids.filter { id in
            guard let record = table.records[id] else { return false }
            let evaluator = ODataEvaluator(fields: fields) { f in f.global ? .empty : record.value(f) }
            return evaluator.matches(expr)
        }
    }

    /// Sorts `ids` by `$orderby` (FileMaker's value order; stable).
    func odataSorted(_ set: ODataSet, ids: [Int], orderby: String?) throws -> [Int] {
        guard let orderby, !trimSpaces(orderby).isEmpty, let table = table(set.table) else { return ids }
        var keys: [(EmulatorSchema.Field?, Bool)] = []
        for item in EmulatorState.splitTopLevel(orderby, on: ",") {
            var text = trimSpaces(item)
            var ascending = true
            let lower = text.lowercased()
            if lower.hasSuffix(" desc") { ascending = false; text = String(text.dropLast(5)) } else if lower.hasSuffix(" asc") { text = String(text.dropLast(4)) }
            let name = EmulatorState.unquoteName(text)
            if name.caseInsensitiveCompare("ROWID") == .orderedSame { keys.append((nil, ascending)); continue }
            guard let f = set.field(name) else { throw ODataError.noField(name) }
            keys.append((f, ascending))
        }
        let records = ids.compactMap { table.records[$0] }
        return records.enumerated().sorted { a, b in
            for (field, ascending) in keys {
                let r: ComparisonResult
                if let field {
                    r = FMValue.compare(a.element.value(field), b.element.value(field))
                } else {
                    r = ODataEvaluator.order(a.element.id, b.element.id)
                }
                if r == .orderedSame { continue }
                return ascending ? r == .orderedAscending : r == .orderedDescending
            }
            return a.offset < b.offset
        }.map(\.element.id)
    }

    /// Filters, sorts, windows and renders rows of `set` (for a collection or an expansion): `bytes` is the
    /// JSON array of the rows (``ODataRowWriter``), `total` the matching records, `next` where the next page starts.
    func odataSelectRows(_ set: ODataSet, candidates: [Int]?, options: [String: String], ctx: ODataContext, depth: Int,
                         pageStart: Int? = nil, pageSize: Int? = nil) throws -> (bytes: [UInt8], total: Int, next: Int?) {
        guard depth <= 8 else { throw ODataError.syntax("$expand") }
        let read = try ODataReadOptions(options)
        let columns = try odataColumns(set, select: read.select, ctx: ctx)
        let expand = try odataExpansions(set, read.expand)
        let ids = try odataSorted(set, ids: try odataFilteredIDs(set, filter: read.filter, candidates: candidates), orderby: read.orderby)
        let end = read.windowEnd(ids.count)
        let start = min(pageStart ?? read.skip, end)
        var stop = end
        var next: Int?
        if let pageSize, end - start > pageSize {
            stop = start + pageSize
            next = stop
        }
        guard let table = table(set.table) else { return (Array("[]".utf8), 0, nil) }
        let writer = ODataRowWriter(state: self, set: set, columns: columns, expand: expand, ctx: ctx, depth: depth)
        return (writer.writeArray(ids[start..<stop], table: table), ids.count, next)
    }

    /// `$expand=A,B($select=x;$top=2)`: the navigation properties and their options.
    func odataExpansions(_ set: ODataSet, _ text: String?) throws -> [ODataExpansion] {
        guard let text, !trimSpaces(text).isEmpty else { return [] }
        return try EmulatorState.splitTopLevel(text, on: ",").map { item in
            let t = trimSpaces(item)
            var name = t
            var options: [String: String] = [:]
            if let open = t.firstIndex(of: "(") {
                guard t.hasSuffix(")") else { throw ODataError.syntax(t) }
                name = String(t[..<open])
                options = try ODataReadOptions.nested(String(t[t.index(after: open)..<t.index(before: t.endIndex)]))
            }
            name = EmulatorState.unquoteName(name)
            guard let nav = set.nav(name) else { throw ODataError.noField(name) }
            return ODataExpansion(nav: nav, options: options)
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

    /// `GET /{db}/{set}`: a page of rows, `@odata.count` when asked, `@odata.nextLink` past a page.
    func odataCollection(_ set: ODataSet, _ ctx: ODataContext) throws -> HTTPResponse {
        // `$apply`: an aggregation answers here; filters only leave the records that pass, read below.
        var candidates: [Int]?
        if ctx.options["apply"] != nil {
            switch try odataApplyCollection(set, ctx) {
            case .rows(let response): return response
            case .records(let ids): candidates = ids
            }
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
        let result = try odataSelectRows(set, candidates: candidates, options: options, ctx: ctx, depth: 0, pageStart: pageStart, pageSize: pageSize)
        var pairs: [(String, JSON)] = [(ctx.annotation("context"), .string(odataCollectionContext(set, select: ctx.options["select"], ctx: ctx)))]
        if try ODataReadOptions(options).count { pairs.append(("@odata.count", .number(Double(result.total)))) }
        pairs.append(("value", .raw(result.bytes)))
        if let next = result.next {
            var query = (ctx.request.rawQuery ?? "").split(separator: "&").filter {
                let name = ($0.split(separator: "=", maxSplits: 1).first ?? "").lowercased()
                return name != "$skiptoken" && name != "skiptoken" && name != "%24skiptoken"
            }.map(String.init)
            query.append("$skiptoken=\(next)")
            pairs.append(("@odata.nextLink", .string(ctx.base + "/" + ODataContext.encode(set.name) + "?" + query.joined(separator: "&"))))
        }
        return EmulatorState.odataJSON(200, .object(pairs))
    }

    /// `GET /{db}/{set}(key)`.
    func odataEntity(_ set: ODataSet, id: Int, _ ctx: ODataContext) throws -> HTTPResponse {
        guard let record = table(set.table)?.records[id] else { throw ODataError(404, "-1023", "Record not found") }
        let read = try ODataReadOptions(ctx.options)
        let columns = try odataColumns(set, select: read.select, ctx: ctx)
        let expand = try odataExpansions(set, read.expand)
        guard case var .object(pairs) = odataRow(set, record: record, columns: columns, expand: expand, ctx: ctx, depth: 0) else {
            throw ODataError(500, "-1", "Unknown error")
        }
        pairs.insert((ctx.annotation("context"), .string(ctx.base + "/$metadata#" + ODataContext.encode(set.name) + "/$entity")), at: 0)
        return EmulatorState.odataJSON(200, .object(pairs))
    }

    /// `GET /{db}/{set}(key)/{nav}`: the related rows.
    func odataNavigation(_ set: ODataSet, id: Int, nav: (name: String, relationship: Int, forward: Bool), _ ctx: ODataContext) throws -> HTTPResponse {
        guard let record = table(set.table)?.records[id], let target = odataSet(nav.name),
              let h = hop(nav.relationship, forward: nav.forward) else { throw ODataError(404, "-1023", "Record not found") }
        let related = follow(RelPath(hops: [h]), from: record, table: set.table, session: nil).map(\.id)
        let result = try odataSelectRows(target, candidates: related, options: ctx.options, ctx: ctx, depth: 0)
        var pairs: [(String, JSON)] = [(ctx.annotation("context"), .string(odataCollectionContext(target, select: ctx.options["select"], ctx: ctx)))]
        if try ODataReadOptions(ctx.options).count { pairs.append(("@odata.count", .number(Double(result.total)))) }
        pairs.append(("value", .raw(result.bytes)))
        return EmulatorState.odataJSON(200, .object(pairs))
    }

    /// `GET /{db}/{set}(key)/{field}` (`{"value": …}`) or `…/{field}/$value` (the raw value or the container's bytes).
    func odataFieldValue(_ set: ODataSet, id: Int, field: EmulatorSchema.Field, raw: Bool, _ ctx: ODataContext) throws -> HTTPResponse {
        guard let record = table(set.table)?.records[id] else { throw ODataError(404, "-1023", "Record not found") }
        let value = field.global ? FMValue.empty : record.value(field)
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
        let context = ctx.base + "/$metadata#" + ODataContext.encode(set.name) + "(" + ODataContext.encode(odataKeyText(set, record: record)) + ")/" + field.name
        return EmulatorState.odataJSON(200, .object([(ctx.annotation("context"), .string(context)),
                                                     ("value", odataJSONValue(value, ieee754: ctx.ieee754))]))
    }
}

/// One `$expand` item.
struct ODataExpansion {
    var nav: (name: String, relationship: Int, forward: Bool)
    var options: [String: String]
}

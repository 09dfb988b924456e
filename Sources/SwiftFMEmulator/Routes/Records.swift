import Foundation

/// How records are written back: response layout, portals and their ranges, date format.
struct OutputOptions {
    var layout: EmulatorSchema.Layout
    var portals: [EmulatorSchema.Portal]
    var ranges: [String: (offset: Int, limit: Int)]
    var dateformats: Int
}

/// Reads an integer parameter (string or number); `nil` when absent.
func intParameter(_ value: JSON?) throws -> Int? {
    guard let value else { return nil }
    guard let text = value.scalarText?.trimmingCharacters(in: .whitespaces), let n = Int(text) else { throw FMError("1708") }
    return n
}

/// Reads `dateformats` (string or number): 0, 1 or 2, else 1708; `nil` when absent.
func dateformatsParameter(_ value: JSON?) throws -> Int? {
    guard let df = try intParameter(value) else { return nil }
    guard (0...2).contains(df) else { throw FMError("1708") }
    return df
}

extension EmulatorState {
    // MARK: Options

    /// Output options from GET query parameters (`fromBody` false) or a find body (`fromBody` true).
    func outputOptions(_ layout: EmulatorSchema.Layout, _ ctx: RequestContext, fromBody: Bool) throws -> OutputOptions {
        func param(_ key: String) -> JSON? {
            if fromBody { return ctx.body[key] }
            return ctx.queryValue(key).map { .string($0) }
        }
        var out = OutputOptions(layout: layout, portals: layout.portals, ranges: [:], dateformats: 0)
        if let df = try dateformatsParameter(param("dateformats")) { out.dateformats = df }
        if let name = param("layout.response")?.scalarText, !name.isEmpty {
            guard let responseLayout = self.layout(name) else { throw FMError("105") }
            guard responseLayout.table.caseInsensitiveCompare(layout.table) == .orderedSame else { throw FMError("1708") }
            out.layout = responseLayout
            out.portals = responseLayout.portals
        }
        if let portalParam = param("portal") {
            var list: [JSON]
            if let a = portalParam.arrayValue {
                list = a
            } else if let text = portalParam.stringValue {
                guard let parsed = try? JSON.parse(Data(text.utf8)), let a = parsed.arrayValue else { throw FMError("1708") }
                list = a
            } else {
                throw FMError("1708")
            }
            let wanted = Set(list.compactMap { $0.scalarText?.lowercased() })
            out.portals = out.layout.portals.filter { wanted.contains($0.name.lowercased()) || wanted.contains($0.table.lowercased()) }
        }
        let pairs: [(String, JSON)] = fromBody ? (ctx.body.objectPairs ?? []) : ctx.query.map { ($0.0, .string($0.1)) }
        for p in out.layout.portals {
            var offset = 1, limit = 50
            for (key, value) in pairs {
                let k = key.lowercased()
                let name = p.name.lowercased()
                if k == "_offset.\(name)" || k == "offset.\(name)" {
                    guard let n = try intParameter(value), n >= 1 else { throw FMError("1708") }
                    offset = n
                } else if k == "_limit.\(name)" || k == "limit.\(name)" {
                    guard let n = try intParameter(value), n >= 0 else { throw FMError("1708") }
                    limit = n
                }
            }
            out.ranges[p.name.lowercased()] = (offset, limit)
        }
        return out
    }

    // MARK: Reading

    func containerURL(_ ref: ContainerRef, host: String) -> String {
        let ext = ref.fileExtension.isEmpty ? "" : ".\(ref.fileExtension)"
        return "http://\(host)/Streaming_SSL/MainDB/\(ref.key)\(ext)?RCType=EmbeddedRCFileProcessor"
    }

    /// The JSON of one record as the Data API returns it.
    func recordJSON(_ record: StoredRecord, _ options: OutputOptions, _ ctx: RequestContext) -> JSON {
        guard let table = table(options.layout.table) else { return .object([]) }
        let urlFor: (ContainerRef) -> String = { self.containerURL($0, host: ctx.host) }
        var fieldData: [(String, JSON)] = []
        for lf in options.layout.fields {
            if let (portal, rt, f) = relatedLayoutField(options.layout, lf.name) {
                let first = related(portal, of: record, parentTable: table, session: ctx.token).first
                let v = first.map { value(of: f, table: rt.schema.name, record: $0, session: ctx.token) } ?? .empty
                fieldData.append(("\(rt.schema.name)::\(f.name)", v.json(dateformats: options.dateformats, containerURL: urlFor)))
                continue
            }
            guard let f = table.field(lf.name) else { continue }
            for rep in 1...f.repetitions {
                let v = value(of: f, table: table.schema.name, record: record, repetition: rep, session: ctx.token)
                fieldData.append((rep == 1 ? f.name : "\(f.name)(\(rep))", v.json(dateformats: options.dateformats, containerURL: urlFor)))
            }
        }
        var portalData: [(String, JSON)] = []
        var portalInfo: [JSON] = []
        for p in options.portals {
            guard let rt = self.table(p.table) else { continue }
            let rows = related(p, of: record, parentTable: table, session: ctx.token)
            var range = options.ranges[p.name.lowercased()] ?? (1, 50)
            // v1 quirk: a layout in Table View returns only the first related row.
            if options.layout.tableView, ctx.version.lowercased() == "v1" { range = (1, min(range.limit, 1)) }
            let page = rows.dropFirst(range.offset - 1).prefix(range.limit)
            var rowJSON: [JSON] = []
            for row in page {
                var pairs: [(String, JSON)] = [("recordId", .string(String(row.id)))]
                for name in p.fields {
                    guard let f = rt.field(name) else { continue }
                    guard f.repetitions > 1 else {
                        let v = value(of: f, table: rt.schema.name, record: row, session: ctx.token)
                        pairs.append(("\(rt.schema.name)::\(f.name)", v.json(dateformats: options.dateformats, containerURL: urlFor)))
                        continue
                    }
                    // A repeating field in a portal row: every repetition as `TO::field(n)`, the first
                    // too (python-fmdata's integration suite reads `(1)`, `(2)`, …; WIRE.md §17).
                    for rep in 1...f.repetitions {
                        let v = value(of: f, table: rt.schema.name, record: row, repetition: rep, session: ctx.token)
                        pairs.append(("\(rt.schema.name)::\(f.name)(\(rep))", v.json(dateformats: options.dateformats, containerURL: urlFor)))
                    }
                }
                pairs.append(("modId", .string(String(row.modId))))
                rowJSON.append(.object(pairs))
            }
            portalData.append((p.name, .array(rowJSON)))
            portalInfo.append(.object([("portalObjectName", .string(p.name)), ("database", .string(schema.database)),
                                       ("table", .string(rt.schema.name)), ("foundCount", .number(Double(rows.count))),
                                       ("returnedCount", .number(Double(rowJSON.count)))]))
        }
        var pairs: [(String, JSON)] = [("fieldData", .object(fieldData)), ("portalData", .object(portalData)),
                                       ("recordId", .string(String(record.id))), ("modId", .string(String(record.modId)))]
        if !portalInfo.isEmpty { pairs.append(("portalDataInfo", .array(portalInfo))) }
        return .object(pairs)
    }

    func dataInfo(_ options: OutputOptions, total: Int, found: Int, returned: Int) -> JSON {
        .object([("database", .string(schema.database)), ("layout", .string(options.layout.name)),
                 ("table", .string(options.layout.table)), ("totalRecordCount", .number(Double(total))),
                 ("foundCount", .number(Double(found))), ("returnedCount", .number(Double(returned)))])
    }

    /// E11: `GET …/records/{recordId}`.
    mutating func getRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        let options = try outputOptions(layout, ctx, fromBody: false)
        let plan = scriptPlanFromQuery(ctx)
        var results = ScriptResults()
        guard let t = table(layout.table) else { throw FMError("106") }
        runPhase(.prerequest, of: plan, layout: layout, foundCount: t.records.count, into: &results)
        guard let record = table(layout.table)?.records[id] else { throw FMError("101") }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, into: &results)
        let total = table(layout.table)?.records.count ?? 0
        let data = JSON.array([recordJSON(record, options, ctx)])
        return Reply(response: .object(results.pairs + [("dataInfo", dataInfo(options, total: total, found: 1, returned: 1)), ("data", data)]))
    }

    /// E10: `GET …/records`.
    mutating func getRange(_ layout: EmulatorSchema.Layout, _ ctx: inout RequestContext) throws -> Reply {
        let options = try outputOptions(layout, ctx, fromBody: false)
        let offset = try intParameter(ctx.queryValue("_offset").map { .string($0) }) ?? 1
        let limit = try intParameter(ctx.queryValue("_limit").map { .string($0) }) ?? 100
        guard offset >= 0, limit >= 1 else { throw FMError("1708") }
        var sortSpec: [JSON] = []
        if let sortText = ctx.queryValue("_sort") {
            guard let parsed = try? JSON.parse(Data(sortText.utf8)), let items = parsed.arrayValue else { throw FMError("1708") }
            sortSpec = items
        }
        guard let t = table(layout.table) else { throw FMError("106") }
        let sorter = try makeSorter(layout, sortSpec)
        let plan = scriptPlanFromQuery(ctx)
        let ids = t.order
        return try foundSetReply(layout, options: options, plan: plan, offset: max(offset, 1), limit: limit, sorter: sorter,
                                 ctx: ctx) { _ in ids }
    }

    /// Runs the phases of a found-set request: prerequest, action, presort, sort, script, page.
    mutating func foundSetReply(_ layout: EmulatorSchema.Layout, options: OutputOptions, plan: ScriptPlan, offset: Int, limit: Int,
                                sorter: (([StoredRecord]) -> [StoredRecord])?, ctx: RequestContext,
                                action: (EmulatorState) throws -> [Int]) throws -> Reply {
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, into: &results)
        var found = try action(self)
        runPhase(.presort, of: plan, layout: layout, foundCount: found.count, into: &results)
        if let sorter, let t = table(layout.table) {
            found = sorter(found.compactMap { t.records[$0] }).map(\.id)
        }
        runPhase(.after, of: plan, layout: layout, foundCount: found.count, into: &results)
        let records = table(layout.table)?.records ?? [:]
        let page = found.dropFirst(offset - 1).prefix(limit).compactMap { records[$0] }
        guard !page.isEmpty else { throw FMError("401") }
        let total = table(layout.table)?.records.count ?? 0
        let data = JSON.array(page.map { recordJSON($0, options, ctx) })
        return Reply(response: .object(results.pairs + [("dataInfo", dataInfo(options, total: total, found: found.count, returned: page.count)),
                                                        ("data", data)]))
    }

    /// Builds a stable multi-field sort from `[{"fieldName":…,"sortOrder":…}]`.
    func makeSorter(_ layout: EmulatorSchema.Layout, _ spec: [JSON]) throws -> (([StoredRecord]) -> [StoredRecord])? {
        guard !spec.isEmpty, let table = table(layout.table) else { return nil }
        var keys: [(EmulatorSchema.Field, Bool, [String]?)] = []
        for item in spec {
            guard let name = item["fieldName"]?.scalarText else { throw FMError("1708") }
            var fieldName = name
            if let r = name.range(of: "::"), name[..<r.lowerBound].caseInsensitiveCompare(table.schema.name) == .orderedSame {
                fieldName = String(name[r.upperBound...])
            }
            guard let field = table.field(fieldName) else { throw FMError("102") }
            let order = item["sortOrder"]?.scalarText ?? "ascend"
            switch order.lowercased() {
            case "ascend", "": keys.append((field, true, nil))
            case "descend": keys.append((field, false, nil))
            default:
                guard let vl = layout.valueLists.first(where: { $0.name.caseInsensitiveCompare(order) == .orderedSame }) else {
                    throw FMError("1708")
                }
                keys.append((field, true, vl.values.map { $0.lowercased() }))
            }
        }
        return { records in
            records.enumerated().sorted { a, b in
                for (field, ascending, valueList) in keys {
                    let va = a.element.value(field), vb = b.element.value(field)
                    var result: ComparisonResult
                    if let valueList {
                        let ia = valueList.firstIndex(of: va.text.lowercased()) ?? Int.max
                        let ib = valueList.firstIndex(of: vb.text.lowercased()) ?? Int.max
                        result = ia < ib ? .orderedAscending : (ia > ib ? .orderedDescending : FMValue.compare(va, vb))
                    } else {
                        result = FMValue.compare(va, vb)
                    }
                    if result == .orderedSame { continue }
                    return ascending ? result == .orderedAscending : result == .orderedDescending
                }
                return a.offset < b.offset
            }.map(\.element)
        }
    }

    // MARK: Writing

    /// A `Table::field` entry of a layout's fields, resolved through the portal to that table; `nil` when
    /// `name` is not such an entry.
    func relatedLayoutField(_ layout: EmulatorSchema.Layout, _ name: String) -> (EmulatorSchema.Portal, TableState, EmulatorSchema.Field)? {
        guard let r = name.range(of: "::"), layout.fields.contains(where: { $0.name.lowercased() == name.lowercased() }) else { return nil }
        let to = String(name[..<r.lowerBound]), fieldName = String(name[r.upperBound...])
        guard to.lowercased() != layout.table.lowercased(),
              let portal = layout.portals.first(where: { $0.table.lowercased() == to.lowercased() }),
              let rt = table(portal.table), let f = rt.field(fieldName) else { return nil }
        return (portal, rt, f)
    }

    /// Resolves `fieldData` for a layout without keeping a copy of its table alive (see copy-on-write).
    func prepareWrites(_ layout: EmulatorSchema.Layout, input: [(String, JSON)], dateformats: Int) throws -> [Write] {
        for (key, _) in input where relatedLayoutField(layout, splitRepetition(key).0) != nil {
            // Related fields on the layout are shown, not written, by the emulator (use portalData).
            throw FMError("201")
        }
        guard let t = table(layout.table) else { throw FMError("106") }
        return try resolveWrites(table: t, input: input, dateformats: dateformats, restrictTo: layoutFieldSet(layout))
    }

    func layoutFieldSet(_ layout: EmulatorSchema.Layout) -> Set<String> {
        Set(layout.fields.map { $0.name.lowercased() })
    }

    /// Splits `fieldData` into ordinary pairs and `deleteRelated` targets.
    func splitFieldData(_ body: JSON) throws -> ([(String, JSON)], [String]) {
        guard let fd = body["fieldData"] else { return ([], []) }
        guard let pairs = fd.objectPairs else { throw FMError("1708") }
        var fields: [(String, JSON)] = []
        var deletes: [String] = []
        for (k, v) in pairs {
            if k.caseInsensitiveCompare("deleteRelated") == .orderedSame {
                if let s = v.stringValue { deletes.append(s) }
                else if let a = v.arrayValue {
                    for item in a {
                        guard let s = item.stringValue else { throw FMError("1708") }
                        deletes.append(s)
                    }
                } else { throw FMError("1708") }
            } else {
                fields.append((k, v))
            }
        }
        return (fields, deletes)
    }

    /// Applies `portalData` of a create/edit body; returns the `newPortalRecordInfo` entries.
    ///
    /// Decision (issue 12, WIRE.md §17): one entry **per field written** in each new portal row, in
    /// request order, each `{"tableName": <that field's table occurrence>, "recordId", "modId"}`.
    /// Evidence: python-fmdata (commit ea0abf7), whose integration suite runs in CI against real
    /// FileMaker Server 17 and 22, expects exactly that and raises otherwise; fmrest-ruby's source
    /// comment describes one entry per portal (the last row created). The suite that runs against real
    /// servers is the stronger evidence, so the emulator follows it. Rows edited by `recordId` add nothing.
    mutating func applyPortalData(_ layout: EmulatorSchema.Layout, parentId: Int, _ ctx: RequestContext) throws -> [JSON] {
        guard let pd = ctx.body["portalData"] else { return [] }
        guard let pairs = pd.objectPairs else { throw FMError("1708") }
        // The request's dateformats covers its portal rows too (§6.1, §9).
        let dateformats = try dateformatsParameter(ctx.body["dateformats"]) ?? 0
        var info: [JSON] = []
        for (portalName, rowsJSON) in pairs {
            guard let portal = layout.portals.first(where: {
                $0.name.caseInsensitiveCompare(portalName) == .orderedSame || $0.table.caseInsensitiveCompare(portalName) == .orderedSame
            }) else { throw FMError("102") }
            guard let rows = rowsJSON.arrayValue else { throw FMError("1708") }
            guard let childSchema = table(portal.table)?.schema else { throw FMError("106") }
            let allowed = Set(portal.fields.map { $0.lowercased() })
            for row in rows {
                guard let rowPairs = row.objectPairs else { throw FMError("1708") }
                var recordIdText: String?
                var modIdText: String?
                var fields: [(String, JSON)] = []
                for (k, v) in rowPairs {
                    let lower = k.lowercased()
                    let bare = lower.range(of: "::").map { String(lower[$0.upperBound...]) } ?? lower
                    if bare == "recordid" || bare == "modid" {
                        // null is rejected everywhere (§2); it must not read as "no recordId" (a new row).
                        guard let text = v.scalarText else { throw FMError("1708") }
                        if bare == "recordid" { recordIdText = text } else { modIdText = text }
                        continue
                    }
                    var name = k
                    if let r = k.range(of: "::") {
                        let prefix = k[..<r.lowerBound]
                        guard prefix.caseInsensitiveCompare(childSchema.name) == .orderedSame
                                || prefix.caseInsensitiveCompare(portal.name) == .orderedSame else { throw FMError("102") }
                        name = String(k[r.upperBound...])
                    }
                    fields.append((name, v))
                }
                if let ridText = recordIdText {
                    guard let rid = Int(ridText), let existing = table(portal.table)?.records[rid],
                          isRelated(rid, through: portal, layout: layout, parentId: parentId, session: ctx.token) else { throw FMError("101") }
                    if let m = modIdText, m != String(existing.modId) { throw FMError("306") }
                    let writes = try portalWrites(portal, fields, allowed: allowed, dateformats: dateformats)
                    _ = try editRecord(table: portal.table, id: rid, writes: writes, session: ctx.token, now: ctx.now, bump: !writes.isEmpty)
                } else {
                    var input = fields
                    for (related, v) in try matchValues(portal, layout: layout, parentId: parentId, session: ctx.token) {
                        input.removeAll { $0.0.caseInsensitiveCompare(related) == .orderedSame }
                        input.append((related, v.json(dateformats: dateformats, containerURL: { _ in "" })))
                    }
                    _ = try portalWrites(portal, fields, allowed: allowed, dateformats: dateformats)
                    let id = try createRecord(table: portal.table, input: input, session: ctx.token, dateformats: dateformats,
                                              now: ctx.now, restrictTo: nil)
                    for _ in fields {
                        info.append(.object([("tableName", .string(childSchema.name)), ("recordId", .string(String(id))),
                                             ("modId", .string("0"))]))
                    }
                }
            }
        }
        return info
    }

    func portalWrites(_ portal: EmulatorSchema.Portal, _ fields: [(String, JSON)], allowed: Set<String>, dateformats: Int) throws -> [Write] {
        guard let child = table(portal.table) else { throw FMError("106") }
        return try resolveWrites(table: child, input: fields, dateformats: dateformats, restrictTo: allowed)
    }

    /// The related-side match field values a new portal row gets from its parent.
    func matchValues(_ portal: EmulatorSchema.Portal, layout: EmulatorSchema.Layout, parentId: Int, session: String?) throws -> [(String, FMValue)] {
        guard let parentTable = table(layout.table), let parent = parentTable.records[parentId] else { throw FMError("101") }
        return portal.match.compactMap { m in
            parentTable.field(m.local).map { (m.related, value(of: $0, table: parentTable.schema.name, record: parent, session: session)) }
        }
    }

    /// Whether record `id` of the portal's table is one of the parent's related records (a row of its portal).
    func isRelated(_ id: Int, through portal: EmulatorSchema.Portal, layout: EmulatorSchema.Layout, parentId: Int, session: String?) -> Bool {
        guard let parentTable = table(layout.table), let parent = parentTable.records[parentId] else { return false }
        return related(portal, of: parent, parentTable: parentTable, session: session).contains { $0.id == id }
    }

    /// Deletes related records named `Portal.recordId` or `Table.recordId`; each must be a row of the
    /// parent's portal (else 101).
    mutating func deleteRelated(_ layout: EmulatorSchema.Layout, parentId: Int, _ targets: [String], session: String?) throws {
        for target in targets {
            guard let dot = target.lastIndex(of: "."), let rid = Int(target[target.index(after: dot)...]) else { throw FMError("1708") }
            let name = String(target[..<dot])
            guard let portal = layout.portals.first(where: {
                $0.name.caseInsensitiveCompare(name) == .orderedSame || $0.table.caseInsensitiveCompare(name) == .orderedSame
            }) else { throw FMError("102") }
            guard isRelated(rid, through: portal, layout: layout, parentId: parentId, session: session) else { throw FMError("101") }
            try deleteRecord(table: portal.table, id: rid)
        }
    }

    /// `options.entrymode` / `options.prohibitmode` of a create or edit body: `"user"` (default) or
    /// `"script"` (case-insensitive); another value or a non-string is 1708, an unknown option key 960.
    func writeMode(_ body: JSON) throws -> WriteMode {
        guard let options = body["options"] else { return .user }
        guard let pairs = options.objectPairs else { throw FMError("1708") }
        let unknown = pairs.map(\.0).filter { $0 != "entrymode" && $0 != "prohibitmode" }
        if !unknown.isEmpty { throw FMError.unknownParameters(unknown.map { "options.\($0)" }) }
        func isScript(_ key: String) throws -> Bool {
            guard let value = options[key] else { return false }
            switch value.stringValue?.lowercased() {
            case "user"?: return false
            case "script"?: return true
            default: throw FMError("1708")
            }
        }
        return WriteMode(skipsValidation: try isScript("entrymode"), allowsProhibited: try isScript("prohibitmode"))
    }

    /// E9: `POST …/records`.
    mutating func createRecord(_ layout: EmulatorSchema.Layout, _ ctx: inout RequestContext) throws -> Reply {
        guard ctx.body["fieldData"] != nil else { throw FMError("958", "Parameter missing (*)") }
        writeMode = try writeMode(ctx.body)
        defer { writeMode = .seed }
        let (fields, deletes) = try splitFieldData(ctx.body)
        guard deletes.isEmpty else { throw FMError("1708") }
        let df = try dateformatsParameter(ctx.body["dateformats"]) ?? 0
        let plan = try scriptPlanFromBody(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, into: &results)
        let snapshot: EmulatorState? = ctx.body["portalData"] != nil ? self : nil
        let id: Int
        let info: [JSON]
        do {
            _ = try prepareWrites(layout, input: fields, dateformats: df)
            id = try createRecord(table: layout.table, input: fields, session: ctx.token, dateformats: df, now: ctx.now,
                                  restrictTo: layoutFieldSet(layout))
            info = try applyPortalData(layout, parentId: id, ctx)
        } catch {
            if let snapshot { self = snapshot }
            throw error
        }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, into: &results)
        var pairs: [(String, JSON)] = [("recordId", .string(String(id))), ("modId", .string("0"))]
        if !info.isEmpty { pairs.append(("newPortalRecordInfo", .array(info))) }
        return Reply(response: .object(pairs + results.pairs))
    }

    /// E12: `PATCH …/records/{recordId}`.
    mutating func editRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        writeMode = try writeMode(ctx.body)
        defer { writeMode = .seed }
        let (fields, deletes) = try splitFieldData(ctx.body)
        let df = try dateformatsParameter(ctx.body["dateformats"]) ?? 0
        let plan = try scriptPlanFromBody(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, into: &results)
        guard let currentModId = table(layout.table)?.records[id]?.modId else { throw FMError("101") }
        if let m = ctx.body["modId"] {
            guard let text = m.scalarText else { throw FMError("1708") }
            guard text == String(currentModId) else { throw FMError("306") }
        }
        let snapshot: EmulatorState? = (ctx.body["portalData"] != nil || !deletes.isEmpty) ? self : nil
        let modId: Int
        let info: [JSON]
        do {
            let writes = try prepareWrites(layout, input: fields, dateformats: df)
            modId = try editRecord(table: layout.table, id: id, writes: writes, session: ctx.token, now: ctx.now,
                                   bump: writes.contains { !$0.field.global })
            try deleteRelated(layout, parentId: id, deletes, session: ctx.token)
            info = try applyPortalData(layout, parentId: id, ctx)
        } catch {
            if let snapshot { self = snapshot }
            throw error
        }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, into: &results)
        var pairs: [(String, JSON)] = []
        if !info.isEmpty { pairs.append(("newPortalRecordInfo", .array(info))) }
        pairs.append(("modId", .string(String(modId))))
        return Reply(response: .object(pairs + results.pairs))
    }

    /// E13: `DELETE …/records/{recordId}` (script keys in the query string).
    mutating func deleteRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        let plan = scriptPlanFromQuery(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, into: &results)
        try deleteRecord(table: layout.table, id: id)
        let count = table(layout.table)?.records.count ?? 0
        runPhase(.presort, of: plan, layout: layout, foundCount: count, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: count, into: &results)
        return Reply(response: .object(results.pairs))
    }

    /// E14: `POST …/records/{recordId}` (duplicate).
    mutating func duplicateRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        let plan = try scriptPlanFromBody(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, into: &results)
        let newId = try duplicateRecord(table: layout.table, id: id, now: ctx.now)
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, into: &results)
        return Reply(response: .object([("recordId", .string(String(newId))), ("modId", .string("0"))] + results.pairs))
    }
}

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

    /// The streaming URL of a stored container, under `origin` (`scheme://host[:port]` the client used).
    func containerURL(_ ref: ContainerRef, origin: String) -> String {
        let ext = ref.fileExtension.isEmpty ? "" : ".\(ref.fileExtension)"
        return "\(origin)/Streaming_SSL/MainDB/\(ref.key)\(ext)?RCType=EmbeddedRCFileProcessor"
    }

    /// The JSON of one record as the Data API returns it (already written: see ``RecordWriter``).
    func recordJSON(_ record: StoredRecord, _ options: OutputOptions, _ ctx: RequestContext) -> JSON {
        var out: [UInt8] = []
        RecordWriter(state: self, options: options, ctx: ctx).write(record, into: &out)
        return .raw(out)
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
        runPhase(.prerequest, of: plan, layout: layout, foundCount: t.records.count, ctx: ctx, into: &results)
        guard let record = table(layout.table)?.records[id] else { throw FMError("101") }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        let total = table(layout.table)?.records.count ?? 0
        // Scripts may have changed (or deleted) the record: answer what it is now.
        let data = JSON.array([recordJSON(table(layout.table)?.records[id] ?? record, options, ctx)])
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
        // A table without records: FileMaker Server answers 101 "Record is missing" (HTTP 500), not 401
        // (python-fmrest#4 and #85; Docs/FILEMAKER-BEHAVIOUR.md). An offset past the end of a non-empty
        // table stays 401: no public report shows otherwise.
        guard !t.order.isEmpty else { throw FMError("101") }
        let ids = t.order
        return try foundSetReply(layout, options: options, plan: plan, offset: max(offset, 1), limit: limit, sorter: sorter,
                                 ctx: ctx) { _ in ids }
    }

    /// Runs the phases of a found-set request: prerequest, action, presort, sort, script, page.
    ///
    /// The scripts and the action run under the state lock (the caller's). Writing the page does not,
    /// and neither does sorting when no script runs after it: both work on a snapshot of the state
    /// (copy-on-write, so taking it is O(1); see ``readSnapshot(session:)``) in the reply's ``Reply/finish``, which the emulator runs
    /// after releasing the lock. (A script after the sort sees the sorted found set, so it is sorted first.)
    ///
    /// With `deferred` (a find), the action runs there too, on a snapshot: however many requests a find holds,
    /// other clients do not wait for it. Before, a 35 KB `_find` of 2,000 requests over 2,000 records held the lock
    /// for over 200 s, and every other request waited. With scripts, the prerequest script runs under the request's
    /// lock and the snapshot is taken after it; the emulator takes the lock again for the presort script, the sort
    /// and the script after it (``Reply/relockingFinish``), on the found set less any record deleted meanwhile (all of
    /// them after a reset).
    mutating func foundSetReply(_ layout: EmulatorSchema.Layout, options: OutputOptions, plan: ScriptPlan, offset: Int, limit: Int,
                                sorter: (([StoredRecord]) -> [StoredRecord])?, ctx: RequestContext, deferred: Bool = false,
                                action: @escaping (EmulatorState) throws -> [Int]) throws -> Reply {
        let request = FoundSetRequest(layout: layout, options: options, plan: plan, offset: offset, limit: limit, sorter: sorter, ctx: ctx)
        if deferred, plan.prerequest == nil, plan.presort == nil, plan.after == nil {
            let snapshot = readSnapshot(session: ctx.token)
            return Reply(response: .object([])) {
                snapshot.findWillMatch?()
                let found = try action(snapshot)
                let records = snapshot.table(layout.table)?.records ?? [:]
                let returned = request.returned(found, records: records)
                guard returned > 0 else { throw FMError("401") }
                let head = [("dataInfo", snapshot.dataInfo(options, total: records.count, found: found.count, returned: returned))]
                return try request.page(snapshot, ids: found, head: head, pendingSorter: sorter)
            }
        }
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, ctx: ctx, into: &results)
        guard deferred else { return try foundSetAfterAction(request, found: try action(self), results: results) }
        let snapshot = readSnapshot(session: ctx.token)
        let prerequest = results
        return Reply(response: .object([]), relockingFinish: { locker in
            snapshot.findWillMatch?()
            let matched = try action(snapshot)
            let reply = try underLock(locker) { s, _ in
                // After a reset, the records matched are all gone, whatever records took their ids.
                let records = s.recordsGeneration == snapshot.recordsGeneration ? s.table(layout.table)?.records ?? [:] : [:]
                return try s.foundSetAfterAction(request, found: matched.filter { records[$0] != nil }, results: prerequest)
            }
            return try reply.finish?() ?? reply.response
        })
    }

    /// The phases of a found-set request after its action found `found` (under the lock): the presort script, the
    /// sort (here when a script runs after it), the script, and the page, written by the reply's ``Reply/finish``
    /// from a snapshot; `results` holds what the prerequest script gave. 401 when the page is empty.
    mutating func foundSetAfterAction(_ request: FoundSetRequest, found matched: [Int], results prerequest: ScriptResults) throws -> Reply {
        let layout = request.layout, plan = request.plan, ctx = request.ctx
        var results = prerequest
        var found = matched
        runPhase(.presort, of: plan, layout: layout, foundCount: found.count, found: found, ctx: ctx, into: &results)
        var pendingSorter = request.sorter
        if let sorter = request.sorter, plan[.after] != nil, let t = table(layout.table) {
            found = sorter(found.compactMap { t.records[$0] }).map(\.id)
            pendingSorter = nil
        } else if pendingSorter != nil, plan[.presort] != nil, let t = table(layout.table) {
            // Sorting drops records a script deleted since the find; the count must be right before the sort.
            found = found.filter { t.records[$0] != nil }
        }
        runPhase(.after, of: plan, layout: layout, foundCount: found.count, found: found, ctx: ctx, into: &results)
        let records = table(layout.table)?.records ?? [:]
        // The sort (if still pending) only reorders ids that are all present, so the page's size is known now.
        let returned = request.returned(found, records: records)
        guard returned > 0 else { throw FMError("401") }
        let total = records.count
        let head = results.pairs + [("dataInfo", dataInfo(request.options, total: total, found: found.count, returned: returned))]
        let snapshot = readSnapshot(session: ctx.token)
        let ids = found
        return Reply(response: .object(head + [("data", .array([]))])) {
            try request.page(snapshot, ids: ids, head: head, pendingSorter: pendingSorter)
        }
    }

    /// The state a deferred page writer reads after the lock is released: tables, schema, graph and the
    /// requesting session (its globals), without the request log, the issued tokens, the other sessions,
    /// blobs and faults. The snapshot shares storage with the live state until either changes; had it
    /// kept the request log, the log append that follows every request (under the lock, while this
    /// snapshot lives) would copy all its entries, so a read would cost more as the log grows (10,000
    /// entries copied per read: 80 % of the emulator's time in a long run). What is left is bounded by
    /// what the read itself touches.
    func readSnapshot(session: String?) -> EmulatorState {
        var s = self
        s.log = RequestLogStore()
        s.issuedTokens = IssuedTokens()
        s.faults = []
        s.blobs = [:]
        s.streamingCookies = RecentSet(capacity: 1)
        s.sessions = session.flatMap { token in sessions[token].map { [token: $0] } } ?? [:]
        return s
    }

    /// The keys of a sort spec `[{"fieldName":…,"sortOrder":…}]`: field, ascending, value list (lower-cased).
    ///
    /// A key that repeats an earlier one on the same field (in either direction; by the same value list) is
    /// dropped: records it could order are equal under the earlier key, so it changes nothing. Each key costs a
    /// value per record and a step per comparison: before, a 400 KB `_find` sorting 2,000 records by one field
    /// 20,000 times took 53 s and 4.7 GB, and 4 MB of such a body would have asked for 47 GB.
    func sortKeys(_ layout: EmulatorSchema.Layout, _ spec: [JSON], table: TableState) throws -> [(EmulatorSchema.Field, Bool, [String]?)] {
        var keys: [(EmulatorSchema.Field, Bool, [String]?)] = []
        var seen = Set<String>()
        func add(_ key: (EmulatorSchema.Field, Bool, [String]?), _ identity: String) {
            if seen.insert(identity).inserted { keys.append(key) }
        }
        for item in spec {
            guard let name = item["fieldName"]?.scalarText else { throw FMError("1708") }
            var fieldName = name
            if let r = name.range(of: "::"), name[..<r.lowerBound].caseInsensitiveCompare(table.schema.name) == .orderedSame {
                fieldName = String(name[r.upperBound...])
            }
            guard let field = table.field(fieldName) else { throw FMError("102") }
            let order = item["sortOrder"]?.scalarText ?? "ascend"
            let identity = field.name
            switch order.lowercased() {
            case "ascend", "": add((field, true, nil), identity)
            case "descend": add((field, false, nil), identity)
            default:
                guard let vl = layout.valueLists.first(where: { $0.name.caseInsensitiveCompare(order) == .orderedSame }) else {
                    throw FMError("1708")
                }
                add((field, true, vl.values.map { $0.lowercased() }), identity + "\n" + vl.name.lowercased())
            }
        }
        return keys
    }

    /// Builds a stable multi-field sort from `[{"fieldName":…,"sortOrder":…}]` (``sortKeys(_:_:table:)``).
    func makeSorter(_ layout: EmulatorSchema.Layout, _ spec: [JSON]) throws -> (([StoredRecord]) -> [StoredRecord])? {
        guard !spec.isEmpty, let table = table(layout.table) else { return nil }
        let keys = try sortKeys(layout, spec, table: table)
        return { records in
            // Decorate once (sort keys and value-list positions per record), then sort indices: the
            // comparator neither looks values up nor folds text on every comparison.
            let columns: [(keys: SortKeys, listIndex: [Int]?, ascending: Bool)] = keys.map { field, ascending, valueList in
                let values = records.map { $0.value(field) }
                let listIndex = valueList.map { list in values.map { list.firstIndex(of: $0.text.lowercased()) ?? Int.max } }
                return (SortKeys(values), listIndex, ascending)
            }
            let order = records.indices.sorted { a, b in
                for column in columns {
                    var result: ComparisonResult
                    if let listIndex = column.listIndex {
                        let ia = listIndex[a], ib = listIndex[b]
                        result = ia < ib ? .orderedAscending : (ia > ib ? .orderedDescending : column.keys.compare(a, b))
                    } else {
                        result = column.keys.compare(a, b)
                    }
                    if result == .orderedSame { continue }
                    return column.ascending ? result == .orderedAscending : result == .orderedDescending
                }
                return a < b
            }
            return order.map { records[$0] }
        }
    }

    // MARK: Writing

    /// A `TO::field` entry of a layout's fields (another occurrence), resolved through a portal's match
    /// fields or the relationships; `nil` when `name` is not such an entry.
    func relatedLayoutField(_ layout: EmulatorSchema.Layout, _ name: String) -> RelatedField? {
        guard name.contains("::"), layout.fields.contains(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { return nil }
        return relatedField(name, from: layout.table, layout: layout)
    }

    /// One column of a portal row: a field of the portal's occurrence, or a field further away (`through`).
    struct PortalColumn {
        var key: String
        var field: EmulatorSchema.Field
        var through: RelatedField?
    }

    /// The columns of a portal, in order; names that do not resolve are left out.
    func portalColumns(_ portal: EmulatorSchema.Portal, path: RelPath) -> [PortalColumn] {
        guard let rt = table(path.table) else { return [] }
        return portal.fields.compactMap { name in
            if let far = relatedField(name, from: portal.table, layout: nil) {
                return PortalColumn(key: far.key, field: far.field, through: far)
            }
            return rt.field(EmulatorState.bareField(name)).map { PortalColumn(key: "\(path.occurrence)::\($0.name)", field: $0, through: nil) }
        }
    }

    /// A write to a field shown through a relationship.
    struct RelatedWrite {
        var field: RelatedField
        var repetition: Int
        var value: JSON
    }

    /// Resolves `fieldData` for a layout without keeping a copy of its table alive (see copy-on-write).
    /// Related fields on the layout (`TO::field`) are returned apart, checked, to be written after the record.
    func prepareWrites(_ layout: EmulatorSchema.Layout, input: [(String, JSON)], dateformats: Int) throws -> ([Write], [RelatedWrite]) {
        var local: [(String, JSON)] = []
        var related: [RelatedWrite] = []
        for (key, value) in input {
            let (base, rep) = splitRepetition(key)
            if let rf = relatedLayoutField(layout, base) {
                guard rep >= 1 else { throw FMError("102") }
                guard rep <= rf.field.repetitions else { throw FMError("111") }
                if value.isNull { throw FMError("1708") }
                guard let text = value.scalarText else { throw FMError("1708") }
                _ = try FMValue.parseOrThrow(text, field: rf.field, dateformats: dateformats)
                related.append(RelatedWrite(field: rf, repetition: rep, value: value))
            } else {
                local.append((key, value))
            }
        }
        guard let t = table(layout.table) else { throw FMError("106") }
        return (try resolveWrites(table: t, input: local, dateformats: dateformats, restrictTo: layoutFieldSet(layout)), related)
    }

    /// Writes related layout fields of record `id`: each edits the first related record (FileMaker's rule).
    mutating func applyRelatedWrites(_ layout: EmulatorSchema.Layout, id: Int, _ writes: [RelatedWrite], dateformats: Int,
                                     session: String?, now: Date) throws {
        for w in writes {
            guard let t = table(layout.table), let record = t.records[id] else { throw FMError("101") }
            try writeRelated(w.field, repetition: w.repetition, json: w.value, from: record, table: t.schema.name,
                             session: session, now: now, dateformats: dateformats)
        }
    }

    func layoutFieldSet(_ layout: EmulatorSchema.Layout) -> Set<String> {
        var names = Set<String>()
        for f in layout.fields {
            let lower = f.name.lowercased()
            names.insert(lower)
            // `OwnTO::field` on a layout is the layout's own field.
            if let r = lower.range(of: "::"), lower[..<r.lowerBound] == layout.table.lowercased() { names.insert(String(lower[r.upperBound...])) }
        }
        return names
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

    /// The older way to edit a portal row from `fieldData`: `"TO::field.<recordId>"` (or
    /// `"TO::field(rep).<recordId>"`) writes `field` of the related record `recordId` shown in the portal
    /// on occurrence `TO` (Claris, FileMaker Data API Guide, "URL and data format notes": the
    /// `tablename::related-field(repetition).recordId` syntax is still supported beside `portalData`).
    /// Such keys are moved into `portalData` rows with that `recordId`, which check that the record is
    /// one of the portal's rows; the other pairs are returned. A key that names a field as it stands is
    /// left alone.
    func movingPortalRowWrites(_ layout: EmulatorSchema.Layout, _ fields: [(String, JSON)], into ctx: inout RequestContext) -> [(String, JSON)] {
        var kept: [(String, JSON)] = []
        var rows: [(portal: String, row: JSON)] = []
        for (key, value) in fields {
            guard let sep = key.range(of: "::"), let dot = key.lastIndex(of: "."), dot > sep.upperBound,
                  case let rid = key[key.index(after: dot)...], !rid.isEmpty, rid.allSatisfy(\.isASCIIDigit),
                  relatedLayoutField(layout, splitRepetition(key).0) == nil else {
                kept.append((key, value))
                continue
            }
            let occurrence = String(key[..<sep.lowerBound])
            rows.append((occurrence, .object([("recordId", .string(String(rid))), (String(key[..<dot]), value)])))
        }
        // A malformed `portalData` stays as sent, for its own 1708.
        guard !rows.isEmpty, ctx.body["portalData"].map({ $0.objectPairs != nil }) ?? true else { return fields }
        var portalData = ctx.body["portalData"]?.objectPairs ?? []
        portalData += rows.map { ($0.portal, JSON.array([$0.row])) }
        var body = ctx.body.objectPairs ?? []
        body.removeAll { $0.0 == "portalData" }
        body.append(("portalData", .object(portalData)))
        ctx.body = .object(body)
        return kept
    }

    /// Applies `portalData` of a create/edit body; returns the `newPortalRecordInfo` entries.
    ///
    /// Decision (WIRE.md §17): one entry **per field written** in each new portal row, in
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
            guard let path = portalPath(portal, layout: layout), let childSchema = table(path.table)?.schema else { throw FMError("106") }
            let columns = portalColumns(portal, path: path)
            let allowed = Set(columns.filter { $0.through == nil }.map { $0.field.name.lowercased() })
            for row in rows {
                guard let rowPairs = row.objectPairs else { throw FMError("1708") }
                var recordIdText: String?
                var modIdText: String?
                var fields: [(String, JSON)] = []
                var far: [RelatedWrite] = []
                // The table occurrence of each field written, in request order (for newPortalRecordInfo).
                var written: [String] = []
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
                        if prefix.caseInsensitiveCompare(path.occurrence) != .orderedSame, prefix.caseInsensitiveCompare(portal.name) != .orderedSame {
                            // A field further away, shown in the portal through the portal occurrence's relationships.
                            let (base, rep) = splitRepetition(k)
                            guard let column = columns.first(where: { $0.through != nil && $0.key.caseInsensitiveCompare(base) == .orderedSame }),
                                  let rf = column.through else { throw FMError("102") }
                            guard rep >= 1 else { throw FMError("102") }
                            guard rep <= rf.field.repetitions else { throw FMError("111") }
                            far.append(RelatedWrite(field: rf, repetition: rep, value: v))
                            written.append(rf.path.occurrence)
                            continue
                        }
                        name = String(k[r.upperBound...])
                    }
                    fields.append((name, v))
                    written.append(path.occurrence)
                }
                let rowId: Int
                if let ridText = recordIdText {
                    guard let rid = Int(ridText), let existing = table(path.table)?.records[rid],
                          isRelated(rid, through: portal, layout: layout, parentId: parentId, session: ctx.token) else { throw FMError("101") }
                    if let m = modIdText, m != String(existing.modId) { throw FMError("306") }
                    let writes = try portalWrites(path, fields, allowed: allowed, dateformats: dateformats)
                    _ = try editRecord(table: path.table, id: rid, writes: writes, session: ctx.token, now: ctx.now, bump: !writes.isEmpty)
                    rowId = rid
                } else {
                    // A new row: the relationship must allow creation; its `=` match fields come from the parent.
                    guard path.hops.count == 1, let hop = path.hops.first, hop.allowCreation else { throw FMError("101") }
                    guard let parentTable = table(layout.table), let parent = parentTable.records[parentId] else { throw FMError("101") }
                    var input = fields
                    for (related, v) in creationValues(hop, parent: parent, parentTable: parentTable.schema.name, session: ctx.token) {
                        input.removeAll { $0.0.caseInsensitiveCompare(related) == .orderedSame }
                        input.append((related, v.json(dateformats: dateformats, containerURL: { _ in "" })))
                    }
                    _ = try portalWrites(path, fields, allowed: allowed, dateformats: dateformats)
                    rowId = try createRecord(table: path.table, input: input, session: ctx.token, dateformats: dateformats,
                                             now: ctx.now, restrictTo: nil)
                    for occurrence in written {
                        info.append(.object([("tableName", .string(occurrence)), ("recordId", .string(String(rowId))),
                                             ("modId", .string("0"))]))
                    }
                }
                for w in far {
                    guard let rowRecord = table(path.table)?.records[rowId] else { throw FMError("101") }
                    try writeRelated(w.field, repetition: w.repetition, json: w.value, from: rowRecord, table: childSchema.name,
                                     session: ctx.token, now: ctx.now, dateformats: dateformats)
                }
            }
        }
        return info
    }

    func portalWrites(_ path: RelPath, _ fields: [(String, JSON)], allowed: Set<String>, dateformats: Int) throws -> [Write] {
        guard let child = table(path.table) else { throw FMError("106") }
        return try resolveWrites(table: child, input: fields, dateformats: dateformats, restrictTo: allowed)
    }

    /// Whether record `id` of the portal's table is one of the parent's related records (a row of its portal).
    func isRelated(_ id: Int, through portal: EmulatorSchema.Portal, layout: EmulatorSchema.Layout, parentId: Int, session: String?) -> Bool {
        guard let parentTable = table(layout.table), let parent = parentTable.records[parentId],
              let path = portalPath(portal, layout: layout) else { return false }
        return follow(path, from: parent, table: parentTable.schema.name, session: session).contains { $0.id == id }
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
            guard let path = portalPath(portal, layout: layout) else { throw FMError("106") }
            try deleteCascading(occurrence: path.occurrence, id: rid, session: session)
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
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, ctx: ctx, into: &results)
        let snapshot: EmulatorState? = (ctx.body["portalData"] != nil || fields.contains { $0.0.contains("::") }) ? self : nil
        let id: Int
        let info: [JSON]
        do {
            let (_, relatedWrites) = try prepareWrites(layout, input: fields, dateformats: df)
            let local = relatedWrites.isEmpty ? fields : fields.filter { relatedLayoutField(layout, splitRepetition($0.0).0) == nil }
            id = try createRecord(table: layout.table, input: local, session: ctx.token, dateformats: df, now: ctx.now,
                                  restrictTo: layoutFieldSet(layout))
            try applyRelatedWrites(layout, id: id, relatedWrites, dateformats: df, session: ctx.token, now: ctx.now)
            info = try applyPortalData(layout, parentId: id, ctx)
        } catch {
            if let snapshot { self = snapshot }
            throw error
        }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        var pairs: [(String, JSON)] = [("recordId", .string(String(id))), ("modId", .string("0"))]
        if !info.isEmpty { pairs.append(("newPortalRecordInfo", .array(info))) }
        return Reply(response: .object(pairs + results.pairs))
    }

    /// E12: `PATCH …/records/{recordId}`.
    mutating func editRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        writeMode = try writeMode(ctx.body)
        defer { writeMode = .seed }
        let (allFields, deletes) = try splitFieldData(ctx.body)
        let fields = movingPortalRowWrites(layout, allFields, into: &ctx)
        let df = try dateformatsParameter(ctx.body["dateformats"]) ?? 0
        let plan = try scriptPlanFromBody(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, ctx: ctx, into: &results)
        guard let currentModId = table(layout.table)?.records[id]?.modId else { throw FMError("101") }
        if let m = ctx.body["modId"] {
            guard let text = m.scalarText else { throw FMError("1708") }
            guard text == String(currentModId) else { throw FMError("306") }
        }
        let snapshot: EmulatorState? = (ctx.body["portalData"] != nil || !deletes.isEmpty || fields.contains { $0.0.contains("::") }) ? self : nil
        var modId: Int
        let info: [JSON]
        do {
            let (writes, relatedWrites) = try prepareWrites(layout, input: fields, dateformats: df)
            modId = try editRecord(table: layout.table, id: id, writes: writes, session: ctx.token, now: ctx.now,
                                   bump: writes.contains { !$0.field.global })
            try applyRelatedWrites(layout, id: id, relatedWrites, dateformats: df, session: ctx.token, now: ctx.now)
            try deleteRelated(layout, parentId: id, deletes, session: ctx.token)
            info = try applyPortalData(layout, parentId: id, ctx)
        } catch {
            if let snapshot { self = snapshot }
            throw error
        }
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, found: [id], ctx: ctx, into: &results)
        var pairs: [(String, JSON)] = []
        if !info.isEmpty { pairs.append(("newPortalRecordInfo", .array(info))) }
        pairs.append(("modId", .string(String(modId))))
        return Reply(response: .object(pairs + results.pairs))
    }

    /// E13: `DELETE …/records/{recordId}` (script keys in the query string).
    mutating func deleteRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        let plan = scriptPlanFromQuery(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, ctx: ctx, into: &results)
        try deleteCascading(occurrence: layout.table, id: id, session: ctx.token)
        let count = table(layout.table)?.records.count ?? 0
        runPhase(.presort, of: plan, layout: layout, foundCount: count, ctx: ctx, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: count, ctx: ctx, into: &results)
        return Reply(response: .object(results.pairs))
    }

    /// E14: `POST …/records/{recordId}` (duplicate).
    mutating func duplicateRecord(_ layout: EmulatorSchema.Layout, id: Int, _ ctx: inout RequestContext) throws -> Reply {
        let plan = try scriptPlanFromBody(ctx)
        var results = ScriptResults()
        runPhase(.prerequest, of: plan, layout: layout, foundCount: table(layout.table)?.records.count ?? 0, ctx: ctx, into: &results)
        let newId = try duplicateRecord(table: layout.table, id: id, now: ctx.now)
        runPhase(.presort, of: plan, layout: layout, foundCount: 1, found: [newId], ctx: ctx, into: &results)
        runPhase(.after, of: plan, layout: layout, foundCount: 1, found: [newId], ctx: ctx, into: &results)
        return Reply(response: .object([("recordId", .string(String(newId))), ("modId", .string("0"))] + results.pairs))
    }
}

/// A found-set request (``EmulatorState/foundSetReply(_:options:plan:offset:limit:sorter:ctx:deferred:action:)``): its
/// layout, output options and scripts, the page it asks for (`offset` from 1, `limit`) and its sort.
struct FoundSetRequest {
    let layout: EmulatorSchema.Layout
    let options: OutputOptions
    let plan: ScriptPlan
    let offset: Int, limit: Int
    let sorter: (([StoredRecord]) -> [StoredRecord])?
    let ctx: RequestContext

    /// How many records of `found` the page holds (ids without a record are skipped).
    func returned(_ found: [Int], records: [Int: StoredRecord]) -> Int {
        found.dropFirst(offset - 1).prefix(limit).reduce(0) { $0 + (records[$1] == nil ? 0 : 1) }
    }

    /// The page of `ids` (sorted by `pendingSorter` first, when given), written from `snapshot` after `head`.
    func page(_ snapshot: EmulatorState, ids: [Int], head: [(String, JSON)], pendingSorter: (([StoredRecord]) -> [StoredRecord])?) throws -> JSON {
        let records = snapshot.table(layout.table)?.records ?? [:]
        var sorted = ids
        if let pendingSorter {
            sorted = pendingSorter(ids.compactMap { records[$0] }).map(\.id)
        }
        let page = sorted.dropFirst(offset - 1).prefix(limit).compactMap { records[$0] }
        let data = try RecordWriter(state: snapshot, options: options, ctx: ctx).writeArray(page, limit: snapshot.maxAnswerBytes)
        return .object(head + [("data", .raw(data))])
    }
}

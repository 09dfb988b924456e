import Foundation

extension EmulatorState {
    /// One criterion of a find request, resolved to a field of the layout's table or of a portal's table.
    struct Criterion {
        var field: EmulatorSchema.Field
        /// The relationship path to the field's occurrence (`nil`: the layout's own table).
        var path: RelPath?
        var text: String
    }

    /// E15: `POST …/layouts/{layout}/_find`.
    mutating func find(_ layout: EmulatorSchema.Layout, _ ctx: inout RequestContext) throws -> Reply {
        guard let queryJSON = ctx.body["query"] else { throw FMError("958") }
        guard let requests = queryJSON.arrayValue else { throw FMError("1708") }
        guard let table = table(layout.table) else { throw FMError("106") }
        var parsed: [(omit: Bool, criteria: [Criterion])] = []
        for request in requests {
            guard let pairs = request.objectPairs else { throw FMError("1708") }
            var omit = false
            var criteria: [Criterion] = []
            for (key, value) in pairs {
                if key.caseInsensitiveCompare("omit") == .orderedSame {
                    guard let flag = value.scalarText else { throw FMError("1708") }
                    omit = ["true", "1"].contains(flag.lowercased())
                    continue
                }
                if value.isNull { throw FMError("1708") }
                guard let text = value.scalarText else { throw FMError("1708") }
                criteria.append(try resolveCriterion(key, text: text, layout: layout, table: table))
            }
            // A global field is not a find criterion ("You can't use a global field to find records":
            // Claris FileMaker Pro Help, "Defining global fields"): its criterion is dropped, so a request
            // on global fields alone is an empty one (400 "Find criteria are empty").
            parsed.append((omit, criteria.filter { !$0.field.global && !$0.text.trimmingCharacters(in: .whitespaces).isEmpty }))
        }
        guard parsed.contains(where: { !$0.criteria.isEmpty }) else { throw FMError("400") }

        let options = try outputOptions(layout, ctx, fromBody: true)
        let offset = try intParameter(ctx.body["offset"]) ?? 1
        let limit = try intParameter(ctx.body["limit"]) ?? 100
        guard offset >= 0, limit >= 1 else { throw FMError("1708") }
        var sortSpec: [JSON] = []
        if let sort = ctx.body["sort"] {
            guard let a = sort.arrayValue else { throw FMError("1708") }
            sortSpec = a
        }
        let sorter = try makeSorter(layout, sortSpec)
        let plan = try scriptPlanFromBody(ctx)
        let engine = FindEngine(today: FMDate(ctx.now), dateformats: try dateformatsParameter(ctx.body["dateformats"]) ?? 0)
        let token = ctx.token
        return try foundSetReply(layout, options: options, plan: plan, offset: max(offset, 1), limit: limit, sorter: sorter, ctx: ctx,
                                 deferred: true) { state in
            guard let table = state.table(layout.table) else { return [] }
            let all = table.orderedRecords
            var found = Set<Int>()
            for (index, request) in parsed.enumerated() where !request.criteria.isEmpty {
                if index == 0, request.omit { found = Set(all.map(\.id)) }
                let hits = all.filter { state.record($0, in: table, matches: request.criteria, engine: engine, session: token) }.map(\.id)
                if request.omit { found.subtract(hits) } else { found.formUnion(hits) }
            }
            return table.order.filter { found.contains($0) }
        }
    }

    func resolveCriterion(_ key: String, text: String, layout: EmulatorSchema.Layout, table: TableState) throws -> Criterion {
        let (base, _) = splitRepetition(key)
        if let r = base.range(of: "::") {
            let prefix = String(base[..<r.lowerBound]), name = String(base[r.upperBound...])
            if prefix.caseInsensitiveCompare(table.schema.name) == .orderedSame {
                return try resolveCriterion(name, text: text, layout: layout, table: table)
            }
            if let rf = relatedLayoutField(layout, base) {
                return Criterion(field: rf.field, path: rf.path, text: text)
            }
            for portal in layout.portals {
                guard let path = portalPath(portal, layout: layout) else { continue }
                let columns = portalColumns(portal, path: path)
                if prefix.caseInsensitiveCompare(path.occurrence) == .orderedSame || prefix.caseInsensitiveCompare(portal.name) == .orderedSame,
                   let column = columns.first(where: { $0.through == nil && $0.field.name.caseInsensitiveCompare(name) == .orderedSame }) {
                    return Criterion(field: column.field, path: path, text: text)
                }
                if let column = columns.first(where: { $0.through != nil && $0.key.caseInsensitiveCompare(base) == .orderedSame }),
                   let far = column.through {
                    return Criterion(field: far.field, path: RelPath(hops: path.hops + far.path.hops), text: text)
                }
            }
            throw FMError("102")
        }
        guard layout.fields.contains(where: { $0.name.caseInsensitiveCompare(base) == .orderedSame }),
              let field = table.field(base) else { throw FMError("102") }
        return Criterion(field: field, path: nil, text: text)
    }

    /// Whether a record satisfies every criterion of one find request.
    func record(_ record: StoredRecord, in table: TableState, matches criteria: [Criterion], engine: FindEngine, session: String?) -> Bool {
        criteria.allSatisfy { c in
            if let path = c.path {
                guard let child = self.table(path.table) else { return false }
                return follow(path, from: record, table: table.schema.name, session: session).contains { row in
                    fieldMatches(c, row, table: child, engine: engine, session: session)
                }
            }
            return fieldMatches(c, record, table: table, engine: engine, session: session)
        }
    }

    private func fieldMatches(_ c: Criterion, _ record: StoredRecord, table: TableState, engine: FindEngine, session: String?) -> Bool {
        (1...c.field.repetitions).contains { rep in
            let v = value(of: c.field, table: table.schema.name, record: record, repetition: rep, session: session)
            return engine.matches(c.text, v, type: c.field.type) {
                engine.duplicateCount(of: v.text.lowercased(), table: table, field: c.field, repetition: rep) > 1
            }
        }
    }
}

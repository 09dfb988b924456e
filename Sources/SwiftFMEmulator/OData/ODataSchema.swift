import Foundation

/// Schema changes through OData (`FileMaker_Tables`, `FileMaker_Indexes`; ODATA.md §8).
extension EmulatorState {
    /// Freezes every entity set's `FMTID` and every field's number, so that ids survive tables and fields
    /// coming and going (FileMaker's ids are immutable).
    mutating func freezeODataIDs() {
        for set in odataSets() {
            odataTableIDs[set.name.lowercased()] = set.tableID
            var numbers = odataFieldNumbers[set.table.lowercased()] ?? [:]
            for (i, f) in set.fields.enumerated() where numbers[f.name.lowercased()] == nil { numbers[f.name.lowercased()] = i + 1 }
            odataFieldNumbers[set.table.lowercased()] = numbers
        }
    }

    /// A field definition of `FileMaker_Tables` (`{"name","type","primary","unique","nullable","default","global",…}`).
    static func odataField(_ json: JSON) throws -> EmulatorSchema.Field {
        guard let name = json["name"]?.stringValue, !trimSpaces(name).isEmpty else { throw ODataError(400, "-1002", "Error: a field needs a name") }
        guard let typeText = json["type"]?.stringValue else { throw ODataError(400, "-1002", "Error: field '\(name)' needs a type") }
        var base = trimSpaces(typeText).uppercased()
        var repetitions = 1
        if base.hasSuffix("]"), let open = base.lastIndex(of: "[") {
            guard let n = Int(base[base.index(after: open)..<base.index(before: base.endIndex)]), (1...32000).contains(n) else {
                throw ODataError(400, "-1002", "Error: bad repetitions in type '\(typeText)'")
            }
            repetitions = n
            base = String(base[..<open])
        }
        var maxCharacters = 0
        if base.hasSuffix(")"), let open = base.firstIndex(of: "(") {
            let inner = base[base.index(after: open)..<base.index(before: base.endIndex)]
            guard let n = Int(inner.split(separator: ",").first.map { trimSpaces(String($0)) } ?? ""), n > 0 else {
                throw ODataError(400, "-1002", "Error: bad length in type '\(typeText)'")
            }
            base = trimSpaces(String(base[..<open]))
            if base.hasPrefix("VARCHAR") || base.hasPrefix("CHARACTER") { maxCharacters = n }
        }
        let type: EmulatorSchema.FieldType
        switch base {
        case "NUMERIC", "DECIMAL", "INT", "INTEGER": type = .number
        case "DATE": type = .date
        case "TIME": type = .time
        case "TIMESTAMP": type = .timestamp
        case "VARCHAR", "CHARACTER VARYING", "CHAR VARYING", "TEXT": type = .text
        case "BLOB", "VARBINARY", "LONGVARBINARY", "BINARY VARYING": type = .container
        default: throw ODataError(400, "-1002", "Error: unsupported field type '\(typeText)'")
        }
        let primary = json["primary"]?.boolValue ?? false
        var autoEnter: EmulatorSchema.AutoEnter?
        if let d = json["default"]?.scalarText {
            switch d.uppercased() {
            case "CURRENT_TIMESTAMP", "CURTIMESTAMP": autoEnter = .creationTimestamp
            case "CURRENT_DATE", "CURDATE": autoEnter = .creationDate
            case "USER", "USERNAME", "CURRENT_USER", "CURRENT_TIME", "CURTIME": autoEnter = nil
            default: autoEnter = .value(d)
            }
        }
        return EmulatorSchema.Field(name, type, autoEnter: autoEnter,
                                    notEmpty: primary || json["nullable"]?.boolValue == false,
                                    unique: primary || (json["unique"]?.boolValue ?? false),
                                    maxCharacters: type == .text ? maxCharacters : 0, repetitions: repetitions,
                                    global: json["global"]?.boolValue ?? false)
    }

    static func odataFieldJSON(_ f: EmulatorSchema.Field) -> JSON {
        let types: [EmulatorSchema.FieldType: String] = [.text: "varchar", .number: "numeric", .date: "date", .time: "time",
                                                         .timestamp: "timestamp", .container: "blob"]
        var pairs: [(String, JSON)] = [("name", .string(f.name)), ("type", .string((types[f.type] ?? "varchar") + (f.repetitions > 1 ? "[\(f.repetitions)]" : "")))]
        if f.notEmpty && f.unique { pairs.append(("primary", .bool(true))) } else {
            if f.unique { pairs.append(("unique", .bool(true))) }
            if f.notEmpty { pairs.append(("nullable", .bool(false))) }
        }
        if f.global { pairs.append(("global", .bool(true))) }
        return .object(pairs)
    }

    /// Installs `table` (new or changed), keeping the records of a changed one.
    mutating func installTable(_ table: EmulatorSchema.Table) {
        let key = table.name.lowercased()
        var state = TableState(schema: table)
        if let old = tables[key] {
            let kept = Set(table.fields.map { $0.name.lowercased() })
            for id in old.order {
                guard var record = old.records[id] else { continue }
                record.values = record.values.filter { kept.contains($0.key) }
                state.records[id] = record
            }
            state.order = old.order
            state.nextId = old.nextId
            state.serials = old.serials.filter { kept.contains($0.key) }
        }
        tables[key] = state
        if let i = schema.tables.firstIndex(where: { $0.name.lowercased() == key }) { schema.tables[i] = table } else { schema.tables.append(table) }
        graph = RelationGraph(schema)
    }

    /// Where a table or field is still used (layouts, occurrences, relationships): FileMaker keeps those.
    func schemaUses(table: String, field: String?) -> String? {
        let occurrences = schema.allOccurrences.filter { $0.table.caseInsensitiveCompare(table) == .orderedSame }.map { $0.name.lowercased() }
        for layout in schema.layouts where occurrences.contains(layout.table.lowercased()) {
            if field == nil || layout.fields.contains(where: { EmulatorState.bareField($0.name).caseInsensitiveCompare(field ?? "") == .orderedSame }) {
                return "layout '\(layout.name)'"
            }
        }
        for r in schema.relationships {
            for (side, occ) in [(true, r.left), (false, r.right)] where occurrences.contains(occ.lowercased()) {
                if field == nil || r.match.contains(where: { (side ? $0.left : $0.right).caseInsensitiveCompare(field ?? "") == .orderedSame }) {
                    return "a relationship of '\(occ)'"
                }
            }
        }
        if field == nil, schema.occurrences.contains(where: { $0.table.caseInsensitiveCompare(table) == .orderedSame && $0.name.caseInsensitiveCompare(table) != .orderedSame }) {
            return "a table occurrence"
        }
        return nil
    }

    /// `/{db}/FileMaker_Tables[/{table}[/{field}]]` and `/{db}/FileMaker_Indexes/{table}[/{field}]`.
    mutating func odataSchemaRoute(_ rest: [String], method: String, _ ctx: ODataContext) throws -> HTTPResponse {
        let kind = rest[0]
        if kind.contains("(") { throw ODataError(400, "-1010", "The entity name must be specified in the URL") }
        let isTables = kind.caseInsensitiveCompare("FileMaker_Tables") == .orderedSame
        let tableName = rest.count > 1 ? rest[1] : nil
        let fieldName = rest.count > 2 ? rest[2] : nil
        guard rest.count <= 3 else { throw ODataError.syntax(rest[3]) }
        func baseTable(_ name: String) throws -> TableState {
            if let set = odataSet(name), let t = table(set.table) { return t }
            throw ODataError(404, "-1020", "Table '\(name)' not defined in database")
        }
        func ok(_ json: JSON) -> HTTPResponse { EmulatorState.odataJSON(200, json) }
        switch (isTables, method, tableName, fieldName) {
        case (true, "GET", nil, nil):
            let rows = odataSets().map { set -> JSON in
                .object([("TableName", .string(set.name)), ("TableId", .number(Double(set.tableID))), ("BaseTableName", .string(set.table)),
                         ("BaseFileName", .string(schema.database + ".fmp12")), ("ModCount", .number(Double(odataModCounts[set.table.lowercased()] ?? 0)))])
            }
            return ok(.object([(ctx.annotation("context"), .string(ctx.base + "/$metadata#FileMaker_Tables")), ("value", .array(rows))]))
        case (true, "POST", nil, nil):
            let body = try odataBody(ctx)
            guard let name = body["tableName"]?.stringValue, !trimSpaces(name).isEmpty else {
                throw ODataError(400, "-1002", "Error: 'tableName' is required")
            }
            guard odataSet(name) == nil, table(name) == nil else { throw ODataError(400, "-1002", "Error: table '\(name)' already exists") }
            let fields = try (body["fields"]?.arrayValue ?? []).map(EmulatorState.odataField)
            guard !fields.isEmpty else { throw ODataError(400, "-1002", "Error: a table needs at least one field") }
            var seen = Set<String>()
            for f in fields where !seen.insert(f.name.lowercased()).inserted { throw ODataError(400, "-1002", "Error: field '\(f.name)' appears twice") }
            freezeODataIDs()
            installTable(EmulatorSchema.Table(name, fields: fields))
            let nextID = (odataTableIDs.values.max() ?? 1_065_089) + 1
            odataTableIDs[name.lowercased()] = nextID
            return ok(.object([("tableName", .string(name)), ("fields", .array(fields.map(EmulatorState.odataFieldJSON)))]))
        case (true, "PATCH", let name?, nil), (true, "PUT", let name?, nil):
            let t = try baseTable(name)
            let body = try odataBody(ctx)
            let added = try (body["fields"]?.arrayValue ?? []).map(EmulatorState.odataField)
            guard !added.isEmpty else { throw ODataError(400, "-1002", "Error: 'fields' is required") }
            var seen = Set(t.schema.fields.map { $0.name.lowercased() })
            for f in added where !seen.insert(f.name.lowercased()).inserted { throw ODataError(400, "-1002", "Error: field '\(f.name)' already exists") }
            freezeODataIDs()
            var numbers = odataFieldNumbers[t.schema.name.lowercased()] ?? [:]
            for f in added { numbers[f.name.lowercased()] = (numbers.values.max() ?? 0) + 1 }
            odataFieldNumbers[t.schema.name.lowercased()] = numbers
            installTable(EmulatorSchema.Table(t.schema.name, fields: t.schema.fields + added))
            odataModCounts[t.schema.name.lowercased(), default: 0] += 1
            return ok(.object([("tableName", .string(name)), ("fields", .array(added.map(EmulatorState.odataFieldJSON)))]))
        case (true, "DELETE", let name?, nil):
            let t = try baseTable(name)
            if let use = schemaUses(table: t.schema.name, field: nil) { throw ODataError(400, "303", "Table '\(name)' is in use by \(use)") }
            freezeODataIDs()
            let key = t.schema.name.lowercased()
            tables[key] = nil
            schema.tables.removeAll { $0.name.lowercased() == key }
            schema.records[t.schema.name] = nil
            graph = RelationGraph(schema)
            odataWebhooks = odataWebhooks.filter { $0.value.tableName.caseInsensitiveCompare(name) != .orderedSame }
            return HTTPResponse(status: 204, headers: [("OData-Version", "4.0")])
        case (true, "DELETE", let name?, let field?):
            let t = try baseTable(name)
            guard let f = odataSet(name)?.field(field) else { throw ODataError.noField(field) }
            guard t.schema.fields.count > 1 else { throw ODataError(400, "-1002", "Error: a table keeps at least one field") }
            if let use = schemaUses(table: t.schema.name, field: f.name) { throw ODataError(400, "303", "Field '\(f.name)' is in use by \(use)") }
            freezeODataIDs()
            installTable(EmulatorSchema.Table(t.schema.name, fields: t.schema.fields.filter { $0.name != f.name }))
            odataIndexes.remove(t.schema.name.lowercased() + "::" + f.name.lowercased())
            odataModCounts[t.schema.name.lowercased(), default: 0] += 1
            return HTTPResponse(status: 204, headers: [("OData-Version", "4.0")])
        case (false, "POST", let name?, nil):
            let t = try baseTable(name)
            let body = try odataBody(ctx)
            if body["tableName"] != nil { throw ODataError(400, "-1003", "Unsupported OData operation") }
            guard let index = body["indexName"]?.stringValue, let f = odataSet(name)?.field(index) else {
                throw ODataError.noField(body["indexName"]?.stringValue ?? "")
            }
            odataIndexes.insert(t.schema.name.lowercased() + "::" + f.name.lowercased())
            return ok(.object([("indexName", .string(f.name))]))
        case (false, "DELETE", let name?, let field?):
            let t = try baseTable(name)
            guard let f = odataSet(name)?.field(field) else { throw ODataError.noField(field) }
            odataIndexes.remove(t.schema.name.lowercased() + "::" + f.name.lowercased())
            return HTTPResponse(status: 204, headers: [("OData-Version", "4.0")])
        default:
            throw ODataError(400, "-1003", "Unsupported OData operation")
        }
    }
}

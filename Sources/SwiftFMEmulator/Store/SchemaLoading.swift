import Foundation

// Loading a schema file: JSON text → ``EmulatorSchema``, every key checked against ``SchemaKeys`` (a
// misspelt key is an error naming it, never silently nothing), occurrences and relationships included.
// The model is Schema.swift; the checks that references resolve are SchemaValidation.swift.

extension EmulatorSchema {
    /// Loads a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the file cannot be read, is not JSON, or is inconsistent.
    public static func load(from url: URL) throws -> EmulatorSchema {
        // Foundation reads a directory as "The operation could not be completed. (NSCocoaErrorDomain error 256.)":
        // say what it is instead.
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw EmulatorSchemaError("cannot read \(url.path): it is a directory, not a schema file")
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw EmulatorSchemaError("cannot read \(url.path): \(error.localizedDescription)")
        }
        return try EmulatorSchema(jsonData: data)
    }

    /// A JSON error in a schema file where a person looks for it: line and column (characters, from 1, a byte-order
    /// mark not counted) beside
    /// the byte offset, and, for a comment (`//`, `/*`: the annotated example of Docs/SCHEMA.md copied as it
    /// is), that a schema file is plain JSON.
    static func describe(_ error: JSON.ParseError, in data: Data) -> String {
        let bytes = [UInt8](data)
        let offset = min(max(error.offset, 0), bytes.count)
        var line = 1
        var column = 1
        // A byte-order mark (which the parser skips) is no column: an editor shows none.
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? min(3, offset) : 0
        for byte in bytes[start..<offset] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {   // a character's first byte (UTF-8 continuation bytes are 10xxxxxx)
                column += 1
            }
        }
        var text = "invalid JSON at line \(line), column \(column) (byte \(offset)): \(error.reason)"
        let slash = UInt8(ascii: "/")
        if offset + 1 < bytes.count, bytes[offset] == slash, bytes[offset + 1] == slash || bytes[offset + 1] == UInt8(ascii: "*") {
            text += "; that is a comment, and a schema file is plain JSON without comments: put notes in a "
                + "\"comment\" key where the schema takes one (Docs/SCHEMA.md)"
        }
        return text
    }

    /// Parses a schema from the JSON text of a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the text is not JSON or the schema is inconsistent.
    public init(jsonData: Data) throws {
        let root: JSON
        do { root = try JSON.parse(jsonData) } catch let error as JSON.ParseError {
            throw EmulatorSchemaError(Self.describe(error, in: jsonData))
        } catch {
            throw EmulatorSchemaError("\(error)")
        }
        guard root.objectPairs != nil else { throw EmulatorSchemaError("the top level must be an object") }
        try Self.checkKeys(root, SchemaKeys.topLevel, "top level")
        guard let database = root["database"]?.stringValue, !database.isEmpty else {
            throw EmulatorSchemaError("\"database\" must be a non-empty string")
        }
        let accounts = try Self.parseAccounts(root["accounts"])
        let tables = try Self.parseTables(root["tables"])
        let occurrences = try Self.parseOccurrences(root["occurrences"])
        let relationships = try Self.parseRelationships(root["relationships"])
        let layouts = try Self.parseLayouts(root["layouts"], tables: tables, occurrences: occurrences)
        let scripts = try Self.parseScripts(root["scripts"])
        let records = try Self.parseRecords(root["records"])
        let limits = try Self.parseLimits(root["limits"])
        self.init(database: database, accounts: accounts, tables: tables, layouts: layouts.layouts,
                  layoutFolders: layouts.folders, layoutOrder: layouts.order, scripts: scripts.scripts,
                  scriptFolders: scripts.folders, scriptOrder: scripts.order, records: records, limits: limits,
                  occurrences: occurrences, relationships: relationships)
        try validate()
    }

    /// `accounts`: an array of `{"username", "password"}`; admin/admin when absent.
    private static func parseAccounts(_ json: JSON?) throws -> [Account] {
        var accounts: [Account] = []
        if let list = json {
            guard let items = list.arrayValue else { throw EmulatorSchemaError("\"accounts\" must be an array") }
            for (i, item) in items.enumerated() {
                guard item.objectPairs != nil else { throw EmulatorSchemaError("accounts[\(i)] must be an object") }
                try Self.checkKeys(item, SchemaKeys.account, "accounts[\(i)]")
                guard let u = item["username"]?.stringValue, let p = item["password"]?.stringValue else {
                    throw EmulatorSchemaError("accounts[\(i)] needs string \"username\" and \"password\"")
                }
                accounts.append(Account(username: u, password: p))
            }
        } else {
            accounts = [Account(username: "admin", password: "admin")]
        }
        return accounts
    }

    /// `tables`: name → `{"fields": {name → type or definition}}`.
    private static func parseTables(_ json: JSON?) throws -> [Table] {
        var tables: [Table] = []
        guard let tablePairs = json?.objectPairs else { throw EmulatorSchemaError("\"tables\" must be an object") }
        for (tableName, tableJSON) in tablePairs {
            guard tableJSON.objectPairs != nil else { throw EmulatorSchemaError("tables.\(tableName) must be an object") }
            try Self.checkKeys(tableJSON, SchemaKeys.table, "tables.\(tableName)")
            guard let fieldPairs = tableJSON["fields"]?.objectPairs else {
                throw EmulatorSchemaError("tables.\(tableName).fields must be an object")
            }
            var fields: [Field] = []
            for (fieldName, def) in fieldPairs {
                fields.append(try Self.parseField(fieldName, def, where: "tables.\(tableName).fields.\(fieldName)"))
            }
            tables.append(Table(tableName, fields: fields))
        }
        return tables
    }

    /// `layouts`: name → a layout or a folder, and their order as written.
    private static func parseLayouts(_ json: JSON?, tables: [Table], occurrences: [TableOccurrence]) throws
        -> (layouts: [Layout], folders: [Folder], order: [String]) {
        var layouts: [Layout] = []
        var layoutFolders: [Folder] = []
        var layoutOrder: [String] = []
        if let layoutJSON = json {
            guard let pairs = layoutJSON.objectPairs else { throw EmulatorSchemaError("\"layouts\" must be an object") }
            for (name, def) in pairs {
                layoutOrder.append(name)
                let place = "layouts.\(name)"
                guard def.objectPairs != nil else { throw EmulatorSchemaError("\(place) must be an object") }
                if try Self.bool(def, "folder", place) == true {
                    try Self.checkKeys(def, SchemaKeys.layoutFolder, place)
                    guard let items = Self.strings(def["layouts"]) else {
                        throw EmulatorSchemaError("\(place).layouts must be an array of names")
                    }
                    layoutFolders.append(Folder(name, items: items))
                    continue
                }
                layouts.append(try parseLayout(name, def, place: place, tables: tables, occurrences: occurrences))
            }
        }
        return (layouts, layoutFolders, layoutOrder)
    }

    /// One layout (not a folder) at `place`.
    private static func parseLayout(_ name: String, _ def: JSON, place: String, tables: [Table],
                                    occurrences: [TableOccurrence]) throws -> Layout {
        try Self.checkKeys(def, SchemaKeys.layout, place)
        guard let table = def["table"]?.stringValue else { throw EmulatorSchemaError("\(place).table must be a string") }
        var fields: [LayoutField] = []
        if let list = def["fields"] {
            guard let items = list.arrayValue else { throw EmulatorSchemaError("\(place).fields must be an array") }
            for item in items {
                if let s = item.stringValue {
                    fields.append(LayoutField(s))
                } else if let n = item["name"]?.stringValue {
                    try Self.checkKeys(item, SchemaKeys.layoutField, "\(place).fields.\(n)")
                    fields.append(LayoutField(n, valueList: try Self.string(item, "valueList", "\(place).fields.\(n)"),
                                              displayType: try Self.string(item, "displayType", "\(place).fields.\(n)")))
                } else {
                    throw EmulatorSchemaError("\(place).fields entries must be names or {\"name\":…}")
                }
            }
        } else if let t = tables.first(where: { $0.name == (occurrences.first { $0.name == table }?.table ?? table) }) {
            fields = t.fields.map { LayoutField($0.name) }
        }
        let portals = try parsePortals(def["portals"], place: place, tables: tables, occurrences: occurrences)
        var valueLists: [ValueList] = []
        if let list = def["valueLists"], list.objectPairs == nil {
            throw EmulatorSchemaError("\(place).valueLists must be an object")
        }
        if let vl = def["valueLists"]?.objectPairs {
            for (vlName, values) in vl {
                guard let items = values.arrayValue?.compactMap(\.scalarText) else {
                    throw EmulatorSchemaError("\(place).valueLists.\(vlName) must be an array")
                }
                valueLists.append(ValueList(vlName, values: items))
            }
        }
        let tableView = try Self.string(def, "view", place)?.lowercased() == "table"
        return Layout(name, table: table, fields: fields, portals: portals, valueLists: valueLists, tableView: tableView)
    }

    /// A layout's `portals`: name → `{"table", "match", "fields", "sort"}`.
    private static func parsePortals(_ json: JSON?, place: String, tables: [Table], occurrences: [TableOccurrence]) throws -> [Portal] {
        var portals: [Portal] = []
        if let portalPairs = json?.objectPairs {
            for (portalName, p) in portalPairs {
                guard p.objectPairs != nil else { throw EmulatorSchemaError("\(place).portals.\(portalName) must be an object") }
                try Self.checkKeys(p, SchemaKeys.portal, "\(place).portals.\(portalName)")
                guard let pTable = p["table"]?.stringValue else {
                    throw EmulatorSchemaError("\(place).portals.\(portalName).table must be a string")
                }
                // Without "match", the portal goes through the declared relationships to its occurrence.
                let matchPairs = p["match"]?.objectPairs ?? []
                if p["match"] != nil, matchPairs.isEmpty {
                    throw EmulatorSchemaError("\(place).portals.\(portalName).match must be a non-empty object")
                }
                var match: [(local: String, related: String)] = []
                for (l, r) in matchPairs {
                    guard let rs = r.stringValue else {
                        throw EmulatorSchemaError("\(place).portals.\(portalName).match.\(l) must be a field name")
                    }
                    match.append((local: l, related: rs))
                }
                let pBase = occurrences.first(where: { $0.name == pTable })?.table ?? pTable
                var pFields = tables.first(where: { $0.name == pBase })?.fields.map(\.name) ?? []
                if let list = p["fields"] {
                    guard let names = Self.strings(list) else {
                        throw EmulatorSchemaError("\(place).portals.\(portalName).fields must be an array of names")
                    }
                    pFields = names
                }
                let sort = try Self.parseSortKeys(p["sort"], place: "\(place).portals.\(portalName).sort")
                portals.append(Portal(portalName, table: pTable, match: match, fields: pFields, sort: sort))
            }
        } else if json != nil {
            throw EmulatorSchemaError("\(place).portals must be an object")
        }
        return portals
    }

    /// `scripts`: name → a script or a folder, and their order as written.
    private static func parseScripts(_ json: JSON?) throws -> (scripts: [Script], folders: [Folder], order: [String]) {
        var scripts: [Script] = []
        var scriptFolders: [Folder] = []
        var scriptOrder: [String] = []
        if let scriptJSON = json {
            guard let pairs = scriptJSON.objectPairs else { throw EmulatorSchemaError("\"scripts\" must be an object") }
            for (name, def) in pairs {
                scriptOrder.append(name)
                guard def.objectPairs != nil else { throw EmulatorSchemaError("scripts.\(name) must be an object") }
                if try Self.bool(def, "folder", "scripts.\(name)") == true {
                    try Self.checkKeys(def, SchemaKeys.scriptFolder, "scripts.\(name)")
                    guard let items = Self.strings(def["scripts"]) else {
                        throw EmulatorSchemaError("scripts.\(name).scripts must be an array of names")
                    }
                    scriptFolders.append(Folder(name, items: items))
                    continue
                }
                scripts.append(try parseScript(name, def))
            }
        }
        return (scripts, scriptFolders, scriptOrder)
    }

    /// One script (not a folder).
    private static func parseScript(_ name: String, _ def: JSON) throws -> Script {
        try Self.checkKeys(def, SchemaKeys.script, "scripts.\(name)")
        var returns: ScriptReturn?
        if let r = def["returns"] {
            switch r.scalarText {
            case "parameter"?: returns = .parameter
            case "foundCount"?: returns = .foundCount
            case let text?: returns = .literal(text)
            case nil: throw EmulatorSchemaError("scripts.\(name).returns must be a string")
            }
        }
        var error = "0"
        if let e = def["error"] {
            guard let text = e.scalarText else { throw EmulatorSchemaError("scripts.\(name).error must be a string or number") }
            error = text
        }
        var script = Script(name, returns: returns, error: error, layout: try Self.string(def, "layout", "scripts.\(name)"))
        if let steps = def["steps"] {
            guard def["returns"] == nil, def["error"] == nil else {
                throw EmulatorSchemaError("scripts.\(name): use either \"steps\" or \"returns\"/\"error\"")
            }
            script.steps = try ScriptStep.parseList(steps, place: "scripts.\(name).steps")
        }
        return script
    }

    /// `records`: table → an array of seed records (field → scalar).
    private static func parseRecords(_ json: JSON?) throws -> [String: [[String: String]]] {
        var records: [String: [[String: String]]] = [:]
        if let recordJSON = json {
            guard let pairs = recordJSON.objectPairs else { throw EmulatorSchemaError("\"records\" must be an object") }
            for (table, list) in pairs {
                guard let items = list.arrayValue else { throw EmulatorSchemaError("records.\(table) must be an array") }
                var rows: [[String: String]] = []
                for (i, item) in items.enumerated() {
                    guard let fieldPairs = item.objectPairs else {
                        throw EmulatorSchemaError("records.\(table)[\(i)] must be an object")
                    }
                    var row: [String: String] = [:]
                    for (k, v) in fieldPairs {
                        guard let text = v.scalarText else {
                            throw EmulatorSchemaError("records.\(table)[\(i)].\(k) must be a string, number or boolean")
                        }
                        row[k] = text
                    }
                    rows.append(row)
                }
                records[table] = rows
            }
        }
        return records
    }

    /// `limits`: `maxSessions`, `sessionIdleSeconds`.
    private static func parseLimits(_ json: JSON?) throws -> Limits {
        var limits = Limits()
        if let l = json {
            guard l.objectPairs != nil else { throw EmulatorSchemaError("\"limits\" must be an object") }
            try Self.checkKeys(l, SchemaKeys.limits, "limits")
            for key in ["maxSessions", "sessionIdleSeconds"] {
                if let v = l[key], !Self.isNumber(v) { throw EmulatorSchemaError("limits.\(key) must be a number") }
            }
            if case let .number(n)? = l["maxSessions"] {
                guard let v = clampedInt(n) else { throw EmulatorSchemaError("limits.maxSessions must be a whole number") }
                limits.maxSessions = v
            }
            if case let .number(n)? = l["sessionIdleSeconds"] {
                guard n.isFinite else { throw EmulatorSchemaError("limits.sessionIdleSeconds must be a finite number") }
                limits.sessionIdleSeconds = n
            }
        }
        return limits
    }

    private static func parseField(_ name: String, _ def: JSON, where place: String) throws -> Field {
        if let typeName = def.stringValue {
            guard let type = FieldType(rawValue: typeName) else {
                throw EmulatorSchemaError("\(place): unknown type \"\(typeName)\" (use \(FieldType.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            return Field(name, type)
        }
        guard def.objectPairs != nil else { throw EmulatorSchemaError("\(place) must be a type name or an object") }
        try checkKeys(def, SchemaKeys.field, place)
        guard let typeName = def["type"]?.stringValue, let type = FieldType(rawValue: typeName) else {
            throw EmulatorSchemaError("\(place).type must be one of \(FieldType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var autoEnter: AutoEnter?
        if let ae = def["autoEnter"] {
            switch ae.stringValue {
            case "serial"?:
                var start = 1
                if let v = def["serialStart"], !Self.isNumber(v) { throw EmulatorSchemaError("\(place).serialStart must be a whole number") }
                if case let .number(n)? = def["serialStart"] {
                    guard let v = clampedInt(n), abs(v) < 1_000_000_000_000 else {
                        throw EmulatorSchemaError("\(place).serialStart must be a whole number")
                    }
                    start = v
                }
                autoEnter = .serial(start: start)
            case "creationDate"?: autoEnter = .creationDate
            case "creationTimestamp"?: autoEnter = .creationTimestamp
            case "modificationTimestamp"?: autoEnter = .modificationTimestamp
            default:
                if ae.objectPairs != nil { try checkKeys(ae, SchemaKeys.autoEnterValue, "\(place).autoEnter") }
                if let v = ae["value"]?.scalarText {
                    autoEnter = .value(v)
                } else {
                    throw EmulatorSchemaError("\(place).autoEnter must be serial, creationDate, creationTimestamp, modificationTimestamp or {\"value\":…}")
                }
            }
        }
        var repetitions = 1
        if let r = def["repetitions"] {
            guard case let .number(n) = r, n == n.rounded(), n >= 1, n <= 32000 else {
                throw EmulatorSchemaError("\(place).repetitions must be a whole number between 1 and 32000")
            }
            repetitions = Int(n)
        }
        var maxChars = 0
        if let v = def["maxCharacters"], !Self.isNumber(v) { throw EmulatorSchemaError("\(place).maxCharacters must be a whole number") }
        if case let .number(n)? = def["maxCharacters"] {
            guard let v = clampedInt(n) else { throw EmulatorSchemaError("\(place).maxCharacters must be a whole number") }
            maxChars = max(0, v)
        }
        return Field(name, type, autoEnter: autoEnter, notEmpty: try bool(def, "notEmpty", place) ?? false,
                     unique: try bool(def, "unique", place) ?? false, maxCharacters: maxChars,
                     repetitions: repetitions, global: try bool(def, "global", place) ?? false,
                     numericOnly: try bool(def, "numericOnly", place) ?? false,
                     prohibitModification: try bool(def, "prohibitModification", place) ?? false)
    }

    /// Throws naming every key of the object `def` that is not in `allowed`, with its path, and the
    /// closest known key when one is near (a misspelt key must never load silently as nothing).
    static func checkKeys(_ def: JSON, _ allowed: [String], _ place: String) throws {
        guard let pairs = def.objectPairs else { return }
        let unknown = pairs.map(\.0).filter { !allowed.contains($0) }
        guard !unknown.isEmpty else { return }
        let named = unknown.map { key -> String in
            let hint = closestKey(key, in: allowed).map { " (did you mean \"\($0)\"?)" } ?? ""
            return "\"\(key)\"\(hint)"
        }
        throw EmulatorSchemaError("\(place): unknown key\(unknown.count == 1 ? "" : "s") \(named.joined(separator: ", "))"
                                  + "; known keys: \(allowed.joined(separator: ", "))")
    }

    /// The allowed key within edit distance 2 of `key` (case-insensitive), if any.
    static func closestKey(_ key: String, in allowed: [String]) -> String? {
        var best: (key: String, distance: Int)?
        for candidate in allowed {
            let d = editDistance(key.lowercased(), candidate.lowercased())
            if d <= 2, d < (best?.distance ?? Int.max) { best = (candidate, d) }
        }
        return best?.key
    }

    /// Levenshtein distance (insert, delete, substitute), for short keys.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var previous = Array(0...y.count)
        for i in 1...x.count {
            var current = [i] + Array(repeating: 0, count: y.count)
            for j in 1...y.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[y.count]
    }

    /// `def[key]` as a boolean, `nil` when absent; a value of another type is an error naming the key.
    private static func bool(_ def: JSON, _ key: String, _ place: String) throws -> Bool? {
        guard let v = def[key] else { return nil }
        guard let b = v.boolValue else { throw EmulatorSchemaError("\(place).\(key) must be true or false") }
        return b
    }

    /// `def[key]` as a string, `nil` when absent; a value of another type is an error naming the key.
    private static func string(_ def: JSON, _ key: String, _ place: String) throws -> String? {
        guard let v = def[key] else { return nil }
        guard let s = v.stringValue else { throw EmulatorSchemaError("\(place).\(key) must be a string") }
        return s
    }

    /// Whether `value` is a JSON number.
    private static func isNumber(_ value: JSON) -> Bool {
        if case .number = value { return true }
        return false
    }

    /// An array made only of strings, else `nil`.
    private static func strings(_ value: JSON?) -> [String]? {
        guard let items = value?.arrayValue else { return nil }
        let names = items.compactMap(\.stringValue)
        return names.count == items.count ? names : nil
    }

    // MARK: Occurrences and relationships

    /// Parses `"occurrences": {"Notes_active": "Notes", "Addr": {"table": "Addresses"}}`.
    static func parseOccurrences(_ json: JSON?) throws -> [TableOccurrence] {
        guard let json else { return [] }
        guard let pairs = json.objectPairs else { throw EmulatorSchemaError("\"occurrences\" must be an object") }
        return try pairs.map { name, def in
            if let t = def.stringValue { return TableOccurrence(name, table: t) }
            guard let defPairs = def.objectPairs, let t = def["table"]?.stringValue else {
                throw EmulatorSchemaError("occurrences.\(name) must be a table name or {\"table\": …}")
            }
            for (k, _) in defPairs where k != "table" && k != "comment" {
                throw EmulatorSchemaError("occurrences.\(name): unknown key \"\(k)\"")
            }
            return TableOccurrence(name, table: t)
        }
    }

    /// Parses `"relationships": [{"left": …, "right": …, "match": …, "allowCreation": …, "sort": […], …}]`.
    static func parseRelationships(_ json: JSON?) throws -> [Relationship] {
        guard let json else { return [] }
        guard let items = json.arrayValue else { throw EmulatorSchemaError("\"relationships\" must be an array") }
        let known: Set<String> = ["left", "right", "match", "allowCreation", "sort", "leftAllowCreation", "leftSort",
                                  "cascadeDelete", "leftCascadeDelete", "comment"]
        return try items.enumerated().map { i, item in
            let place = "relationships[\(i)]"
            guard let pairs = item.objectPairs else { throw EmulatorSchemaError("\(place) must be an object") }
            for (k, _) in pairs where !known.contains(k) { throw EmulatorSchemaError("\(place): unknown key \"\(k)\"") }
            guard let left = item["left"]?.stringValue, let right = item["right"]?.stringValue else {
                throw EmulatorSchemaError("\(place) needs string \"left\" and \"right\" table occurrences")
            }
            var clauses: [MatchClause] = []
            if let obj = item["match"]?.objectPairs {
                for (l, r) in obj {
                    guard let rs = r.stringValue else { throw EmulatorSchemaError("\(place).match.\(l) must be a field name") }
                    clauses.append(MatchClause(l, .equal, rs))
                }
            } else if let list = item["match"]?.arrayValue {
                for (j, c) in list.enumerated() {
                    guard let text = c.stringValue else { throw EmulatorSchemaError("\(place).match[\(j)] must be a string such as \"id = parent_id\"") }
                    clauses.append(try parseClause(text, place: "\(place).match[\(j)]"))
                }
            }
            guard !clauses.isEmpty else {
                throw EmulatorSchemaError("\(place).match must be a non-empty object {\"leftField\": \"rightField\"} or array [\"leftField = rightField\", …]")
            }
            func flag(_ key: String) throws -> Bool {
                guard let v = item[key] else { return false }
                guard let b = v.boolValue else { throw EmulatorSchemaError("\(place).\(key) must be true or false") }
                return b
            }
            return Relationship(left: left, right: right, match: clauses, allowCreation: try flag("allowCreation"),
                                sort: try parseSortKeys(item["sort"], place: "\(place).sort"),
                                leftAllowCreation: try flag("leftAllowCreation"),
                                leftSort: try parseSortKeys(item["leftSort"], place: "\(place).leftSort"),
                                cascadeDelete: try flag("cascadeDelete"), leftCascadeDelete: try flag("leftCascadeDelete"))
        }
    }

    /// Parses `"leftField OP rightField"`.
    static func parseClause(_ text: String, place: String) throws -> MatchClause {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 3, let op = MatchOperator(symbol: parts[1]) else {
            throw EmulatorSchemaError("\(place): \"\(text)\" must be \"leftField OP rightField\" with OP one of = ≠ < ≤ > ≥ × (or != <> <= >= x); field names without spaces")
        }
        return MatchClause(parts[0], op, parts[2])
    }
}

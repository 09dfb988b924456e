import Foundation

/// A FileMaker-like solution for the emulator: one database with tables, layouts, portals, value
/// lists, scripts, accounts and seed records.
///
/// Build one in code, or load a schema file (see `Docs/SCHEMA.md` in the repository) with
/// ``EmulatorSchema/load(from:)`` or ``EmulatorSchema/init(jsonData:)``.
public struct EmulatorSchema: Sendable {
    /// The type of a field, as FileMaker reports it in layout metadata (`result`).
    public enum FieldType: String, Sendable, CaseIterable {
        /// Text.
        case text
        /// Number: written back as a JSON number.
        case number
        /// Date: `MM/dd/yyyy` on the wire by default.
        case date
        /// Time of day or duration: `HH:mm:ss`.
        case time
        /// Timestamp: `MM/dd/yyyy HH:mm:ss` by default.
        case timestamp
        /// Container: read back as a streaming URL.
        case container
    }

    /// An auto-enter option of a field.
    public enum AutoEnter: Sendable, Equatable {
        /// A serial number per table: `start`, `start + 1`, … (also on duplicate).
        case serial(start: Int)
        /// The creation date.
        case creationDate
        /// The creation timestamp.
        case creationTimestamp
        /// The modification timestamp (refreshed on every edit).
        case modificationTimestamp
        /// A constant value.
        case value(String)
    }

    /// A field of a table.
    public struct Field: Sendable {
        /// The field name.
        public var name: String
        /// The field type.
        public var type: FieldType
        /// The auto-enter option, if any.
        public var autoEnter: AutoEnter?
        /// Validation "not empty": an empty value is error 509.
        public var notEmpty: Bool
        /// Validation "unique": a duplicate value is error 504.
        public var unique: Bool
        /// Validation "maximum number of characters" (0 = unlimited): longer is error 511.
        public var maxCharacters: Int
        /// The number of repetitions (1 = not repeating).
        public var repetitions: Int
        /// A global field: one value per session, set with `PATCH …/globals`.
        public var global: Bool
        /// Validation "strict data type: numeric only" (number fields): text that is not a number is
        /// error 502 instead of being stored as text. Skipped with `options.entrymode: "script"`.
        public var numericOnly: Bool
        /// Auto-enter option "prohibit modification of value during data entry": writing the field is
        /// error 201 unless the request sends `options.prohibitmode: "script"`.
        public var prohibitModification: Bool

        /// Creates a field.
        public init(_ name: String, _ type: FieldType, autoEnter: AutoEnter? = nil, notEmpty: Bool = false,
                    unique: Bool = false, maxCharacters: Int = 0, repetitions: Int = 1, global: Bool = false,
                    numericOnly: Bool = false, prohibitModification: Bool = false) {
            self.numericOnly = numericOnly
            self.prohibitModification = prohibitModification
            self.name = name
            self.type = type
            self.autoEnter = autoEnter
            self.notEmpty = notEmpty
            self.unique = unique
            self.maxCharacters = maxCharacters
            self.repetitions = max(1, repetitions)
            self.global = global
        }
    }

    /// A table; its table occurrence has the same name.
    public struct Table: Sendable {
        /// The table (and table occurrence) name.
        public var name: String
        /// The fields, in definition order.
        public var fields: [Field]

        /// Creates a table.
        public init(_ name: String, fields: [Field]) {
            self.name = name
            self.fields = fields
        }
    }

    /// A field placed on a layout.
    public struct LayoutField: Sendable, ExpressibleByStringLiteral {
        /// The field name: a field of the layout's table, or `TO::field` for a related field shown through
        /// a portal's match fields or the schema's relationships, one or more hops away (the first related
        /// record; a write edits it, or creates one when the relationship allows creation).
        public var name: String
        /// The value list attached to the field, if any.
        public var valueList: String?
        /// The control style reported as `displayType` (default `editText`).
        public var displayType: String?

        /// Creates a layout field.
        public init(_ name: String, valueList: String? = nil, displayType: String? = nil) {
            self.name = name
            self.valueList = valueList
            self.displayType = displayType
        }

        /// Creates a layout field from its name.
        public init(stringLiteral value: String) { self.init(value) }
    }

    /// A portal on a layout, showing the records of a related table occurrence.
    public struct Portal: Sendable {
        /// The portal's object name (key of `portalData`).
        public var name: String
        /// The related table occurrence (rows are keyed `TO::field`).
        public var table: String
        /// Match fields: this layout's table field → the related table's field (all pairs must be equal).
        /// Empty when the portal goes through the schema's ``EmulatorSchema/relationships``.
        public var match: [(local: String, related: String)]
        /// The fields shown in the portal: fields of its occurrence (bare or `TO::field`), or `TO::field`
        /// of an occurrence related to it (one or more hops further).
        public var fields: [String]
        /// The portal's sort (replaces the relationship's sort); empty: the relationship's order.
        public var sort: [SortKey]

        /// Creates a portal.
        public init(_ name: String, table: String, match: [(local: String, related: String)], fields: [String], sort: [SortKey] = []) {
            self.name = name
            self.table = table
            self.match = match
            self.fields = fields
            self.sort = sort
        }
    }

    /// A custom value list.
    public struct ValueList: Sendable {
        /// The value list name.
        public var name: String
        /// Its values, in order.
        public var values: [String]

        /// Creates a value list.
        public init(_ name: String, values: [String]) {
            self.name = name
            self.values = values
        }
    }

    /// A layout.
    public struct Layout: Sendable {
        /// The layout name (any characters, including space and `/`).
        public var name: String
        /// The table occurrence the layout shows (a base table name is its implicit occurrence).
        public var table: String
        /// The fields on the layout, in order.
        public var fields: [LayoutField]
        /// The portals on the layout.
        public var portals: [Portal]
        /// The value lists reported by layout metadata.
        public var valueLists: [ValueList]
        /// The layout is in Table View: Data API **v1** then returns only the first row of each portal.
        public var tableView: Bool

        /// Creates a layout.
        public init(_ name: String, table: String, fields: [LayoutField], portals: [Portal] = [], valueLists: [ValueList] = [],
                    tableView: Bool = false) {
            self.name = name
            self.table = table
            self.fields = fields
            self.portals = portals
            self.valueLists = valueLists
            self.tableView = tableView
        }
    }

    /// A layout or script folder: its items are names of layouts/scripts or of other folders
    /// (`"-"` is a separator in script folders).
    public struct Folder: Sendable {
        /// The folder name.
        public var name: String
        /// The names inside, in order.
        public var items: [String]

        /// Creates a folder.
        public init(_ name: String, items: [String]) {
            self.name = name
            self.items = items
        }
    }

    /// What a schema script returns.
    public enum ScriptReturn: Sendable, Equatable {
        /// `scriptResult` = the script parameter.
        case parameter
        /// `scriptResult` = the found count (of the script's `layout` table if set, else of the request's found set).
        case foundCount
        /// `scriptResult` = this text.
        case literal(String)
    }

    /// A script defined in the schema (Swift closures can be registered with ``Emulator/registerScript(_:_:)``).
    public struct Script: Sendable {
        /// The script name.
        public var name: String
        /// What the script returns, or `nil` for no `scriptResult`.
        public var returns: ScriptReturn?
        /// The `scriptError` it ends with (`"0"` by default).
        public var error: String
        /// A layout the script works on (used by ``ScriptReturn/foundCount``; step scripts start there).
        public var layout: String?
        /// The script's steps (SCHEMA.md "Scripts with steps"); `nil` for a script described by `returns`/`error`.
        public var steps: [ScriptStep]?

        /// Creates a script.
        public init(_ name: String, returns: ScriptReturn? = nil, error: String = "0", layout: String? = nil) {
            self.name = name
            self.returns = returns
            self.error = error
            self.layout = layout
        }
    }

    /// An account that may log in.
    public struct Account: Sendable {
        /// The account name (compared case-insensitively, like FileMaker).
        public var username: String
        /// The password (case-sensitive).
        public var password: String

        /// Creates an account.
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }
    }

    /// Server limits.
    public struct Limits: Sendable {
        /// Active sessions allowed at once; the next login answers 956.
        public var maxSessions: Int
        /// Idle seconds after which a token expires (sliding on every call).
        public var sessionIdleSeconds: TimeInterval

        /// Creates limits (defaults: 100 sessions, 900 s).
        public init(maxSessions: Int = 100, sessionIdleSeconds: TimeInterval = 900) {
            self.maxSessions = maxSessions
            self.sessionIdleSeconds = sessionIdleSeconds
        }
    }

    /// The database name (served at `/fmi/data/{v}/databases/{database}`).
    public var database: String
    /// Accounts that may log in.
    public var accounts: [Account]
    /// Tables.
    public var tables: [Table]
    /// Layouts.
    public var layouts: [Layout]
    /// Layout folders.
    public var layoutFolders: [Folder]
    /// Listing order of top-level layouts and folders by name; `nil` = layouts then folders.
    public var layoutOrder: [String]?
    /// Scripts.
    public var scripts: [Script]
    /// Script folders.
    public var scriptFolders: [Folder]
    /// Listing order of top-level scripts and folders; `nil` = scripts then folders.
    public var scriptOrder: [String]?
    /// Seed records per table: field name (or `name(n)` for a repetition) → value as text
    /// (numbers as digits, dates `MM/dd/yyyy`, times `HH:mm:ss`, timestamps `MM/dd/yyyy HH:mm:ss`).
    public var records: [String: [[String: String]]]
    /// Limits.
    public var limits: Limits
    /// Declared table occurrences (each base table also has an implicit one of its own name).
    public var occurrences: [TableOccurrence]
    /// Relationships between table occurrences.
    public var relationships: [Relationship]

    /// Creates a schema.
    public init(database: String, accounts: [Account] = [Account(username: "admin", password: "admin")],
                tables: [Table], layouts: [Layout], layoutFolders: [Folder] = [], layoutOrder: [String]? = nil,
                scripts: [Script] = [], scriptFolders: [Folder] = [], scriptOrder: [String]? = nil,
                records: [String: [[String: String]]] = [:], limits: Limits = Limits(),
                occurrences: [TableOccurrence] = [], relationships: [Relationship] = []) {
        self.occurrences = occurrences
        self.relationships = relationships
        self.database = database
        self.accounts = accounts
        self.tables = tables
        self.layouts = layouts
        self.layoutFolders = layoutFolders
        self.layoutOrder = layoutOrder
        self.scripts = scripts
        self.scriptFolders = scriptFolders
        self.scriptOrder = scriptOrder
        self.records = records
        self.limits = limits
    }
}

/// The keys a schema file may use at each level (SCHEMA.md). Anything else is an error naming it:
/// extend these lists when the format grows.
enum SchemaKeys {
    static let topLevel = ["database", "accounts", "tables", "layouts", "scripts", "records", "limits",
                           "occurrences", "relationships", "comment"]
    static let account = ["username", "password"]
    static let table = ["fields"]
    static let field = ["type", "autoEnter", "serialStart", "repetitions", "maxCharacters", "notEmpty", "unique", "global",
                        "numericOnly", "prohibitModification"]
    static let autoEnterValue = ["value"]
    static let layout = ["folder", "table", "fields", "portals", "valueLists", "view", "comment"]
    static let layoutFolder = ["folder", "layouts"]
    static let layoutField = ["name", "valueList", "displayType"]
    static let portal = ["table", "match", "fields", "sort", "comment"]
    static let script = ["folder", "returns", "error", "layout", "steps", "comment"]
    static let scriptFolder = ["folder", "scripts"]
    static let limits = ["maxSessions", "sessionIdleSeconds"]
}

/// A problem in a schema: a malformed file or an inconsistent definition.
public struct EmulatorSchemaError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, naming the offending key.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { "invalid emulator schema: \(message)" }
}

// MARK: - Loading

extension EmulatorSchema {
    /// Loads a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the file cannot be read, is not JSON, or is inconsistent.
    public static func load(from url: URL) throws -> EmulatorSchema {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw EmulatorSchemaError("cannot read \(url.path): \(error.localizedDescription)")
        }
        return try EmulatorSchema(jsonData: data)
    }

    /// Parses a schema from the JSON text of a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the text is not JSON or the schema is inconsistent.
    public init(jsonData: Data) throws {
        let root: JSON
        do { root = try JSON.parse(jsonData) } catch {
            throw EmulatorSchemaError("\(error)")
        }
        guard root.objectPairs != nil else { throw EmulatorSchemaError("the top level must be an object") }
        try Self.checkKeys(root, SchemaKeys.topLevel, "top level")

        guard let database = root["database"]?.stringValue, !database.isEmpty else {
            throw EmulatorSchemaError("\"database\" must be a non-empty string")
        }
        var accounts: [Account] = []
        if let list = root["accounts"] {
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

        var tables: [Table] = []
        guard let tablePairs = root["tables"]?.objectPairs else { throw EmulatorSchemaError("\"tables\" must be an object") }
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

        let occurrences = try Self.parseOccurrences(root["occurrences"])
        let relationships = try Self.parseRelationships(root["relationships"])

        var layouts: [Layout] = []
        var layoutFolders: [Folder] = []
        var layoutOrder: [String] = []
        if let layoutJSON = root["layouts"] {
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
                var portals: [Portal] = []
                if let portalPairs = def["portals"]?.objectPairs {
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
                } else if def["portals"] != nil {
                    throw EmulatorSchemaError("\(place).portals must be an object")
                }
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
                layouts.append(Layout(name, table: table, fields: fields, portals: portals, valueLists: valueLists, tableView: tableView))
            }
        }

        var scripts: [Script] = []
        var scriptFolders: [Folder] = []
        var scriptOrder: [String] = []
        if let scriptJSON = root["scripts"] {
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
                scripts.append(script)
            }
        }

        var records: [String: [[String: String]]] = [:]
        if let recordJSON = root["records"] {
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

        var limits = Limits()
        if let l = root["limits"] {
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

        self.init(database: database, accounts: accounts, tables: tables, layouts: layouts,
                  layoutFolders: layoutFolders, layoutOrder: layoutOrder, scripts: scripts,
                  scriptFolders: scriptFolders, scriptOrder: scriptOrder, records: records, limits: limits,
                  occurrences: occurrences, relationships: relationships)
        try validate()
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

    /// Checks that every reference in the schema resolves.
    /// - Throws: ``EmulatorSchemaError`` naming the first broken reference.
    public func validate() throws {
        func table(_ name: String) -> Table? { tables.first { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        guard !database.isEmpty else { throw EmulatorSchemaError("the database name is empty") }
        var seen = Set<String>()
        for t in tables {
            guard seen.insert(t.name.lowercased()).inserted else { throw EmulatorSchemaError("table \(t.name) is defined twice") }
            var fieldNames = Set<String>()
            for f in t.fields {
                guard fieldNames.insert(f.name.lowercased()).inserted else {
                    throw EmulatorSchemaError("field \(t.name)::\(f.name) is defined twice")
                }
                guard !f.name.contains("::"), !f.name.isEmpty else { throw EmulatorSchemaError("bad field name \"\(f.name)\" in \(t.name)") }
            }
        }
        try validateOccurrencesAndRelationships()
        let probe = EmulatorState(empty: self)
        var layoutNames = Set<String>()
        for l in layouts {
            guard layoutNames.insert(l.name.lowercased()).inserted else { throw EmulatorSchemaError("layout \(l.name) is defined twice") }
            guard let t = probe.occurrenceTable(l.table)?.schema else { throw EmulatorSchemaError("layout \(l.name): unknown table \(l.table)") }
            for f in l.fields {
                if let r = f.name.range(of: "::"), f.name[..<r.lowerBound].caseInsensitiveCompare(l.table) != .orderedSame {
                    // A related field: through a portal's own match fields or the declared relationships.
                    guard probe.relatedField(f.name, from: l.table, layout: l) != nil else {
                        let to = String(f.name[..<r.lowerBound]), name = String(f.name[r.upperBound...])
                        throw EmulatorSchemaError("layout \(l.name): related field \(f.name) needs a portal or relationships from \(l.table) to \(to) and a field \(name) there")
                    }
                    continue
                }
                let bare = EmulatorState.bareField(f.name)
                guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(bare) == .orderedSame }) else {
                    throw EmulatorSchemaError("layout \(l.name): table \(t.name) has no field \(f.name)")
                }
            }
            for f in l.fields {
                if let vl = f.valueList, !l.valueLists.contains(where: { $0.name == vl }) {
                    throw EmulatorSchemaError("layout \(l.name): field \(f.name) uses unknown value list \(vl)")
                }
            }
            for p in l.portals {
                guard let rt = probe.occurrenceTable(p.table)?.schema else {
                    throw EmulatorSchemaError("layout \(l.name), portal \(p.name): unknown table \(p.table)")
                }
                for m in p.match {
                    guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(m.local) == .orderedSame }) else {
                        throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(t.name) has no match field \(m.local)")
                    }
                    guard rt.fields.contains(where: { $0.name.caseInsensitiveCompare(m.related) == .orderedSame }) else {
                        throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(rt.name) has no match field \(m.related)")
                    }
                }
                if p.match.isEmpty, probe.relPath(from: l.table, to: p.table) == nil {
                    throw EmulatorSchemaError("layout \(l.name), portal \(p.name): no \"match\" and no relationships from \(l.table) to \(p.table)")
                }
                for f in p.fields {
                    if let r = f.range(of: "::"), f[..<r.lowerBound].caseInsensitiveCompare(p.table) != .orderedSame {
                        guard probe.relatedField(f, from: p.table, layout: nil) != nil else {
                            throw EmulatorSchemaError("layout \(l.name), portal \(p.name): field \(f) needs relationships from \(p.table) and that field")
                        }
                        continue
                    }
                    guard rt.fields.contains(where: { $0.name.caseInsensitiveCompare(EmulatorState.bareField(f)) == .orderedSame }) else {
                        throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(rt.name) has no field \(f)")
                    }
                }
                for k in p.sort where !rt.fields.contains(where: { $0.name.caseInsensitiveCompare(EmulatorState.bareField(k.field)) == .orderedSame }) {
                    throw EmulatorSchemaError("layout \(l.name), portal \(p.name): cannot sort by \(k.field): table \(rt.name) has no such field")
                }
            }
        }
        for folder in layoutFolders {
            guard layoutNames.insert(folder.name.lowercased()).inserted else {
                throw EmulatorSchemaError("layout folder \(folder.name) clashes with another layout or folder")
            }
        }
        for folder in layoutFolders {
            for item in folder.items where !layoutNames.contains(item.lowercased()) {
                throw EmulatorSchemaError("layout folder \(folder.name): unknown layout \(item)")
            }
        }
        var scriptNames = Set<String>()
        for s in scripts {
            guard scriptNames.insert(s.name.lowercased()).inserted else { throw EmulatorSchemaError("script \(s.name) is defined twice") }
            if let l = s.layout, !layouts.contains(where: { $0.name.caseInsensitiveCompare(l) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): unknown layout \(l)")
            }
            let refs = ScriptStep.references(s.steps ?? [])
            for l in refs.layouts where !layouts.contains(where: { $0.name.caseInsensitiveCompare(l) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): Go to Layout names unknown layout \(l)")
            }
            for n in refs.scripts where !scripts.contains(where: { $0.name.caseInsensitiveCompare(n) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): Perform Script names unknown script \(n)")
            }
        }
        for folder in scriptFolders { scriptNames.insert(folder.name.lowercased()) }
        for folder in scriptFolders {
            for item in folder.items where item != "-" && !scriptNames.contains(item.lowercased()) {
                throw EmulatorSchemaError("script folder \(folder.name): unknown script \(item)")
            }
        }
        for (tableName, rows) in records {
            guard let t = table(tableName) else { throw EmulatorSchemaError("records: unknown table \(tableName)") }
            for (i, row) in rows.enumerated() {
                for key in row.keys where key != "::recordId" && key != "::modId" {
                    let (base, _) = splitRepetition(key)
                    guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(base) == .orderedSame }) else {
                        throw EmulatorSchemaError("records.\(tableName)[\(i)]: table \(t.name) has no field \(key)")
                    }
                }
            }
        }
        guard limits.maxSessions >= 1 else { throw EmulatorSchemaError("limits.maxSessions must be at least 1") }
        guard limits.sessionIdleSeconds > 0 else { throw EmulatorSchemaError("limits.sessionIdleSeconds must be positive") }
    }
}

/// `n` as an `Int` when it is a whole number in a safe range, else `nil` (never traps).
func clampedInt(_ n: Double) -> Int? {
    guard n.isFinite, n == n.rounded(), abs(n) < 9e15 else { return nil }
    return Int(n)
}

/// Splits `name(3)` into (`name`, 3); a name without a repetition suffix gives repetition 1.
/// Returns repetition 0 for a malformed suffix such as `name(x)` or `name(0)`.
func splitRepetition(_ key: String) -> (String, Int) {
    guard key.hasSuffix(")"), let open = key.lastIndex(of: "(") else { return (key, 1) }
    let base = String(key[..<open])
    let digits = key[key.index(after: open)..<key.index(before: key.endIndex)]
    guard let n = Int(digits), n >= 1 else { return (base, 0) }
    return (base, n)
}

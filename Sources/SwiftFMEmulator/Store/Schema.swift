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

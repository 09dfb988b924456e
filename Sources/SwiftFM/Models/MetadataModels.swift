import Foundation

/// The Data API engine's product information (`GET /productInfo`).
public struct FMProductInfo: Sendable, Hashable, Decodable {
    /// The product name (`"FileMaker Data API Engine"`).
    public var name: String
    /// The build date (`"07/05/2019"`); `""` when the server omits it (newest servers do).
    public var buildDate: String
    /// The version (`"18.0.2.217"`); `""` when the server omits it (newest servers do).
    public var version: String
    /// The date format of format 0 (`MM/dd/yyyy`).
    public var dateFormat: String
    /// The time format (`HH:mm:ss`).
    public var timeFormat: String
    /// The timestamp format (`MM/dd/yyyy HH:mm:ss`).
    public var timeStampFormat: String

    /// Creates a product info value.
    public init(name: String, buildDate: String = "", version: String = "",
                dateFormat: String, timeFormat: String, timeStampFormat: String) {
        self.name = name
        self.buildDate = buildDate
        self.version = version
        self.dateFormat = dateFormat
        self.timeFormat = timeFormat
        self.timeStampFormat = timeStampFormat
    }

    enum CodingKeys: String, CodingKey {
        case name, buildDate, version, dateFormat, timeFormat, timeStampFormat
    }

    /// Decodes `productInfo`; missing keys other than `name` are `""`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        buildDate = try container.lenientString(.buildDate) ?? ""
        version = try container.lenientString(.version) ?? ""
        dateFormat = try container.lenientString(.dateFormat) ?? ""
        timeFormat = try container.lenientString(.timeFormat) ?? ""
        timeStampFormat = try container.lenientString(.timeStampFormat) ?? ""
    }

    struct Wrapper: Decodable { var productInfo: FMProductInfo }
}

/// A hosted database (`GET /databases`).
public struct FMDatabase: Sendable, Hashable, Decodable {
    /// The database name, without `.fmp12`.
    public var name: String

    /// Creates a database value.
    public init(name: String) { self.name = name }

    struct Wrapper: Decodable { var databases: [FMDatabase] }
}

/// An entry of the layout list: a layout, or a folder of entries (`GET /layouts`).
public struct FMLayoutEntry: Sendable, Hashable, Decodable {
    /// The layout or folder name.
    public var name: String
    /// The layout's table occurrence (newer servers; `nil` for folders and older servers).
    public var table: String?
    /// `true` for a folder.
    public var isFolder: Bool
    /// The entries of a folder (`folderLayoutNames`); empty for a layout.
    public var children: [FMLayoutEntry]

    /// Creates a layout entry.
    public init(name: String, table: String? = nil, isFolder: Bool = false, children: [FMLayoutEntry] = []) {
        self.name = name
        self.table = table
        self.isFolder = isFolder
        self.children = children
    }

    /// The names of every layout in this entry and its folders, depth first (folders themselves excluded).
    public var layoutNames: [String] {
        isFolder ? children.flatMap(\.layoutNames) : [name]
    }

    /// For a folder, the names of every layout inside it, nested folders included (depth first);
    /// empty for a layout. `entries.flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] }` lists all layouts.
    public var folderLayoutNames: [String] {
        isFolder ? children.flatMap(\.layoutNames) : []
    }

    enum CodingKeys: String, CodingKey { case name, table, isFolder, folderLayoutNames }

    /// Decodes a layout or a folder.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        table = try container.lenientString(.table)
        children = try container.decodeIfPresent([FMLayoutEntry].self, forKey: .folderLayoutNames) ?? []
        isFolder = try container.lenientBool(.isFolder) ?? container.contains(.folderLayoutNames)
    }

    struct Wrapper: Decodable { var layouts: [FMLayoutEntry] }
}

/// An entry of the script list: a script, a separator (`"-"`), or a folder (`GET /scripts`).
public struct FMScriptEntry: Sendable, Hashable, Decodable {
    /// The script or folder name (`"-"` for a separator).
    public var name: String
    /// `true` for a folder.
    public var isFolder: Bool
    /// The entries of a folder (`folderScriptNames`); empty for a script.
    public var children: [FMScriptEntry]

    /// Creates a script entry.
    public init(name: String, isFolder: Bool = false, children: [FMScriptEntry] = []) {
        self.name = name
        self.isFolder = isFolder
        self.children = children
    }

    /// `true` for a separator line of the script list.
    public var isSeparator: Bool { !isFolder && name == "-" }

    /// The names of every script in this entry and its folders, depth first (folders and separators excluded).
    public var scriptNames: [String] {
        if isFolder { return children.flatMap(\.scriptNames) }
        return isSeparator ? [] : [name]
    }

    /// For a folder, the names of every script inside it, nested folders included, separators excluded;
    /// empty for a script.
    public var folderScriptNames: [String] {
        isFolder ? children.flatMap(\.scriptNames) : []
    }

    enum CodingKeys: String, CodingKey { case name, isFolder, folderScriptNames }

    /// Decodes a script, separator or folder.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        children = try container.decodeIfPresent([FMScriptEntry].self, forKey: .folderScriptNames) ?? []
        isFolder = try container.lenientBool(.isFolder) ?? container.contains(.folderScriptNames)
    }

    struct Wrapper: Decodable { var scripts: [FMScriptEntry] }
}

/// The description of one field of a layout or portal (`fieldMetaData[i]`).
public struct FMFieldMetadata: Sendable, Hashable, Decodable {
    /// The field name (`TO::field` for related fields).
    public var name: String
    /// `normal`, `calculation` or `summary`.
    public var type: String
    /// `editText`, `popupList`, `popupMenu`, `checkBox`, `calendar`, `radioButtons`, `secureText`.
    public var displayType: String
    /// `text`, `number`, `date`, `time`, `timeStamp` or `container`.
    public var result: String
    /// The attached value list, when there is one.
    public var valueList: String?
    /// A global field.
    public var global: Bool
    /// Auto-enter options are set.
    public var autoEnter: Bool
    /// Four-digit-year validation.
    public var fourDigitYear: Bool
    /// The number of repetitions defined.
    public var maxRepeat: Int
    /// The maximum number of characters (0 = unlimited).
    public var maxCharacters: Int
    /// "Not empty" validation.
    public var notEmpty: Bool
    /// "Numeric only" validation.
    public var numeric: Bool
    /// "Time of day" validation.
    public var timeOfDay: Bool
    /// The first repetition shown on the layout.
    public var repetitionStart: Int
    /// The last repetition shown on the layout.
    public var repetitionEnd: Int

    /// Creates a field description.
    public init(name: String, type: String = "normal", displayType: String = "editText", result: String = "text",
                valueList: String? = nil, global: Bool = false, autoEnter: Bool = false, fourDigitYear: Bool = false,
                maxRepeat: Int = 1, maxCharacters: Int = 0, notEmpty: Bool = false, numeric: Bool = false,
                timeOfDay: Bool = false, repetitionStart: Int = 1, repetitionEnd: Int = 1) {
        self.name = name
        self.type = type
        self.displayType = displayType
        self.result = result
        self.valueList = valueList
        self.global = global
        self.autoEnter = autoEnter
        self.fourDigitYear = fourDigitYear
        self.maxRepeat = maxRepeat
        self.maxCharacters = maxCharacters
        self.notEmpty = notEmpty
        self.numeric = numeric
        self.timeOfDay = timeOfDay
        self.repetitionStart = repetitionStart
        self.repetitionEnd = repetitionEnd
    }

    enum CodingKeys: String, CodingKey {
        case name, type, displayType, result, valueList, global, autoEnter, fourDigitYear, maxRepeat
        case maxCharacters, notEmpty, numeric, timeOfDay, repetitionStart, repetitionEnd
    }

    /// Decodes a field description; booleans may be strings on old servers, missing keys take defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.lenientString(.type) ?? ""
        displayType = try c.lenientString(.displayType) ?? ""
        result = try c.lenientString(.result) ?? ""
        valueList = try c.lenientString(.valueList)
        global = try c.lenientBool(.global) ?? false
        autoEnter = try c.lenientBool(.autoEnter) ?? false
        fourDigitYear = try c.lenientBool(.fourDigitYear) ?? false
        maxRepeat = try c.lenientInt(.maxRepeat) ?? 1
        maxCharacters = try c.lenientInt(.maxCharacters) ?? 0
        notEmpty = try c.lenientBool(.notEmpty) ?? false
        numeric = try c.lenientBool(.numeric) ?? false
        timeOfDay = try c.lenientBool(.timeOfDay) ?? false
        repetitionStart = try c.lenientInt(.repetitionStart) ?? 1
        repetitionEnd = try c.lenientInt(.repetitionEnd) ?? 1
    }
}

/// A value list of a layout (`valueLists[i]`).
public struct FMValueList: Sendable, Hashable, Decodable {
    /// One value of a value list.
    public struct Item: Sendable, Hashable, Decodable {
        /// The displayed text.
        public var displayValue: String
        /// The stored value.
        public var value: String

        /// Creates a value-list item.
        public init(displayValue: String, value: String) {
            self.displayValue = displayValue
            self.value = value
        }

        enum CodingKeys: String, CodingKey { case displayValue, value }

        /// Decodes an item; numeric values become text, a missing display value is the value.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            value = try c.lenientString(.value) ?? ""
            displayValue = try c.lenientString(.displayValue) ?? value
        }
    }

    /// The value list name.
    public var name: String
    /// `customList` or `byField`.
    public var type: String
    /// The values.
    public var values: [Item]

    /// Creates a value list.
    public init(name: String, type: String, values: [Item]) {
        self.name = name
        self.type = type
        self.values = values
    }

    enum CodingKeys: String, CodingKey { case name, type, values }

    /// Decodes a value list.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.lenientString(.type) ?? ""
        values = try c.decodeIfPresent([Item].self, forKey: .values) ?? []
    }
}

/// The metadata of a layout (`GET /layouts/{layout}`): fields, portals and value lists.
public struct FMLayoutMetadata: Sendable, Hashable, Decodable {
    /// The fields on the layout.
    public var fieldMetaData: [FMFieldMetadata]
    /// The portals: portal object name (or table occurrence name) → its fields (`TO::field`).
    public var portalMetaData: [String: [FMFieldMetadata]]
    /// The value lists used on the layout (empty when none).
    public var valueLists: [FMValueList]

    /// Creates layout metadata.
    public init(fieldMetaData: [FMFieldMetadata], portalMetaData: [String: [FMFieldMetadata]] = [:], valueLists: [FMValueList] = []) {
        self.fieldMetaData = fieldMetaData
        self.portalMetaData = portalMetaData
        self.valueLists = valueLists
    }

    enum CodingKeys: String, CodingKey { case fieldMetaData, portalMetaData, valueLists }

    /// Decodes the layout metadata; `portalMetaData` and `valueLists` may be absent.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fieldMetaData = try c.decode([FMFieldMetadata].self, forKey: .fieldMetaData)
        portalMetaData = try c.decodeIfPresent([String: [FMFieldMetadata]].self, forKey: .portalMetaData) ?? [:]
        valueLists = try c.decodeIfPresent([FMValueList].self, forKey: .valueLists) ?? []
    }

    /// The field description of `name`, searching the layout then its portals.
    public func field(named name: String) -> FMFieldMetadata? {
        fieldMetaData.first { $0.name == name } ?? portalMetaData.values.lazy.flatMap { $0 }.first { $0.name == name }
    }
}

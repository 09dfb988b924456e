import Foundation

// The result types of SwiftFM 2.x (2022), under the names its callers wrote: `FMResult.DataInfo`,
// `FMProduct.ProductInfo`, `FMDatabases.Database`, `FMLayouts.Layout`, `FMLayoutMetaData.Response`,
// `FMScripts.Script`, with the `Comparable` conformances (by name) the originals had. Decoding is
// lenient: a key newer servers omit decodes as an empty value instead of failing the whole answer.

/// SwiftFM 2.x: the namespace of `DataInfo`, returned by `query`, `getRecords` and `getRecord`.
public enum FMResult {
    /// SwiftFM 2.x: `response.dataInfo` of a record fetch.
    public struct DataInfo: Codable, Sendable, Equatable {
        /// The database name.
        public let database: String
        /// The layout name.
        public let layout: String
        /// The table occurrence of the layout.
        public let table: String
        /// Records in the table.
        public let totalRecordCount: Int
        /// Records in the found set.
        public let foundCount: Int
        /// Records in this answer.
        public let returnedCount: Int

        /// Decodes leniently (missing keys become `""` / `0`); a negative count is an error, as in ``FMDataInfo``.
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            database = try c.decodeIfPresent(String.self, forKey: .database) ?? ""
            layout = try c.decodeIfPresent(String.self, forKey: .layout) ?? ""
            table = try c.decodeIfPresent(String.self, forKey: .table) ?? ""
            totalRecordCount = try c.decodeIfPresent(Int.self, forKey: .totalRecordCount) ?? 0
            foundCount = try c.decodeIfPresent(Int.self, forKey: .foundCount) ?? 0
            returnedCount = try c.decodeIfPresent(Int.self, forKey: .returnedCount) ?? 0
            for (key, value) in [(CodingKeys.totalRecordCount, totalRecordCount), (.foundCount, foundCount), (.returnedCount, returnedCount)]
            where value < 0 {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "dataInfo.\(key.stringValue) is negative (\(value))")
            }
        }
    }
}

/// SwiftFM 2.x: the namespace of `ProductInfo`.
public enum FMProduct {
    /// SwiftFM 2.x: `response.productInfo` of `GET /productInfo`.
    public struct ProductInfo: Codable, Sendable, Equatable {
        /// The product name.
        public let name: String
        /// The build date (`""` when the server omits it).
        public let buildDate: String
        /// The version (`""` when the server omits it).
        public let version: String
        /// The date format.
        public let dateFormat: String
        /// The time format.
        public let timeFormat: String
        /// The timestamp format.
        public let timeStampFormat: String

        /// Decodes leniently (missing keys become `""`).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decodeIfPresent(String.self, forKey: .name) ?? ""
            buildDate = try c.decodeIfPresent(String.self, forKey: .buildDate) ?? ""
            version = try c.decodeIfPresent(String.self, forKey: .version) ?? ""
            dateFormat = try c.decodeIfPresent(String.self, forKey: .dateFormat) ?? ""
            timeFormat = try c.decodeIfPresent(String.self, forKey: .timeFormat) ?? ""
            timeStampFormat = try c.decodeIfPresent(String.self, forKey: .timeStampFormat) ?? ""
        }
    }
}

/// SwiftFM 2.x: the namespace of `Database`.
public enum FMDatabases {
    /// SwiftFM 2.x: one entry of `GET /databases`.
    public struct Database: Codable, Sendable, Comparable {
        /// The database name (no extension).
        public let name: String
        /// Orders by name.
        public static func < (lhs: Database, rhs: Database) -> Bool { lhs.name < rhs.name }
    }
}

/// SwiftFM 2.x: the namespace of `Layout` and `FolderLayoutName`.
public enum FMLayouts {
    /// SwiftFM 2.x: one entry of `GET /layouts`: a layout or a folder.
    public struct Layout: Codable, Sendable, Comparable {
        /// The layout or folder name.
        public let name: String
        /// The table occurrence (layouts only).
        public let table: String?
        /// `true` for a folder.
        public let isFolder: Bool?
        /// The folder's contents.
        public let folderLayoutNames: [FolderLayoutName]?
        /// Orders by name.
        public static func < (lhs: Layout, rhs: Layout) -> Bool { lhs.name < rhs.name }
    }

    /// SwiftFM 2.x: an entry of a layout folder.
    public struct FolderLayoutName: Codable, Sendable, Comparable {
        /// The layout name.
        public let name: String
        /// The table occurrence (`""` for a nested folder).
        public let table: String

        /// Decodes leniently (a nested folder has no table).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            table = try c.decodeIfPresent(String.self, forKey: .table) ?? ""
        }
        /// Orders by name.
        public static func < (lhs: FolderLayoutName, rhs: FolderLayoutName) -> Bool { lhs.name < rhs.name }
    }
}

/// SwiftFM 2.x: the namespace of the layout metadata types.
public enum FMLayoutMetaData {
    /// SwiftFM 2.x: the `response` of `GET /layouts/{layout}`.
    public struct Response: Codable, Sendable {
        /// The fields on the layout.
        public let fieldMetaData: [Field]?
        /// The portals (modelled by the caller; kept opaque as in the original).
        public let portalMetaData: PortalMetaData?
        /// The value lists of the layout.
        public let valueLists: [ValueList]?
    }

    /// SwiftFM 2.x: one field of `fieldMetaData`.
    public struct Field: Codable, Sendable, Comparable {
        /// The field name.
        public let name: String
        /// `normal`, `calculation`, `summary`.
        public let type: String
        /// `editText`, `popupList`, …
        public let displayType: String
        /// `text`, `number`, `date`, `time`, `timeStamp`, `container`.
        public let result: String
        /// A global field.
        public let global: Bool
        /// Auto-enter.
        public let autoEnter: Bool
        /// Four-digit year.
        public let fourDigitYear: Bool
        /// The number of repetitions.
        public let maxRepeat: Int
        /// The maximum number of characters.
        public let maxCharacters: Int
        /// Not-empty validation.
        public let notEmpty: Bool
        /// Numeric-only validation.
        public let numeric: Bool
        /// Time of day validation.
        public let timeOfDay: Bool
        /// The first repetition shown.
        public let repetitionStart: Int
        /// The last repetition shown.
        public let repetitionEnd: Int
        /// The attached value list, if any.
        public let valueList: String?

        /// Decodes leniently (missing keys become `""`, `false`, `0` or `1`).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            type = try c.decodeIfPresent(String.self, forKey: .type) ?? ""
            displayType = try c.decodeIfPresent(String.self, forKey: .displayType) ?? ""
            result = try c.decodeIfPresent(String.self, forKey: .result) ?? ""
            global = try c.decodeIfPresent(Bool.self, forKey: .global) ?? false
            autoEnter = try c.decodeIfPresent(Bool.self, forKey: .autoEnter) ?? false
            fourDigitYear = try c.decodeIfPresent(Bool.self, forKey: .fourDigitYear) ?? false
            maxRepeat = try c.decodeIfPresent(Int.self, forKey: .maxRepeat) ?? 1
            maxCharacters = try c.decodeIfPresent(Int.self, forKey: .maxCharacters) ?? 0
            notEmpty = try c.decodeIfPresent(Bool.self, forKey: .notEmpty) ?? false
            numeric = try c.decodeIfPresent(Bool.self, forKey: .numeric) ?? false
            timeOfDay = try c.decodeIfPresent(Bool.self, forKey: .timeOfDay) ?? false
            repetitionStart = try c.decodeIfPresent(Int.self, forKey: .repetitionStart) ?? 1
            repetitionEnd = try c.decodeIfPresent(Int.self, forKey: .repetitionEnd) ?? 1
            valueList = try c.decodeIfPresent(String.self, forKey: .valueList)
        }
        /// Orders by name.
        public static func < (lhs: Field, rhs: Field) -> Bool { lhs.name < rhs.name }
    }

    /// SwiftFM 2.x: `portalMetaData`, left for the caller to model (its content is schema-specific).
    public struct PortalMetaData: Codable, Sendable {}

    /// SwiftFM 2.x: one value list.
    public struct ValueList: Codable, Sendable, Comparable {
        /// The value list name.
        public let name: String
        /// `customList` or `byField`.
        public let type: String
        /// The values.
        public let values: [Value]

        /// Decodes leniently.
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            type = try c.decodeIfPresent(String.self, forKey: .type) ?? ""
            values = try c.decodeIfPresent([Value].self, forKey: .values) ?? []
        }
        /// Orders by name.
        public static func < (lhs: ValueList, rhs: ValueList) -> Bool { lhs.name < rhs.name }
    }

    /// SwiftFM 2.x: one value of a value list.
    public struct Value: Codable, Sendable, Comparable {
        /// The value shown.
        public let displayValue: String
        /// The value stored.
        public let value: String

        /// Decodes leniently (`displayValue` defaults to `value`).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            value = try c.decodeIfPresent(String.self, forKey: .value) ?? ""
            displayValue = try c.decodeIfPresent(String.self, forKey: .displayValue) ?? value
        }
        /// Orders by display value.
        public static func < (lhs: Value, rhs: Value) -> Bool { lhs.displayValue < rhs.displayValue }
    }
}

/// SwiftFM 2.x: the namespace of `Script` and `FolderScriptName`.
public enum FMScripts {
    /// SwiftFM 2.x: one entry of `GET /scripts`: a script or a folder.
    public struct Script: Codable, Sendable, Comparable {
        /// The script or folder name.
        public let name: String
        /// `true` for a folder.
        public let isFolder: Bool
        /// The folder's contents.
        public let folderScriptNames: [FolderScriptName]?

        /// Decodes leniently (`isFolder` defaults to `false`).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            isFolder = try c.decodeIfPresent(Bool.self, forKey: .isFolder) ?? false
            folderScriptNames = try c.decodeIfPresent([FolderScriptName].self, forKey: .folderScriptNames)
        }
        /// Orders by name.
        public static func < (lhs: Script, rhs: Script) -> Bool { lhs.name < rhs.name }
    }

    /// SwiftFM 2.x: an entry of a script folder.
    public struct FolderScriptName: Codable, Sendable, Comparable {
        /// The script name.
        public let name: String
        /// `true` for a nested folder.
        public let isFolder: Bool

        /// Decodes leniently (`isFolder` defaults to `false`).
        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            isFolder = try c.decodeIfPresent(Bool.self, forKey: .isFolder) ?? false
        }
        /// Orders by name.
        public static func < (lhs: FolderScriptName, rhs: FolderScriptName) -> Bool { lhs.name < rhs.name }
    }
}

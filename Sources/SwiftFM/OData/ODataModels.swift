import Foundation

/// One page of an OData read (``FMOData/records(from:query:completion:)``).
///
/// `@unchecked Sendable`: the rows are `JSONSerialization`-shaped values (immutable Foundation values behind
/// `Any`) stored in `let`s and never mutated after creation.
public struct FMODataPage: @unchecked Sendable, CustomStringConvertible {
    /// The rows, as FileMaker sent them (field name → value: `String`, `NSNumber`, `NSNull`, or arrays of
    /// rows for an expanded navigation property); the row annotations (`@id`, `@editLink`, `@odata.id`, …)
    /// are left out.
    public let rows: [[String: Any]]
    /// The number of matching records, when the query asked for it (``FMODataQuery/count``).
    public let count: Int?
    /// The server's link to the next page (`@odata.nextLink`), `nil` on the last page.
    public let nextLink: URL?

    /// Creates a page (tests, custom sources).
    public init(rows: [[String: Any]], count: Int? = nil, nextLink: URL? = nil) {
        self.rows = rows
        self.count = count
        self.nextLink = nextLink
    }

    /// `"FMODataPage(rows: n, count: …, nextLink: yes/no)"`.
    public var description: String {
        "FMODataPage(rows: \(rows.count), count: \(count.map(String.init) ?? "nil"), nextLink: \(nextLink == nil ? "no" : "yes"))"
    }
}

/// One page of an OData read decoded into `T` (``FMOData/records(as:from:query:completion:)``).
public struct FMODataTypedPage<T>: CustomStringConvertible {
    /// The rows, decoded with FileMaker's rules (as ``DataAPI/getRecords(as:layout:offset:limit:sort:options:completion:)``).
    public let rows: [T]
    /// The number of matching records, when the query asked for it.
    public let count: Int?
    /// The server's link to the next page, `nil` on the last page.
    public let nextLink: URL?

    /// Creates a page.
    public init(rows: [T], count: Int? = nil, nextLink: URL? = nil) {
        self.rows = rows
        self.count = count
        self.nextLink = nextLink
    }

    /// `"FMODataTypedPage<T>(rows: n, …)"`.
    public var description: String {
        "FMODataTypedPage<\(T.self)>(rows: \(rows.count), count: \(count.map(String.init) ?? "nil"), nextLink: \(nextLink == nil ? "no" : "yes"))"
    }
}

extension FMODataTypedPage: Sendable where T: Sendable {}

/// What a script run through OData returned (``FMOData/runScript(_:parameter:completion:)``).
public struct FMODataScriptResult: Sendable, Equatable, CustomStringConvertible {
    /// The script's own error code, `"0"` when it succeeded.
    public var code: String
    /// The text the script passed to Exit Script, or `nil` when it passed none.
    public var resultParameter: String?

    /// Creates a result.
    public init(code: String, resultParameter: String?) {
        self.code = code
        self.resultParameter = resultParameter
    }

    /// `"FMODataScriptResult(code: …, resultParameter: …)"`.
    public var description: String {
        "FMODataScriptResult(code: \(Redaction.oneLine(code)), resultParameter: \(resultParameter.map(Redaction.oneLine) ?? "nil"))"
    }
}

/// FileMaker's field type, as read from a property's Edm type.
public enum FMODataFieldType: String, Sendable, Equatable {
    /// Text (`Edm.String`).
    case text
    /// Number (`Edm.Decimal`, or another numeric Edm type).
    case number
    /// Date (`Edm.Date`).
    case date
    /// Time (`Edm.TimeOfDay`).
    case time
    /// Timestamp (`Edm.DateTimeOffset`).
    case timestamp
    /// Container (`Edm.Binary`, `Edm.Stream`).
    case container
    /// Another Edm type.
    case other

    /// The FileMaker type of an Edm type name.
    init(edm: String) {
        switch edm {
        case "Edm.String": self = .text
        case "Edm.Decimal", "Edm.Double", "Edm.Single", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte": self = .number
        case "Edm.Date": self = .date
        case "Edm.TimeOfDay": self = .time
        case "Edm.DateTimeOffset": self = .timestamp
        case "Edm.Binary", "Edm.Stream": self = .container
        default: self = .other
        }
    }
}

/// One field of an entity type in `$metadata`.
public struct FMODataProperty: Sendable, Equatable {
    /// The field name.
    public var name: String
    /// The Edm type (`Edm.String`, `Edm.Decimal`, …).
    public var edmType: String
    /// FileMaker's type, from the Edm type.
    public var fileMakerType: FMODataFieldType
    /// `false` when the field must not be empty.
    public var nullable: Bool
    /// The auto-enter default (`CURRENT_TIMESTAMP`, `USER`, a constant), when there is one.
    public var defaultValue: String?
    /// Every annotation, by term as written (`com.filemaker.odata.FieldID`, `Org.OData.Core.V1.Permissions`, …):
    /// its `String`, `Bool`, `Int` value or enum member as text.
    public var annotations: [String: String]

    /// Creates a property.
    public init(name: String, edmType: String, nullable: Bool = true, defaultValue: String? = nil, annotations: [String: String] = [:]) {
        self.name = name
        self.edmType = edmType
        self.fileMakerType = FMODataFieldType(edm: edmType)
        self.nullable = nullable
        self.defaultValue = defaultValue
        self.annotations = annotations
    }

    /// The FileMaker annotation `com.filemaker.odata.<name>`.
    public func fileMakerAnnotation(_ name: String) -> String? { annotations["com.filemaker.odata." + name] }

    /// The immutable field id (`FMFID:…`), when the server sends it.
    public var fieldID: String? { fileMakerAnnotation("FieldID") }
    /// A calculation field.
    public var isCalculation: Bool { fileMakerAnnotation("Calculation") == "true" }
    /// A summary field.
    public var isSummary: Bool { fileMakerAnnotation("Summary") == "true" }
    /// A global field.
    public var isGlobal: Bool { fileMakerAnnotation("Global") == "true" }
    /// A serial number or another auto-generated value.
    public var isAutoGenerated: Bool { fileMakerAnnotation("AutoGenerated") == "true" }
    /// An indexed field.
    public var isIndexed: Bool { fileMakerAnnotation("Index") == "true" }
    /// The modification timestamp FileMaker updates on every change.
    public var isVersionID: Bool { fileMakerAnnotation("VersionID") == "true" }
    /// The number of repetitions, when the field repeats.
    public var maxRepetitions: Int? { fileMakerAnnotation("MaxRepetitions").flatMap { Int($0) } }
    /// The field comment.
    public var comment: String? { fileMakerAnnotation("FMComment") }
    /// `true` when the field cannot be written (calculations, summaries: `Org.OData.Core.V1.Permissions` is `Read`).
    public var isReadOnly: Bool {
        annotations["Org.OData.Core.V1.Permissions"].map { $0.hasSuffix("/Read") || $0 == "Read" } ?? false
    }
}

/// A relationship from one table occurrence to another, in `$metadata`.
public struct FMODataNavigationProperty: Sendable, Equatable {
    /// The name (the related table occurrence), usable in ``FMODataQuery/expand``.
    public var name: String
    /// The related entity type's qualified name (without `Collection(…)`).
    public var targetType: String
    /// `true` for `Collection(…)` (every FileMaker relationship).
    public var isCollection: Bool

    /// Creates a navigation property.
    public init(name: String, targetType: String, isCollection: Bool) {
        self.name = name
        self.targetType = targetType
        self.isCollection = isCollection
    }
}

/// One entity type (a table occurrence's record shape) in `$metadata`.
public struct FMODataEntityType: Sendable, Equatable {
    /// The type name (FileMaker writes `<table occurrence>_`).
    public var name: String
    /// The key fields, in order; empty when the table has none (address records by `ROWID` then).
    public var key: [String]
    /// The fields, in document order.
    public var properties: [FMODataProperty]
    /// The relationships.
    public var navigationProperties: [FMODataNavigationProperty]
    /// Every annotation of the type, by term (`com.filemaker.odata.TableID`, `…BestRowID`, …).
    public var annotations: [String: String]

    /// Creates an entity type.
    public init(name: String, key: [String] = [], properties: [FMODataProperty] = [], navigationProperties: [FMODataNavigationProperty] = [],
                annotations: [String: String] = [:]) {
        self.name = name
        self.key = key
        self.properties = properties
        self.navigationProperties = navigationProperties
        self.annotations = annotations
    }

    /// The immutable table id (`FMTID:…`), when the server sends it.
    public var tableID: String? { annotations["com.filemaker.odata.TableID"] }
    /// The table comment.
    public var comment: String? { annotations["com.filemaker.odata.FMComment"] }
    /// The field `name`, or `nil`.
    public func property(named name: String) -> FMODataProperty? { properties.first { $0.name == name } }
}

/// One entity set (a table occurrence you read and write) in `$metadata`.
public struct FMODataEntitySet: Sendable, Equatable {
    /// The name used in URLs (``FMOData/records(from:query:completion:)``'s `from`).
    public var name: String
    /// The qualified name of its entity type.
    public var entityType: String
    /// Navigation property → target entity set.
    public var navigationBindings: [String: String]

    /// Creates an entity set.
    public init(name: String, entityType: String, navigationBindings: [String: String] = [:]) {
        self.name = name
        self.entityType = entityType
        self.navigationBindings = navigationBindings
    }
}

/// A database's `$metadata` (read as JSON CSDL): its tables as entity sets and types, fields with their Edm and
/// FileMaker types, keys, relationships and FileMaker's annotations.
public struct FMODataMetadata: Sendable, Equatable {
    /// The schema namespace (`<db>.fmp12` in FileMaker's JSON CSDL).
    public var namespace: String
    /// The OData engine's version (`ServerVersion`, e.g. `"OData Engine 22.0.2"`), when sent.
    public var serverVersion: String?
    /// The schema version (`Org.OData.Core.V1.SchemaVersion`), when sent.
    public var schemaVersion: String?
    /// The entity types, in document order.
    public var entityTypes: [FMODataEntityType]
    /// The entity sets, in document order.
    public var entitySets: [FMODataEntitySet]
    /// The scripts the server lists as actions (FileMaker Server 26 and later), in document order.
    public var scripts: [String]

    /// Creates metadata.
    public init(namespace: String, serverVersion: String? = nil, schemaVersion: String? = nil, entityTypes: [FMODataEntityType] = [],
                entitySets: [FMODataEntitySet] = [], scripts: [String] = []) {
        self.namespace = namespace
        self.serverVersion = serverVersion
        self.schemaVersion = schemaVersion
        self.entityTypes = entityTypes
        self.entitySets = entitySets
        self.scripts = scripts
    }

    /// The entity set `name`, or `nil`.
    public func entitySet(named name: String) -> FMODataEntitySet? { entitySets.first { $0.name == name } }

    /// The entity type of the set `name`, or `nil`.
    public func entityType(ofSet name: String) -> FMODataEntityType? {
        guard let set = entitySet(named: name) else { return nil }
        let short = set.entityType.split(separator: ".").last.map(String.init) ?? set.entityType
        return entityTypes.first { $0.name == set.entityType || $0.name == short || namespace + "." + $0.name == set.entityType }
    }
}

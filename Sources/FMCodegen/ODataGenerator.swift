import Foundation
import SwiftFM

/// Writes one Swift file per OData entity set of a `$metadata` document: a `Codable`, `Sendable`, `Hashable`
/// struct to read rows with ``FMOData/records(as:from:query:completion:)``.
///
/// The rules are the layout generator's (``CodeGenerator``): names made readable and distinct after Unicode
/// normalisation and case folding (so files do not meet on a case-insensitive disk), type and file names at
/// most 100 UTF-8 bytes, every set of the document taking part in naming, output depending only on the
/// metadata. Types: `Edm.String` → `String?`; `Edm.Decimal` and the other numbers → `Double?`; `Edm.Date`,
/// `Edm.TimeOfDay`, `Edm.DateTimeOffset` → `Date?` (read with SwiftFM's FileMaker rules); a container
/// (`Edm.Binary`, `Edm.Stream`) → `String?`, its base64 text, sent only when `$select` names it;
/// `Edm.Boolean` → `Bool?`; `Edm.Guid`, `Edm.Duration` → `String?`. A property of another type
/// (`Collection(…)`, a complex type, a type the document does not define) is listed in the type's
/// documentation but not generated, nor are navigation properties (their values are ignored when decoding).
public enum ODataCodeGenerator {
    /// The files for every usable entity set of `metadata`, sorted by name, and the sets skipped (an empty
    /// name, an entity type the document does not define). `typePrefix` starts every type name.
    public static func output(_ metadata: FMODataMetadata, typePrefix: String = "") -> CodegenOutput {
        var skipped: [SkippedLayout] = []
        var usable: [[UInt32]: (FMODataEntitySet, FMODataEntityType)] = [:]
        var names: [String] = []
        var seen = Set<[UInt32]>()
        let types = TypeIndex(metadata)
        for set in metadata.entitySets {
            guard !set.name.isEmpty else {
                skipped.append(SkippedLayout(name: set.name, reason: "the entity set name is empty"))
                continue
            }
            guard seen.insert(Naming.exactKey(set.name)).inserted else { continue }
            names.append(set.name)
            guard let type = types.type(of: set) else {
                skipped.append(SkippedLayout(name: set.name, reason: "its entity type \(set.entityType) is not in the document"))
                continue
            }
            usable[Naming.exactKey(set.name)] = (set, type)
        }
        names.sort { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
        var typeNames = Namer(reserved: CodeGenerator.reservedTypeNames.union(["FMODataKey", "FMOData"]), maxBytes: CodeGenerator.maxTypeNameBytes)
        var files: [GeneratedFile] = []
        let database = databaseName(metadata.namespace)
        for name in names {
            let typeName = typeNames.claim(typePrefix.isEmpty ? Naming.type(name) : Naming.type(typePrefix + " " + name))
            guard let entry = usable[Naming.exactKey(name)] else { continue }
            let (set, type) = entry
            files.append(GeneratedFile(name: typeName + ".swift", contents: file(set, type, typeName: typeName, database: database)))
        }
        return CodegenOutput(files: files.sorted { $0.name < $1.name }, skipped: skipped)
    }

    /// The entity types of a document by name, for ``FMODataMetadata/entityType(ofSet:)``'s rule read from
    /// the set itself: the first type (in document order) named as the set's `EntityType`, as its last
    /// dotted part, or as it without the schema namespace. One lookup per set, not a scan of every set and
    /// type (a document with many sets took quadratic time), and two sets whose names are canonically
    /// equal but not the same scalars each get their own type.
    struct TypeIndex {
        private var first: [String: Int] = [:]
        private let metadata: FMODataMetadata

        init(_ metadata: FMODataMetadata) {
            self.metadata = metadata
            for (index, type) in metadata.entityTypes.enumerated() where first[type.name] == nil {
                first[type.name] = index
            }
        }

        /// The entity type of `set`, or `nil` when the document does not define it.
        func type(of set: FMODataEntitySet) -> FMODataEntityType? {
            let qualified = set.entityType
            let short = qualified.split(separator: ".").last.map(String.init) ?? qualified
            var candidates = [first[qualified], first[short]]
            let prefix = metadata.namespace + "."
            if qualified.hasPrefix(prefix) { candidates.append(first[String(qualified.dropFirst(prefix.count))]) }
            return candidates.compactMap { $0 }.min().map { metadata.entityTypes[$0] }
        }
    }

    /// The database name in a `$metadata` namespace: `com.filemaker.odata.Music.fmp12` or `Music.fmp12` → `Music`.
    public static func databaseName(_ namespace: String) -> String {
        var name = Substring(namespace)
        if name.hasPrefix("com.filemaker.odata.") { name = name.dropFirst("com.filemaker.odata.".count) }
        if name.lowercased().hasSuffix(".fmp12") { name = name.dropLast(".fmp12".count) }
        return String(name)
    }

    /// The Swift type of a property, or `nil` for a type whose JSON value is not one a property can be
    /// sure to hold (`Collection(…)`, a complex or enumeration type, a geography, `Edm.Untyped`, a name
    /// the document does not define): such a property is not generated, since a `String?` there would
    /// make every row fail to decode. `Edm.Boolean` is `Bool?`; `Edm.Guid` and `Edm.Duration` (JSON text) are `String?`.
    static func swiftType(_ property: FMODataProperty) -> String? {
        switch property.fileMakerType {
        case .number: return "Double?"
        case .date, .time, .timestamp: return "Date?"
        case .text, .container: return "String?"
        case .other:
            switch property.edmType {
            case "Edm.Boolean": return "Bool?"
            case "Edm.Guid", "Edm.Duration": return "String?"
            default: return nil
            }
        }
    }

    /// `false` for what a create or update cannot send: calculations, summaries, globals (read-only in
    /// OData), auto-generated values, the modification stamp, containers (written by an upload), and
    /// whatever `$metadata` marks read-only.
    static func isWritable(_ property: FMODataProperty) -> Bool {
        swiftType(property) != nil && !(property.isReadOnly || property.isCalculation || property.isSummary || property.isGlobal || property.isAutoGenerated
          || property.isVersionID || property.fileMakerType == .container)
    }

    static func describe(_ property: FMODataProperty, isKey: Bool) -> String {
        var facts: [String]
        switch property.fileMakerType {
        case .text: facts = ["text"]
        case .number: facts = ["number"]
        case .date: facts = ["date"]
        case .time: facts = ["time"]
        case .timestamp: facts = ["timestamp"]
        case .container: facts = ["container"]
        case .other: facts = ["\(Naming.doc(property.edmType)) (read as \(swiftType(property)?.dropLast() ?? "nothing"))"]
        }
        if property.fileMakerType != .other { facts[0] += " (\(Naming.doc(property.edmType)))" }
        if property.fileMakerType == .container { facts.append("base64, present only when `$select` names it") }
        if isKey { facts.append("key") }
        if property.isCalculation { facts.append("calculation") }
        if property.isSummary { facts.append("summary") }
        if property.isAutoGenerated { facts.append("auto-generated") }
        if property.isVersionID { facts.append("modification timestamp") }
        if property.isGlobal { facts.append("global (always null in OData)") }
        if let repetitions = property.maxRepetitions, repetitions > 1 { facts.append("\(repetitions) repetitions") }
        if !property.nullable { facts.append("never empty") }
        if let value = property.defaultValue { facts.append("default \(Naming.doc(value))") }
        if let id = property.fieldID { facts.append(Naming.doc(id)) }
        if !isWritable(property) { facts.append("read only") }
        return "`\(Naming.doc(property.name))`: " + facts.joined(separator: ", ") + "."
    }

    private static func file(_ set: FMODataEntitySet, _ type: FMODataEntityType, typeName: String, database: String) -> String {
        var out = ""
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        var namer = Namer(reserved: ["entitySet", "keyFields", "fieldNames", "writableFieldNames", "hashValue", "init", "encode", "CodingKeys"])
        var seen = Set<[UInt32]>()
        var properties: [CodeGenerator.Property] = []
        var described: [FMODataProperty] = []
        var unread: [FMODataProperty] = []
        let keys = Set(type.key)
        for property in type.properties where seen.insert(Naming.exactKey(property.name)).inserted {
            described.append(property)
            guard let swiftType = swiftType(property) else {
                unread.append(property)
                continue
            }
            properties.append(CodeGenerator.Property(name: namer.claim(Naming.property(property.name)), fileMakerName: property.name,
                                                     swiftType: swiftType, doc: describe(property, isKey: keys.contains(property.name))))
        }
        let table = type.tableID.map { ", table occurrence id `\(Naming.doc($0))`" } ?? ""
        line("// Generated by fm-codegen from the OData $metadata of database \"\(Naming.doc(database))\", entity set \"\(Naming.doc(set.name))\".")
        line("// Do not edit: run fm-codegen --odata again when the schema changes.")
        line()
        line("import Foundation")
        line("import SwiftFM")
        line()
        line("/// A row of entity set `\(Naming.doc(set.name))` (entity type `\(Naming.doc(type.name))`\(table)) of database `\(Naming.doc(database))`.")
        line("///")
        line("/// Generated by `fm-codegen --odata` from `$metadata`; read rows with `FMOData.records(as:from:query:)`.")
        line("/// Every field is optional: `nil` is an empty field, or one the query's `$select` left out.")
        if !unread.isEmpty {
            line("///")
            line("/// Not read (no Swift type holds their JSON for sure): "
                 + unread.map { "`\(Naming.doc($0.name))` (\(Naming.doc($0.edmType)))" }.joined(separator: ", ") + ".")
        }
        line("public struct \(typeName): Codable, Sendable, Hashable {")
        line("    /// The entity set these rows are read from and written to.")
        line("    public static let entitySet = \"\(Naming.literal(set.name))\"")

        let ambiguous = CodeGenerator.ambiguousProperties(properties)
        func list(_ names: [String]) -> String {
            names.isEmpty ? "[]" : "[" + names.map { "\"\(Naming.literal($0))\"" }.joined(separator: ", ") + "]"
        }
        line("    /// The key fields, in order (`FMODataKey` parts); empty when the table has none: address rows by `ROWID`.")
        line("    public static let keyFields: [String] = \(list(type.key))")
        line("    /// Every field's exact name, in `$metadata` order (for `FMODataQuery.select`).")
        line("    public static let fieldNames: [String] = \(list(described.map(\.name)))")
        line("    /// The fields a create or update may send (not calculations, summaries, globals, auto-generated values or containers).")
        line("    public static let writableFieldNames: [String] = \(list(described.filter(isWritable).map(\.name)))")
        for property in properties {
            line()
            line("    /// \(property.doc)")
            line("    public var \(Naming.code(property.name)): \(property.swiftType)")
        }
        CodeGenerator.emitInit(&out, fields: properties.map { ($0.name, $0.swiftType, "nil") }, indent: "    ", what: "a row")
        CodeGenerator.emitCodingKeys(&out, properties, indent: "    ", what: "The exact field names.", exact: !ambiguous.isEmpty)
        CodeGenerator.emitExactRowDecoder(&out, properties, ambiguous: ambiguous, indent: "    ", keyedBy: "the field names")
        line("}")
        return out
    }
}

/// Reads a saved `$metadata` document for ``ODataCodeGenerator``.
public enum ODataMetadataSource {
    /// A `$metadata` file that cannot be read.
    public struct Failure: Error, CustomStringConvertible {
        /// What is wrong, and where.
        public var description: String
    }

    /// Reads `$metadata` in either form FileMaker serves: JSON CSDL (`Accept: application/json`) or XML
    /// CSDL (the default), told apart by the first character. Read with SwiftFM's own readers: no XML
    /// library is linked.
    ///
    /// - Throws: ``Failure`` naming the file and the problem.
    public static func read(_ file: URL) throws -> FMODataMetadata {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw Failure(description: "\(file.path): \(error.localizedDescription)")
        }
        return try read(data, name: file.path)
    }

    /// Reads `$metadata` from `data` (JSON or XML CSDL); `name` names it in errors.
    ///
    /// - Throws: ``Failure`` naming the problem.
    public static func read(_ data: Data, name: String = "$metadata") throws -> FMODataMetadata {
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) {
            throw Failure(description: "\(name): the document is UTF-16 (save it as UTF-8)")
        }
        let first = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        do {
            if first == UInt8(ascii: "<") { return try ODataXML.metadata(data) }
            if first == UInt8(ascii: "{") { return try FMODataMetadata(json: data) }
        } catch let error as FMError {
            throw Failure(description: "\(name): not a JSON CSDL document: \(error.message)")
        } catch {
            throw Failure(description: "\(name): \(error)")
        }
        throw Failure(description: "\(name): neither JSON nor XML CSDL (save the answer of GET /fmi/odata/v4/{database}/$metadata)")
    }
}

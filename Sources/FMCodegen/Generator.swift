import Foundation
import SwiftFM

/// What the generator reads: one database's layouts and their metadata, however they were obtained
/// (a live server, an emulator, a schema file through an in-process emulator, a metadata file).
public struct CodegenInput: Sendable, Hashable {
    /// One layout.
    public struct Layout: Sendable, Hashable {
        /// The layout name.
        public var name: String
        /// The layout's table occurrence (`nil` when the server does not say).
        public var table: String?
        /// The layout's fields and portals.
        public var metadata: FMLayoutMetadata

        /// Describes a layout.
        public init(name: String, table: String?, metadata: FMLayoutMetadata) {
            self.name = name
            self.table = table
            self.metadata = metadata
        }
    }

    /// The database (file) name.
    public var database: String
    /// The layouts, in any order (the output does not depend on it).
    public var layouts: [Layout]
    /// The database's other layouts, not generated: they take part in naming, so a layout's type and file
    /// name do not depend on which layouts are generated.
    public var otherLayouts: [String]
    /// Layouts that could not be read, and why.
    public var skipped: [SkippedLayout]

    /// Describes a database's layouts.
    public init(database: String, layouts: [Layout], otherLayouts: [String] = [], skipped: [SkippedLayout] = []) {
        self.database = database
        self.layouts = layouts
        self.otherLayouts = otherLayouts
        self.skipped = skipped
    }
}

/// A layout that is not generated, and why.
public struct SkippedLayout: Sendable, Hashable, CustomStringConvertible {
    /// The layout name.
    public var name: String
    /// Why it is skipped.
    public var reason: String

    /// Describes a skipped layout.
    public init(name: String, reason: String) {
        self.name = name
        self.reason = reason
    }

    /// `layout "X": reason`.
    public var description: String { "layout \"\(Naming.literal(name))\": \(reason)" }
}

/// One generated Swift file.
public struct GeneratedFile: Sendable, Hashable {
    /// The file name (`Artists.swift`).
    public var name: String
    /// The file's text.
    public var contents: String
}

/// What the generator gives: the files, and the layouts it skipped.
public struct CodegenOutput: Sendable, Hashable {
    /// One file per generated layout, sorted by name.
    public var files: [GeneratedFile]
    /// The layouts not generated (unreadable, or unusable such as an empty name), with the reason.
    public var skipped: [SkippedLayout]
}

/// Writes one Swift file per layout: a `Codable`, `Sendable`, `Hashable` struct adopting `FMLayoutRecord`.
///
/// Type mapping (FileMaker `result` → Swift): text → `String?`; number → `Double?` (FileMaker numbers are
/// decimal; `Double` holds every integer up to 2^53 exactly and 15-17 significant digits); date, time,
/// timestamp → `Date?` (read with SwiftFM's FileMaker rules, in UTC unless the call sets a time zone);
/// container → `URL?`. A repeating field is an array (`[String]?`, `[Double?]?`, …). A portal is an array
/// of a nested `…Row` struct with `recordId`, `modId` and its fields, named after the portal object name,
/// and coded (`Codable`) under the portal's name as an array of rows.
/// Fields FileMaker fills itself (auto-enter, calculations, summaries, globals) and containers are
/// marked not writable: a create or edit never sends them.
/// Output depends only on the metadata: same metadata, same bytes.
public enum CodeGenerator {
    /// The longest type (and file) name, in UTF-8 bytes, before `.swift`: far below the 255 bytes of a file name.
    static let maxTypeNameBytes = 100

    /// The files for every layout of `input`, sorted by file name; `typePrefix` starts every type name
    /// (to keep two databases, or a layout named like one of your types, apart in one module).
    public static func generate(_ input: CodegenInput, typePrefix: String = "") -> [GeneratedFile] {
        output(input, typePrefix: typePrefix).files
    }

    /// The files for every usable layout of `input`, and the layouts skipped (those `input` already
    /// skipped, and those that cannot be generated, such as a layout with an empty name).
    public static func output(_ input: CodegenInput, typePrefix: String = "") -> CodegenOutput {
        var skipped = input.skipped
        var byName: [[UInt32]: CodegenInput.Layout] = [:]
        for layout in input.layouts {
            if layout.name.isEmpty {
                skipped.append(SkippedLayout(name: layout.name, reason: "the layout name is empty"))
            } else if byName[Naming.exactKey(layout.name)] == nil {
                byName[Naming.exactKey(layout.name)] = layout
            }
        }
        // Every layout of the database takes part in naming, generated or not, in one fixed order.
        var names: [String] = []
        var seen = Set<[UInt32]>()
        for name in input.layouts.map(\.name) + input.otherLayouts where !name.isEmpty && seen.insert(Naming.exactKey(name)).inserted {
            names.append(name)
        }
        names.sort { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
        var types = Namer(reserved: reservedTypeNames, maxBytes: maxTypeNameBytes)
        var files: [GeneratedFile] = []
        for name in names {
            let typeName = types.claim(typePrefix.isEmpty ? Naming.type(name) : Naming.type(typePrefix + " " + name))
            guard let layout = byName[Naming.exactKey(name)] else { continue }
            files.append(GeneratedFile(name: typeName + ".swift", contents: file(layout, typeName: typeName, database: input.database)))
        }
        return CodegenOutput(files: files.sorted { $0.name < $1.name }, skipped: skipped)
    }

    /// Type names that would hide a type the generated code uses.
    static let reservedTypeNames: Set<String> = [
        "String", "Double", "Date", "URL", "Codable", "Sendable", "Hashable", "CodingKey", "Swift", "Foundation",
        "SwiftFM", "FMLayoutRecord", "FMLayoutField", "FMPortals", "Any", "Self", "Type", "Protocol", "Optional",
        "Array", "Decodable", "Encodable", "Decoder", "Encoder", "CaseIterable",
    ]

    struct Property {
        var name: String
        var fileMakerName: String
        var swiftType: String
        var doc: String
    }

    /// The Swift type of a field.
    static func swiftType(_ field: FMFieldMetadata) -> String {
        let base: String
        switch field.result.lowercased() {
        case "number": base = "Double"
        case "date", "time", "timestamp": base = "Date"
        case "container": base = "URL"
        default: base = "String"
        }
        guard field.maxRepeat > 1 else { return base + "?" }
        return base == "String" ? "[String]?" : "[\(base)?]?"
    }

    static func kind(_ field: FMFieldMetadata) -> String {
        switch field.result.lowercased() {
        case "number": return ".number"
        case "date": return ".date"
        case "time": return ".time"
        case "timestamp": return ".timestamp"
        case "container": return ".container"
        default: return ".text"
        }
    }

    /// `false` for what FileMaker fills itself (auto-enter: serials, creation and modification stamps;
    /// calculations; summaries; globals) and for containers (written only by an upload).
    static func isWritable(_ field: FMFieldMetadata) -> Bool {
        ["normal", ""].contains(field.type.lowercased()) && !field.global && !field.autoEnter && field.result.lowercased() != "container"
    }

    /// `TO::field` → (`TO`, `field`); a plain name → (`nil`, name).
    static func split(_ name: String) -> (occurrence: String?, field: String) {
        guard let range = name.range(of: "::") else { return (nil, name) }
        return (String(name[..<range.lowerBound]), String(name[range.upperBound...]))
    }

    /// The readable base name of a field seen from `home` (the layout's or portal's table occurrence).
    static func baseName(_ name: String, home: String?) -> String {
        let (occurrence, field) = split(name)
        guard let occurrence, occurrence != home else { return Naming.property(field) }
        return Naming.property(occurrence + " " + field)
    }

    static func describe(_ field: FMFieldMetadata) -> String {
        var facts = [field.result.isEmpty ? "text" : field.result]
        switch field.type.lowercased() {
        case "calculation": facts.append("calculation")
        case "summary": facts.append("summary")
        default: break
        }
        if field.autoEnter { facts.append("auto-enter") }
        if field.global { facts.append("global") }
        if field.maxRepeat > 1 { facts.append("\(field.maxRepeat) repetitions") }
        if !isWritable(field) { facts.append("read only (a create or edit never sends it)") }
        return "`\(Naming.doc(field.name))`: " + facts.joined(separator: ", ") + "."
    }

    /// One property per field name; names that differ only in Unicode form (`café` composed and
    /// decomposed) are two fields, so two properties.
    private static func properties(_ fields: [FMFieldMetadata], home: String?, namer: inout Namer) -> [Property] {
        var seen = Set<[UInt32]>()
        var result: [Property] = []
        for field in fields where seen.insert(Naming.exactKey(field.name)).inserted {
            result.append(Property(name: namer.claim(baseName(field.name, home: home)), fileMakerName: field.name,
                                   swiftType: swiftType(field), doc: describe(field)))
        }
        return result
    }

    /// The properties whose FileMaker names are equal as Swift strings (canonically: `café` composed and
    /// decomposed) but not in their scalars: they are read only when their exact key is there, or one
    /// field's value would show in both properties.
    static func ambiguousProperties(_ fields: [Property]) -> Set<String> {
        var forms: [String: Set<[UInt32]>] = [:]
        for field in fields {
            forms[field.fileMakerName.precomposedStringWithCanonicalMapping, default: []].insert(Naming.exactKey(field.fileMakerName))
        }
        return Set(fields.filter { (forms[$0.fileMakerName.precomposedStringWithCanonicalMapping]?.count ?? 0) > 1 }.map(\.name))
    }

    /// The table occurrence most of a portal's fields belong to.
    static func portalOccurrence(_ fields: [FMFieldMetadata]) -> String? {
        var counts: [String: Int] = [:]
        var order: [String] = []
        for field in fields {
            guard let occurrence = split(field.name).occurrence else { continue }
            if counts[occurrence] == nil { order.append(occurrence) }
            counts[occurrence, default: 0] += 1
        }
        var best: String?
        for occurrence in order where best == nil || counts[occurrence, default: 0] > counts[best ?? "", default: 0] {
            best = occurrence
        }
        return best
    }

    private struct Portal {
        var name: String
        var property: String
        var typeName: String
        var occurrence: String?
        var fields: [FMFieldMetadata]
        /// Coded under its name (`false` when a field has the same name: the key is the field's).
        var isCoded: Bool
    }

    /// The Swift file of one layout: its record struct, with a nested row struct per portal.
    private static func file(_ layout: CodegenInput.Layout, typeName: String, database: String) -> String {
        var out = ""
        emitHeader(&out, layout, typeName: typeName, database: database)
        let metadata = layout.metadata
        var namer = Namer(reserved: ["layout", "layoutFields", "fillPortals", "hashValue", "init", "encode", "CodingKeys"])
        let fields = properties(metadata.fieldMetaData, home: layout.table, namer: &namer)
        let portals = layoutPortals(of: metadata, namer: &namer)
        let coded = portals.filter(\.isCoded)
        let ambiguous = ambiguousProperties(fields)

        emitStoredProperties(&out, fields: fields, portals: portals)
        emitInit(&out, fields: fields.map { ($0.name, $0.swiftType, "nil") } + portals.map { ($0.property, "[\($0.typeName)]", "[]") },
                 indent: "    ", what: "a record; fields left `nil` are not sent by a create or edit")
        emitCodingKeys(&out, fields + coded.map { Property(name: $0.property, fileMakerName: $0.name, swiftType: "", doc: "") },
                       indent: "    ", what: coded.isEmpty ? "The exact FileMaker names." : "The exact FileMaker names of the fields and portals.",
                       exact: !ambiguous.isEmpty)
        if !coded.isEmpty || !ambiguous.isEmpty {
            emitRecordCoding(&out, fields: fields, coded: coded, ambiguous: ambiguous)
        }
        emitLayoutFields(&out, metadata, coded: coded)
        emitFillPortals(&out, portals)
        for portal in portals {
            emitRowType(&out, portal)
        }
        out += "}\n"
        return out
    }

    /// The file's header comments and imports, and the record struct's opening down to its `layout`.
    private static func emitHeader(_ out: inout String, _ layout: CodegenInput.Layout, typeName: String, database: String) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        line("// Generated by fm-codegen from the layout metadata of database \"\(Naming.doc(database))\", layout \"\(Naming.doc(layout.name))\".")
        line("// Do not edit: run fm-codegen again when the layout changes.")
        line()
        line("import Foundation")
        line("import SwiftFM")
        line()
        line("/// A record of layout `\(Naming.doc(layout.name))` (table occurrence `\(Naming.doc(layout.table ?? "unknown"))`) of database `\(Naming.doc(database))`.")
        line("///")
        line("/// Generated by `fm-codegen` from the layout's metadata. Every field is optional: `nil` is an empty or")
        line("/// absent field, and a create or edit sends only the fields that are set.")
        line("public struct \(typeName): FMLayoutRecord, Codable, Sendable, Hashable {")
        line("    /// The layout these records are read from and written to.")
        line("    public static let layout = \"\(Naming.literal(layout.name))\"")
    }

    /// The layout's portals in name order, their properties claimed from `namer` after the fields'.
    private static func layoutPortals(of metadata: FMLayoutMetadata, namer: inout Namer) -> [Portal] {
        var rowTypes = Namer(reserved: ["CodingKeys"], maxBytes: maxTypeNameBytes)
        let fieldNames = metadata.fieldMetaData.map(\.name)
        return metadata.portalMetaData.keys
            .sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
            .map { name -> Portal in
                let fields = metadata.portalMetaData[name] ?? []
                // JSON keys compare as Swift strings (canonically): a field named like the portal keeps the key.
                return Portal(name: name, property: namer.claim(Naming.property(name)), typeName: rowTypes.claim(Naming.type(name) + "Row"),
                              occurrence: portalOccurrence(fields), fields: fields, isCoded: !fieldNames.contains(name))
            }
    }

    /// The record's stored properties: one per field, then one array of rows per portal.
    private static func emitStoredProperties(_ out: inout String, fields: [Property], portals: [Portal]) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        for property in fields {
            line()
            line("    /// \(property.doc)")
            line("    public var \(Naming.code(property.name)): \(property.swiftType)")
        }
        for portal in portals {
            line()
            line("    /// Portal `\(Naming.doc(portal.name))` (table occurrence `\(Naming.doc(portal.occurrence ?? "unknown"))`), filled from the record's `portalData`;")
            if portal.isCoded {
                line("    /// coded under `\(Naming.doc(portal.name))` as an array of rows; a create or edit never sends it.")
            } else {
                line("    /// not coded (a field has the same name); a create or edit never sends it.")
            }
            line("    public var \(Naming.code(portal.property)): [\(portal.typeName)] = []")
        }
    }

    /// The record's own `init(from:)` and `encode(to:)`, for coded portals or ambiguous field names.
    private static func emitRecordCoding(_ out: inout String, fields: [Property], coded: [Portal], ambiguous: Set<String>) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        line()
        line("    /// Reads a record from values keyed by the FileMaker names: a missing field is `nil`, a portal is an")
        line("    /// array of rows under the portal's name (none when missing).")
        line("    public init(from decoder: any Decoder) throws {")
        line("        let container = try decoder.container(keyedBy: CodingKeys.self)")
        if !ambiguous.isEmpty {
            line("        let present = container.allKeys")
        }
        for field in fields {
            let read = "try container.decodeIfPresent(\(field.swiftType.dropLast()).self, forKey: .\(Naming.code(field.name)))"
            if ambiguous.contains(field.name) {
                line("        self.\(field.name) = present.contains(.\(Naming.code(field.name))) ? \(read) : nil")
            } else {
                line("        self.\(field.name) = \(read)")
            }
        }
        for portal in coded {
            line("        self.\(portal.property) = try container.decodeIfPresent([\(portal.typeName)].self, forKey: .\(Naming.code(portal.property))) ?? []")
        }
        line("    }")
        line()
        line("    /// Writes the fields that are set under their FileMaker names, and each portal's rows under its name.")
        line("    public func encode(to encoder: any Encoder) throws {")
        line("        var container = encoder.container(keyedBy: CodingKeys.self)")
        for field in fields {
            line("        try container.encodeIfPresent(self.\(field.name), forKey: .\(Naming.code(field.name)))")
        }
        for portal in coded {
            line("        try container.encode(self.\(portal.property), forKey: .\(Naming.code(portal.property)))")
        }
        line("    }")
    }

    /// The record's `layoutFields`: each field once by exact name, then each coded portal.
    private static func emitLayoutFields(_ out: inout String, _ metadata: FMLayoutMetadata, coded: [Portal]) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        line()
        line(coded.isEmpty ? "    /// The layout's fields: exact names, types, repetitions, and whether a write sends them."
                           : "    /// The layout's fields: exact names, types, repetitions, and whether a write sends them; and the portals, never sent.")
        var entries: [String] = []
        var seen = Set<[UInt32]>()
        for field in metadata.fieldMetaData where seen.insert(Naming.exactKey(field.name)).inserted {
            var args = "\"\(Naming.literal(field.name))\", \(kind(field))"
            if field.maxRepeat > 1 { args += ", repetitions: \(field.maxRepeat)" }
            if !isWritable(field) { args += ", isWritable: false" }
            entries.append("        FMLayoutField(\(args)),")
        }
        for portal in coded {
            entries.append("        FMLayoutField(\"\(Naming.literal(portal.name))\", .text, isWritable: false), // portal: its rows are never sent")
        }
        if entries.isEmpty {
            line("    public static let layoutFields: [FMLayoutField] = []")
        } else {
            line("    public static let layoutFields: [FMLayoutField] = [")
            entries.forEach { line($0) }
            line("    ]")
        }
    }

    /// The record's `fillPortals(from:)`, when it has portals.
    private static func emitFillPortals(_ out: inout String, _ portals: [Portal]) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        guard !portals.isEmpty else { return }
        line()
        line("    /// Reads the portals from the record's `portalData`.")
        line("    public mutating func fillPortals(from source: FMPortals) throws {")
        for portal in portals {
            line("        self.\(portal.property) = try source.decode(\"\(Naming.literal(portal.name))\")")
        }
        line("    }")
    }

    /// The nested `…Row` struct of a portal: `recordId`, `modId` and the portal's fields.
    private static func emitRowType(_ out: inout String, _ portal: Portal) {
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        var rowNamer = Namer(reserved: ["recordId", "modId", "hashValue", "init", "CodingKeys"])
        // A field named bare `recordId` or `modId` is the row's own key: the row's property reads it.
        let rowFields = properties(portal.fields.filter { $0.name != "recordId" && $0.name != "modId" }, home: portal.occurrence, namer: &rowNamer)
        let rowAmbiguous = ambiguousProperties(rowFields)
        line()
        line("    /// A row of portal `\(Naming.doc(portal.name))` (table occurrence `\(Naming.doc(portal.occurrence ?? "unknown"))`).")
        line("    public struct \(portal.typeName): Codable, Sendable, Hashable {")
        line("        /// The related record's id.")
        line("        public var recordId: String?")
        line("        /// The related record's modification id.")
        line("        public var modId: String?")
        for property in rowFields {
            line()
            line("        /// \(property.doc)")
            line("        public var \(Naming.code(property.name)): \(property.swiftType)")
        }
        emitInit(&out, fields: [("recordId", "String?", "nil"), ("modId", "String?", "nil")] + rowFields.map { ($0.name, $0.swiftType, "nil") },
                 indent: "        ", what: "a portal row (a create or edit of the record does not send portals)")
        let rowKeys = [Property(name: "recordId", fileMakerName: "recordId", swiftType: "String?", doc: ""),
                       Property(name: "modId", fileMakerName: "modId", swiftType: "String?", doc: "")] + rowFields
        emitCodingKeys(&out, rowKeys, indent: "        ", what: "The exact FileMaker names.", exact: !rowAmbiguous.isEmpty)
        emitExactRowDecoder(&out, rowKeys, ambiguous: rowAmbiguous, indent: "        ", keyedBy: "the FileMaker names")
        line("    }")
    }

    static func emitInit(_ out: inout String, fields: [(name: String, type: String, value: String)], indent: String, what: String) {
        out += "\n\(indent)/// Creates \(what).\n"
        guard !fields.isEmpty else {
            out += "\(indent)public init() {}\n"
            return
        }
        out += "\(indent)public init(\n"
        for (index, field) in fields.enumerated() {
            out += "\(indent)    \(Naming.code(field.name)): \(field.type) = \(field.value)\(index == fields.count - 1 ? "" : ",")\n"
        }
        out += "\(indent)) {\n"
        for field in fields {
            out += "\(indent)    self.\(field.name) = \(Naming.code(field.name))\n"
        }
        out += "\(indent)}\n"
    }

    /// `exact`: keys are found by their exact Unicode scalars (two names are canonically equal).
    /// A row type's `init(from:)` that reads each field only under its exact name, when some names differ only in
    /// case or normalisation (`ambiguous`, whose fields are read only when their exact key is present); nothing when
    /// `ambiguous` is empty. Every field is optional (`swiftType` ends in `?`).
    static func emitExactRowDecoder(_ out: inout String, _ fields: [Property], ambiguous: Set<String>, indent: String, keyedBy: String) {
        guard !ambiguous.isEmpty else { return }
        out += "\n\(indent)/// Reads a row from values keyed by \(keyedBy), each field only under its exact name.\n"
        out += "\(indent)public init(from decoder: any Decoder) throws {\n"
        out += "\(indent)    let container = try decoder.container(keyedBy: CodingKeys.self)\n"
        out += "\(indent)    let present = container.allKeys\n"
        for field in fields {
            let key = Naming.code(field.name)
            let read = "try container.decodeIfPresent(\(field.swiftType.dropLast()).self, forKey: .\(key))"
            out += "\(indent)    self.\(field.name) = " + (ambiguous.contains(field.name) ? "present.contains(.\(key)) ? \(read) : nil" : read) + "\n"
        }
        out += "\(indent)}\n"
    }

    static func emitCodingKeys(_ out: inout String, _ fields: [Property], indent: String, what: String, exact: Bool = false) {
        out += "\n\(indent)/// \(what)\n"
        guard !fields.isEmpty else {
            out += "\(indent)public enum CodingKeys: CodingKey {}\n"
            return
        }
        out += "\(indent)public enum CodingKeys: String, CodingKey\(exact ? ", CaseIterable" : "") {\n"
        for field in fields {
            let raw = Naming.exactKey(field.name) == Naming.exactKey(field.fileMakerName) ? "" : " = \"\(Naming.literal(field.fileMakerName))\""
            out += "\(indent)    case \(Naming.code(field.name))\(raw)\n"
        }
        if exact {
            out += "\n\(indent)    /// The key named exactly `stringValue`, in its Unicode scalars (`café` composed is not `café` decomposed).\n"
            out += "\(indent)    public init?(stringValue: String) {\n"
            out += "\(indent)        guard let key = Self.allCases.first(where: { $0.rawValue.unicodeScalars.elementsEqual(stringValue.unicodeScalars) }) else { return nil }\n"
            out += "\(indent)        self = key\n"
            out += "\(indent)    }\n"
        }
        out += "\(indent)}\n"
    }
}

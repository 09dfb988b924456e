import Foundation
import SwiftFM

/// What the generator reads: one database's layouts and their metadata, however they were obtained
/// (a live server, an emulator, a schema file through an in-process emulator).
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

    /// Describes a database's layouts.
    public init(database: String, layouts: [Layout]) {
        self.database = database
        self.layouts = layouts
    }
}

/// One generated Swift file.
public struct GeneratedFile: Sendable, Hashable {
    /// The file name (`Artists.swift`).
    public var name: String
    /// The file's text.
    public var contents: String
}

/// Writes one Swift file per layout: a `Codable`, `Sendable`, `Hashable` struct adopting `FMLayoutRecord`.
///
/// Type mapping (FileMaker `result` → Swift): text → `String?`; number → `Double?` (FileMaker numbers are
/// decimal; `Double` holds every integer up to 2^53 exactly and 15-17 significant digits); date, time,
/// timestamp → `Date?` (read with SwiftFM's FileMaker rules, in UTC unless the call sets a time zone);
/// container → `URL?`. A repeating field is an array (`[String]?`, `[Double?]?`, …). A portal is an array
/// of a nested `…Row` struct with `recordId`, `modId` and its fields, named after the portal object name.
/// Output depends only on the metadata: same metadata, same bytes.
public enum CodeGenerator {
    /// The files for every layout of `input`, sorted by file name; `typePrefix` starts every type name
    /// (to keep two databases, or a layout named like one of your types, apart in one module).
    public static func generate(_ input: CodegenInput, typePrefix: String = "") -> [GeneratedFile] {
        let layouts = input.layouts.sorted { $0.name.unicodeScalars.lexicographicallyPrecedes($1.name.unicodeScalars) }
        var types = Namer(reserved: reservedTypeNames)
        var files: [GeneratedFile] = []
        for layout in layouts {
            let typeName = types.claim(typePrefix.isEmpty ? Naming.type(layout.name) : Naming.type(typePrefix + " " + layout.name))
            files.append(GeneratedFile(name: typeName + ".swift", contents: file(layout, typeName: typeName, database: input.database)))
        }
        return files.sorted { $0.name < $1.name }
    }

    /// Type names that would hide a type the generated code uses.
    static let reservedTypeNames: Set<String> = [
        "String", "Double", "Date", "URL", "Codable", "Sendable", "Hashable", "CodingKey", "Swift", "Foundation",
        "SwiftFM", "FMLayoutRecord", "FMLayoutField", "FMPortals", "Any", "Self", "Type", "Protocol", "Optional",
        "Array", "Decodable", "Encodable",
    ]

    private struct Property {
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

    static func isWritable(_ field: FMFieldMetadata) -> Bool {
        field.type.lowercased() == "normal" && !field.global && field.result.lowercased() != "container"
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
        if field.global { facts.append("global") }
        if field.maxRepeat > 1 { facts.append("\(field.maxRepeat) repetitions") }
        if !isWritable(field) { facts.append("read only") }
        return "`\(Naming.doc(field.name))`: " + facts.joined(separator: ", ") + "."
    }

    private static func properties(_ fields: [FMFieldMetadata], home: String?, namer: inout Namer) -> [Property] {
        var seen = Set<String>()
        var result: [Property] = []
        for field in fields where seen.insert(field.name).inserted {
            result.append(Property(name: namer.claim(baseName(field.name, home: home)), fileMakerName: field.name,
                                   swiftType: swiftType(field), doc: describe(field)))
        }
        return result
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

    private static func file(_ layout: CodegenInput.Layout, typeName: String, database: String) -> String {
        var out = ""
        func line(_ text: String = "") { out += text.isEmpty ? "\n" : text + "\n" }
        let metadata = layout.metadata
        let table = layout.table
        line("// Generated by fm-codegen from the layout metadata of database \"\(Naming.doc(database))\", layout \"\(Naming.doc(layout.name))\".")
        line("// Do not edit: run fm-codegen again when the layout changes.")
        line()
        line("import Foundation")
        line("import SwiftFM")
        line()
        line("/// A record of layout `\(Naming.doc(layout.name))` (table occurrence `\(Naming.doc(table ?? "unknown"))`) of database `\(Naming.doc(database))`.")
        line("///")
        line("/// Generated by `fm-codegen` from the layout's metadata. Every field is optional: `nil` is an empty or")
        line("/// absent field, and a create or edit sends only the fields that are set.")
        line("public struct \(typeName): FMLayoutRecord, Codable, Sendable, Hashable {")
        line("    /// The layout these records are read from and written to.")
        line("    public static let layout = \"\(Naming.literal(layout.name))\"")

        var namer = Namer(reserved: ["layout", "layoutFields", "fillPortals", "hashValue", "init"])
        let fields = properties(metadata.fieldMetaData, home: table, namer: &namer)
        struct Portal { var name: String; var property: String; var typeName: String; var occurrence: String?; var fields: [FMFieldMetadata] }
        var rowTypes = Namer(reserved: ["CodingKeys"])
        let portals = metadata.portalMetaData.keys
            .sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
            .map { name -> Portal in
                let fields = metadata.portalMetaData[name] ?? []
                return Portal(name: name, property: namer.claim(Naming.property(name)), typeName: rowTypes.claim(Naming.type(name) + "Row"),
                              occurrence: portalOccurrence(fields), fields: fields)
            }

        for property in fields {
            line()
            line("    /// \(property.doc)")
            line("    public var \(Naming.code(property.name)): \(property.swiftType)")
        }
        for portal in portals {
            line()
            line("    /// Portal `\(Naming.doc(portal.name))` (table occurrence `\(Naming.doc(portal.occurrence ?? "unknown"))`), filled from the record's `portalData`.")
            line("    public var \(Naming.code(portal.property)): [\(portal.typeName)] = []")
        }
        emitInit(&out, fields: fields.map { ($0.name, $0.swiftType, "nil") } + portals.map { ($0.property, "[\($0.typeName)]", "[]") },
                 indent: "    ", what: "a record; fields left `nil` are not sent by a create or edit")
        emitCodingKeys(&out, fields, indent: "    ")

        line()
        line("    /// The layout's fields: exact names, types, repetitions, and whether a write sends them.")
        if metadata.fieldMetaData.isEmpty {
            line("    public static let layoutFields: [FMLayoutField] = []")
        } else {
            line("    public static let layoutFields: [FMLayoutField] = [")
            var seen = Set<String>()
            for field in metadata.fieldMetaData where seen.insert(field.name).inserted {
                var args = "\"\(Naming.literal(field.name))\", \(kind(field))"
                if field.maxRepeat > 1 { args += ", repetitions: \(field.maxRepeat)" }
                if !isWritable(field) { args += ", isWritable: false" }
                line("        FMLayoutField(\(args)),")
            }
            line("    ]")
        }

        if !portals.isEmpty {
            line()
            line("    /// Reads the portals from the record's `portalData`.")
            line("    public mutating func fillPortals(from portals: FMPortals) throws {")
            for portal in portals {
                line("        \(Naming.code(portal.property)) = try portals.decode(\"\(Naming.literal(portal.name))\")")
            }
            line("    }")
        }

        for portal in portals {
            var rowNamer = Namer(reserved: ["recordId", "modId", "hashValue", "init"])
            let rowFields = properties(portal.fields, home: portal.occurrence, namer: &rowNamer)
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
            emitCodingKeys(&out, [Property(name: "recordId", fileMakerName: "recordId", swiftType: "", doc: ""),
                                  Property(name: "modId", fileMakerName: "modId", swiftType: "", doc: "")] + rowFields, indent: "        ")
            line("    }")
        }
        line("}")
        return out
    }

    private static func emitInit(_ out: inout String, fields: [(name: String, type: String, value: String)], indent: String, what: String) {
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

    private static func emitCodingKeys(_ out: inout String, _ fields: [Property], indent: String) {
        out += "\n\(indent)/// The exact FileMaker names.\n"
        guard !fields.isEmpty else {
            out += "\(indent)public enum CodingKeys: CodingKey {}\n"
            return
        }
        out += "\(indent)public enum CodingKeys: String, CodingKey {\n"
        for field in fields {
            let raw = field.name == field.fileMakerName ? "" : " = \"\(Naming.literal(field.fileMakerName))\""
            out += "\(indent)    case \(Naming.code(field.name))\(raw)\n"
        }
        out += "\(indent)}\n"
    }
}

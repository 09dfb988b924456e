import Foundation

/// One OData entity set: a table occurrence of the schema (ODATA.md §2.1), with its base table's fields.
struct ODataSet {
    /// The set's name: the occurrence name (its entity type is `<name>_`).
    var name: String
    /// The base table.
    var table: String
    /// `FMTID:<n>`: 1065089 + the occurrence's position (1-based) in the schema's occurrences.
    var tableID: Int
    var fields: [EmulatorSchema.Field]
    /// Each field's number (its position, unless frozen by a schema change).
    var fieldNumbers: [Int]
    /// The key: every field validated "not empty" and "unique" (positional when several); empty: ROWID.
    var keys: [EmulatorSchema.Field]
    /// Navigation properties: equality relationships to another occurrence, named after it.
    var navs: [(name: String, relationship: Int, forward: Bool)]

    /// `FMFID:<n>` of field `i` (0-based): `field number × 2³² + TableID`, the pattern of FileMaker 22's ids.
    func fieldID(_ i: Int) -> Int { fieldNumbers[i] << 32 + tableID }

    /// A field by name (case-insensitive) or by `FMFID:<n>`.
    func field(_ name: String) -> EmulatorSchema.Field? {
        if name.uppercased().hasPrefix("FMFID:"), let n = Int(name.dropFirst(6)) {
            return fields.indices.first { fieldID($0) == n }.map { fields[$0] }
        }
        if let exact = fields.first(where: { $0.name == name }) { return exact }
        return fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// A navigation property by name (case-insensitive).
    func nav(_ name: String) -> (name: String, relationship: Int, forward: Bool)? {
        navs.first { $0.name == name } ?? navs.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}

extension EmulatorState {
    /// The entity sets, one per table occurrence, in the schema's order.
    func odataSets() -> [ODataSet] {
        schema.allOccurrences.enumerated().compactMap { index, occurrence in
            guard let table = table(occurrence.table) else { return nil }
            let fields = table.schema.fields
            let keys = fields.filter { $0.notEmpty && $0.unique && !$0.global && $0.repetitions == 1 && $0.type != .container }
            var navs: [(name: String, relationship: Int, forward: Bool)] = []
            for i in graph.edges[occurrence.name.lowercased()] ?? [] {
                let r = graph.relationships[i]
                let forward = r.left.caseInsensitiveCompare(occurrence.name) == .orderedSame
                let other = forward ? r.right : r.left
                guard other.caseInsensitiveCompare(occurrence.name) != .orderedSame,
                      r.match.allSatisfy({ $0.op == .equal }),
                      let name = graph.occurrenceName(other),
                      !navs.contains(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { continue }
                navs.append((name, i, forward))
            }
            let numbers = odataFieldNumbers[table.schema.name.lowercased()]
            let fieldNumbers = fields.enumerated().map { i, f in numbers?[f.name.lowercased()] ?? i + 1 }
            return ODataSet(name: occurrence.name, table: table.schema.name,
                            tableID: odataTableIDs[occurrence.name.lowercased()] ?? 1_065_089 + index + 1,
                            fields: fields, fieldNumbers: fieldNumbers, keys: keys, navs: navs)
        }
    }

    /// The entity set named `name` (exact, then case-insensitive), or `FMTID:<n>`.
    func odataSet(_ name: String) -> ODataSet? {
        let sets = odataSets()
        if name.uppercased().hasPrefix("FMTID:"), let n = Int(name.dropFirst(6)) { return sets.first { $0.tableID == n } }
        return sets.first { $0.name == name } ?? sets.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}

// MARK: - $metadata

extension EmulatorState {
    static func edmType(_ type: EmulatorSchema.FieldType) -> String {
        switch type {
        case .text: return "Edm.String"
        case .number: return "Edm.Decimal"
        case .date: return "Edm.Date"
        case .time: return "Edm.TimeOfDay"
        case .timestamp: return "Edm.DateTimeOffset"
        case .container: return "Edm.Binary"
        }
    }

    /// The `DefaultValue` of an auto-enter option, if it has one.
    static func defaultValue(_ field: EmulatorSchema.Field) -> String? {
        switch field.autoEnter {
        case .creationTimestamp?, .modificationTimestamp?: return "CURRENT_TIMESTAMP"
        case .creationDate?: return "CURRENT_DATE"
        case let .value(text)?: return text
        default: return nil
        }
    }

    static func xmlEscape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                if c.value < 0x20, c != "\t", c != "\n", c != "\r" { out += "&#x\(String(c.value, radix: 16));" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }

    /// `$metadata` as XML CSDL, shaped like FileMaker 22's (ODATA.md §2.1).
    func odataMetadataXML(version: String) -> String {
        let db = schema.database + ".fmp12"
        let ns = "com.filemaker.odata.\(db)"
        let x = EmulatorState.xmlEscape
        var out = #"<?xml version="1.0" encoding="utf-8"?>"# + "\n"
        out += #"<edmx:Edmx Version="4.01" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>"#
        out += #"<Schema Namespace="\#(x(ns))" xmlns="http://docs.oasis-open.org/odata/ns/edm">"#
        out += #"<Annotation Term="ServerVersion" String="OData Engine \#(x(version))"/>"#
        let sets = odataSets()
        for set in sets {
            out += #"<EntityType Name="\#(x(set.name))_">"#
            out += #"<Annotation Term="com.filemaker.odata.TableID" String="FMTID:\#(set.tableID)"/>"#
            if !set.keys.isEmpty {
                out += "<Key>" + set.keys.map { #"<PropertyRef Name="\#(x($0.name))"/>"# }.joined() + "</Key>"
            }
            for (i, f) in set.fields.enumerated() {
                out += #"<Property Name="\#(x(f.name))" Type="\#(EmulatorState.edmType(f.type))""#
                if f.notEmpty { out += #" Nullable="false""# }
                if let d = EmulatorState.defaultValue(f) { out += #" DefaultValue="\#(x(d))""# }
                out += ">"
                out += #"<Annotation Term="com.filemaker.odata.FieldID" String="FMFID:\#(set.fieldID(i))"/>"#
                if case .serial? = f.autoEnter { out += #"<Annotation Term="com.filemaker.odata.AutoGenerated" Bool="true"/>"# }
                if odataIndexes.contains(set.table.lowercased() + "::" + f.name.lowercased()) {
                    out += #"<Annotation Term="com.filemaker.odata.Index" Bool="true"/>"#
                }
                if f.autoEnter == .modificationTimestamp { out += #"<Annotation Term="com.filemaker.odata.VersionID" Bool="true"/>"# }
                if f.global { out += #"<Annotation Term="com.filemaker.odata.Global" Bool="true"/>"# }
                if f.repetitions > 1 { out += #"<Annotation Term="com.filemaker.odata.MaxRepetitions" Int="\#(f.repetitions)"/>"# }
                if f.type == .container { out += #"<Annotation Term="com.filemaker.odata.ExternalSecurePath" String="\#(x(db))/"/>"# }
                if f.global || f.prohibitModification {
                    out += #"<Annotation Term="Org.OData.Core.V1.Permissions"><EnumMember>Org.OData.Core.V1.Permission/Read</EnumMember></Annotation>"#
                }
                out += "</Property>"
            }
            out += #"<Annotation Term="com.filemaker.odata.BestRowID" String="ROWID"/>"#
            out += #"<Annotation Term="com.filemaker.odata.RowVersion" String="ROWMODID"/>"#
            for nav in set.navs {
                out += #"<NavigationProperty Name="\#(x(nav.name))" Type="Collection(\#(x(ns)).\#(x(nav.name))_)"/>"#
            }
            out += "</EntityType>"
        }
        out += #"<EntityContainer Name="\#(x(db))">"#
        for set in sets {
            out += #"<EntitySet Name="\#(x(set.name))" EntityType="\#(x(ns)).\#(x(set.name))_">"#
            out += #"<Annotation Term="Org.OData.Core.V1.ResourcePath" String="\#(x(set.name))"/>"#
            for nav in set.navs { out += #"<NavigationPropertyBinding Path="\#(x(nav.name))" Target="\#(x(nav.name))"/>"# }
            out += "</EntitySet>"
        }
        out += "</EntityContainer>"
        out += #"<Annotations Target="\#(x(ns))">"#
        out += #"<Annotation Term="Org.OData.Core.V1.DereferenceableIDs" Bool="true"/>"#
        out += #"<Annotation Term="Org.OData.Core.V1.ConventionalIDs" Bool="true"/>"#
        out += #"<Annotation Term="Org.OData.Capabilities.V1.ConformanceLevel"><EnumMember>Org.OData.Capabilities.V1.ConformanceLevelType/Intermediate</EnumMember></Annotation>"#
        out += #"<Annotation Term="Org.OData.Capabilities.V1.AsynchronousRequestsSupported" Bool="false"/>"#
        out += #"<Annotation Term="Org.OData.Capabilities.V1.FilterFunctions"><Collection>"#
        out += ODataFilter.functions.keys.sorted().map { "<String>\($0)</String>" }.joined()
        out += "</Collection></Annotation></Annotations>"
        out += "</Schema></edmx:DataServices></edmx:Edmx>"
        return out
    }

    /// `$metadata` as JSON CSDL (ODATA.md §2.5; annotations without the `com.filemaker.odata.` prefix).
    func odataMetadataJSON(version: String) -> JSON {
        let db = schema.database + ".fmp12"
        var members: [(String, JSON)] = []
        let sets = odataSets()
        for set in sets {
            var type: [(String, JSON)] = [("$Kind", .string("EntityType")), ("@TableID", .string("FMTID:\(set.tableID)"))]
            if !set.keys.isEmpty { type.append(("$Key", .array(set.keys.map { .string($0.name) }))) }
            for (i, f) in set.fields.enumerated() {
                var p: [(String, JSON)] = [("$Type", .string(EmulatorState.edmType(f.type)))]
                if !f.notEmpty { p.append(("$Nullable", .bool(true))) }
                if let d = EmulatorState.defaultValue(f) { p.append(("$DefaultValue", .string(d))) }
                p.append(("@FieldID", .string("FMFID:\(set.fieldID(i))")))
                if case .serial? = f.autoEnter { p.append(("@AutoGenerated", .bool(true))) }
                if odataIndexes.contains(set.table.lowercased() + "::" + f.name.lowercased()) { p.append(("@Index", .bool(true))) }
                if f.autoEnter == .modificationTimestamp { p.append(("@VersionID", .bool(true))) }
                if f.global { p.append(("@Global", .bool(true))) }
                if f.repetitions > 1 { p.append(("@MaxRepetitions", .number(Double(f.repetitions)))) }
                type.append((f.name, .object(p)))
            }
            for nav in set.navs {
                type.append((nav.name, .object([("$Kind", .string("NavigationProperty")), ("$Collection", .bool(true)),
                                                ("$Type", .string("\(db).\(nav.name)_"))])))
            }
            type.append(("@BestRowID", .string("ROWID")))
            type.append(("@RowVersion", .string("ROWMODID")))
            members.append(("\(set.name)_", .object(type)))
        }
        for set in sets {
            var entry: [(String, JSON)] = [("$Kind", .string("EntitySet")), ("$Type", .string("\(db).\(set.name)_"))]
            if !set.navs.isEmpty {
                entry.append(("$NavigationPropertyBinding", .object(set.navs.map { ($0.name, .string($0.name)) })))
            }
            members.append((set.name, .object(entry)))
        }
        return .object([("$Version", .string("4.01")), ("@ServerVersion", .string("OData Engine \(version)")),
                        ("$EntityContainer", .string("\(db).\(db)")), (db, .object(members))])
    }
}

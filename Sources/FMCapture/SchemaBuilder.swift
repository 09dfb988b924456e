import Foundation
import SwiftFM

/// Collects what the Data API shows of a solution and writes it as an emulator schema.
struct SchemaBuilder {
    let database: String
    let username: String
    let password: String
    var skipped: [String] = []
    var notes: [String] = []
    /// Whether the account's real password goes into the file (else `"admin"`, noted).
    var keepPassword = false

    // Layout listing
    var layoutNames: [String] = []
    var listingTable: [String: String] = [:]
    /// Layout and folder names in listing order, depth first, with folder contents.
    var layoutEntries: [(name: String, folder: [String]?)] = []

    // Tables (one per table occurrence seen: the Data API does not show base tables)
    struct FieldDef {
        var name: String
        var meta: FMFieldMetadata
    }
    var tableOrder: [String] = []
    var tableFields: [String: [FieldDef]] = [:]

    struct PortalOut {
        var name: String
        var occurrence: String
        var fields: [String]
    }
    struct LayoutOut {
        var name: String
        var occurrence: String
        var fields: [OJSON]
        var relatedFields: [String]
        var portals: [PortalOut]
        var valueLists: [(String, [String])]
    }
    var layouts: [String: LayoutOut] = [:]

    /// Records seen, per occurrence: id → (modId, field → value); `keep` marks those to write.
    struct SeenRecord {
        var modId: String
        var values: [String: Any]
        var keep: Bool
    }
    var seen: [String: [Int: SeenRecord]] = [:]
    /// Portal observations for inferring match fields: layout, portal, the parent's id and values, the row ids.
    var observations: [(layout: String, portal: String, parentId: Int, parent: [String: Any], rows: [Int])] = []
    /// Whether records are written (`--records N`, N > 0): only then can relationships be rebuilt from them.
    var recordsKept = false

    /// Values seen through a relationship the Data API does not show (a related field on a layout, a field
    /// further away in a portal row): per (parent occurrence, related occurrence), parent record id → field
    /// (`name`, `name(n)`) → value.
    struct Snapshot {
        var parent: String
        var child: String
        var values: [Int: [String: Any]] = [:]
    }
    var snapshots: [Snapshot] = []

    /// Relationships rebuilt from the captured records, each `parent::_capture_id = child::_capture_in_<parent>`:
    /// the parent's key is its record id, the child's the return-separated ids of the parents it is related to.
    struct Link {
        var parent: String
        var child: String
    }
    var links: [Link] = []
    /// Union-find over occurrences (lower-cased): relationships must form a forest.
    var linkRoots: [String: String] = [:]
    /// Extra text fields per table (the link keys) and their values per record id.
    var linkFields: [String: [String]] = [:]
    var linkValues: [String: [Int: [String: [String]]]] = [:]

    // Scripts
    var scriptEntries: [(name: String, folder: [String]?)] = []

    init(database: String, username: String, password: String) {
        self.database = database
        self.username = username
        self.password = password
    }

    // MARK: Layouts

    mutating func addLayoutTree(_ entries: [FMLayoutEntry]) {
        for e in entries {
            if e.isFolder {
                layoutEntries.append((e.name, e.children.map(\.name)))
                addLayoutTree(e.children)
            } else {
                guard !layoutNames.contains(e.name) else {
                    skipped.append("layout \(e.name): listed twice; captured once")
                    continue
                }
                layoutNames.append(e.name)
                if let t = e.table, !t.isEmpty { listingTable[e.name] = t }
                layoutEntries.append((e.name, nil))
            }
        }
    }

    mutating func dropLayout(_ name: String) {
        layoutEntries.removeAll { $0.name == name && $0.folder == nil }
        for i in layoutEntries.indices { layoutEntries[i].folder?.removeAll { $0 == name } }
    }

    mutating func addField(_ meta: FMFieldMetadata, name: String, to table: String) {
        if tableFields[table] == nil {
            tableOrder.append(table)
            tableFields[table] = []
        }
        guard !(tableFields[table] ?? []).contains(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { return }
        tableFields[table]?.append(FieldDef(name: name, meta: meta))
    }

    func split(_ name: String) -> (String?, String) {
        guard let r = name.range(of: "::") else { return (nil, name) }
        return (String(name[..<r.lowerBound]), String(name[r.upperBound...]))
    }

    mutating func addLayout(_ name: String, meta: FMLayoutMetadata, found: FMFoundSet?, keepRecords: Bool) {
        let occurrence = found?.dataInfo?.table ?? listingTable[name] ?? name
        if tableFields[occurrence] == nil {
            tableOrder.append(occurrence)
            tableFields[occurrence] = []
        }
        var out = LayoutOut(name: name, occurrence: occurrence, fields: [], relatedFields: [], portals: [], valueLists: [])
        for f in meta.fieldMetaData {
            let (prefix, bare) = split(f.name)
            let isRelated = prefix.map { $0.caseInsensitiveCompare(occurrence) != .orderedSame } ?? false
            addField(f, name: bare, to: isRelated ? (prefix ?? occurrence) : occurrence)
            let shown = isRelated ? f.name : bare
            if isRelated { out.relatedFields.append(f.name) }
            var valueList = f.valueList
            if let vl = valueList, !meta.valueLists.contains(where: { $0.name == vl }) {
                skipped.append("layout \(name), field \(f.name): value list \(vl) is attached but its values were not sent")
                valueList = nil
            }
            if valueList != nil || f.displayType != "editText" {
                var pairs: [(String, OJSON)] = [("name", .string(shown))]
                if let vl = valueList { pairs.append(("valueList", .string(vl))) }
                pairs.append(("displayType", .string(f.displayType)))
                out.fields.append(.object(pairs))
            } else {
                out.fields.append(.string(shown))
            }
        }
        // Portals, in the order the records list them, then by name.
        let info = (found?.records.first?["portalDataInfo"] as? [[String: Any]]) ?? []
        var portalOrder: [String] = info.compactMap { ($0["portalObjectName"] as? String) ?? ($0["table"] as? String) }
            .filter { meta.portalMetaData[$0] != nil }
        portalOrder += meta.portalMetaData.keys.sorted().filter { !portalOrder.contains($0) }
        for portalName in portalOrder {
            let fields = meta.portalMetaData[portalName] ?? []
            let fromInfo = info.first { (($0["portalObjectName"] as? String) ?? ($0["table"] as? String)) == portalName }?["table"] as? String
            guard let portalTO = fromInfo ?? fields.first.flatMap({ split($0.name).0 }) else {
                skipped.append("layout \(name), portal \(portalName): its table occurrence is not visible (no fields, no records)")
                continue
            }
            var names: [String] = []
            for f in fields {
                let (prefix, bare) = split(f.name)
                if let prefix, prefix.caseInsensitiveCompare(portalTO) != .orderedSame {
                    // A field further away: its relationship is rebuilt from the records in build(), if they are kept.
                    guard keepRecords, found != nil else {
                        skipped.append("layout \(name), portal \(portalName): field \(f.name) is shown through a further relationship the Data API does not reveal (capture with --records)")
                        continue
                    }
                    addField(f, name: bare, to: prefix)
                    names.append(f.name)
                    continue
                }
                addField(f, name: bare, to: portalTO)
                names.append("\(portalTO)::\(bare)")
            }
            out.portals.append(PortalOut(name: portalName, occurrence: portalTO, fields: names))
        }
        for vl in meta.valueLists {
            if vl.values.contains(where: { $0.displayValue != $0.value }) {
                notes.append("layout \(name), value list \(vl.name): display values differ from values; the values are kept")
            }
            out.valueLists.append((vl.name, vl.values.map(\.value)))
        }
        layouts[name] = out
        // Records: the layout's own fields, and the portal rows as records of their occurrences.
        for record in found?.records ?? [] { addRecord(record, layout: out, keep: keepRecords) }
    }

    /// One record of layout `out`: its own fields (related ones as snapshots for relationship inference),
    /// and its portal rows as records of their occurrences.
    mutating func addRecord(_ record: [String: Any], layout out: LayoutOut, keep keepRecords: Bool) {
        let name = out.name, occurrence = out.occurrence
        guard let rid = (record["recordId"] as? String).flatMap(Int.init) else { return }
        let fieldData = record["fieldData"] as? [String: Any] ?? [:]
        var local: [String: Any] = [:]
        for (k, v) in fieldData {
            let (prefix, bare) = split(k)
            if let prefix {
                if prefix.caseInsensitiveCompare(occurrence) != .orderedSame {
                    snapshot(parent: occurrence, child: prefix, id: rid, key: bare, value: v)
                }
            } else {
                local[k] = v
            }
        }
        remember(occurrence, id: rid, modId: record["modId"] as? String ?? "0", values: local, keep: keepRecords)
        let portalData = record["portalData"] as? [String: Any] ?? [:]
        for portal in out.portals {
            let rows = portalData[portal.name] as? [[String: Any]] ?? []
            var ids: [Int] = []
            for row in rows {
                guard let id = (row["recordId"] as? String).flatMap(Int.init) else { continue }
                ids.append(id)
                var values: [String: Any] = [:]
                for (k, v) in row {
                    let (prefix, bare) = split(k)
                    guard let prefix else { continue }
                    // Portal rows send every repetition of a repeating field numbered, the first as `name(1)`.
                    if prefix.caseInsensitiveCompare(portal.occurrence) == .orderedSame {
                        values[Self.firstRepetitionBare(bare)] = v
                    } else {
                        snapshot(parent: portal.occurrence, child: prefix, id: id, key: Self.firstRepetitionBare(bare), value: v)
                    }
                }
                remember(portal.occurrence, id: id, modId: row["modId"] as? String ?? "0", values: values, keep: keepRecords)
            }
            observations.append((name, portal.name, rid, local, ids))
        }
    }

    /// `name(1)` → `name` (the key seed records use for repetition 1); other keys unchanged.
    static func firstRepetitionBare(_ key: String) -> String {
        key.hasSuffix("(1)") ? String(key.dropLast(3)) : key
    }

    mutating func snapshot(parent: String, child: String, id: Int, key: String, value: Any) {
        if let i = snapshots.firstIndex(where: {
            $0.parent.caseInsensitiveCompare(parent) == .orderedSame && $0.child.caseInsensitiveCompare(child) == .orderedSame
        }) {
            if snapshots[i].values[id]?[key] == nil { snapshots[i].values[id, default: [:]][key] = value }
        } else {
            snapshots.append(Snapshot(parent: parent, child: child, values: [id: [key: value]]))
        }
    }

    mutating func remember(_ occurrence: String, id: Int, modId: String, values: [String: Any], keep: Bool) {
        var r = seen[occurrence]?[id] ?? SeenRecord(modId: modId, values: [:], keep: false)
        for (k, v) in values where r.values[k] == nil { r.values[k] = v }
        r.keep = r.keep || keep
        seen[occurrence, default: [:]][id] = r
    }

    // MARK: Scripts

    mutating func addScriptTree(_ entries: [FMScriptEntry], nested: Bool = false) {
        for e in entries {
            if e.isFolder {
                scriptEntries.append((e.name, e.children.map(\.name)))
                addScriptTree(e.children, nested: true)
            } else if e.name == "-" {
                if !nested { skipped.append("scripts: a separator outside a folder cannot be written in a schema file") }
            } else if scriptEntries.contains(where: { $0.name == e.name }) {
                skipped.append("script \(e.name): listed twice; captured once")
            } else {
                scriptEntries.append((e.name, nil))
            }
        }
    }
}

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
        for record in found?.records ?? [] {
            guard let rid = (record["recordId"] as? String).flatMap(Int.init) else { continue }
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

    // MARK: Writing

    static func text(_ v: Any) -> String {
        if let s = v as? String { return s }
        if let n = v as? NSNumber { return n.stringValue }
        return "\(v)"
    }

    static func json(_ v: Any) -> OJSON {
        if let s = v as? String { return .string(s) }
        if let n = v as? NSNumber { return .number(n.stringValue) }
        return .string("\(v)")
    }

    /// A field pair (parent field, child field) that explains every observed portal row of `portal`.
    func inferMatch(layout: LayoutOut, portal: PortalOut) -> (String, String)? {
        let obs = observations.filter { $0.layout == layout.name && $0.portal == portal.name }
        guard obs.contains(where: { !$0.rows.isEmpty }) else { return nil }
        let children = seen[portal.occurrence] ?? [:]
        let parentFields = (tableFields[layout.occurrence] ?? []).filter { !$0.meta.global && $0.meta.result != "container" }
        let childFields = (tableFields[portal.occurrence] ?? []).filter { !$0.meta.global && $0.meta.result != "container" }
        func preferred(_ a: FieldDef) -> Int { a.name.lowercased() == "id" || a.name.lowercased().hasSuffix("id") ? 0 : 1 }
        for a in parentFields.sorted(by: { preferred($0) < preferred($1) }) {
            for b in childFields {
                var ok = true
                var support = 0
                for o in obs {
                    let key = o.parent[a.name].map(Self.text) ?? ""
                    let rowSet = Set(o.rows)
                    for (id, child) in children {
                        let value = child.values[b.name].map(Self.text)
                        if rowSet.contains(id) {
                            // A row whose child field was not captured is no evidence either way.
                            guard let value else { continue }
                            guard !key.isEmpty, value == key else { ok = false; break }
                            support += 1
                        } else if let value, !key.isEmpty, value == key, o.rows.count < 50 {
                            ok = false
                            break
                        }
                    }
                    if !ok { break }
                }
                if ok, support > 0 { return (a.name, b.name) }
            }
        }
        return nil
    }

    static func fieldType(_ result: String) -> String {
        switch result.lowercased() {
        case "number": return "number"
        case "date": return "date"
        case "time": return "time"
        case "timestamp": return "timestamp"
        case "container": return "container"
        default: return "text"
        }
    }

    // MARK: Relationships rebuilt from records

    func linkRoot(_ name: String) -> String {
        var r = name.lowercased()
        while let p = linkRoots[r], p != r { r = p }
        return r
    }

    func isLinked(_ parent: String, _ child: String) -> Bool {
        links.contains {
            $0.parent.caseInsensitiveCompare(parent) == .orderedSame && $0.child.caseInsensitiveCompare(child) == .orderedSame
        }
    }

    /// Adds the relationship `parent → child` (or finds it); `false` when it would close a cycle or join an
    /// occurrence to itself.
    mutating func link(_ parent: String, _ child: String) -> Bool {
        if isLinked(parent, child) { return true }
        guard parent.caseInsensitiveCompare(child) != .orderedSame else { return false }
        let a = linkRoot(parent), b = linkRoot(child)
        guard a != b else { return false }
        linkRoots[a] = b
        links.append(Link(parent: parent, child: child))
        addLinkField("_capture_id", to: parent)
        addLinkField(Self.childKey(parent), to: child)
        return true
    }

    static func childKey(_ parent: String) -> String { "_capture_in_\(parent)" }

    mutating func addLinkField(_ name: String, to table: String) {
        if !(linkFields[table] ?? []).contains(name) { linkFields[table, default: []].append(name) }
    }

    /// Relates child record `child` of occurrence `childTable` to parent record `parentId` of `parent`.
    mutating func relate(child: Int, of childTable: String, to parentId: Int, of parent: String) {
        var ids = linkValues[childTable]?[child]?[Self.childKey(parent)] ?? []
        if !ids.contains(String(parentId)) { ids.append(String(parentId)) }
        linkValues[childTable, default: [:]][child, default: [:]][Self.childKey(parent)] = ids
    }

    /// Rebuilds a portal's relationship from the rows seen for each parent record.
    mutating func linkPortal(layout: LayoutOut, portal: PortalOut) -> Bool {
        guard recordsKept, link(layout.occurrence, portal.occurrence) else { return false }
        for o in observations where o.layout == layout.name && o.portal == portal.name {
            for row in o.rows { relate(child: row, of: portal.occurrence, to: o.parentId, of: layout.occurrence) }
        }
        return true
    }

    /// Rebuilds the relationship behind fields of `child` shown from records of `parent` (a related field on a
    /// layout, a field further away in a portal row): one child record per distinct set of values seen, related
    /// to the parent records that showed it (a parent whose related fields were all empty has no related
    /// record). A relationship already rebuilt for a portal is used as it is.
    mutating func linkSnapshot(parent: String, child: String) -> Bool {
        if isLinked(parent, child) { return true }
        guard recordsKept, link(parent, child) else { return false }
        let snap = snapshots.first {
            $0.parent.caseInsensitiveCompare(parent) == .orderedSame && $0.child.caseInsensitiveCompare(child) == .orderedSame
        } ?? Snapshot(parent: parent, child: child)
        var nextId = (seen[child]?.keys.max() ?? 0) + 1
        var byValues: [String: Int] = [:]
        for (parentId, values) in snap.values.sorted(by: { $0.key < $1.key })
        where values.values.contains(where: { !Self.text($0).isEmpty }) {
            let signature = values.keys.sorted().map { "\($0)\u{0}\(Self.text(values[$0] ?? ""))" }.joined(separator: "\u{1}")
            let id: Int
            if let known = byValues[signature] {
                id = known
            } else {
                id = nextId
                nextId += 1
                byValues[signature] = id
                remember(child, id: id, modId: "0", values: values, keep: true)
            }
            relate(child: id, of: child, to: parentId, of: parent)
        }
        notes.append("\(parent) → \(child): the relationship is not visible through the Data API; rebuilt as a snapshot of the captured records (key fields _capture_id / \(Self.childKey(parent)); records created in the copy have no related records)")
        return true
    }

    /// Compares two captured values of a field by its result type (empty first), as FileMaker sorts.
    static func compare(_ a: Any?, _ b: Any?, result: String) -> ComparisonResult {
        let x = a.map(text) ?? "", y = b.map(text) ?? ""
        if x.isEmpty || y.isEmpty { return x.isEmpty == y.isEmpty ? .orderedSame : (x.isEmpty ? .orderedAscending : .orderedDescending) }
        switch result.lowercased() {
        case "number":
            if let p = Double(x), let q = Double(y) { return p < q ? .orderedAscending : (p > q ? .orderedDescending : .orderedSame) }
        case "date", "timestamp":
            func key(_ s: String) -> String {
                let parts = s.split { !$0.isNumber }.map(String.init)
                guard parts.count >= 3 else { return s }
                let rest = parts.dropFirst(3).map { $0.count < 2 ? "0" + $0 : $0 }.joined()
                return parts[2] + (parts[0].count < 2 ? "0" : "") + parts[0] + (parts[1].count < 2 ? "0" : "") + parts[1] + rest
            }
            return key(x).compare(key(y))
        default: break
        }
        return x.compare(y, options: [.caseInsensitive, .numeric])
    }

    /// The sort that explains the row order of every observation of a portal: `nil` with `reproducible` true
    /// when creation order does; else the first field of the portal, ascending or descending, that does.
    func inferSort(layout: LayoutOut, portal: PortalOut) -> (sort: (field: String, ascending: Bool)?, reproducible: Bool) {
        let obs = observations.filter { $0.layout == layout.name && $0.portal == portal.name }.map(\.rows)
        if obs.allSatisfy({ rows in zip(rows, rows.dropFirst()).allSatisfy { $0 < $1 } }) { return (nil, true) }
        let children = seen[portal.occurrence] ?? [:]
        let defs = tableFields[portal.occurrence] ?? []
        for name in portal.fields {
            let (prefix, bare) = split(name)
            guard prefix?.caseInsensitiveCompare(portal.occurrence) == .orderedSame,
                  let def = defs.first(where: { $0.name.caseInsensitiveCompare(bare) == .orderedSame }) else { continue }
            for ascending in [true, false] {
                let explains = obs.allSatisfy { rows in
                    zip(rows, rows.dropFirst()).allSatisfy { a, b in
                        let r = Self.compare(children[a]?.values[def.name], children[b]?.values[def.name], result: def.meta.result)
                        if r == .orderedSame { return a < b }
                        return ascending ? r == .orderedAscending : r == .orderedDescending
                    }
                }
                if explains { return ((def.name, ascending), true) }
            }
        }
        return (nil, false)
    }

    mutating func build(source: String) -> OJSON {
        // Portals first (their own rows), then related layout fields, then fields further away in portals, so a
        // relationship rebuilt for a portal is the one its related fields go through.
        var portalPlans: [String: [(portal: PortalOut, match: (String, String)?)]] = [:]
        var keptPortalTOs: [String: Set<String>] = [:]
        for entry in layoutEntries where entry.folder == nil {
            guard let l = layouts[entry.name] else { continue }
            var plans: [(portal: PortalOut, match: (String, String)?)] = []
            for p in l.portals {
                if let (a, b) = inferMatch(layout: l, portal: p) {
                    notes.append("layout \(l.name), portal \(p.name): match fields inferred from the records: \(l.occurrence)::\(a) = \(p.occurrence)::\(b)")
                    keptPortalTOs[l.name, default: []].insert(p.occurrence.lowercased())
                    plans.append((p, (a, b)))
                } else if linkPortal(layout: l, portal: p) {
                    let seenRows = observations.contains { $0.layout == l.name && $0.portal == p.name && !$0.rows.isEmpty }
                    notes.append("layout \(l.name), portal \(p.name): its relationship to \(p.occurrence) is not visible through the Data API; rebuilt from the rows captured for each record" + (seenRows ? "" : " (none were seen: the copy's portal shows no rows)"))
                    plans.append((p, nil))
                } else {
                    skipped.append("layout \(l.name), portal \(p.name): its relationship to \(p.occurrence) is not visible through the Data API and the captured records do not show its match fields (capture with --records)")
                }
            }
            portalPlans[l.name] = plans
        }
        for entry in layoutEntries where entry.folder == nil {
            guard var l = layouts[entry.name] else { continue }
            // A related field on the layout goes through a portal to its occurrence, or a rebuilt relationship.
            for name in l.relatedFields {
                let to = split(name).0 ?? ""
                if keptPortalTOs[l.name]?.contains(to.lowercased()) == true || linkSnapshot(parent: l.occurrence, child: to) { continue }
                skipped.append("layout \(l.name): related field \(name): its relationship is not visible through the Data API")
                l.fields.removeAll { f in
                    if case let .string(s) = f { return s == name }
                    if case let .object(pairs) = f, case let .string(s)? = pairs.first?.1 { return s == name }
                    return false
                }
            }
            layouts[entry.name] = l
        }
        for entry in layoutEntries where entry.folder == nil {
            guard let l = layouts[entry.name], var plans = portalPlans[l.name] else { continue }
            for i in plans.indices {
                let p = plans[i].portal
                plans[i].portal.fields = p.fields.filter { name in
                    let to = split(name).0 ?? ""
                    if to.caseInsensitiveCompare(p.occurrence) == .orderedSame || linkSnapshot(parent: p.occurrence, child: to) { return true }
                    skipped.append("layout \(l.name), portal \(p.name): field \(name) is shown through a further relationship the Data API does not reveal")
                    return false
                }
            }
            portalPlans[l.name] = plans
        }

        var guessedAutoEnter = false
        var tablesJSON: [(String, OJSON)] = []
        for t in tableOrder {
            var fields: [(String, OJSON)] = []
            for f in tableFields[t] ?? [] {
                let type = Self.fieldType(f.meta.result)
                var def: [(String, OJSON)] = [("type", .string(type))]
                if f.meta.maxRepeat > 1 { def.append(("repetitions", .number(String(f.meta.maxRepeat)))) }
                if f.meta.global { def.append(("global", .bool(true))) }
                if f.meta.notEmpty { def.append(("notEmpty", .bool(true))) }
                if f.meta.maxCharacters > 0 { def.append(("maxCharacters", .number(String(f.meta.maxCharacters)))) }
                if f.meta.autoEnter {
                    guessedAutoEnter = true
                    switch type {
                    case "number": def.append(("autoEnter", .string("serial")))
                    case "date": def.append(("autoEnter", .string("creationDate")))
                    case "timestamp": def.append(("autoEnter", .string("creationTimestamp")))
                    default: def.append(("autoEnter", .object([("value", .string(""))])))
                    }
                }
                fields.append((f.name, def.count == 1 ? .string(type) : .object(def)))
            }
            for name in linkFields[t] ?? [] { fields.append((name, .string("text"))) }
            tablesJSON.append((t, .object([("fields", .object(fields))])))
        }
        if guessedAutoEnter {
            notes.append("auto-enter options are not visible through the Data API: number fields became serials, dates and timestamps creation values, others an empty value")
        }

        var layoutsJSON: [(String, OJSON)] = []
        for entry in layoutEntries {
            if let items = entry.folder {
                layoutsJSON.append((entry.name, .object([("folder", .bool(true)), ("layouts", .array(items.filter { name in
                    layouts[name] != nil || layoutEntries.contains { $0.name == name && $0.folder != nil }
                }.map { .string($0) }))])))
                continue
            }
            guard let l = layouts[entry.name] else { continue }
            var portals: [(String, OJSON)] = []
            for (p, match) in portalPlans[l.name] ?? [] {
                var def: [(String, OJSON)] = [("table", .string(p.occurrence))]
                if let (a, b) = match { def.append(("match", .object([(a, .string(b))]))) }
                def.append(("fields", .array(p.fields.map { .string($0) })))
                let (sort, reproducible) = inferSort(layout: l, portal: p)
                if let sort {
                    def.append(("sort", .array([.object([("field", .string(sort.field)), ("order", .string(sort.ascending ? "ascend" : "descend"))])])))
                    notes.append("layout \(l.name), portal \(p.name): rows sorted by \(sort.field) \(sort.ascending ? "ascending" : "descending") (inferred from the row order seen)")
                } else if !reproducible {
                    notes.append("layout \(l.name), portal \(p.name): the row order seen is not explained by creation order or by one field; the copy shows rows in creation order")
                }
                portals.append((p.name, .object(def)))
            }
            var def: [(String, OJSON)] = [("table", .string(l.occurrence)), ("fields", .array(l.fields))]
            if !portals.isEmpty { def.append(("portals", .object(portals))) }
            if !l.valueLists.isEmpty {
                def.append(("valueLists", .object(l.valueLists.map { ($0.0, .array($0.1.map { .string($0) })) })))
            }
            layoutsJSON.append((l.name, .object(def)))
        }

        var scriptsJSON: [(String, OJSON)] = []
        for entry in scriptEntries {
            if let items = entry.folder {
                scriptsJSON.append((entry.name, .object([("folder", .bool(true)), ("scripts", .array(items.map { .string($0) }))])))
            } else {
                scriptsJSON.append((entry.name, .object([("comment", .string("stub: script steps cannot be read through the Data API")),
                                                         ("steps", .array([]))])))
            }
        }
        if scriptEntries.contains(where: { $0.folder == nil }) {
            notes.append("\(scriptEntries.filter { $0.folder == nil }.count) script(s) captured by name only: their steps cannot be read through the Data API, so they are stubs that end with no result and error 0")
        }

        var recordsJSON: [(String, OJSON)] = []
        var skippedContainers = Set<String>()
        for t in tableOrder {
            let defs = tableFields[t] ?? []
            let rows = (seen[t] ?? [:]).filter { $0.value.keep }.sorted { $0.key < $1.key }
            guard !rows.isEmpty else { continue }
            var list: [OJSON] = []
            for (id, r) in rows {
                var pairs: [(String, OJSON)] = [("::recordId", .number(String(id))), ("::modId", .number(r.modId.isEmpty ? "0" : r.modId))]
                for f in defs where !f.meta.global {
                    for rep in 1...max(1, f.meta.maxRepeat) {
                        let key = rep == 1 ? f.name : "\(f.name)(\(rep))"
                        guard let v = r.values[key] else { continue }
                        if f.meta.result == "container" {
                            if !Self.text(v).isEmpty { skippedContainers.insert("\(t)::\(f.name)") }
                            continue
                        }
                        if Self.text(v).isEmpty { continue }
                        pairs.append((key, Self.json(v)))
                    }
                }
                for name in linkFields[t] ?? [] {
                    let value = name == "_capture_id" ? String(id) : (linkValues[t]?[id]?[name] ?? []).joined(separator: "\r")
                    if !value.isEmpty { pairs.append((name, .string(value))) }
                }
                list.append(.object(pairs))
            }
            recordsJSON.append((t, .array(list)))
        }
        for c in skippedContainers.sorted() { skipped.append("records: container field \(c): files are not copied") }

        var comment: [OJSON] = [
            .string("Captured from \(source), database \(database), by fm-emulator capture."),
            .string("Base tables and relationships are not visible through the Data API: each table occurrence became a table."),
        ]
        if !keepPassword { notes.append("the account's password is not written: log in to the copy with \(username) / admin") }
        comment += notes.map { .string("note: " + $0) }
        comment += skipped.map { .string("skipped: " + $0) }
        var root: [(String, OJSON)] = [
            ("comment", .array(comment)),
            ("database", .string(database)),
            ("accounts", .array([.object([("username", .string(username)), ("password", .string(keepPassword ? password : "admin"))])])),
            ("tables", .object(tablesJSON)),
        ]
        if !links.isEmpty {
            root.append(("relationships", .array(links.map { link in
                .object([("left", .string(link.parent)), ("right", .string(link.child)),
                         ("match", .object([("_capture_id", .string(Self.childKey(link.parent)))]))])
            })))
        }
        root += [
            ("layouts", .object(layoutsJSON)),
            ("scripts", .object(scriptsJSON)),
        ]
        if !recordsJSON.isEmpty { root.append(("records", .object(recordsJSON))) }
        return .object(root)
    }
}

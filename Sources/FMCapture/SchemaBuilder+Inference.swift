import Foundation
import SwiftFM

// Inference: what the Data API does not show, rebuilt from what a capture saw (portal match fields and
// sorts from the records, relationships from the rows seen per record). Collecting is SchemaBuilder.swift,
// writing the schema file SchemaBuilder+Writing.swift.

extension SchemaBuilder {
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

    /// A portal to write: its rows' occurrence and fields, and the match fields inferred from the records
    /// (`nil`: through a relationship rebuilt from the captured rows).
    typealias PortalPlan = (portal: PortalOut, match: (String, String)?)

    /// Decides how each portal and related field reaches its occurrence: portals first (their own rows),
    /// then related layout fields, then fields further away in portals, so that a relationship rebuilt for
    /// a portal is the one its related fields go through. What cannot be rebuilt is dropped and listed.
    mutating func planRelationships() -> [String: [PortalPlan]] {
        var portalPlans: [String: [PortalPlan]] = [:]
        var keptPortalTOs: [String: Set<String>] = [:]
        for entry in layoutEntries where entry.folder == nil {
            guard let l = layouts[entry.name] else { continue }
            var plans: [PortalPlan] = []
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
        return portalPlans
    }
}

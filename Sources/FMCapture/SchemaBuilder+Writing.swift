import Foundation
import SwiftFM

// Writing: the collected and inferred solution as a schema file (Docs/SCHEMA.md). Collecting is
// SchemaBuilder.swift, inference SchemaBuilder+Inference.swift.

extension SchemaBuilder {
    /// The schema file: the captured layouts, tables, scripts and records, with what was inferred and what
    /// was skipped in its comment.
    mutating func build(source: String) -> OJSON {
        let portalPlans = planRelationships()
        let tablesJSON = tablesJSON()
        let layoutsJSON = layoutsJSON(portalPlans)
        let scriptsJSON = scriptsJSON()
        let recordsJSON = recordsJSON()
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

    /// `tables`: every captured occurrence as a table, its fields typed from layout metadata.
    mutating func tablesJSON() -> [(String, OJSON)] {
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
                if f.meta.numeric { def.append(("numericOnly", .bool(true))) }
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
        return tablesJSON
    }

    /// `layouts`: folders, fields, portals (with inferred sorts) and value lists.
    mutating func layoutsJSON(_ portalPlans: [String: [PortalPlan]]) -> [(String, OJSON)] {
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
        return layoutsJSON
    }

    /// `scripts`: folders, and each script as a stub (steps cannot be read through the Data API).
    mutating func scriptsJSON() -> [(String, OJSON)] {
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
        return scriptsJSON
    }

    /// `records`: the kept records of each table (containers skipped), with the link fields rebuilt.
    mutating func recordsJSON() -> [(String, OJSON)] {
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
        return recordsJSON
    }


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
}

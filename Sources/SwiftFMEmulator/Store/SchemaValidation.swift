import Foundation

// Checking a schema: every reference resolves (tables, fields, occurrences, relationships, layouts,
// portals, value lists, scripts, folders, seed records). Loading is SchemaLoading.swift.

extension EmulatorSchema {
    /// Checks that every reference in the schema resolves.
    /// - Throws: ``EmulatorSchemaError`` naming the first broken reference.
    public func validate() throws {
        guard !database.isEmpty else { throw EmulatorSchemaError("the database name is empty") }
        var seen = Set<String>()
        for t in tables {
            guard seen.insert(t.name.lowercased()).inserted else { throw EmulatorSchemaError("table \(t.name) is defined twice") }
            var fieldNames = Set<String>()
            for f in t.fields {
                guard fieldNames.insert(f.name.lowercased()).inserted else {
                    throw EmulatorSchemaError("field \(t.name)::\(f.name) is defined twice")
                }
                guard !f.name.contains("::"), !f.name.isEmpty else { throw EmulatorSchemaError("bad field name \"\(f.name)\" in \(t.name)") }
            }
        }
        try validateOccurrencesAndRelationships()
        try validateLayouts()
        try validateScripts()
        try validateRecords()
        guard limits.maxSessions >= 1 else { throw EmulatorSchemaError("limits.maxSessions must be at least 1") }
        guard limits.sessionIdleSeconds > 0 else { throw EmulatorSchemaError("limits.sessionIdleSeconds must be positive") }
    }

    /// Layouts and layout folders: unique names, known occurrences, fields, value lists and portals.
    private func validateLayouts() throws {
        let probe = EmulatorState(empty: self)
        var layoutNames = Set<String>()
        for l in layouts {
            guard layoutNames.insert(l.name.lowercased()).inserted else { throw EmulatorSchemaError("layout \(l.name) is defined twice") }
            guard let t = probe.occurrenceTable(l.table)?.schema else { throw EmulatorSchemaError("layout \(l.name): unknown table \(l.table)") }
            for f in l.fields {
                if let r = f.name.range(of: "::"), f.name[..<r.lowerBound].caseInsensitiveCompare(l.table) != .orderedSame {
                    // A related field: through a portal's own match fields or the declared relationships.
                    guard probe.relatedField(f.name, from: l.table, layout: l) != nil else {
                        let to = String(f.name[..<r.lowerBound]), name = String(f.name[r.upperBound...])
                        throw EmulatorSchemaError("layout \(l.name): related field \(f.name) needs a portal or relationships from \(l.table) to \(to) and a field \(name) there")
                    }
                    continue
                }
                let bare = EmulatorState.bareField(f.name)
                guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(bare) == .orderedSame }) else {
                    throw EmulatorSchemaError("layout \(l.name): table \(t.name) has no field \(f.name)")
                }
            }
            for f in l.fields {
                if let vl = f.valueList, !l.valueLists.contains(where: { $0.name == vl }) {
                    throw EmulatorSchemaError("layout \(l.name): field \(f.name) uses unknown value list \(vl)")
                }
            }
            for p in l.portals { try validatePortal(p, of: l, table: t, probe: probe) }
        }
        for folder in layoutFolders {
            guard layoutNames.insert(folder.name.lowercased()).inserted else {
                throw EmulatorSchemaError("layout folder \(folder.name) clashes with another layout or folder")
            }
        }
        for folder in layoutFolders {
            for item in folder.items where !layoutNames.contains(item.lowercased()) {
                throw EmulatorSchemaError("layout folder \(folder.name): unknown layout \(item)")
            }
        }
    }

    /// One portal of layout `l` (on table `t`): its occurrence, match fields, fields and sort.
    private func validatePortal(_ p: Portal, of l: Layout, table t: Table, probe: EmulatorState) throws {
        guard let rt = probe.occurrenceTable(p.table)?.schema else {
            throw EmulatorSchemaError("layout \(l.name), portal \(p.name): unknown table \(p.table)")
        }
        for m in p.match {
            guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(m.local) == .orderedSame }) else {
                throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(t.name) has no match field \(m.local)")
            }
            guard rt.fields.contains(where: { $0.name.caseInsensitiveCompare(m.related) == .orderedSame }) else {
                throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(rt.name) has no match field \(m.related)")
            }
        }
        if p.match.isEmpty, probe.relPath(from: l.table, to: p.table) == nil {
            throw EmulatorSchemaError("layout \(l.name), portal \(p.name): no \"match\" and no relationships from \(l.table) to \(p.table)")
        }
        for f in p.fields {
            if let r = f.range(of: "::"), f[..<r.lowerBound].caseInsensitiveCompare(p.table) != .orderedSame {
                guard probe.relatedField(f, from: p.table, layout: nil) != nil else {
                    throw EmulatorSchemaError("layout \(l.name), portal \(p.name): field \(f) needs relationships from \(p.table) and that field")
                }
                continue
            }
            guard rt.fields.contains(where: { $0.name.caseInsensitiveCompare(EmulatorState.bareField(f)) == .orderedSame }) else {
                throw EmulatorSchemaError("layout \(l.name), portal \(p.name): table \(rt.name) has no field \(f)")
            }
        }
        for k in p.sort where !rt.fields.contains(where: { $0.name.caseInsensitiveCompare(EmulatorState.bareField(k.field)) == .orderedSame }) {
            throw EmulatorSchemaError("layout \(l.name), portal \(p.name): cannot sort by \(k.field): table \(rt.name) has no such field")
        }
    }

    /// Scripts and script folders: unique names, known layouts and scripts in their steps.
    private func validateScripts() throws {
        var scriptNames = Set<String>()
        for s in scripts {
            guard scriptNames.insert(s.name.lowercased()).inserted else { throw EmulatorSchemaError("script \(s.name) is defined twice") }
            if let l = s.layout, !layouts.contains(where: { $0.name.caseInsensitiveCompare(l) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): unknown layout \(l)")
            }
            let refs = ScriptStep.references(s.steps ?? [])
            for l in refs.layouts where !layouts.contains(where: { $0.name.caseInsensitiveCompare(l) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): Go to Layout names unknown layout \(l)")
            }
            for n in refs.scripts where !scripts.contains(where: { $0.name.caseInsensitiveCompare(n) == .orderedSame }) {
                throw EmulatorSchemaError("script \(s.name): Perform Script names unknown script \(n)")
            }
        }
        for folder in scriptFolders { scriptNames.insert(folder.name.lowercased()) }
        for folder in scriptFolders {
            for item in folder.items where item != "-" && !scriptNames.contains(item.lowercased()) {
                throw EmulatorSchemaError("script folder \(folder.name): unknown script \(item)")
            }
        }
    }

    /// Seed records: known tables and fields.
    private func validateRecords() throws {
        func table(_ name: String) -> Table? { tables.first { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        for (tableName, rows) in records {
            guard let t = table(tableName) else { throw EmulatorSchemaError("records: unknown table \(tableName)") }
            for (i, row) in rows.enumerated() {
                for key in row.keys where key != "::recordId" && key != "::modId" {
                    let (base, _) = splitRepetition(key)
                    guard t.fields.contains(where: { $0.name.caseInsensitiveCompare(base) == .orderedSame }) else {
                        throw EmulatorSchemaError("records.\(tableName)[\(i)]: table \(t.name) has no field \(key)")
                    }
                }
            }
        }
    }

    /// Checks occurrences and relationships: known tables and fields, unique names, no cycles.
    func validateOccurrencesAndRelationships() throws {
        func base(_ name: String) -> Table? { tables.first { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        var names = Set<String>()
        for o in occurrences {
            guard names.insert(o.name.lowercased()).inserted else { throw EmulatorSchemaError("occurrence \(o.name) is defined twice") }
            guard !o.name.isEmpty, !o.name.contains("::") else { throw EmulatorSchemaError("bad occurrence name \"\(o.name)\"") }
            guard base(o.table) != nil else { throw EmulatorSchemaError("occurrence \(o.name): unknown table \(o.table)") }
            if let other = base(o.name), other.name.caseInsensitiveCompare(o.table) != .orderedSame {
                throw EmulatorSchemaError("occurrence \(o.name) over \(o.table) has the name of table \(other.name)")
            }
        }
        let all = allOccurrences
        func occ(_ name: String) -> TableOccurrence? { all.first { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        // Union-find over occurrences: FileMaker allows one path between two occurrences.
        var parent: [String: String] = [:]
        func root(_ x: String) -> String {
            var r = x
            while let p = parent[r], p != r { r = p }
            return r
        }
        for (i, r) in relationships.enumerated() {
            let place = "relationships[\(i)] (\(r.left) – \(r.right))"
            guard let lo = occ(r.left), let lt = base(lo.table) else { throw EmulatorSchemaError("\(place): unknown table occurrence \(r.left)") }
            guard let ro = occ(r.right), let rt = base(ro.table) else { throw EmulatorSchemaError("\(place): unknown table occurrence \(r.right)") }
            guard lo.name.lowercased() != ro.name.lowercased() else {
                throw EmulatorSchemaError("\(place): a relationship joins two different occurrences (use a second occurrence for a self-join)")
            }
            for c in r.match {
                guard lt.fields.contains(where: { $0.name.caseInsensitiveCompare(c.left) == .orderedSame }) else {
                    throw EmulatorSchemaError("\(place): table \(lt.name) has no match field \(c.left)")
                }
                guard rt.fields.contains(where: { $0.name.caseInsensitiveCompare(c.right) == .orderedSame }) else {
                    throw EmulatorSchemaError("\(place): table \(rt.name) has no match field \(c.right)")
                }
            }
            for (keys, t) in [(r.sort, rt), (r.leftSort, lt)] {
                for k in keys where !t.fields.contains(where: { $0.name.caseInsensitiveCompare(EmulatorState.bareField(k.field)) == .orderedSame }) {
                    throw EmulatorSchemaError("\(place): cannot sort by \(k.field): table \(t.name) has no such field")
                }
            }
            let a = root(lo.name.lowercased()), b = root(ro.name.lowercased())
            guard a != b else {
                throw EmulatorSchemaError("\(place): closes a cycle (FileMaker allows only one path between two table occurrences; add another occurrence)")
            }
            parent[a] = b
        }
    }
}

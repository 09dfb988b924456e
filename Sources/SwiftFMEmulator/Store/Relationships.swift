import Foundation

// Table occurrences and relationships: the schema types, their resolution into paths, and
// how related records are found, sorted and written.

extension EmulatorSchema {
    /// A table occurrence: a named use of a base table in the relationship graph. Layouts and portals name
    /// occurrences; every base table also has an implicit occurrence of the same name unless an occurrence
    /// with that name is declared.
    public struct TableOccurrence: Sendable {
        /// The occurrence name (used in `TO::field` and in `dataInfo.table`).
        public var name: String
        /// The base table it shows.
        public var table: String

        /// Creates an occurrence.
        public init(_ name: String, table: String) {
            self.name = name
            self.table = table
        }
    }

    /// A comparison operator of a relationship's match-field pair.
    public enum MatchOperator: String, Sendable, CaseIterable {
        /// Equal (empty values never match; a text key with several lines matches any of its lines).
        case equal = "="
        /// Not equal (both sides non-empty).
        case notEqual = "≠"
        /// The left value is less than the right value.
        case less = "<"
        /// Less than or equal.
        case lessOrEqual = "≤"
        /// Greater than.
        case greater = ">"
        /// Greater than or equal.
        case greaterOrEqual = "≥"
        /// Cartesian product: every record matches.
        case cartesian = "×"

        /// The operator as seen from the other side of the relationship (`<` becomes `>`).
        var mirrored: MatchOperator {
            switch self {
            case .less: return .greater
            case .lessOrEqual: return .greaterOrEqual
            case .greater: return .less
            case .greaterOrEqual: return .lessOrEqual
            default: return self
            }
        }

        /// Parses `=`, `==`, `≠`, `!=`, `<>`, `<`, `≤`, `<=`, `>`, `≥`, `>=`, `×`, `x`, `*`.
        init?(symbol: String) {
            switch symbol {
            case "=", "==": self = .equal
            case "≠", "!=", "<>": self = .notEqual
            case "<": self = .less
            case "≤", "<=": self = .lessOrEqual
            case ">": self = .greater
            case "≥", ">=": self = .greaterOrEqual
            case "×", "x", "X", "*": self = .cartesian
            default: return nil
            }
        }
    }

    /// One match-field pair of a relationship: a field of the left occurrence, an operator, a field of the right one.
    public struct MatchClause: Sendable {
        /// A field of the left occurrence's table.
        public var left: String
        /// The comparison.
        public var op: MatchOperator
        /// A field of the right occurrence's table.
        public var right: String

        /// Creates a match clause.
        public init(_ left: String, _ op: MatchOperator = .equal, _ right: String) {
            self.left = left
            self.op = op
            self.right = right
        }
    }

    /// A sort key of a portal or relationship: a field, ascending or descending.
    public struct SortKey: Sendable {
        /// The field (bare, of the sorted occurrence's table, or `TO::field` naming that occurrence).
        public var field: String
        /// Ascending (`true`) or descending.
        public var ascending: Bool

        /// Creates a sort key.
        public init(_ field: String, ascending: Bool = true) {
            self.field = field
            self.ascending = ascending
        }
    }

    /// A relationship between two table occurrences. All match clauses must hold (they are ANDed).
    /// FileMaker relationships work both ways: the options below are per side.
    public struct Relationship: Sendable {
        /// The left occurrence.
        public var left: String
        /// The right occurrence.
        public var right: String
        /// The match-field pairs, ANDed.
        public var match: [MatchClause]
        /// "Allow creation of records in this table via this relationship" on the right side.
        public var allowCreation: Bool
        /// "Sort records" on the right side (used when walking from left to right).
        public var sort: [SortKey]
        /// "Allow creation" on the left side (walking from right to left).
        public var leftAllowCreation: Bool
        /// "Sort records" on the left side.
        public var leftSort: [SortKey]
        /// "Delete related records in this table when a record is deleted in the other table", right side:
        /// deleting a left record deletes its related right records (and so on, as FileMaker cascades).
        public var cascadeDelete: Bool
        /// The same option on the left side: deleting a right record deletes its related left records.
        public var leftCascadeDelete: Bool

        /// Creates a relationship.
        public init(left: String, right: String, match: [MatchClause], allowCreation: Bool = false, sort: [SortKey] = [],
                    leftAllowCreation: Bool = false, leftSort: [SortKey] = [], cascadeDelete: Bool = false,
                    leftCascadeDelete: Bool = false) {
            self.cascadeDelete = cascadeDelete
            self.leftCascadeDelete = leftCascadeDelete
            self.left = left
            self.right = right
            self.match = match
            self.allowCreation = allowCreation
            self.sort = sort
            self.leftAllowCreation = leftAllowCreation
            self.leftSort = leftSort
        }
    }

    /// All occurrences: the declared ones and one implicit occurrence per base table whose name is free.
    var allOccurrences: [TableOccurrence] {
        var out = occurrences
        var names = Set(occurrences.map { $0.name.lowercased() })
        for t in tables where names.insert(t.name.lowercased()).inserted {
            out.append(TableOccurrence(t.name, table: t.name))
        }
        return out
    }
}

// MARK: - Resolution

/// One step along a relationship, oriented from the current occurrence to the next one.
struct Hop: Sendable {
    /// Clauses as (field of the current table, operator seen from this side, field of the next table).
    var clauses: [(from: EmulatorSchema.Field, op: EmulatorSchema.MatchOperator, to: EmulatorSchema.Field)]
    /// The occurrence reached.
    var occurrence: String
    /// The base table of the occurrence reached.
    var table: String
    /// The sort of the records reached (relationship option of that side).
    var sort: [(EmulatorSchema.Field, Bool)]
    /// Whether records may be created in the occurrence reached through this hop.
    var allowCreation: Bool
}

/// A path of hops from a context occurrence to a related occurrence.
struct RelPath: Sendable {
    var hops: [Hop]
    /// The occurrence reached at the end.
    var occurrence: String { hops.last?.occurrence ?? "" }
    /// The base table reached at the end.
    var table: String { hops.last?.table ?? "" }
}

/// A field shown through a relationship (`TO::field`): the path to its occurrence and the field.
struct RelatedField: Sendable {
    var path: RelPath
    var field: EmulatorSchema.Field
    /// The key in `fieldData` / portal rows: `TO::field`.
    var key: String
}

/// The relationship graph of a schema: occurrence → base table, and the relationships touching each occurrence.
struct RelationGraph: Sendable {
    /// Occurrence (lower-cased) → (proper name, base table name).
    var occurrences: [String: (name: String, table: String)] = [:]
    /// Occurrence (lower-cased) → indexes of relationships touching it.
    var edges: [String: [Int]] = [:]
    var relationships: [EmulatorSchema.Relationship] = []

    /// An empty graph.
    init() {}

    init(_ schema: EmulatorSchema) {
        for o in schema.allOccurrences where occurrences[o.name.lowercased()] == nil {
            occurrences[o.name.lowercased()] = (o.name, o.table)
        }
        relationships = schema.relationships
        for (i, r) in relationships.enumerated() {
            edges[r.left.lowercased(), default: []].append(i)
            if r.right.lowercased() != r.left.lowercased() { edges[r.right.lowercased(), default: []].append(i) }
        }
    }

    /// The base table of an occurrence (`nil` when unknown).
    func table(ofOccurrence name: String) -> String? { occurrences[name.lowercased()]?.table }

    /// The proper spelling of an occurrence name.
    func occurrenceName(_ name: String) -> String? { occurrences[name.lowercased()]?.name }

    /// The shortest chain of (relationship index, walking left→right) from `from` to `to`; `nil` when unconnected.
    func route(from: String, to: String) -> [(Int, Bool)]? {
        let start = from.lowercased(), goal = to.lowercased()
        guard start != goal else { return [] }
        var previous: [String: (String, Int, Bool)] = [:]
        var queue = [start]
        var seen: Set<String> = [start]
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            for i in edges[node] ?? [] {
                let r = relationships[i]
                let forward = r.left.lowercased() == node
                let next = (forward ? r.right : r.left).lowercased()
                guard seen.insert(next).inserted else { continue }
                previous[next] = (node, i, forward)
                if next == goal {
                    var chain: [(Int, Bool)] = []
                    var cur = goal
                    while let (p, idx, fw) = previous[cur] {
                        chain.append((idx, fw))
                        cur = p
                        if cur == start { break }
                    }
                    return chain.reversed()
                }
                queue.append(next)
            }
        }
        return nil
    }
}

extension EmulatorState {
    /// The base table (state) of an occurrence name (or of a base table name).
    func occurrenceTable(_ occurrence: String) -> TableState? {
        if let t = graph.table(ofOccurrence: occurrence) { return table(t) }
        return table(occurrence)
    }

    /// Builds the hop for relationship `index` walked in direction `forward`; `nil` when a field does not resolve.
    func hop(_ index: Int, forward: Bool) -> Hop? {
        let r = graph.relationships[index]
        let fromTO = forward ? r.left : r.right, toTO = forward ? r.right : r.left
        guard let fromTable = occurrenceTable(fromTO), let toTable = occurrenceTable(toTO),
              let toName = graph.occurrenceName(toTO) else { return nil }
        var clauses: [(from: EmulatorSchema.Field, op: EmulatorSchema.MatchOperator, to: EmulatorSchema.Field)] = []
        for c in r.match {
            guard let lf = fromTable.field(forward ? c.left : c.right), let rf = toTable.field(forward ? c.right : c.left) else { return nil }
            clauses.append((lf, forward ? c.op : c.op.mirrored, rf))
        }
        let sortKeys = forward ? r.sort : r.leftSort
        let sort = sortKeys.compactMap { k in toTable.field(Self.bareField(k.field)).map { ($0, k.ascending) } }
        return Hop(clauses: clauses, occurrence: toName, table: toTable.schema.name, sort: sort,
                   allowCreation: forward ? r.allowCreation : r.leftAllowCreation)
    }

    /// The path from occurrence `from` to occurrence `to` through declared relationships.
    func relPath(from: String, to: String) -> RelPath? {
        guard let chain = graph.route(from: from, to: to), !chain.isEmpty else { return nil }
        var hops: [Hop] = []
        for (i, fw) in chain {
            guard let h = hop(i, forward: fw) else { return nil }
            hops.append(h)
        }
        return RelPath(hops: hops)
    }

    /// `TO::field` → `field`; a bare name is returned as is.
    static func bareField(_ name: String) -> String {
        name.range(of: "::").map { String(name[$0.upperBound...]) } ?? name
    }

    /// The path of a portal from its layout's occurrence: its own match fields (the pre-occurrence
    /// schema form) or the declared relationships to its occurrence. The portal's sort replaces the
    /// relationship's.
    func portalPath(_ portal: EmulatorSchema.Portal, layout: EmulatorSchema.Layout) -> RelPath? {
        var path: RelPath
        if !portal.match.isEmpty {
            guard let parent = occurrenceTable(layout.table), let child = occurrenceTable(portal.table) else { return nil }
            var clauses: [(from: EmulatorSchema.Field, op: EmulatorSchema.MatchOperator, to: EmulatorSchema.Field)] = []
            for m in portal.match {
                guard let lf = parent.field(m.local), let rf = child.field(m.related) else { return nil }
                clauses.append((lf, .equal, rf))
            }
            path = RelPath(hops: [Hop(clauses: clauses, occurrence: graph.occurrenceName(portal.table) ?? child.schema.name,
                                      table: child.schema.name, sort: [], allowCreation: true)])
        } else {
            guard let p = relPath(from: layout.table, to: portal.table) else { return nil }
            path = p
        }
        if !portal.sort.isEmpty, let child = occurrenceTable(portal.table), !path.hops.isEmpty {
            path.hops[path.hops.count - 1].sort = portal.sort.compactMap { k in
                child.field(Self.bareField(k.field)).map { ($0, k.ascending) }
            }
        }
        return path
    }

    /// Resolves `TO::field` (with an optional `(n)` already removed) seen from occurrence `context`.
    /// A portal on `layout` whose occurrence is `TO` supplies the path first (the pre-occurrence form);
    /// then the declared relationships. `nil` when `name` has no `::`, names the context itself, or does not resolve.
    func relatedField(_ name: String, from context: String, layout: EmulatorSchema.Layout?) -> RelatedField? {
        guard let r = name.range(of: "::") else { return nil }
        let to = String(name[..<r.lowerBound]), fieldName = String(name[r.upperBound...])
        guard to.caseInsensitiveCompare(context) != .orderedSame else { return nil }
        if let layout, context.caseInsensitiveCompare(layout.table) == .orderedSame,
           let portal = layout.portals.first(where: { $0.table.caseInsensitiveCompare(to) == .orderedSame && !$0.match.isEmpty }),
           let path = portalPath(portal, layout: layout), let t = table(path.table), let f = t.field(fieldName) {
            return RelatedField(path: path, field: f, key: "\(path.occurrence)::\(f.name)")
        }
        guard let path = relPath(from: context, to: to), let t = table(path.table), let f = t.field(fieldName) else { return nil }
        return RelatedField(path: path, field: f, key: "\(path.occurrence)::\(f.name)")
    }

    // MARK: Following relationships

    /// Whether `row` (of the hop's table) is related to `record` through `hop`.
    func matches(_ hop: Hop, from record: StoredRecord, fromTable: String, row: StoredRecord, session: String?) -> Bool {
        matches(hop, leftValues: leftValues(hop, of: record, table: fromTable, session: session), row: row, session: session)
    }

    /// The left-side values of a hop's clauses for one record (read once, compared with every candidate row).
    func leftValues(_ hop: Hop, of record: StoredRecord, table: String, session: String?) -> [FMValue] {
        hop.clauses.map { c in c.op == .cartesian ? .empty : value(of: c.from, table: table, record: record, session: session) }
    }

    /// Whether `row` matches the clauses of `hop` given the left-side values.
    func matches(_ hop: Hop, leftValues: [FMValue], row: StoredRecord, session: String?) -> Bool {
        for (i, c) in hop.clauses.enumerated() {
            if c.op == .cartesian { continue }
            let lv = leftValues[i]
            if lv.isEmpty { return false }
            let rv = value(of: c.to, table: hop.table, record: row, session: session)
            if rv.isEmpty { return false }
            switch c.op {
            case .equal:
                if Self.isMultiline(lv) || Self.isMultiline(rv) {
                    // A text key with several lines (return-separated) matches any of its lines, on either side.
                    let ls = Self.keyLines(lv), rs = Self.keyLines(rv)
                    if !ls.contains(where: { l in rs.contains { $0.caseInsensitiveCompare(l) == .orderedSame } }) { return false }
                } else if FMValue.compare(lv, rv) != .orderedSame {
                    return false
                }
            case .notEqual: if FMValue.compare(lv, rv) == .orderedSame { return false }
            case .less: if FMValue.compare(lv, rv) != .orderedAscending { return false }
            case .lessOrEqual: if FMValue.compare(lv, rv) == .orderedDescending { return false }
            case .greater: if FMValue.compare(lv, rv) != .orderedDescending { return false }
            case .greaterOrEqual: if FMValue.compare(lv, rv) == .orderedAscending { return false }
            case .cartesian: continue
            }
        }
        return true
    }

    static func isMultiline(_ v: FMValue) -> Bool {
        guard case let .text(s) = v else { return false }
        return s.utf8.contains { $0 == 0x0D || $0 == 0x0A }
    }

    static func keyLines(_ v: FMValue) -> [String] {
        guard case let .text(s) = v, isMultiline(v) else { return [v.text] }
        return s.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).map(String.init)
    }

    /// The records reached from `record` (of `table`) along `path`: every hop from every record reached so
    /// far, without duplicates, in the last hop's sort order (else creation order).
    func follow(_ path: RelPath, from record: StoredRecord, table: String, session: String?) -> [StoredRecord] {
        var current: [StoredRecord] = [record]
        var currentTable = table
        for hop in path.hops {
            guard let next = self.table(hop.table) else { return [] }
            let lefts = current.map { leftValues(hop, of: $0, table: currentTable, session: session) }
            // An empty left key never matches (except cartesian clauses): skip the scan.
            let live = lefts.filter { values in !zip(hop.clauses, values).contains { $0.0.op != .cartesian && $0.1.isEmpty } }
            var reached: [StoredRecord] = []
            if !live.isEmpty {
                for id in next.order {
                    guard let row = next.records[id] else { continue }
                    if live.contains(where: { matches(hop, leftValues: $0, row: row, session: session) }) { reached.append(row) }
                }
            }
            current = reached
            currentTable = next.schema.name
            if current.isEmpty { return [] }
        }
        if let last = path.hops.last, !last.sort.isEmpty {
            current = sortRecords(current, by: last.sort, table: currentTable, session: session)
        }
        return current
    }

    /// A stable sort by (field, ascending) keys.
    func sortRecords(_ records: [StoredRecord], by keys: [(EmulatorSchema.Field, Bool)], table: String, session: String?) -> [StoredRecord] {
        records.enumerated().sorted { a, b in
            for (field, ascending) in keys {
                let va = value(of: field, table: table, record: a.element, session: session)
                let vb = value(of: field, table: table, record: b.element, session: session)
                let r = FMValue.compare(va, vb)
                if r == .orderedSame { continue }
                return ascending ? r == .orderedAscending : r == .orderedDescending
            }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// The value of a related field for `record` (of `table`): the first related record's value, else empty.
    func relatedValue(_ rf: RelatedField, of record: StoredRecord, table: String, repetition: Int = 1, session: String?) -> FMValue {
        guard let first = follow(rf.path, from: record, table: table, session: session).first else { return .empty }
        return value(of: rf.field, table: rf.path.table, record: first, repetition: repetition, session: session)
    }

    // MARK: Writing through relationships

    /// The values a record created through `hop` from `parent` gets: the `=` match fields.
    func creationValues(_ hop: Hop, parent: StoredRecord, parentTable: String, session: String?) -> [(String, FMValue)] {
        hop.clauses.compactMap { c in
            guard c.op == .equal else { return nil }
            let v = value(of: c.from, table: parentTable, record: parent, session: session)
            return v.isEmpty ? nil : (c.to.name, v)
        }
    }

    /// The record a write through `path` from `record` edits: FileMaker's rule is the first related record
    /// (in the relationship's sort order) at every hop; when a hop has none and allows creation, a record is
    /// created there with its match fields set from the record before it. No record and no creation → 101.
    mutating func writeTarget(_ path: RelPath, from record: StoredRecord, table: String, session: String?, now: Date) throws -> Int {
        var current = record
        var currentTable = table
        for (i, hop) in path.hops.enumerated() {
            let sub = RelPath(hops: [path.hops[i]])
            if let first = follow(sub, from: current, table: currentTable, session: session).first {
                current = first
            } else {
                guard hop.allowCreation else { throw FMError("101") }
                let values = creationValues(hop, parent: current, parentTable: currentTable, session: session)
                let input: [(String, JSON)] = values.map { ($0.0, .string($0.1.text)) }
                let id = try createRecord(table: hop.table, input: input, session: session, dateformats: 0, now: now, restrictTo: nil)
                guard let created = self.table(hop.table)?.records[id] else { throw FMError("101") }
                current = created
            }
            currentTable = hop.table
        }
        return current.id
    }

    /// Writes `value` (text as sent) to a related field, resolving the target by FileMaker's rule.
    mutating func writeRelated(_ rf: RelatedField, repetition: Int, json: JSON, from record: StoredRecord, table: String,
                               session: String?, now: Date, dateformats: Int) throws {
        guard repetition >= 1 else { throw FMError("102") }
        guard repetition <= rf.field.repetitions else { throw FMError("111") }
        if json.isNull { throw FMError("1708") }
        guard let text = json.scalarText else { throw FMError("1708") }
        let value = try FMValue.parseOrThrow(text, field: rf.field, dateformats: dateformats)
        let target = try writeTarget(rf.path, from: record, table: table, session: session, now: now)
        _ = try editRecord(table: rf.path.table, id: target, writes: [Write(field: rf.field, repetition: repetition, value: value)],
                           session: session, now: now, bump: !rf.field.global)
    }
}

extension EmulatorState {
    /// Deletes record `id` of occurrence `occurrence` and, through relationships with the cascade option on
    /// the other side, its related records (FileMaker's "delete related records"), each record once.
    mutating func deleteCascading(occurrence: String, id: Int, session: String?) throws {
        guard let t = table(occurrence), let record = t.records[id] else { throw FMError("101") }
        var doomed: [(String, Int)] = []
        var seen = Set<String>()
        // Which records go: walk the cascading relationships from the occurrence before deleting anything.
        func collect(_ occ: String, _ record: StoredRecord, _ base: String) {
            guard seen.insert("\(base.lowercased())#\(record.id)").inserted else { return }
            doomed.append((base, record.id))
            for i in graph.edges[occ.lowercased()] ?? [] {
                let r = graph.relationships[i]
                let forward = r.left.caseInsensitiveCompare(occ) == .orderedSame
                guard forward ? r.cascadeDelete : r.leftCascadeDelete, let h = hop(i, forward: forward) else { continue }
                for child in follow(RelPath(hops: [h]), from: record, table: base, session: session) {
                    collect(h.occurrence, child, h.table)
                }
            }
        }
        collect(graph.occurrenceName(occurrence) ?? occurrence, record, t.schema.name)
        for (base, rid) in doomed where self.table(base)?.records[rid] != nil {
            try deleteRecord(table: base, id: rid)
        }
    }
}

import Foundation

/// Writes records as the Data API returns them, straight into UTF-8 bytes.
///
/// Everything that does not depend on the record is resolved once, when the writer is made for a
/// request: which table each layout field reads, `Table::field` entries shown through a portal's
/// relationship, the escaped output keys (`"name(2)":`), global values (one per session), portal
/// ranges. Per record only the values are looked up and written: resolving
/// `relatedLayoutField` per field per record and formatting numbers through `String` would take half of
/// the emulator's time for a large found set.
struct RecordWriter {
    /// Where one `fieldData` field (with its repetitions) comes from.
    enum Source {
        /// A stored field of the layout's table: `values[key]`, one output key per repetition.
        case stored(key: String, outputKeys: [[UInt8]])
        /// A global field: the session's values, the same for every record.
        case constant([(outputKey: [UInt8], value: FMValue)])
        /// `TO::field` shown through a relationship (`relations[relation]`): the first related record's
        /// values, one output key per repetition.
        case related(relation: Int, field: EmulatorSchema.Field, table: String, outputKeys: [[UInt8]])
    }

    /// One column of a portal row.
    struct PortalField {
        var field: EmulatorSchema.Field
        /// A field further away, read through the row's own relationship.
        var through: RelatedField?
        /// `"TO::field":`, or one `"TO::field(n)":` per repetition of a repeating field: every repetition,
        /// the first too (python-fmdata's integration suite reads `(1)`, `(2)`, …; WIRE.md §17).
        var outputKeys: [[UInt8]]
    }

    /// One portal written in `portalData`.
    struct PortalPlan {
        var relation: Int
        /// `"name":` of the portal in `portalData`.
        var nameKey: [UInt8]
        var fields: [PortalField]
        /// The base table of the portal's occurrence.
        var tableName: String
        var offset: Int
        var limit: Int
        /// `{"portalObjectName":…,"database":…,"table":…,"foundCount":` of `portalDataInfo`.
        var infoPrefix: [UInt8]
    }

    let state: EmulatorState
    let table: TableState?
    let session: String?
    let dateformats: Int
    let containerURL: (ContainerRef) -> String
    var sources: [Source] = []
    /// The relationships followed per record (related layout fields, then portals), each at most once per record.
    var relations: [RelPath] = []
    var portals: [PortalPlan] = []
    /// The plan of a record whose layout shows only stored and global fields of its own table and no
    /// portal (the common large found set), resolved once per request; `nil` otherwise.
    var flat: FlatPlan?

    /// One stored field of a ``FlatPlan``: the record's `values` key, and for each repetition the
    /// literal bytes written before its value (`,"name(2)":`): `runs[firstRun..<firstRun + repetitions]`
    /// of the plan, ranges of ``FlatPlan/literals``.
    struct FlatSlot {
        var key: String
        var firstRun: Int
        var repetitions: Int
    }

    /// A record object as literal byte runs with holes for stored values: everything that is the same
    /// for every record (keys, commas, global values, the empty `portalData`) is written once into
    /// `literals`, so that per record only the values are looked up (once per field) and written.
    struct FlatPlan {
        /// `{"fieldData":{` up to the first stored value's key (global fields before it included).
        var head: Range<Int>
        var slots: [FlatSlot]
        var runs: [Range<Int>]
        /// From after the last stored value to `"recordId":"`.
        var tail: Range<Int>
        var literals: [UInt8]
        /// Slot by key, open addressing on ``cheapHash(_:)``: `-1` empty. Empty when two slots share a
        /// key (then each field is looked up in the record's dictionary instead).
        var slotByKey: [Int] = []
    }

    /// A hash of a field key that needs no hasher: its length and first and last bytes. Keys that
    /// collide are told apart by comparing them.
    @inline(__always)
    static func cheapHash(_ key: String) -> Int {
        let utf8 = key.utf8
        guard let first = utf8.first, let last = utf8.last else { return 0 }
        let h = utf8.count &* 0x9E37 &+ Int(first) &* 131 &+ Int(last)
        return h ^ (h >> 7)
    }

    /// Where each of `count` keys sits in a record's `values` (`found[j]`, `nil` when absent). With `slotByKey`
    /// (the keys' ``slotTable(keys:)``) one walk of the record's entries, no hashing, each placed by
    /// ``cheapHash(_:)``; a key not placed is either absent or stored under a key equal to it in other bytes
    /// (Unicode canonical equivalence), so the dictionary is asked. Without a table, one lookup per key.
    /// The Data API's and OData's record writers share it.
    @inline(__always)
    static func locate<Table: RandomAccessCollection>(
        _ count: Int, key: (Int) -> String, in values: [String: [FMValue]], slotByKey: Table,
        into found: UnsafeMutableBufferPointer<[String: [FMValue]].Index?>
    ) where Table.Element == Int, Table.Index == Int {
        guard !slotByKey.isEmpty else {
            for j in 0..<count { found[j] = values.index(forKey: key(j)) }
            return
        }
        for j in 0..<count { found[j] = nil }
        let mask = slotByKey.count - 1
        var at = values.startIndex
        while at != values.endIndex {
            let stored = values.keys[at]
            var h = cheapHash(stored) & mask
            while slotByKey[h] >= 0 {
                let j = slotByKey[h]
                if key(j) == stored { found[j] = at; break }
                h = (h + 1) & mask
            }
            values.formIndex(after: &at)
        }
        for j in 0..<count where found[j] == nil { found[j] = values.index(forKey: key(j)) }
    }

    /// ``FlatPlan/slotByKey`` for `slots`; empty when two slots share a key.
    static func slotTable(_ slots: [FlatSlot]) -> [Int] {
        slotTable(keys: slots.map(\.key))
    }

    /// Index by key for `keys`, open addressing on ``cheapHash(_:)`` (`-1` empty); empty when two keys are equal.
    static func slotTable(keys: [String]) -> [Int] {
        guard Set(keys).count == keys.count else { return [] }
        var size = 8
        while size < keys.count * 2 { size *= 2 }
        var table = [Int](repeating: -1, count: size)
        for (j, key) in keys.enumerated() {
            var h = cheapHash(key) & (size - 1)
            while table[h] >= 0 { h = (h + 1) & (size - 1) }
            table[h] = j
        }
        return table
    }

    init(state: EmulatorState, options: OutputOptions, ctx: RequestContext) {
        self.state = state
        table = state.table(options.layout.table)
        session = ctx.token
        dateformats = options.dateformats
        let origin = ctx.origin
        containerURL = { state.containerURL($0, origin: origin) }
        guard let table else { return }
        // Related layout fields to the same occurrence share one path (it depends only on the occurrence).
        var relationByOccurrence: [String: Int] = [:]
        for lf in options.layout.fields {
            if let rf = state.relatedLayoutField(options.layout, lf.name) {
                let occurrence = rf.path.occurrence.lowercased()
                let relation: Int
                if let known = relationByOccurrence[occurrence] {
                    relation = known
                } else {
                    relations.append(rf.path)
                    relation = relations.count - 1
                    relationByOccurrence[occurrence] = relation
                }
                let keys = (1...rf.field.repetitions).map { RecordWriter.key($0 == 1 ? rf.key : "\(rf.key)(\($0))") }
                sources.append(.related(relation: relation, field: rf.field, table: rf.path.table, outputKeys: keys))
                continue
            }
            guard let f = table.field(EmulatorState.bareField(lf.name)) else { continue }
            let keys = (1...f.repetitions).map { RecordWriter.key($0 == 1 ? f.name : "\(f.name)(\($0))") }
            if f.global {
                sources.append(.constant(keys.enumerated().map { i, key in
                    (key, state.value(of: f, table: table.schema.name, record: StoredRecord(id: 0, modId: 0, values: [:]),
                                      repetition: i + 1, session: ctx.token))
                }))
            } else {
                sources.append(.stored(key: f.name.lowercased(), outputKeys: keys))
            }
        }
        if options.portals.isEmpty, relations.isEmpty { flat = RecordWriter.flatPlan(sources, dateformats: dateformats, containerURL: containerURL) }
        for p in options.portals {
            guard let path = state.portalPath(p, layout: options.layout), let rt = state.table(path.table) else { continue }
            var range = options.ranges[p.name.lowercased()] ?? (1, 50)
            // v1 quirk: a layout in Table View returns only the first related row.
            if options.layout.tableView, ctx.version.lowercased() == "v1" { range = (1, min(range.limit, 1)) }
            var info: [UInt8] = []
            JSON.object([("portalObjectName", .string(p.name)), ("database", .string(state.schema.database)),
                         ("table", .string(path.occurrence))]).write(into: &info)
            info.removeLast()
            info.append(contentsOf: #","foundCount":"#.utf8)
            relations.append(path)
            let fields = state.portalColumns(p, path: path).map { column in
                let reps = column.field.repetitions
                return PortalField(field: column.field, through: column.through,
                                   outputKeys: (1...reps).map { RecordWriter.key(reps > 1 ? "\(column.key)(\($0))" : column.key) })
            }
            portals.append(PortalPlan(relation: relations.count - 1, nameKey: RecordWriter.key(p.name), fields: fields,
                                      tableName: rt.schema.name, offset: range.offset, limit: range.limit, infoPrefix: info))
        }
    }

    /// `"text":` with JSON escapes.
    static func key(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        JSON.writeString(text, into: &out)
        out.append(UInt8(ascii: ":"))
        return out
    }

    /// The ``FlatPlan`` of `sources` (stored and global fields only).
    static func flatPlan(_ sources: [Source], dateformats: Int, containerURL: @escaping (ContainerRef) -> String) -> FlatPlan {
        // Only `writeValue`'s formatting is used for the global values (no state lookup).
        var literals: [UInt8] = []
        literals.append(contentsOf: #"{"fieldData":{"#.utf8)
        var slots: [FlatSlot] = []
        var runs: [Range<Int>] = []
        var runStart = 0
        var first = true
        func comma() {
            if first { first = false } else { literals.append(UInt8(ascii: ",")) }
        }
        var head: Range<Int>?
        let formatter = ValueFormatter(dateformats: dateformats, containerURL: containerURL)
        for source in sources {
            switch source {
            case let .stored(key, outputKeys):
                var before: [Range<Int>] = []
                for outputKey in outputKeys {
                    comma()
                    literals.append(contentsOf: outputKey)
                    before.append(runStart..<literals.count)
                    runStart = literals.count
                }
                if head == nil, let firstRun = before.first {
                    head = firstRun
                    before[0] = firstRun.upperBound..<firstRun.upperBound
                }
                slots.append(FlatSlot(key: key, firstRun: runs.count, repetitions: before.count))
                runs += before
            case let .constant(values):
                for (outputKey, value) in values {
                    comma()
                    literals.append(contentsOf: outputKey)
                    formatter.write(value, into: &literals)
                }
            case .related:
                break
            }
        }
        literals.append(contentsOf: #"},"portalData":{},"recordId":""#.utf8)
        return FlatPlan(head: head ?? 0..<0, slots: slots, runs: runs, tail: runStart..<literals.count, literals: literals,
                        slotByKey: slotTable(slots))
    }

    /// The most ``reserve(_:firstRow:rows:)`` reserves past what is written at once (beyond it the buffer grows as
    /// needed): a page of 10,000 records of 1 KB is still sized once.
    static let reserveLimit = 16 << 20

    /// Sizes `out` once from its first row (`firstRow` bytes written so far) for `rows` rows, instead of growing it
    /// (and faulting in pages) step by step, but by at most ``reserveLimit``: a first record far larger than the
    /// others (a long text, a large portal) must not reserve its size for every record. Before, 3 MB × 10,000
    /// records asked for 37.5 GB, and the allocation failure ended the process.
    static func reserve(_ out: inout [UInt8], firstRow: Int, rows: Int) {
        let estimate = firstRow.multipliedReportingOverflow(by: rows + rows / 4)
        let cap = out.count + reserveLimit
        out.reserveCapacity(estimate.overflow ? cap : min(estimate.partialValue + 64, cap))
    }

    /// `[record,record,…]`; throws ``AnswerTooLarge`` once it holds more than `limit` bytes (checked after each
    /// record: a portal of a cross-product relationship makes every record as large as a table).
    func writeArray(_ records: [StoredRecord], limit: Int = .max) throws -> [UInt8] {
        if let flat, table != nil { return try writeFlat(records, flat, limit: limit) }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, record) in records.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            write(record, into: &out)
            if out.count > limit { throw AnswerTooLarge() }
            if i == 0 { RecordWriter.reserve(&out, firstRow: out.count, rows: records.count) }
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// One record object: `fieldData`, `portalData`, `recordId`, `modId`, then `portalDataInfo` when
    /// there are portals.
    func write(_ record: StoredRecord, into out: inout [UInt8]) {
        guard let table else {
            out.append(contentsOf: "{}".utf8)
            return
        }
        var relatedRows = [[StoredRecord]?](repeating: nil, count: relations.count)
        func rows(_ i: Int) -> [StoredRecord] {
            if let r = relatedRows[i] { return r }
            let r = state.follow(relations[i], from: record, table: table.schema.name, session: session)
            relatedRows[i] = r
            return r
        }
        out.append(contentsOf: #"{"fieldData":{"#.utf8)
        var first = true
        func comma() {
            if first { first = false } else { out.append(UInt8(ascii: ",")) }
        }
        for source in sources {
            switch source {
            case let .stored(key, outputKeys):
                let reps = record.values[key]
                for (i, outputKey) in outputKeys.enumerated() {
                    comma()
                    out.append(contentsOf: outputKey)
                    if let reps, i < reps.count { writeValue(reps[i], into: &out) } else { out.append(contentsOf: #""""#.utf8) }
                }
            case let .constant(values):
                for (outputKey, value) in values {
                    comma()
                    out.append(contentsOf: outputKey)
                    writeValue(value, into: &out)
                }
            case let .related(relation, field, tableName, outputKeys):
                let first = rows(relation).first
                for (i, outputKey) in outputKeys.enumerated() {
                    comma()
                    out.append(contentsOf: outputKey)
                    if let first {
                        writeValue(state.value(of: field, table: tableName, record: first, repetition: i + 1, session: session), into: &out)
                    } else {
                        out.append(contentsOf: #""""#.utf8)
                    }
                }
            }
        }
        out.append(contentsOf: #"},"portalData":{"#.utf8)
        var counts: [(found: Int, returned: Int)] = []
        for (index, p) in portals.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: p.nameKey)
            out.append(UInt8(ascii: "["))
            let all = rows(p.relation)
            let page = all.dropFirst(p.offset - 1).prefix(p.limit)
            for (i, row) in page.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: #"{"recordId":"#.utf8)
                JSON.writeString(String(row.id), into: &out)
                for column in p.fields {
                    for (i, outputKey) in column.outputKeys.enumerated() {
                        out.append(UInt8(ascii: ","))
                        out.append(contentsOf: outputKey)
                        if let far = column.through {
                            writeValue(state.relatedValue(far, of: row, table: p.tableName, repetition: i + 1, session: session), into: &out)
                        } else {
                            writeValue(state.value(of: column.field, table: p.tableName, record: row, repetition: i + 1, session: session),
                                       into: &out)
                        }
                    }
                }
                out.append(contentsOf: #","modId":"#.utf8)
                JSON.writeString(String(row.modId), into: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
            counts.append((all.count, page.count))
        }
        out.append(contentsOf: #"},"recordId":""#.utf8)
        JSON.writeInteger(Int64(record.id), into: &out)
        out.append(contentsOf: #"","modId":""#.utf8)
        JSON.writeInteger(Int64(record.modId), into: &out)
        out.append(UInt8(ascii: "\""))
        if !portals.isEmpty {
            out.append(contentsOf: #","portalDataInfo":["#.utf8)
            for (index, p) in portals.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: p.infoPrefix)
                JSON.writeInteger(Int64(counts[index].found), into: &out)
                out.append(contentsOf: #","returnedCount":"#.utf8)
                JSON.writeInteger(Int64(counts[index].returned), into: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// ``writeArray(_:)`` through a ``FlatPlan``: one dictionary lookup per field and record, literal runs
    /// copied whole, values written without copying the plan.
    private func writeFlat(_ records: [StoredRecord], _ plan: FlatPlan, limit: Int) throws -> [UInt8] {
        typealias Values = [String: [FMValue]]
        var out: [UInt8] = [UInt8(ascii: "[")]
        let formatter = ValueFormatter(dateformats: dateformats, containerURL: containerURL)
        // Where each slot's value sits in the current record's dictionary.
        let found = UnsafeMutableBufferPointer<Values.Index?>.allocate(capacity: plan.slots.count)
        defer { found.deallocate() }
        var touched = 0
        var tooLarge = false
        plan.literals.withUnsafeBufferPointer { literals in
            plan.runs.withUnsafeBufferPointer { runs in
                plan.slots.withUnsafeBufferPointer { slots in
                    plan.slotByKey.withUnsafeBufferPointer { slotByKey in
                    for i in records.indices {
                        if i > 0 { out.append(UInt8(ascii: ",")) }
                        out.append(contentsOf: UnsafeBufferPointer(rebasing: literals[plan.head]))
                        let values = records[i].values
                        // Find every field first, then read every repetition count in a tight loop of
                        // independent loads: the values' arrays are mostly not in the cache, and this lets
                        // their cache misses overlap instead of paying for them one after another.
                        RecordWriter.locate(slots.count, key: { slots[$0].key }, in: values, slotByKey: slotByKey, into: found)
                        for j in slots.indices { if let at = found[j] { touched &+= values.values[at].count } }
                        for j in slots.indices {
                            let slot = slots[j]
                            for r in 0..<slot.repetitions {
                                let run = runs[slot.firstRun + r]
                                if !run.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: literals[run])) }
                                if let at = found[j], r < values.values[at].count {
                                    formatter.write(values.values[at][r], into: &out)
                                } else {
                                    out.append(UInt8(ascii: "\""))
                                    out.append(UInt8(ascii: "\""))
                                }
                            }
                        }
                        out.append(contentsOf: UnsafeBufferPointer(rebasing: literals[plan.tail]))
                        JSON.writeInteger(Int64(records[i].id), into: &out)
                        out.append(contentsOf: #"","modId":""#.utf8)
                        JSON.writeInteger(Int64(records[i].modId), into: &out)
                        out.append(UInt8(ascii: "\""))
                        out.append(UInt8(ascii: "}"))
                        if out.count > limit {
                            tooLarge = true
                            break
                        }
                        if i == 0 { RecordWriter.reserve(&out, firstRow: out.count, rows: records.count) }
                    }
                    }
                }
            }
        }
        if tooLarge { throw AnswerTooLarge() }
        // Keeps the counting loop (its only purpose is to start the loads early).
        if touched == Int.min { out.removeAll() }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// The JSON of one value, as ``FMValue/json(dateformats:containerURL:)`` would write it.
    func writeValue(_ value: FMValue, into out: inout [UInt8]) {
        ValueFormatter(dateformats: dateformats, containerURL: containerURL).write(value, into: &out)
    }

    /// Writes values as ``FMValue/json(dateformats:containerURL:)`` would.
    struct ValueFormatter {
        let dateformats: Int
        let containerURL: (ContainerRef) -> String

        /// The JSON of one value, as ``FMValue/json(dateformats:containerURL:)`` would write it.
        func write(_ value: FMValue, into out: inout [UInt8]) {
            switch value {
            case .empty: out.append(contentsOf: #""""#.utf8)
            case let .text(s): JSON.writeString(s, into: &out)
            case let .number(n): JSON.appendUTF8(n.text, into: &out)
            case .date, .time, .timestamp: RecordWriter.writeTemporal(value, dateformats: dateformats, into: &out)
            case let .container(c): JSON.writeString(containerURL(c), into: &out)
            }
        }
    }

    /// A date, time or timestamp as a JSON string: ``FMDate/formatted(_:)``, `HH:MM:SS`, and for a timestamp the
    /// two joined by `T` (ISO 8601, `dateformats` 2) or a space, with `timestampSuffix` after it (OData's `Z`).
    /// Any other value writes nothing.
    static func writeTemporal(_ value: FMValue, dateformats: Int, timestampSuffix: String = "", into out: inout [UInt8]) {
        switch value {
        case let .date(d):
            out.append(UInt8(ascii: "\""))
            writeDate(d, dateformats, into: &out)
        case let .time(t):
            out.append(UInt8(ascii: "\""))
            writeTime(t, into: &out)
        case let .timestamp(d, t):
            out.append(UInt8(ascii: "\""))
            writeDate(d, dateformats, into: &out)
            out.append(dateformats == 2 ? UInt8(ascii: "T") : UInt8(ascii: " "))
            writeTime(t, into: &out)
            out.append(contentsOf: timestampSuffix.utf8)
        default:
            return
        }
        out.append(UInt8(ascii: "\""))
    }

    /// ``FMDate/formatted(_:)`` without building strings.
    static func writeDate(_ d: FMDate, _ dateformats: Int, into out: inout [UInt8]) {
        if dateformats == 2 {
            writePadded(d.year, 4, into: &out); out.append(UInt8(ascii: "-"))
            writePadded(d.month, 2, into: &out); out.append(UInt8(ascii: "-"))
            writePadded(d.day, 2, into: &out)
        } else {
            writePadded(d.month, 2, into: &out); out.append(UInt8(ascii: "/"))
            writePadded(d.day, 2, into: &out); out.append(UInt8(ascii: "/"))
            writePadded(d.year, 4, into: &out)
        }
    }

    /// ``FMValue/formatTime(_:)`` without building strings.
    static func writeTime(_ seconds: Int, into out: inout [UInt8]) {
        guard seconds != Int.min else { out.append(contentsOf: FMValue.formatTime(seconds).utf8); return }
        let s = abs(seconds)
        if seconds < 0 { out.append(UInt8(ascii: "-")) }
        writePadded(s / 3600, 2, into: &out); out.append(UInt8(ascii: ":"))
        writePadded((s / 60) % 60, 2, into: &out); out.append(UInt8(ascii: ":"))
        writePadded(s % 60, 2, into: &out)
    }

    /// ``pad(_:_:)`` without building strings.
    static func writePadded(_ n: Int, _ width: Int, into out: inout [UInt8]) {
        guard n >= 0 else { out.append(contentsOf: pad(n, width).utf8); return }
        var digits = 1
        var rest = n / 10
        while rest > 0 { digits += 1; rest /= 10 }
        for _ in digits..<max(width, digits) { out.append(UInt8(ascii: "0")) }
        JSON.writeInteger(Int64(n), into: &out)
    }
}

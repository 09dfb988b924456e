import Foundation

/// Writes OData rows straight into UTF-8 bytes, without building a JSON tree per row: the one renderer of
/// rows, for collections, expansions, navigations, single-record reads and the answers of creates and updates.
///
/// A row is `{`, `@id`/`@editLink` (unless `odata.metadata=none`), the columns, then any expansions; a
/// single entity has its `@context` first. Values are as ``EmulatorState/odataJSONValue(_:ieee754:)`` renders them.
///
/// What does not depend on the record is resolved once per request: each column's `"name":` with its comma,
/// the record's dictionary key of each stored field, the entity URL up to the key (percent-encoded once), the
/// target set and relationship of each expansion. Per row the values are found by walking the record's
/// dictionary once (as ``RecordWriter``'s flat plan does) and written; a large read spent most of the
/// emulator's time building and serialising the tree (fm-bench `odata`).
struct ODataRowWriter {
    /// One column: where its value comes from and the literal bytes before it (`,"name":`).
    enum Source {
        /// A stored field: the record's `values[key]`, first repetition.
        case stored(slot: Int)
        /// A global field: always `null` in a row.
        case null
        case rowID
        case rowModID
    }

    /// One `$expand` item, resolved once.
    struct Expansion {
        var options: [String: String]
        /// `"Nav":` of the expansion.
        var key: [UInt8]
        var target: ODataSet
        var hop: Hop
    }

    let state: EmulatorState
    let set: ODataSet
    let ctx: ODataContext
    let depth: Int
    /// What a single entity starts with: `"@context":"…/$entity"` (empty for a row of a collection).
    let lead: [UInt8]
    /// Unless `odata.metadata=none`, `"@odata.id":` (or `"@id":`), after a comma when ``lead`` is not empty.
    let idKey: [UInt8]?
    /// `,"@odata.editLink":`.
    let editLinkKey: [UInt8]
    /// The entity URL before the key: `{base}/{set}(`.
    let urlHead: String
    let sources: [Source]
    /// The literal bytes before each column's value (`"name":`, with a comma unless it is the row's first pair).
    let prefixes: [[UInt8]]
    /// The record dictionary key of each stored slot (`field.name.lowercased()`, as ``StoredRecord/value(_:repetition:)``).
    let slotKeys: [String]
    /// Slot by key, open addressing on ``RecordWriter/cheapHash(_:)``; empty when two slots share a key.
    let slotByKey: [Int]
    /// Expansions whose navigation resolves (the others write nothing).
    let expansions: [Expansion]

    /// `context`: the `@context` of a single entity (``writeEntity(_:)``); `nil` for rows of a collection.
    init(state: EmulatorState, set: ODataSet, columns: [ODataColumn], expand: [ODataExpansion], ctx: ODataContext, depth: Int,
         context: String? = nil) {
        self.state = state
        self.set = set
        self.ctx = ctx
        self.depth = depth
        var lead: [UInt8] = []
        if let context {
            lead = RecordWriter.key(ctx.annotation("context"))
            JSON.writeString(context, into: &lead)
        }
        self.lead = lead
        var first = lead.isEmpty
        if ctx.noMetadata {
            idKey = nil
        } else {
            idKey = (first ? [] : [UInt8(ascii: ",")]) + RecordWriter.key(ctx.annotation("id"))
            first = false
        }
        editLinkKey = [UInt8(ascii: ",")] + RecordWriter.key(ctx.annotation("editLink"))
        urlHead = ctx.base + "/" + ODataContext.encode(set.name) + "("
        var sources: [Source] = []
        var prefixes: [[UInt8]] = []
        var slotKeys: [String] = []
        for column in columns {
            var prefix: [UInt8] = first ? [] : [UInt8(ascii: ",")]
            first = false
            prefix += RecordWriter.key(column.name)
            prefixes.append(prefix)
            switch column {
            case let .field(f) where f.global: sources.append(.null)
            case let .field(f):
                sources.append(.stored(slot: slotKeys.count))
                slotKeys.append(f.name.lowercased())
            case .rowID: sources.append(.rowID)
            case .rowModID: sources.append(.rowModID)
            }
        }
        self.sources = sources
        self.prefixes = prefixes
        self.slotKeys = slotKeys
        slotByKey = RecordWriter.slotTable(keys: slotKeys)
        expansions = expand.compactMap { e in
            guard let target = state.odataSet(e.nav.name), let hop = state.hop(e.nav.relationship, forward: e.nav.forward) else { return nil }
            return Expansion(options: e.options, key: RecordWriter.key(e.nav.name), target: target, hop: hop)
        }
    }

    /// The most ``writeArray(_:table:)`` reserves past its first row at once (beyond it the buffer grows as needed).
    static let reserveLimit = 1 << 20

    /// `[row,row,…]` of `ids` (ids without a record are skipped); throws ``AnswerTooLarge`` once it would hold
    /// more than `limit` bytes (expansions included: each is given what is left).
    func writeArray(_ ids: ArraySlice<Int>, table: TableState, limit: Int = .max) throws -> [UInt8] {
        willWrite()
        var out: [UInt8] = [UInt8(ascii: "[")]
        try withFoundBuffer { found in
            var written = 0
            for id in ids {
                guard let record = table.records[id] else { continue }
                if written > 0 { out.append(UInt8(ascii: ",")) }
                try write(record, found: found, into: &out, limit: limit)
                if out.count > limit { throw AnswerTooLarge() }
                written += 1
                // Size the buffer once from the first row instead of growing it step by step, by at most
                // ``reserveLimit``: a first row far larger than the others (a long text, a container) must not
                // reserve its size for every row (10 MB × 100 000 rows would ask for a terabyte).
                if written == 1 {
                    let estimate = out.count.multipliedReportingOverflow(by: ids.count + ids.count / 4)
                    out.reserveCapacity(estimate.overflow ? out.count + Self.reserveLimit : min(estimate.partialValue + 64, out.count + Self.reserveLimit))
                }
            }
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// One entity object: its `@context` (given to ``init(state:set:columns:expand:ctx:depth:context:)``), then the row.
    /// Throws ``AnswerTooLarge`` when its expansions would pass `limit` bytes.
    func writeEntity(_ record: StoredRecord, limit: Int = .max) throws -> [UInt8] {
        willWrite()
        var out: [UInt8] = []
        try withFoundBuffer { found in try write(record, found: found, into: &out, limit: limit) }
        return out
    }

    /// Tells ``EmulatorState/odataWillWrite`` (tests) that a top-level answer is being written.
    private func willWrite() {
        if depth == 0 { state.odataWillWrite?() }
    }

    /// Runs `body` with a buffer of one record dictionary index per stored slot.
    private func withFoundBuffer(_ body: (UnsafeMutableBufferPointer<[String: [FMValue]].Index?>) throws -> Void) rethrows {
        typealias Values = [String: [FMValue]]
        let found = UnsafeMutableBufferPointer<Values.Index?>.allocate(capacity: max(1, slotKeys.count))
        found.initialize(repeating: nil)
        defer {
            _ = found.deinitialize()
            found.deallocate()
        }
        try body(found)
    }

    /// One row object; an expansion may add what is left of `limit` after what `out` holds (``AnswerTooLarge``).
    private func write(_ record: StoredRecord, found: UnsafeMutableBufferPointer<[String: [FMValue]].Index?>, into out: inout [UInt8],
                       limit: Int) throws {
        out.append(UInt8(ascii: "{"))
        out.append(contentsOf: lead)
        if let idKey {
            var url = urlHead
            url += ODataContext.encode(state.odataKeyText(set, record: record))
            url += ")"
            out.append(contentsOf: idKey)
            JSON.writeString(url, into: &out)
            out.append(contentsOf: editLinkKey)
            JSON.writeString(url, into: &out)
        }
        let values = record.values
        if !slotKeys.isEmpty {
            RecordWriter.locate(slotKeys.count, key: { slotKeys[$0] }, in: values, slotByKey: slotByKey, into: found)
        }
        for (i, source) in sources.enumerated() {
            out.append(contentsOf: prefixes[i])
            switch source {
            case let .stored(slot):
                if let at = found[slot], let value = values.values[at].first {
                    writeValue(value, into: &out)
                } else {
                    out.append(contentsOf: "null".utf8)
                }
            case .null: out.append(contentsOf: "null".utf8)
            case .rowID: JSON.writeInteger(Int64(record.id), into: &out)
            case .rowModID: JSON.writeInteger(Int64(record.modId), into: &out)
            }
        }
        var wroteAny = !lead.isEmpty || idKey != nil || !sources.isEmpty
        for e in expansions {
            let related = state.follow(RelPath(hops: [e.hop]), from: record, table: set.table, session: nil)
            let pair: (key: [UInt8], value: [UInt8])
            do {
                let rows = try state.odataSelectRows(e.target, candidates: related.map(\.id), options: e.options, ctx: ctx, depth: depth + 1,
                                                     limit: limit - out.count)
                pair = (e.key, rows.bytes)
            } catch let error as AnswerTooLarge {
                throw error
            } catch let error as ODataError {
                // An error inside an expansion (an unknown field: the rest was checked with the request,
                // ``EmulatorState/odataCheckExpansions(_:depth:)``) does not fail the request (ODATA.md §3.5).
                var value: [UInt8] = []
                JSON.array([.object([("error", .object([("code", .string(error.code)), ("message", .string(error.message))]))])]).write(into: &value)
                pair = (RecordWriter.key("error"), value)
            } catch {
                continue
            }
            if wroteAny { out.append(UInt8(ascii: ",")) }
            wroteAny = true
            out.append(contentsOf: pair.key)
            out.append(contentsOf: pair.value)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A stored value as ``EmulatorState/odataJSONValue(_:ieee754:)`` renders it.
    private func writeValue(_ value: FMValue, into out: inout [UInt8]) {
        switch value {
        case .empty: out.append(contentsOf: "null".utf8)
        case let .text(s): JSON.writeString(s, into: &out)
        case let .number(n):
            if ctx.ieee754 { JSON.writeString(n.text, into: &out) } else { JSON.appendUTF8(n.text, into: &out) }
        case .date, .time, .timestamp:
            RecordWriter.writeTemporal(value, dateformats: 2, timestampSuffix: "Z", into: &out)
        case .container:
            state.odataJSONValue(value, ieee754: ctx.ieee754).write(into: &out)
        }
    }
}

import Foundation

/// One stored record: field values by lower-cased field name, one entry per repetition.
struct StoredRecord: Sendable {
    var id: Int
    var modId: Int
    var values: [String: [FMValue]]

    func value(_ field: EmulatorSchema.Field, repetition: Int = 1) -> FMValue {
        guard let reps = values[field.name.lowercased()], repetition >= 1, repetition <= reps.count else { return .empty }
        return reps[repetition - 1]
    }

    mutating func set(_ field: EmulatorSchema.Field, repetition: Int, _ value: FMValue) {
        var reps = values[field.name.lowercased()] ?? Array(repeating: .empty, count: field.repetitions)
        if reps.count < field.repetitions { reps += Array(repeating: .empty, count: field.repetitions - reps.count) }
        reps[repetition - 1] = value
        values[field.name.lowercased()] = reps
    }
}

/// A table's records in creation order, with its counters.
struct TableState: Sendable {
    let schema: EmulatorSchema.Table
    /// Field position by lower-cased name (FileMaker names are case-insensitive).
    let fieldIndex: [String: Int]
    var records: [Int: StoredRecord] = [:]
    var order: [Int] = []
    var nextId = 1
    var serials: [String: Int] = [:]

    init(schema: EmulatorSchema.Table) {
        self.schema = schema
        var index: [String: Int] = [:]
        for (i, f) in schema.fields.enumerated() where index[f.name.lowercased()] == nil { index[f.name.lowercased()] = i }
        fieldIndex = index
    }

    func field(_ name: String) -> EmulatorSchema.Field? {
        fieldIndex[name.lowercased()].map { schema.fields[$0] }
    }

    var orderedRecords: [StoredRecord] { order.compactMap { records[$0] } }
}

/// How writes are checked: `options.entrymode` and `options.prohibitmode` of a create or edit.
struct WriteMode: Sendable, Equatable {
    /// `entrymode: "script"`: field validation options are not checked.
    var skipsValidation: Bool
    /// `prohibitmode: "script"`: fields with "prohibit modification" may be written.
    var allowsProhibited: Bool

    /// The default of a Data API request (`"user"` for both).
    static let user = WriteMode(skipsValidation: false, allowsProhibited: false)
    /// Seed records and direct inserts: validated, any field writable.
    static let seed = WriteMode(skipsValidation: false, allowsProhibited: true)
}

/// A Data API session.
struct Session: Sendable {
    var token: String
    /// The database segment used at login (after stripping `.fmp12`): the token is bound to it.
    var database: String
    var account: String
    var lastUsed: Date
    /// Global field values, keyed `table::field` lower-cased, one entry per repetition.
    var globals: [String: [FMValue]] = [:]
}

/// A stored container's bytes.
struct Blob: Sendable {
    var data: Data
    var contentType: String
    var filename: String
}

/// Everything the emulator knows, guarded by one lock.
struct EmulatorState {
    var schema: EmulatorSchema {
        didSet { dataVersion &+= 1 }
    }
    var tables: [String: TableState] = [:] {
        didSet { dataVersion &+= 1 }
    }
    /// Bumped by every change to ``tables`` (a record written, created or deleted, a reset, a table or field added or
    /// dropped) or to ``schema``: a write by `$filter` that matched on a snapshot knows, when it takes the lock again to
    /// write, whether what it matched may have changed (``odataChangeMatching(_:method:_:)``). A whole state put back
    /// (a change set rolled back) brings its version back with the same records.
    var dataVersion = 0
    /// Set while a write by `$filter` is answered again under the lock, atomically, because the records changed after it
    /// matched on its snapshot (``odataChangeMatching(_:method:_:)``).
    var odataWritesMatchUnderLock = false
    var sessions: [String: Session] = [:]
    var blobs: [String: Blob] = [:]
    /// The container-streaming cookies handed out (`X-FMS-Session-Key`), the most recent 4,096: a client
    /// sends its cookie back on the redirect's next hop, and every download without one gets a new one, so
    /// an unbounded set grew with every download of a long run.
    var streamingCookies = RecentSet(capacity: 4096)
    var faults: [PendingFault] = []
    var scriptClosures: [String: @Sendable (ScriptInvocation) -> ScriptOutcome] = [:]
    var rejectLogins = false
    /// The entry and prohibit modes of the request being handled (`options`, WIRE.md §6.1); seeds and
    /// ``Emulator/addRecord(toTable:_:)`` validate but may write prohibit-modification fields.
    var writeMode = WriteMode.seed
    /// The body of the request being handled, parsed before the lock was taken.
    var prepared: PreparedBody?
    /// The request log, bounded by count and bytes.
    var log = RequestLogStore()
    /// Tokens this emulator issued (recent ones), so that every one of them is redacted from log lines.
    var issuedTokens = IssuedTokens()
    /// Connection limits applied by ``Emulator/start(host:port:)``.
    var maxConnections = 256
    var connectionIdleTimeout: TimeInterval = 60
    var connectionHeaderTimeout: TimeInterval = 10
    var connectionBodyTimeout: TimeInterval = 30
    /// Keys of container bytes a write or a delete let go of: ``sweepBlobs()`` drops those no record or session
    /// global holds any more, once the request is answered.
    var unheldBlobs: Set<String> = []
    /// The session cap (initially the schema's `limits.maxSessions`); `nil` for none.
    var maxSessions: Int?
    /// Successful logins and logouts since start or reset.
    var loginCount = 0
    var logoutCount = 0
    /// Claris ID tokens accepted by `Authorization: FMID <token>` logins (``Emulator/acceptClarisIDToken(_:)``).
    var clarisIDTokens: Set<String> = []
    /// ID tokens the emulator's Cognito issued that an FMID login presented, and their `exp`.
    var issuedClarisIDTokens: [String: Date] = [:]
    var issuedClarisIDTokensSweptAt: Date = .distantPast
    /// OAuth (request id, identifier) pairs accepted, joined by a newline.
    var oauthPairs: Set<String> = []
    var clockOffset: TimeInterval = 0
    var onRequest: (@Sendable (String) -> Void)?
    var server: HTTPServer?
    var port: UInt16?
    var baseURL: URL?
    /// The URL clients reach the emulator at (behind a proxy); see ``Emulator/publicURL``.
    var publicURL: URL?
    /// HTTPS on the emulator's own port; see ``Emulator/tls``.
    var tls: EmulatorTLS?
    /// The scheme of the running server (`https` with ``tls``), for URLs the emulator writes without a proxy's word.
    var servedScheme = "http"
    /// Table occurrences and relationships: the paths from each layout's table occurrence to related tables.
    var graph = RelationGraph()
    /// The most bytes of records one answer may hold (``Emulator/maxAnswerBytes``): past it the answer is refused
    /// with FileMaker's 953 (``AnswerTooLarge``).
    var maxAnswerBytes = EmulatorState.defaultMaxAnswerBytes
    static let defaultMaxAnswerBytes = 256 << 20
    /// OData: the most rows a page holds before `@odata.nextLink` (``Emulator/odataPageSize``).
    var odataMaxPageSize = 10_000
    /// OData: the version `$metadata` reports as `ServerVersion` (``Emulator/odataServerVersion``).
    var odataVersion = "22.0.4"
    /// OData: FileMaker Server 22's `Accept: application/octet-stream` quirk on `…/$value` (``Emulator/odataOctetStreamQuirk``).
    var odataOctetStreamQuirk = false
    /// Tests: called when the rows of an OData answer start being written (``ODataRowWriter``); a read
    /// writes them after the state lock is released.
    var odataWillWrite: (@Sendable () -> Void)?
    /// Tests: called when a `$filter` starts being applied to records (``ODataFilterPlan``); a read, and a write by
    /// `$filter`, apply it after the state lock is released.
    var odataWillFilter: (@Sendable () -> Void)?
    /// Tests: called when a `$apply` starts being evaluated over records (``ODataApplyPlan``).
    var odataWillApply: (@Sendable () -> Void)?
    /// Tests: called when a find without scripts starts matching records, after the state lock is released.
    var findWillMatch: (@Sendable () -> Void)?
    /// OData webhooks by id (``ODataWebhook``).
    var odataWebhooks: [Int: ODataWebhook] = [:]
    /// Changes noted for the webhooks while a request is answered (only while some webhook exists).
    var odataChangeNotes: [ODataChangeNote] = []
    /// Deliveries to start once the request is answered (`Webhook.Invoke`).
    var odataOutbox: [ODataDelivery] = []
    var odataWebhookSerial = 0
    /// OData ids frozen by a schema change (occurrence → FMTID; table → field → field number), so that ids
    /// never move when tables or fields come and go; others follow the schema's order.
    var odataTableIDs: [String: Int] = [:]
    var odataFieldNumbers: [String: [String: Int]] = [:]
    /// OData: schema changes per base table (`FileMaker_Tables.ModCount`), and indexed fields (`table::field`).
    var odataModCounts: [String: Int] = [:]
    var odataIndexes: Set<String> = []
    /// Bumped when every record is replaced (``reloadRecords(now:)``, a reset), whose new records may take ids of
    /// old ones: a find that matched on a snapshot before it knows its ids name other records now.
    var recordsGeneration = 0

    init(schema: EmulatorSchema, now: Date) throws {
        self.schema = schema
        maxSessions = schema.limits.maxSessions
        for t in schema.tables {
            tables[t.name.lowercased()] = TableState(schema: t)
        }
        graph = RelationGraph(schema)
        for t in schema.tables {
            let key = schema.records[t.name] != nil ? t.name : schema.records.keys.first { $0.lowercased() == t.name.lowercased() }
            for (i, row) in (key.flatMap { schema.records[$0] } ?? []).enumerated() {
                let place = "records.\(key ?? t.name)[\(i)]"
                var fields: [(String, JSON)] = []
                for (k, v) in row.sorted(by: { $0.key < $1.key }) where !k.hasPrefix("::") {
                    // Name the row, the field and the expected format for a value that does not parse.
                    if let field = tables[t.name.lowercased()]?.field(splitRepetition(k).0), field.type != .text,
                       !v.trimmingCharacters(in: .whitespaces).isEmpty,
                       (try? FMValue.parseOrThrow(v, field: field, dateformats: 0)) == nil
                        || (field.numericOnly && field.type == .number && FMNumber(v) == nil) {
                        throw EmulatorSchemaError("\(place).\(k): seed record of table \(t.name) rejected: \"\(v)\" is not "
                                                  + FMValue.expectedFormat(field))
                    }
                    fields.append((k, .string(v)))
                }
                do {
                    // `::recordId` / `::modId` keep a captured record's ids (SCHEMA.md, capture).
                    if let ridText = row["::recordId"] {
                        guard let rid = Int(ridText), let next = tables[t.name.lowercased()]?.nextId, rid >= next else {
                            throw EmulatorSchemaError("seed record of \(t.name): ::recordId \(ridText) must be a whole number above the previous record's")
                        }
                        tables[t.name.lowercased()]?.nextId = rid
                    }
                    let id = try createRecord(table: t.name, input: fields, session: nil, dateformats: 0, now: now, restrictTo: nil)
                    if let m = row["::modId"].flatMap({ Int($0) }), m >= 0 { tables[t.name.lowercased()]?.records[id]?.modId = m }
                } catch let e as FMError {
                    let fieldPart = e.field.map { ".\($0)" } ?? ""
                    throw EmulatorSchemaError("\(place)\(fieldPart): seed record of table \(t.name) rejected with FileMaker error "
                                              + "\(e.code) (\(e.message))")
                }
            }
        }
    }

    // MARK: Lookup

    func layout(_ name: String) -> EmulatorSchema.Layout? {
        if let exact = schema.layouts.first(where: { $0.name == name }) { return exact }
        let lower = name.lowercased()
        return schema.layouts.first { $0.name.lowercased() == lower }
    }

    /// A base table by name, or the base table of a table occurrence.
    func table(_ name: String) -> TableState? { tables[tableKey(name)] }

    /// The key in ``tables`` of a base table or table occurrence name.
    func tableKey(_ name: String) -> String {
        let lower = name.lowercased()
        if tables[lower] != nil { return lower }
        return graph.table(ofOccurrence: name)?.lowercased() ?? lower
    }

    func script(_ name: String) -> EmulatorSchema.Script? {
        schema.scripts.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    // MARK: Writing values

    /// A resolved write target: a field (and repetition) of the table, or a related field.
    struct Write {
        var field: EmulatorSchema.Field
        var repetition: Int
        var value: FMValue
    }

    /// Resolves `fieldData` pairs for `table` into typed writes; `allowed` restricts to layout fields.
    func resolveWrites(table: TableState, input: [(String, JSON)], dateformats: Int,
                       restrictTo allowed: Set<String>?) throws -> [Write] {
        var writes: [Write] = []
        for (key, json) in input {
            var (base, rep) = splitRepetition(key)
            if let r = base.range(of: "::") {
                let prefix = String(base[..<r.lowerBound])
                guard prefix.caseInsensitiveCompare(table.schema.name) == .orderedSame else { throw FMError("102") }
                base = String(base[r.upperBound...])
            }
            guard let field = table.field(base) else { throw FMError("102") }
            if let allowed, !allowed.contains(field.name.lowercased()) { throw FMError("102") }
            guard rep >= 1 else { throw FMError("102") }
            guard rep <= field.repetitions else { throw FMError("111") }
            if json.isNull { throw FMError("1708") }
            guard let text = json.scalarText else { throw FMError("1708") }
            // A JSON number beyond FileMaker's range (1e400) is not a number FileMaker can store.
            if case let .number(n) = json, !n.isFinite { throw FMError("502", field: field.name) }
            if field.prohibitModification, !writeMode.allowsProhibited { throw FMError("201", field: field.name) }
            let value = try FMValue.parseOrThrow(text, field: field, dateformats: dateformats)
            writes.append(Write(field: field, repetition: rep, value: value))
        }
        return writes
    }

    /// Checks validation options of `fields` on `record`.
    func validate(_ record: StoredRecord, in table: TableState, fields: [EmulatorSchema.Field]) throws {
        // `options.entrymode: "script"` skips the field validation options, as in FileMaker.
        guard !writeMode.skipsValidation else { return }
        for field in fields where !field.global {
            if field.numericOnly, field.type == .number {
                for rep in 1...field.repetitions {
                    if case .text = record.value(field, repetition: rep) { throw FMError("502", field: field.name) }
                }
            }
            let v = record.value(field)
            if field.notEmpty, v.isEmpty { throw FMError("509", field: field.name) }
            if field.maxCharacters > 0 {
                for rep in 1...field.repetitions where record.value(field, repetition: rep).text.count > field.maxCharacters {
                    throw FMError("511", field: field.name)
                }
            }
            if field.unique, !v.isEmpty {
                let clash = table.records.values.contains {
                    $0.id != record.id && $0.value(field).text.caseInsensitiveCompare(v.text) == .orderedSame
                }
                if clash { throw FMError("504", field: field.name) }
            }
        }
    }

    /// Creates a record; returns its id.
    mutating func createRecord(table name: String, input: [(String, JSON)], session: String?, dateformats: Int,
                               now: Date, restrictTo allowed: Set<String>?) throws -> Int {
        // Take the table out of the dictionary while mutating it, so its records are not copied (copy-on-write).
        let key = tableKey(name)
        guard var table = tables.removeValue(forKey: key) else { throw FMError("106") }
        defer { tables[key] = table }
        let writes = try resolveWrites(table: table, input: input, dateformats: dateformats, restrictTo: allowed)
        var record = StoredRecord(id: table.nextId, modId: 0, values: [:])
        applyAutoEnter(&record, table: &table, now: now, creating: true)
        for w in writes where !w.field.global {
            record.set(w.field, repetition: w.repetition, w.value)
        }
        try validate(record, in: table, fields: table.schema.fields)
        // Globals only change once the record is accepted: a failed request changes nothing.
        for w in writes where w.field.global {
            setGlobal(table: table.schema.name, field: w.field, repetition: w.repetition, value: w.value, session: session)
        }
        table.nextId += 1
        table.records[record.id] = record
        table.order.append(record.id)
        noteChange("ADD", table: table.schema.name, record: record)
        return record.id
    }

    mutating func applyAutoEnter(_ record: inout StoredRecord, table: inout TableState, now: Date, creating: Bool) {
        for field in table.schema.fields {
            guard let ae = field.autoEnter else { continue }
            switch ae {
            case let .serial(start):
                guard creating else { continue }
                let next = table.serials[field.name.lowercased()] ?? start
                table.serials[field.name.lowercased()] = next + 1
                record.set(field, repetition: 1, field.type == .number ? .number(FMNumber(next)) : .text(String(next)))
            case .creationDate:
                if creating { record.set(field, repetition: 1, .date(FMDate(now))) }
            case .creationTimestamp:
                if creating { record.set(field, repetition: 1, FMValue.timestamp(of: now)) }
            case .modificationTimestamp:
                record.set(field, repetition: 1, FMValue.timestamp(of: now))
            case let .value(text):
                if creating, let v = FMValue.parse(text, as: field.type, dateformats: 0) { record.set(field, repetition: 1, v) }
            }
        }
    }

    /// Edits a record with typed writes; bumps modId when `bump` is true.
    mutating func editRecord(table name: String, id: Int, writes: [Write], session: String?, now: Date, bump: Bool) throws -> Int {
        let key = tableKey(name)
        guard tables[key]?.records[id] != nil, var table = tables.removeValue(forKey: key),
              var record = table.records[id] else { throw FMError("101") }
        defer { tables[key] = table }
        var replaced: [String] = []
        for w in writes where !w.field.global {
            if case let .container(old) = record.value(w.field, repetition: w.repetition) { replaced.append(old.key) }
            record.set(w.field, repetition: w.repetition, w.value)
        }
        try validate(record, in: table, fields: writes.map(\.field))
        unheldBlobs.formUnion(replaced)
        for w in writes where w.field.global {
            setGlobal(table: table.schema.name, field: w.field, repetition: w.repetition, value: w.value, session: session)
        }
        if bump {
            record.modId += 1
            for field in table.schema.fields where field.autoEnter == .modificationTimestamp {
                record.set(field, repetition: 1, FMValue.timestamp(of: now))
            }
        }
        table.records[id] = record
        if bump { noteChange("UPDATE", table: table.schema.name, record: record) }
        return record.modId
    }

    mutating func deleteRecord(table name: String, id: Int) throws {
        let key = tableKey(name)
        guard tables[key]?.records[id] != nil, var table = tables.removeValue(forKey: key) else {
            throw FMError("101")
        }
        defer { tables[key] = table }
        if let record = table.records[id] {
            noteChange("DELETE", table: table.schema.name, record: record)
            for values in record.values.values {
                for case let .container(ref) in values { unheldBlobs.insert(ref.key) }
            }
        }
        table.records[id] = nil
        if let i = table.order.firstIndex(of: id) { table.order.remove(at: i) }
    }

    /// Drops the bytes of the containers in ``unheldBlobs`` that no record and no session global holds (one pass
    /// over the records, only after a request let go of a container). Before, deleting a record kept its files
    /// until the emulator stopped: a suite storing a 1 MB file in each of 1,000 records it deletes grew by 1 GB.
    mutating func sweepBlobs() {
        guard !unheldBlobs.isEmpty else { return }
        var unheld = unheldBlobs.intersection(blobs.keys)
        unheldBlobs = []
        func release(_ values: [FMValue]) {
            for case let .container(ref) in values { unheld.remove(ref.key) }
        }
        for table in tables.values where !unheld.isEmpty {
            guard table.schema.fields.contains(where: { $0.type == .container }) else { continue }
            for record in table.records.values { record.values.values.forEach(release) }
        }
        for session in sessions.values where !unheld.isEmpty { session.globals.values.forEach(release) }
        for key in unheld { blobs[key] = nil }
    }

    mutating func duplicateRecord(table name: String, id: Int, now: Date) throws -> Int {
        let key = tableKey(name)
        guard tables[key]?.records[id] != nil, var table = tables.removeValue(forKey: key),
              let source = table.records[id] else { throw FMError("101") }
        defer { tables[key] = table }
        var copy = source
        copy.id = table.nextId
        copy.modId = 0
        applyAutoEnter(&copy, table: &table, now: now, creating: true)
        table.nextId += 1
        table.records[copy.id] = copy
        table.order.append(copy.id)
        noteChange("ADD", table: table.schema.name, record: copy)
        return copy.id
    }

    // MARK: Globals

    static func globalKey(table: String, field: String) -> String { "\(table.lowercased())::\(field.lowercased())" }

    mutating func setGlobal(table: String, field: EmulatorSchema.Field, repetition: Int, value: FMValue, session: String?) {
        guard let session, var s = sessions[session] else { return }
        let key = EmulatorState.globalKey(table: table, field: field.name)
        var reps = s.globals[key] ?? Array(repeating: .empty, count: field.repetitions)
        if reps.count < field.repetitions { reps += Array(repeating: .empty, count: field.repetitions - reps.count) }
        reps[repetition - 1] = value
        s.globals[key] = reps
        sessions[session] = s
    }

    /// The value of `field` for `record`, reading globals from the session.
    func value(of field: EmulatorSchema.Field, table: String, record: StoredRecord, repetition: Int = 1, session: String?) -> FMValue {
        if field.global {
            guard let session, let reps = sessions[session]?.globals[EmulatorState.globalKey(table: table, field: field.name)],
                  repetition <= reps.count else { return .empty }
            return reps[repetition - 1]
        }
        return record.value(field, repetition: repetition)
    }

    // MARK: Sessions

    func isExpired(_ s: Session, now: Date) -> Bool {
        now.timeIntervalSince(s.lastUsed) >= schema.limits.sessionIdleSeconds
    }

    mutating func purgeExpired(now: Date) {
        for (token, s) in sessions where isExpired(s, now: now) {
            sessions[token] = nil
        }
    }
}

extension FMValue {
    static func timestamp(of date: Date) -> FMValue {
        let d = FMDate(date)
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e14 else { return .timestamp(d, 0) }
        let secs = Int(seconds) - d.ordinal * 86400
        return .timestamp(d, max(0, min(86399, secs)))
    }

    /// Parses request text for `field`, throwing FileMaker's validation code when it does not parse.
    static func parseOrThrow(_ text: String, field: EmulatorSchema.Field, dateformats: Int) throws -> FMValue {
        if field.type == .container {
            if text.isEmpty { return .empty }
            throw FMError("201")
        }
        if let v = FMValue.parse(text, as: field.type, dateformats: dateformats) {
            return v
        }
        switch field.type {
        case .time: throw FMError("501", field: field.name)
        case .number: throw FMError("502", field: field.name)
        default: throw FMError("500", field: field.name)
        }
    }
}

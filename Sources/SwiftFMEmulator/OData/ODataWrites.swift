import Foundation

extension EmulatorState {
    /// The request body as a JSON object (`{}` when empty); 400/-1002 when it is not one.
    func odataBody(_ ctx: ODataContext) throws -> JSON {
        let parsed = prepared.map(\.json) ?? PreparedBody.parseJSON(ctx.request.body)
        switch parsed {
        case .empty: return .object([])
        case let .object(json): return json
        case .invalid: throw ODataError(400, "-1002", "Error: the request body is not a JSON object")
        }
    }

    /// Turns an OData entity body into typed writes for `set`'s table: `Name[2]` is a repetition,
    /// `null` clears, dates `YYYY-MM-DD`, timestamps ISO 8601 (UTC), containers base64 with optional
    /// `Field@com.filemaker.odata.Filename` / `…ContentType` annotations. Globals, `ROWID` and `ROWMODID`
    /// cannot be written (201); an unknown field is 8309.
    mutating func odataWrites(_ set: ODataSet, body: JSON) throws -> [Write] {
        guard let pairs = body.objectPairs, let table = table(set.table) else { throw ODataError(400, "-1002", "Error: the request body is not a JSON object") }
        var annotations: [String: String] = [:]
        for (key, value) in pairs {
            guard let at = key.firstIndex(of: "@"), at != key.startIndex else { continue }
            let term = key[key.index(after: at)...].lowercased()
            if let text = value.stringValue { annotations[key[..<at].lowercased() + "@" + term] = text }
        }
        var input: [(String, JSON)] = []
        var containers: [Write] = []
        for (key, json) in pairs where !key.contains("@") {
            var name = key
            var repetition = 1
            if key.hasSuffix("]"), let open = key.lastIndex(of: "[") {
                guard let n = Int(key[key.index(after: open)..<key.index(before: key.endIndex)]), n >= 1 else { throw ODataError.noField(key) }
                name = String(key[..<open])
                repetition = n
            }
            if ["rowid", "rowmodid"].contains(name.lowercased()) { throw ODataError(400, "201", "Field cannot be modified (field '\(name)')") }
            guard let field = set.field(name) else { throw ODataError.noField(name) }
            guard repetition <= field.repetitions else { throw ODataError(400, "111", FMError.text(for: "111")) }
            if field.global { throw ODataError(400, "201", "Field cannot be modified (field '\(field.name)')") }
            if field.type == .container {
                if json.isNull { containers.append(Write(field: field, repetition: repetition, value: .empty)); continue }
                guard let text = json.stringValue, let data = EmulatorState.base64(text) else {
                    throw ODataError(400, "-1002", "Error: container field '\(field.name)' needs base64 data")
                }
                let lower = field.name.lowercased()
                let type = annotations[lower + "@com.filemaker.odata.contenttype"] ?? EmulatorState.sniff(data)
                let ext = EmulatorState.fileExtension(forType: type)
                let filename = annotations[lower + "@com.filemaker.odata.filename"] ?? "Untitled" + (ext.isEmpty ? "" : "." + ext)
                containers.append(Write(field: field, repetition: repetition, value: storeBlob(data, type: type, filename: filename)))
                continue
            }
            let text: String
            switch json {
            case .null: text = ""
            case let .string(s):
                if field.type == .timestamp, let (d, t) = ODataFilter.timestamp(s) {
                    text = d.formatted(2) + "T" + FMValue.formatTime(t)
                } else {
                    text = s
                }
            default:
                guard let scalar = json.scalarText else { throw ODataError(400, "-1002", "Error: the value of '\(key)' is not a scalar") }
                text = scalar
            }
            input.append((repetition == 1 ? field.name : "\(field.name)(\(repetition))", .string(text)))
        }
        return try resolveWrites(table: table, input: input, dateformats: 2, restrictTo: nil) + containers
    }

    /// Standard or URL-safe base64 (padding optional).
    static func base64(_ text: String) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        s = s.filter { !$0.isWhitespace }
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    /// The media type of `data` from its first bytes (FileMaker infers it so: ODATA.md §6).
    static func sniff(_ data: Data) -> String {
        let b = [UInt8](data.prefix(8))
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if b.starts(with: [0x47, 0x49, 0x46, 0x38]) { return "image/gif" }
        if b.starts(with: [0x25, 0x50, 0x44, 0x46]) { return "application/pdf" }
        if b.starts(with: [0x49, 0x49, 0x2A, 0x00]) || b.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        return "application/octet-stream"
    }

    static func fileExtension(forType type: String) -> String {
        switch mediaType(type) ?? "" {
        case "image/png": return "png"
        case "image/jpeg": return "jpg"
        case "image/gif": return "gif"
        case "image/tiff": return "tiff"
        case "application/pdf": return "pdf"
        default: return ""
        }
    }

    /// Runs `body` and restores every table when it throws: a write through OData changes all or nothing.
    mutating func odataAtomically<T>(_ body: (inout EmulatorState) throws -> T) throws -> T {
        let savedTables = tables, savedBlobs = blobs, savedNotes = odataChangeNotes, savedVersion = dataVersion
        do {
            return try body(&self)
        } catch {
            tables = savedTables
            blobs = savedBlobs
            odataChangeNotes = savedNotes
            // The same records as before, under the lock all along: the version they had (a write by `$filter` that
            // matched on them need not match again).
            dataVersion = savedVersion
            throw error
        }
    }

    // MARK: Create, update, delete

    /// `POST /{db}/{set}`: 201 with the new row and `Location`; `Prefer: return=minimal` gives 204.
    mutating func odataCreate(_ set: ODataSet, _ ctx: ODataContext) throws -> HTTPResponse {
        let body = try odataBody(ctx)
        let id: Int = try odataAtomically { s in
            let writes = try s.odataWrites(set, body: body)
            let plain = writes.filter { $0.field.type != .container }
            let input = plain.map { w -> (String, JSON) in
                (w.repetition == 1 ? w.field.name : "\(w.field.name)(\(w.repetition))", .string(w.value.odataInputText))
            }
            let id = try s.createRecord(table: set.table, input: input, session: nil, dateformats: 2, now: ctx.now, restrictTo: nil)
            let containers = writes.filter { $0.field.type == .container }
            if !containers.isEmpty { _ = try s.editRecord(table: set.table, id: id, writes: containers, session: nil, now: ctx.now, bump: false) }
            return id
        }
        guard let record = table(set.table)?.records[id] else { throw ODataError(500, "-1", "Unknown error") }
        if ctx.preferences["return"] == "minimal" {
            let location = ctx.base + "/" + ODataContext.encode(set.name) + "(ROWID=\(id))"
            return HTTPResponse(status: 204, headers: [("Location", location), ("OData-Version", "4.0"), ("OData-EntityId", location)])
        }
        let writer = try odataEntityWriter(set, options: [:], ctx: ctx, state: self)
        return EmulatorState.odataJSON(201, .raw(try writer.writeEntity(record)), headers: [("Location", odataEntityURL(set, record: record, ctx: ctx))])
    }

    /// `PATCH /{db}/{set}(key)`: 204 with `fmodata.affected_rows: 1`; the row with `Prefer: return=representation`.
    mutating func odataUpdate(_ set: ODataSet, id: Int, _ ctx: ODataContext) throws -> HTTPResponse {
        let body = try odataBody(ctx)
        try odataAtomically { s in
            let writes = try s.odataWrites(set, body: body)
            _ = try s.editRecord(table: set.table, id: id, writes: writes, session: nil, now: ctx.now, bump: true)
        }
        if ctx.preferences["return"] == "representation" { return try odataEntity(set, id: id, ctx).finished() }
        return HTTPResponse(status: 204, headers: [("fmodata.affected_rows", "1"), ("OData-Version", "4.0")])
    }

    /// `DELETE /{db}/{set}(key)`: 204 (related records go too where the relationship cascades).
    mutating func odataDelete(_ set: ODataSet, id: Int, _ ctx: ODataContext) throws -> HTTPResponse {
        try odataAtomically { s in try s.deleteCascading(occurrence: set.name, id: id, session: nil) }
        return HTTPResponse(status: 204, headers: [("fmodata.affected_rows", "1"), ("OData-Version", "4.0")])
    }

    /// `PATCH` / `DELETE /{db}/{set}?$filter=…`: every match, all or nothing; 204 with the count.
    ///
    /// The filter, the body and the writes it asks for are checked here, under the lock: a malformed one is refused at
    /// once. The records are matched on a snapshot after the lock is released (other clients are answered meanwhile),
    /// and the lock is taken again to write. The answer is the one the write gives evaluated atomically when it writes
    /// (FileMaker evaluates the filter and writes in one step): when the tables or the schema changed after the
    /// snapshot (``dataVersion``), the request is answered again there, matching under the lock. In a `$batch` change
    /// set every step runs in the set's one hold of the lock.
    mutating func odataChangeMatching(_ set: ODataSet, method: String, _ ctx: ODataContext) throws -> StagedResponse {
        guard let filter = ctx.options["filter"], !trimSpaces(filter).isEmpty else {
            throw ODataError(400, "-1010", "The entity key or $filter must be specified in the URL")
        }
        let plan = try odataFilterPlan(set, filter: filter, now: ctx.now)
        let body = method == "PATCH" ? try odataBody(ctx) : .object([])
        if odataWritesMatchUnderLock {
            let ids = plan.ids(of: set, in: self)
            return StagedResponse(response: try odataWriteMatching(set, ids: ids, method: method, body: body, now: ctx.now))
        }
        if method == "PATCH" {
            // Refused now if it cannot be written; written (a container's bytes kept) when the records are.
            var scratch = self
            _ = try scratch.odataWrites(set, body: body)
        }
        var snapshot: EmulatorState? = readSnapshot(session: nil)
        let version = dataVersion
        let request = ctx.request, segments = ctx.segments
        let stand = HTTPResponse(status: 204, headers: [("OData-Version", "4.0")])
        return StagedResponse(response: stand, relockingAnswer: { locker in
            let matched = snapshot.map { plan.ids(of: set, in: $0) } ?? []
            // Let go of the snapshot's tables: writing does not copy them.
            snapshot = nil
            let answer = try underLock(locker) { s, now -> HTTPResponse in
                guard s.dataVersion == version else {
                    // Changed since the snapshot: the request as it is answered now, matching under the lock.
                    let saved = s.odataWritesMatchUnderLock
                    s.odataWritesMatchUnderLock = true
                    defer { s.odataWritesMatchUnderLock = saved }
                    return s.odataRouteStaged(request, segments: segments, now: now).finished()
                }
                let mode = s.writeMode
                s.writeMode = .user
                defer { s.writeMode = mode }
                do {
                    return try s.odataWriteMatching(set, ids: matched, method: method, body: body, now: now)
                } catch {
                    return EmulatorState.odataErrorResponse(error)
                }
            }
            // An error is the request's answer in the 204's place (the log and the hook tell it).
            guard answer.status < 400 else { throw AnsweredOtherwise(response: answer) }
            return answer
        }, refusal: EmulatorState.odataError(.tooLarge))
    }

    /// Writes `body` to the records `ids` of `set` (`PATCH`) or deletes them (`DELETE`), all or nothing, at `now`: 204
    /// with their count.
    mutating func odataWriteMatching(_ set: ODataSet, ids: [Int], method: String, body: JSON, now: Date) throws -> HTTPResponse {
        try odataAtomically { s in
            let writes = method == "PATCH" ? try s.odataWrites(set, body: body) : []
            // A container's bytes are kept by the records written: with none (nothing matched), the sweep drops them.
            if ids.isEmpty {
                for case let .container(ref) in writes.map(\.value) { s.unheldBlobs.insert(ref.key) }
            }
            for id in ids {
                if method == "PATCH" {
                    _ = try s.editRecord(table: set.table, id: id, writes: writes, session: nil, now: now, bump: true)
                } else if s.table(set.table)?.records[id] != nil {
                    try s.deleteCascading(occurrence: set.name, id: id, session: nil)
                }
            }
        }
        return HTTPResponse(status: 204, headers: [("fmodata.affected_rows", String(ids.count)), ("OData-Version", "4.0")])
    }

    /// `PATCH /{db}/{set}(key)/{container}` with the bytes as the body (`Content-Type` the media type,
    /// `Content-Disposition` the file name, quoted or not, or `filename*=UTF-8''…`): 204.
    mutating func odataUploadBinary(_ set: ODataSet, id: Int, field: EmulatorSchema.Field, _ ctx: ODataContext) throws -> HTTPResponse {
        guard field.type == .container else { throw ODataError(400, "-1003", "Unsupported OData operation - '\(field.name)' is not a container field") }
        guard !field.global else { throw ODataError(400, "201", "Field cannot be modified (field '\(field.name)')") }
        let data = ctx.request.body
        let declared = ctx.request.header("Content-Type").flatMap { mediaType($0) }
        let type = declared.flatMap { $0 == "application/octet-stream" || $0.isEmpty ? nil : $0 } ?? EmulatorState.sniff(data)
        var filename = EmulatorState.dispositionFilename(ctx.request.header("Content-Disposition"))
        if filename == nil {
            let ext = EmulatorState.fileExtension(forType: type)
            filename = "Untitled" + (ext.isEmpty ? "" : "." + ext)
        }
        let old = table(set.table)?.records[id]?.value(field)
        try odataAtomically { s in
            // Stored inside: a refused write puts the blob table back too.
            let value = s.storeBlob(data, type: type, filename: filename ?? "Untitled")
            _ = try s.editRecord(table: set.table, id: id, writes: [Write(field: field, repetition: 1, value: value)],
                                 session: nil, now: ctx.now, bump: true)
        }
        if case let .container(ref)? = old { forgetBlobIfUnused(ref.key) }
        return HTTPResponse(status: 204, headers: [("fmodata.affected_rows", "1"), ("OData-Version", "4.0")])
    }

    /// The file name of a `Content-Disposition` value: `filename*=UTF-8''…` first, then `filename=` quoted or not.
    static func dispositionFilename(_ value: String?) -> String? {
        guard let value else { return nil }
        var plain: String?
        for item in value.split(separator: ";") {
            let kv = item.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { continue }
            let key = trimSpaces(String(kv[0])).lowercased()
            var v = trimSpaces(String(kv[1]))
            if key == "filename*" {
                if let r = v.range(of: "''") { v = String(v[r.upperBound...]) }
                if let decoded = v.removingPercentEncoding, !decoded.isEmpty { return decoded }
            } else if key == "filename" {
                if v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") { v = String(v.dropFirst().dropLast()) }
                if !v.isEmpty { plain = v }
            }
        }
        return plain
    }

    // MARK: Scripts

    /// `POST /{db}/Script.{name}` (also under a set or a record): body empty or
    /// `{"scriptParameterValue": …}`; 200 `{"scriptResult":{"code":N,"resultParameter":"…"}}`.
    mutating func odataScript(_ rawName: String, _ ctx: ODataContext) throws -> HTTPResponse {
        let name = rawName
        if name.isEmpty || name.contains(where: { "@&/".contains($0) }) || name.first?.isNumber == true {
            throw ODataError(400, "-1003", "Unsupported OData operation - script name '\(name)'")
        }
        let body = try odataBody(ctx)
        var parameter: String?
        for (key, value) in body.objectPairs ?? [] {
            guard key == "scriptParameterValue" else { throw ODataError(400, "-1002", "Error: unknown key '\(key)' in the script body") }
            switch value {
            case .null: parameter = nil
            case .object, .array: parameter = value.serialized()
            default: parameter = value.scalarText
            }
        }
        var scriptName = name
        if name.uppercased().hasPrefix("FMSID:"), let n = Int(name.dropFirst(6)), n >= 1, n <= schema.scripts.count {
            scriptName = schema.scripts[n - 1].name
        }
        guard scriptClosures[scriptName.lowercased()] != nil || script(scriptName) != nil else {
            throw ODataError(404, "104", FMError.text(for: "104"))
        }
        let layout = script(scriptName)?.layout.flatMap { self.layout($0) } ?? schema.layouts.first
            ?? EmulatorSchema.Layout("", table: schema.tables.first?.name ?? "", fields: [])
        let outcome = runScript(scriptName, param: parameter, phase: "run", layout: layout, found: nil, current: nil,
                                session: nil, now: ctx.now)
        // `resultParameter` is always present (empty without a result), as in Claris's example: clients tell
        // this nested envelope from the older flat one by it.
        let result: [(String, JSON)] = [("code", .number(Double(Int(outcome.error) ?? -1))),
                                        ("resultParameter", .string(outcome.result ?? ""))]
        return EmulatorState.odataJSON(200, .object([("scriptResult", .object(result))]))
    }
}

extension FMValue {
    /// The value as text the Data API's `dateformats: 2` reads back to the same value.
    var odataInputText: String {
        switch self {
        case let .date(d): return d.formatted(2)
        case let .timestamp(d, t): return d.formatted(2) + "T" + FMValue.formatTime(t)
        default: return text
        }
    }
}

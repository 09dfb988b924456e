import Foundation

/// One OData request being handled.
struct ODataContext {
    let request: HTTPRequest
    let now: Date
    /// The database segment as the client wrote it (echoed in URLs).
    var dbSegment = ""
    /// `scheme://host[:port]` the client used.
    var origin = ""
    /// System query options by lower-cased name without `$` (4.01: `$` optional, case-insensitive).
    var options: [String: String] = [:]
    /// `@odata.context`/`@odata.id`/`@odata.editLink` (OData 4.0 clients) or `@context`/`@id`/`@editLink`.
    var prefixed = false
    /// `Accept: …;odata.metadata=none`: rows without `@id`/`@editLink`.
    var noMetadata = false
    /// `IEEE754Compatible=true`: numbers as strings.
    var ieee754 = false

    /// The decoded path segments after `/fmi/odata/v4` (a write by `$filter` is answered again from them,
    /// ``EmulatorState/odataChangeMatching(_:method:_:)``).
    var segments: [String] = []

    /// `{origin}/fmi/odata/v4/{db}`.
    var base: String { origin + "/fmi/odata/v4/" + ODataContext.encode(dbSegment) }

    func annotation(_ name: String) -> String { prefixed ? "@odata." + name : "@" + name }

    /// The preferences of the `Prefer` header (lower-cased names; values as sent). OData 4.01's names may come
    /// without their `odata.` prefix (`maxpagesize`, `continue-on-error`; CG:index): both are found under `odata.…`.
    var preferences: [String: String] {
        var out: [String: String] = [:]
        for header in request.headers where header.name.caseInsensitiveCompare("Prefer") == .orderedSame {
            for item in header.value.split(separator: ",") {
                let kv = item.split(separator: "=", maxSplits: 1)
                guard let k = kv.first else { continue }
                let name = trimSpaces(String(k)).lowercased()
                let value = kv.count > 1 ? trimSpaces(String(kv[1])) : ""
                out[name] = value
                if ODataContext.unprefixedPreferences.contains(name) { out["odata." + name] = value }
            }
        }
        return out
    }

    /// The `odata.` preferences a 4.01 client may send without the prefix.
    static let unprefixedPreferences: Set<String> = ["maxpagesize", "continue-on-error", "allow-entityreferences", "callback",
                                                     "include-annotations", "track-changes"]

    /// Percent-encodes a path segment (spaces and reserved characters; quotes and parentheses stay).
    ///
    /// ASCII text is encoded here from a table (it runs per row for `@id`: building the `CharacterSet` each
    /// time cost more than the rest of the row); anything else goes through Foundation, whose alphanumerics
    /// include non-ASCII letters.
    static func encode(_ s: String) -> String {
        var kept = true
        for byte in s.utf8 {
            guard byte < 0x80 else { return foundationEncode(s) }
            if !keptASCII[Int(byte)] { kept = false }
        }
        if kept { return s }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 32)
        for byte in s.utf8 {
            if keptASCII[Int(byte)] {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The ASCII bytes ``encode(_:)`` keeps: letters, digits and `-._~'()!*,;:@$=`.
    private static let keptASCII: [Bool] = (0..<128).map { byte in
        let c = UInt8(byte)
        return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || "-._~'()!*,;:@$=".utf8.contains(c)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func foundationEncode(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~'()!*,;:@$=")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }
}

/// The OData system query options FileMaker knows; the emulator serves all but `$compute` (and `$search`).
enum ODataOptions {
    static let known: Set<String> = ["filter", "select", "orderby", "top", "skip", "count", "expand", "skiptoken", "format",
                                     "search", "apply", "compute", "levels", "index", "schemaversion", "id"]
}

extension EmulatorState {
    // MARK: Entry

    /// Answers a request under `/fmi/odata/v4` completely (the lock is held by the caller): a request of `$batch`.
    mutating func odataRoute(_ request: HTTPRequest, segments: [String], now: Date) -> HTTPResponse {
        odataRouteStaged(request, segments: segments, now: now).finished()
    }

    /// Answers a request under `/fmi/odata/v4` (the lock is held by the caller); the rows of a read are left to
    /// ``StagedResponse/pendingBody``, to be written after the lock is released.
    mutating func odataRouteStaged(_ request: HTTPRequest, segments: [String], now: Date) -> StagedResponse {
        var ctx = ODataContext(request: request, now: now)
        ctx.segments = segments
        var fallbackHost = "127.0.0.1"
        if let base = baseURL, let host = base.host { fallbackHost = base.port.map { "\(host):\($0)" } ?? host }
        ctx.origin = origin(of: request, fallbackHost: fallbackHost)
        let version = [request.header("OData-Version"), request.header("OData-MaxVersion")].compactMap { $0.map(trimSpaces) }
        ctx.prefixed = version.contains("4.0")
        let accept = (request.header("Accept") ?? "").lowercased()
        // `odata.metadata=none`, or 4.01's `metadata=none`.
        ctx.noMetadata = accept.contains("metadata=none")
        ctx.ieee754 = accept.contains("ieee754compatible=true")
        let saved = writeMode
        writeMode = .user
        defer { writeMode = saved }
        do {
            try odataAuthenticate(request)
            for (name, value) in decodeQuery(request.rawQuery) {
                var key = name.lowercased()
                let dollar = key.hasPrefix("$")
                if dollar { key.removeFirst() }
                guard ODataOptions.known.contains(key) else {
                    if dollar { throw ODataError.syntax(name) }
                    continue // a custom query option: ignored, as OData says
                }
                guard ctx.options[key] == nil else { throw ODataError.syntax(name) }
                ctx.options[key] = value
            }
            if ctx.options["search"] != nil { throw ODataError.unsupported("$search") }
            if ctx.options["compute"] != nil { throw ODataError.unsupported("$compute") }
            if ctx.options["apply"] != nil {
                // `$apply` reads a collection: `GET /{db}/{set}` only.
                let method = request.method == "HEAD" ? "GET" : request.method
                guard method == "GET", segments.count == 2, !segments[1].contains("("), !segments[1].hasPrefix("$"),
                      !segments[1].hasPrefix("Script."), !segments[1].hasPrefix("Webhook.") else {
                    throw ODataError.unsupported("$apply")
                }
            }
            return try odataDispatch(segments, &ctx)
        } catch {
            return StagedResponse(response: EmulatorState.odataErrorResponse(error))
        }
    }

    /// The answer to a request that failed with `error`: an ``ODataError`` as it is, a FileMaker error as OData tells
    /// it, an answer too large as `953`, anything else `500 -1`.
    static func odataErrorResponse(_ error: any Error) -> HTTPResponse {
        switch error {
        case let e as ODataError: return odataError(e)
        case let e as FMError: return odataError(odataError(from: e))
        case is AnswerTooLarge: return odataError(.tooLarge)
        default: return odataError(ODataError(500, "-1", "Unknown error"))
        }
    }

    static func odataError(_ e: ODataError) -> HTTPResponse {
        let body = JSON.object([("error", .object([("code", .string(e.code)), ("message", .string(e.message))]))])
        return HTTPResponse(status: e.status, headers: [("Content-Type", "application/json;charset=utf-8"), ("OData-Version", "4.0")],
                            body: body.data)
    }

    /// A FileMaker error of the store as OData answers it: validation and field errors are 400.
    static func odataError(from e: FMError) -> ODataError {
        switch e.code {
        case "101": return ODataError(404, "-1023", "Record not found")
        case "102": return ODataError.noField(e.field ?? "")
        case "212": return ODataError(401, "212", FMError.text(for: "212"))
        default:
            let field = e.field.map { " (field '\($0)')" } ?? ""
            return ODataError(e.status == 401 ? 401 : 400, e.code, e.message + field)
        }
    }

    static func odataJSON(_ status: Int, _ json: JSON, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json;charset=utf-8"), ("OData-Version", "4.0")] + headers,
                     body: json.data)
    }

    /// Basic against the accounts, or `FMID <token>` for a Claris ID token the emulator accepted; else 401/212.
    func odataAuthenticate(_ request: HTTPRequest) throws {
        let refused = ODataError(401, "212", FMError.text(for: "212"))
        guard let auth = request.header("Authorization").map(trimSpaces), !auth.isEmpty, !rejectLogins else { throw refused }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { throw refused }
        switch parts[0].lowercased() {
        case "basic":
            guard let data = Data(base64Encoded: trimSpaces(String(parts[1]))), let text = String(data: data, encoding: .utf8),
                  let colon = text.firstIndex(of: ":") else { throw refused }
            let user = String(text[..<colon]), password = String(text[text.index(after: colon)...])
            guard schema.accounts.contains(where: { $0.username.caseInsensitiveCompare(user) == .orderedSame && $0.password == password })
            else { throw refused }
        case "fmid":
            guard clarisIDTokens.contains(trimSpaces(String(parts[1]))) else { throw refused }
        default:
            // A Data API bearer token (or anything else) is refused (ODATA.md §1.2).
            throw refused
        }
    }

    // MARK: Dispatch

    /// Routes a request by its path segments under `/fmi/odata/v4`: the database list, a database's service
    /// document, `$metadata`, system tables, webhooks, `$batch`, scripts, then a set or one of its records.
    private mutating func odataDispatch(_ segments: [String], _ ctx: inout ODataContext) throws -> StagedResponse {
        let method = ctx.request.method == "HEAD" ? "GET" : ctx.request.method
        guard let dbSegment = segments.first else {
            try Self.odataOnly(method, "GET")
            return StagedResponse(response: odataDatabaseList(ctx))
        }
        var dbName = dbSegment
        if dbName.lowercased().hasSuffix(".fmp12") { dbName = String(dbName.dropLast(6)) }
        guard dbName.caseInsensitiveCompare(schema.database) == .orderedSame else {
            throw ODataError(404, "802", "Unable to open file '\(dbSegment)'")
        }
        ctx.dbSegment = dbSegment
        let rest = Array(segments.dropFirst())
        guard let first = rest.first else {
            try Self.odataOnly(method, "GET")
            return StagedResponse(response: odataServiceDocument(ctx))
        }
        if first == "$metadata" {
            try Self.odataOnly(method, "GET")
            guard rest.count == 1 else { throw ODataError.syntax(rest[1]) }
            return StagedResponse(response: odataMetadata(ctx))
        }
        let system = first.split(separator: "(").first.map { $0.lowercased() } ?? ""
        if system == "filemaker_tables" || system == "filemaker_indexes" {
            return StagedResponse(response: try odataSchemaRoute(rest, method: method, ctx))
        }
        if first.hasPrefix("Webhook.") {
            guard rest.count == 1 else { throw ODataError.syntax(rest[1]) }
            return StagedResponse(response: try odataWebhookRoute(String(first.dropFirst(8)), method: method, ctx))
        }
        if first == "$batch" {
            try Self.odataOnly(method, "POST")
            guard rest.count == 1 else { throw ODataError.syntax(rest[1]) }
            return try odataBatch(ctx)
        }
        if first.hasPrefix("Script.") {
            try Self.odataOnly(method, "POST")
            guard rest.count == 1 else { throw ODataError.syntax(rest[1]) }
            return StagedResponse(response: try odataScript(String(first.dropFirst(7)), ctx))
        }
        // {set}[(key)] …
        let (setName, keyText) = try EmulatorState.splitKey(first)
        guard let set = odataSet(setName) else {
            throw ODataError(404, "-1020", "Table '\(setName)' not defined in database")
        }
        guard let keyText else {
            return try odataCollectionRoute(set, rest, method: method, ctx)
        }
        let id = try odataRecordID(set, keyText: keyText)
        return try odataRecordRoute(set, id: id, rest, method: method, ctx)
    }

    /// Throws 405 unless `method` is one of `allowed`.
    private static func odataOnly(_ method: String, _ allowed: String...) throws {
        guard allowed.contains(method) else {
            throw ODataError(405, "-1003", "Unsupported OData operation - only \(allowed.joined(separator: ", ")) supported here")
        }
    }

    /// `{set}`, `{set}/$count` and `{set}/Script.{name}`: `rest` starts with the set's segment, without a key.
    private mutating func odataCollectionRoute(_ set: ODataSet, _ rest: [String], method: String, _ ctx: ODataContext) throws -> StagedResponse {
        if rest.count == 1 {
            switch method {
            case "GET": return try odataCollection(set, ctx)
            case "POST": return StagedResponse(response: try odataCreate(set, ctx))
            case "PATCH", "DELETE": return try odataChangeMatching(set, method: method, ctx)
            default: try Self.odataOnly(method, "GET", "POST", "PATCH", "DELETE")
            }
        }
        if rest.count == 2, rest[1] == "$count" {
            try Self.odataOnly(method, "GET")
            // Counted after the lock is released, on a snapshot, as a read's rows are filtered.
            let filter = try odataFilterPlan(set, filter: ctx.options["filter"], now: ctx.now)
            let snapshot = readSnapshot(session: nil)
            return StagedResponse(response: HTTPResponse(status: 200, headers: [("Content-Type", "text/plain"), ("OData-Version", "4.0")]),
                                  pendingBody: { Data(String(filter.ids(of: set, in: snapshot).count).utf8) },
                                  refusal: EmulatorState.odataError(.tooLarge))
        }
        if rest.count == 2, rest[1].hasPrefix("Script.") {
            try Self.odataOnly(method, "POST")
            return StagedResponse(response: try odataScript(String(rest[1].dropFirst(7)), ctx))
        }
        throw ODataError.syntax(rest[1])
    }

    /// `{set}({key})` and what follows it (a script, a navigation, a field or its `$value`): `rest` starts
    /// with the keyed segment, `id` is the record it addresses.
    private mutating func odataRecordRoute(_ set: ODataSet, id: Int, _ rest: [String], method: String, _ ctx: ODataContext) throws -> StagedResponse {
        if rest.count == 1 {
            switch method {
            case "GET": return try odataEntity(set, id: id, ctx)
            case "PATCH", "PUT": return StagedResponse(response: try odataUpdate(set, id: id, ctx))
            case "DELETE": return StagedResponse(response: try odataDelete(set, id: id, ctx))
            default: try Self.odataOnly(method, "GET", "PATCH", "DELETE")
            }
        }
        let part = rest[1]
        if part.hasPrefix("Script.") {
            try Self.odataOnly(method, "POST")
            return StagedResponse(response: try odataScript(String(part.dropFirst(7)), ctx))
        }
        if let nav = set.nav(part) {
            try Self.odataOnly(method, "GET")
            guard rest.count == 2 else { throw ODataError.syntax(rest[2]) }
            return try odataNavigation(set, id: id, nav: nav, ctx)
        }
        // `Field`, `Field[n]` or `Field/n`: one repetition (CG:request-field-value), the first without an index.
        let (fieldName, indexed) = EmulatorState.odataBracketRepetition(part)
        var repetition = indexed
        guard let field = set.field(fieldName) else { throw ODataError.noField(part) }
        var tail = Array(rest.dropFirst(2))
        if repetition == nil, let index = tail.first, !index.isEmpty, index.allSatisfy(\.isASCIIDigit) {
            repetition = Int(index) ?? 0
            tail.removeFirst()
        }
        if let repetition, repetition < 1 || repetition > field.repetitions { throw ODataError.syntax(part) }
        if tail.isEmpty {
            if method == "PATCH" || method == "PUT" {
                guard repetition ?? 1 == 1 else { throw ODataError.syntax(part) }
                return StagedResponse(response: try odataUploadBinary(set, id: id, field: field, ctx))
            }
            try Self.odataOnly(method, "GET")
            return StagedResponse(response: try odataFieldValue(set, id: id, field: field, repetition: repetition ?? 1, raw: false, ctx))
        }
        guard tail.count == 1, tail[0] == "$value" else { throw ODataError.syntax(tail[0]) }
        guard method == "GET" else {
            throw ODataError(400, "-1003", "Unsupported OData operation - only GET, POST, PATCH, and DELETE are supported")
        }
        return StagedResponse(response: try odataFieldValue(set, id: id, field: field, repetition: repetition ?? 1, raw: true, ctx))
    }

    /// `Name[2]` → (`Name`, 2); `Name` → (`Name`, nil). A bracket that holds no number is left in the name.
    static func odataBracketRepetition(_ part: String) -> (String, Int?) {
        guard part.hasSuffix("]"), let open = part.lastIndex(of: "[") else { return (part, nil) }
        let digits = part[part.index(after: open)..<part.index(before: part.endIndex)]
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { return (part, nil) }
        return (String(part[..<open]), Int(digits) ?? 0)
    }

    /// `Name('k')` → (`Name`, `'k'`); `Name` → (`Name`, nil).
    static func splitKey(_ segment: String) throws -> (String, String?) {
        guard let open = segment.firstIndex(of: "(") else { return (segment, nil) }
        guard segment.hasSuffix(")") else { throw ODataError.syntax(segment) }
        let inner = segment[segment.index(after: open)..<segment.index(before: segment.endIndex)]
        return (String(segment[..<open]), String(inner))
    }

    /// The record id a key addresses: `T(<key>)`, `T(<k1>,<k2>)` (composite, positional),
    /// `T(name=<v>,…)`, or the ROWID (`T(12)` / `T(ROWID=12)`) for a set without a key. 404/-1023 when none.
    func odataRecordID(_ set: ODataSet, keyText: String) throws -> Int {
        guard let table = table(set.table) else { throw ODataError(404, "-1020", "Table '\(set.name)' not defined in database") }
        var parts: [(String?, ODataLiteral)] = []
        for piece in EmulatorState.splitTopLevel(keyText, on: ",") {
            var name: String?
            var valueText = trimSpaces(piece)
            if let eq = EmulatorState.topLevelIndex(of: "=", in: valueText) {
                name = trimSpaces(String(valueText[..<eq]))
                valueText = trimSpaces(String(valueText[valueText.index(after: eq)...]))
            }
            let tokens = try ODataFilter.tokenize(valueText)
            guard tokens.count == 1, let literal = tokens[0].literal else { throw ODataError.syntax(keyText) }
            parts.append((name, literal))
        }
        guard !parts.isEmpty else { throw ODataError.syntax(keyText) }
        let notFound = ODataError(404, "-1023", "Record not found")
        if parts.count == 1, case let .number(n) = parts[0].1,
           set.keys.isEmpty || parts[0].0?.caseInsensitiveCompare("ROWID") == .orderedSame {
            guard let id = n.intValue, table.records[id] != nil else { throw notFound }
            return id
        }
        guard parts.count == set.keys.count, !set.keys.isEmpty else { throw ODataError.syntax(keyText) }
        var wanted: [(EmulatorSchema.Field, ODataValue)] = []
        for (i, part) in parts.enumerated() {
            let field: EmulatorSchema.Field
            if let name = part.0 {
                guard let f = set.keys.first(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { throw ODataError.noField(name) }
                field = f
            } else {
                field = set.keys[i]
            }
            wanted.append((field, ODataValue(part.1)))
        }
        for id in table.order {
            guard let record = table.records[id] else { continue }
            if wanted.allSatisfy({ ODataEvaluator.compare("eq", ODataValue(record.value($0.0)), $0.1) }) { return id }
        }
        throw notFound
    }

    /// Splits at `separator` outside quotes and parentheses.
    static func splitTopLevel(_ text: String, on separator: Character) -> [String] {
        var out: [String] = []
        var current = ""
        var depth = 0
        var quote: Character?
        for c in text {
            if let q = quote {
                current.append(c)
                if c == q { quote = nil }
                continue
            }
            switch c {
            case "'", "\"": quote = c; current.append(c)
            case "(": depth += 1; current.append(c)
            case ")": depth -= 1; current.append(c)
            default:
                if c == separator, depth == 0 { out.append(current); current = "" } else { current.append(c) }
            }
        }
        out.append(current)
        return out
    }

    static func topLevelIndex(of target: Character, in text: String) -> String.Index? {
        var quote: Character?
        for i in text.indices {
            let c = text[i]
            if let q = quote { if c == q { quote = nil }; continue }
            if c == "'" || c == "\"" { quote = c; continue }
            if c == target { return i }
        }
        return nil
    }

    // MARK: Documents

    func odataDatabaseList(_ ctx: ODataContext) -> HTTPResponse {
        let root = ctx.origin + "/fmi/odata/v4"
        let body = JSON.object([(ctx.annotation("context"), .string(root + "/$metadata")),
                                ("value", .array([.object([("name", .string(schema.database)), ("kind", .string("EntityContainer")),
                                                          ("url", .string(root + "/" + ODataContext.encode(schema.database)))])]))])
        return EmulatorState.odataJSON(200, body)
    }

    func odataServiceDocument(_ ctx: ODataContext) -> HTTPResponse {
        let sets = odataSets().map { set in
            JSON.object([("name", .string(set.name)), ("kind", .string("EntitySet")), ("url", .string(set.name))])
        }
        return EmulatorState.odataJSON(200, .object([(ctx.annotation("context"), .string(ctx.base + "/$metadata")), ("value", .array(sets))]))
    }

    func odataMetadata(_ ctx: ODataContext) -> HTTPResponse {
        let format = (ctx.options["format"] ?? "").lowercased()
        let accept = (ctx.request.header("Accept") ?? "").lowercased()
        let wantsJSON = format.hasPrefix("json") || format.hasPrefix("application/json")
            || (format.isEmpty && accept.contains("application/json") && !accept.contains("xml"))
        if wantsJSON { return EmulatorState.odataJSON(200, odataMetadataJSON(version: odataServerVersion)) }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/xml;charset=utf-8"), ("OData-Version", "4.0")],
                            body: Data(odataMetadataXML(version: odataServerVersion).utf8))
    }
}

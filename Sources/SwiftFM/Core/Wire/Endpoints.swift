import Foundation

/// One factory per Data API endpoint (WIRE.md §1.1, E1–E18; login, logout and validateSession live
/// with the session code). Each factory says what goes on the wire and how to read the answer; the
/// callback methods, the async one-liners and the legacy shims all go through these.
///
/// Names in `segments` and `query` are *not* percent-encoded here: the request builder encodes them.
/// A factory never throws: an argument it cannot send becomes ``Endpoint/invalid`` (`-1002`, or `-1009`
/// for an unreadable file), and the engine completes with that error without sending anything.
enum Endpoints {

    // MARK: - Metadata (E1, E2, E6, E7, E8)

    /// E1 `GET /productInfo` (no authentication).
    static func productInfo() -> Endpoint<FMProductInfo> {
        Endpoint(.get, .host, ["productInfo"], auth: .none) { response in
            try Envelope.decode(FMProductInfo.Wrapper.self, from: response.body, status: response.status).productInfo
        }
    }

    /// E2 `GET /databases`, with the configured Basic credentials (required when the server filters
    /// databases; harmless otherwise).
    static func databases(auth: Endpoint<[FMDatabase]>.Auth = .basic(encoded: nil)) -> Endpoint<[FMDatabase]> {
        Endpoint(.get, .host, ["databases"], auth: auth) { response in
            try Envelope.decode(FMDatabase.Wrapper.self, from: response.body, status: response.status).databases
        }
    }

    /// E6 `GET /databases/{db}/layouts`.
    static func layouts() -> Endpoint<[FMLayoutEntry]> {
        Endpoint(.get, .database, ["layouts"]) { response in
            try Envelope.decode(FMLayoutEntry.Wrapper.self, from: response.body, status: response.status).layouts
        }
    }

    /// E7 `GET /databases/{db}/layouts/{layout}` (`?recordId=` for record-dependent value lists).
    static func layoutMetadata(layout: String, recordId: Int? = nil) -> Endpoint<FMLayoutMetadata> {
        if let error = checkName(layout, "layout") { return failing(.get, error) }
        var query: [URLQueryItem] = []
        if let recordId { query.append(URLQueryItem(name: "recordId", value: String(recordId))) }
        return Endpoint(.get, .database, ["layouts", layout], query: query) { response in
            try Envelope.decode(FMLayoutMetadata.self, from: response.body, status: response.status)
        }
    }

    /// E8 `GET /databases/{db}/scripts`.
    static func scripts() -> Endpoint<[FMScriptEntry]> {
        Endpoint(.get, .database, ["scripts"]) { response in
            try Envelope.decode(FMScriptEntry.Wrapper.self, from: response.body, status: response.status).scripts
        }
    }

    // MARK: - Records (E9–E14)

    /// E9 `POST …/layouts/{layout}/records` with `fieldData`, optional `portalData`, options, date format and scripts.
    static func createRecord(layout: String, fieldData: [String: Any], portalData: [String: [[String: Any]]]? = nil,
                             options: FMWriteOptions = .init()) -> Endpoint<FMRecordReference> {
        var payload: [String: Any] = ["fieldData": fieldData]
        if let portalData { payload["portalData"] = portalData }
        add(options, to: &payload)
        return createRecord(layout: layout, payload: payload, validate: options.scripts.validationError)
    }

    /// E9 with `fieldData` encoded from an `Encodable` value.
    static func createRecord<F: Encodable>(layout: String, fields: F, portalData: [String: [[String: Any]]]? = nil,
                                           options: FMWriteOptions = .init()) -> Endpoint<FMRecordReference> {
        switch JSONPayload.object(fields) {
        case .success(let fieldData): return createRecord(layout: layout, fieldData: fieldData, portalData: portalData, options: options)
        case .failure(let error): return failing(.post, error)
        }
    }

    /// E9 with a raw body as old callers build it (`["fieldData": …]`), sent as given.
    static func createRecord(layout: String, payload: [String: Any]) -> Endpoint<FMRecordReference> {
        createRecord(layout: layout, payload: payload, validate: nil)
    }

    private static func createRecord(layout: String, payload: [String: Any], validate: FMError?) -> Endpoint<FMRecordReference> {
        if let error = checkName(layout, "layout") ?? validate { return failing(.post, error) }
        return json(.post, ["layouts", layout, "records"], payload) { response in
            try Envelope.decode(FMRecordReference.self, from: response.body, status: response.status)
        }
    }

    /// E11 `GET …/layouts/{layout}/records/{recordId}` (portals, response layout, date format, scripts in the query).
    static func getRecord(layout: String, recordId: Int, options: FMReadOptions = .init()) -> Endpoint<FMFoundSet> {
        readEndpoint(["layouts", layout, "records", String(recordId)], layout: layout, base: [], options: options, noRecords: []) { response, parts in
            try FMFoundSet(parsing: response.body, status: response.status, parts: parts)
        }
    }

    /// E11, decoded into typed records with the FileMaker rules (``FileMakerDecoder``).
    static func getRecord<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, recordId: Int, options: FMReadOptions = .init()) -> Endpoint<FMTypedFoundSet<T>> {
        let decoder = FileMakerDecoder(timeZone: options.timeZone)
        return readEndpoint(["layouts", layout, "records", String(recordId)], layout: layout, base: [], options: options, noRecords: []) { response, parts in
            try decoder.parts(parts).foundSet(T.self, body: response.body, status: response.status)
        }
    }

    /// E10 `GET …/layouts/{layout}/records` (`_offset`, `_limit`, `_sort`, portals, response layout, date format, scripts).
    static func getRecords(layout: String, offset: Int? = nil, limit: Int? = nil, sort: [FMSort] = [],
                           options: FMReadOptions = .init()) -> Endpoint<FMFoundSet> {
        if let error = checkWindow(offset: offset, limit: limit, what: "records") { return failing(.get, error) }
        return readEndpoint(["layouts", layout, "records"], layout: layout,
                            base: rangeQuery(offset: offset, limit: limit, sort: sort), options: options,
                            noRecords: NoRecords.rangeRead) { response, parts in
            try FMFoundSet(parsing: response.body, status: response.status, parts: parts)
        }
    }

    /// E10, decoded into typed records with the FileMaker rules (``FileMakerDecoder``).
    static func getRecords<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, offset: Int? = nil, limit: Int? = nil,
                                         sort: [FMSort] = [], options: FMReadOptions = .init()) -> Endpoint<FMTypedFoundSet<T>> {
        if let error = checkWindow(offset: offset, limit: limit, what: "records") { return failing(.get, error) }
        return readEndpoint(["layouts", layout, "records"], layout: layout,
                            base: rangeQuery(offset: offset, limit: limit, sort: sort), options: options,
                            noRecords: NoRecords.rangeRead) { [decoder = FileMakerDecoder(timeZone: options.timeZone)] response, parts in
            try decoder.parts(parts).foundSet(T.self, body: response.body, status: response.status)
        }
    }

    /// E12 `PATCH …/layouts/{layout}/records/{recordId}`: `fieldData` (with `deleteRelated`), `portalData`,
    /// `modId` (sent, so FileMaker answers 306 when the record changed meanwhile), options, date format, scripts.
    static func editRecord(layout: String, recordId: Int, fieldData: [String: Any],
                           portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                           deleteRelated: [String] = [], options: FMWriteOptions = .init()) -> Endpoint<FMEditResult> {
        var fields = fieldData
        if !deleteRelated.isEmpty {
            if deleteRelated.contains(where: \.isEmpty) {
                return failing(.patch, .invalidArgument("A deleteRelated entry is empty; use \"<portal>.<recordId>\""))
            }
            var all: [String] = []
            switch fields["deleteRelated"] {
            case let one as String: all.append(one)
            case let many as [String]: all.append(contentsOf: many)
            default: break
            }
            all.append(contentsOf: deleteRelated)
            fields["deleteRelated"] = all.count == 1 ? all[0] as Any : all as Any
        }
        var payload: [String: Any] = ["fieldData": fields]
        if let portalData { payload["portalData"] = portalData }
        if let modId { payload["modId"] = modId }
        add(options, to: &payload)
        return editRecord(layout: layout, recordId: recordId, payload: payload, validate: options.scripts.validationError)
    }

    /// E12 with `fieldData` encoded from an `Encodable` value.
    static func editRecord<F: Encodable>(layout: String, recordId: Int, fields: F,
                                         portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                                         deleteRelated: [String] = [], options: FMWriteOptions = .init()) -> Endpoint<FMEditResult> {
        switch JSONPayload.object(fields) {
        case .success(let fieldData):
            return editRecord(layout: layout, recordId: recordId, fieldData: fieldData, portalData: portalData,
                              modId: modId, deleteRelated: deleteRelated, options: options)
        case .failure(let error):
            return failing(.patch, error)
        }
    }

    /// E12 with a raw body as old callers build it; `modId`, when given, is added to the body as a string.
    static func editRecord(layout: String, recordId: Int, payload: [String: Any], modId: Int? = nil) -> Endpoint<FMEditResult> {
        var payload = payload
        if let modId { payload["modId"] = String(modId) }
        return editRecord(layout: layout, recordId: recordId, payload: payload, validate: nil)
    }

    private static func editRecord(layout: String, recordId: Int, payload: [String: Any], validate: FMError?) -> Endpoint<FMEditResult> {
        if let error = checkName(layout, "layout") ?? validate { return failing(.patch, error) }
        return json(.patch, ["layouts", layout, "records", String(recordId)], payload) { response in
            try Envelope.decode(FMEditResult.self, from: response.body, status: response.status)
        }
    }

    /// E13 `DELETE …/layouts/{layout}/records/{recordId}`; script parameters go in the query string.
    static func deleteRecord(layout: String, recordId: Int, options: FMScriptOptions = .init()) -> Endpoint<FMScriptResults> {
        if let error = checkName(layout, "layout") ?? options.validationError { return failing(.delete, error) }
        let query = options.entries.map { URLQueryItem(name: $0.0, value: $0.1) }
        return Endpoint(.delete, .database, ["layouts", layout, "records", String(recordId)], query: query) { response in
            try Envelope.decode(FMScriptResults.self, from: response.body, status: response.status)
        }
    }

    /// E14 `POST …/layouts/{layout}/records/{recordId}` (duplicate); the body is `{}` plus script keys.
    static func duplicateRecord(layout: String, recordId: Int, options: FMScriptOptions = .init()) -> Endpoint<FMRecordReference> {
        if let error = checkName(layout, "layout") ?? options.validationError { return failing(.post, error) }
        var payload: [String: Any] = [:]
        for (key, value) in options.entries { payload[key] = value }
        return json(.post, ["layouts", layout, "records", String(recordId)], payload) { response in
            try Envelope.decode(FMRecordReference.self, from: response.body, status: response.status)
        }
    }

    // MARK: - Find (E15)

    /// E15 `POST …/layouts/{layout}/_find`.
    ///
    /// A "no records match" answer (FileMaker 401, HTTP 500) reaches the engine as an ``FMError`` with
    /// code `"401"`; the endpoint's rule (``NoRecords/find``) makes it an empty found set on both surfaces.
    static func find(layout: String, request: FMFindRequest) -> Endpoint<FMFoundSet> {
        findEndpoint(layout: layout, request: request) { response, parts in
            try FMFoundSet(parsing: response.body, status: response.status, parts: parts)
        }
    }

    /// E15, decoded into typed records with the FileMaker rules (``FileMakerDecoder``).
    static func find<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, request: FMFindRequest) -> Endpoint<FMTypedFoundSet<T>> {
        findEndpoint(layout: layout, request: request) { [decoder = FileMakerDecoder(timeZone: request.timeZone)] response, parts in
            try decoder.parts(parts).foundSet(T.self, body: response.body, status: response.status)
        }
    }

    /// E15 with a raw body as old callers build it (`["query": […]]`), sent as given.
    static func find(layout: String, payload: [String: Any]) -> Endpoint<FMFoundSet> {
        if let error = checkName(layout, "layout") { return failing(.post, error) }
        let read: @Sendable (Endpoint<FMFoundSet>.Response, Int) throws -> FMFoundSet = { response, parts in
            try FMFoundSet(parsing: response.body, status: response.status, parts: parts)
        }
        var endpoint = json(.post, ["layouts", layout, "_find"], payload) { try read($0, 1) }.foundSetRead(noRecords: NoRecords.find, read)
        endpoint.responseLayout = payload["layout.response"] as? String
        return endpoint
    }

    private static func findEndpoint<V>(layout: String, request: FMFindRequest,
                                        read: @escaping @Sendable (Endpoint<V>.Response, _ parts: Int) throws -> V) -> Endpoint<V> {
        if let error = checkName(layout, "layout")
            ?? (request.queries.isEmpty ? .invalidArgument("A find needs at least one query") : nil)
            ?? checkWindow(offset: request.offset, limit: request.limit, what: "records")
            ?? checkPortals(request.portals)
            ?? (request.layoutResponse.flatMap { checkName($0, "response layout") })
            ?? request.scripts.validationError {
            return failing(.post, error, call: "find")
        }
        var payload: [String: Any] = ["query": request.queries.map(\.wireObject)]
        if !request.sort.isEmpty { payload["sort"] = request.sort.map(\.wireObject) }
        if let offset = request.offset { payload["offset"] = String(offset) }
        if let limit = request.limit { payload["limit"] = String(limit) }
        if let portals = request.portals {
            payload["portal"] = portals.map(\.name)
            for portal in portals {
                if let offset = portal.offset { payload["offset." + portal.name] = String(offset) }
                if let limit = portal.limit { payload["limit." + portal.name] = String(limit) }
            }
        }
        if let layoutResponse = request.layoutResponse { payload["layout.response"] = layoutResponse }
        if let dateFormat = request.dateFormat { payload["dateformats"] = dateFormat.rawValue }
        for (key, value) in request.scripts.entries { payload[key] = value }
        var endpoint = json(.post, ["layouts", layout, "_find"], payload) { try read($0, 1) }.foundSetRead(noRecords: NoRecords.find, read)
        endpoint.responseLayout = request.layoutResponse
        return endpoint
    }

    // MARK: - Scripts (E18)

    /// E18 `GET …/layouts/{layout}/script/{script}` (`?script.param=`).
    static func runScript(layout: String, script: String, parameter: String? = nil) -> Endpoint<FMScriptResult> {
        if let error = checkName(layout, "layout") ?? checkName(script, "script") { return failing(.get, error) }
        var query: [URLQueryItem] = []
        if let parameter { query.append(URLQueryItem(name: "script.param", value: parameter)) }
        return Endpoint(.get, .database, ["layouts", layout, "script", script], query: query) { response in
            try Envelope.decode(FMScriptResult.self, from: response.body, status: response.status)
        }
    }

    // MARK: - Globals (E17)

    /// E17 `PATCH /databases/{db}/globals` with `{"globalFields": …}` (names fully qualified `TO::field`).
    static func setGlobals(_ fields: [String: Any]) -> Endpoint<Bool> {
        if fields.isEmpty { return failing(.patch, .invalidArgument("No global field to set")) }
        return json(.patch, ["globals"], ["globalFields": fields]) { response in
            _ = try Envelope.response(from: response.body, status: response.status, checkMessages: false)
            return true
        }
    }

    // MARK: - Containers (E16 and the streaming URL)

    /// E16 `POST …/records/{recordId}/containers/{field}/{repetition}` with a multipart part `upload`.
    ///
    /// The MIME type is `mimeType` when given, else inferred from the content's signature, else from
    /// the file name's extension, else `application/octet-stream`. A `mimeType` with a control character
    /// (CR, LF, …) is `-1002`: it would add part headers.
    static func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1,
                                data: Data, fileName: String, mimeType: String? = nil) -> Endpoint<FMEditResult> {
        if let error = checkName(layout, "layout") ?? checkName(field, "container field")
            ?? (repetition < 1 ? .invalidArgument("The repetition must be 1 or more (got \(repetition))") : nil)
            ?? (fileName.isEmpty ? .invalidArgument("The file name is empty") : nil)
            ?? (mimeType.map(RequestBuilder.isValidHeaderValue) == false
                ? .invalidArgument("The MIME type contains control characters (it is sent as a part header)") : nil) {
            return failing(.post, error)
        }
        let boundary = Multipart.makeBoundary()
        let type = (mimeType?.isEmpty == false ? mimeType : nil) ?? Multipart.mimeType(for: data, fileName: fileName)
        let body = Multipart.body(boundary: boundary, fileName: fileName, mimeType: type, data: data)
        return Endpoint(.post, .database,
                        ["layouts", layout, "records", String(recordId), "containers", field, String(repetition)],
                        body: .multipart(body, boundary: boundary)) { response in
            try Envelope.decode(FMEditResult.self, from: response.body, status: response.status)
        }
    }

    /// E16 from a local file, streamed: the multipart body is assembled on disk when the call is sent (the
    /// file is never read whole into memory). The file name defaults to the URL's last path component. An
    /// unreadable file, or anything but a regular file (a FIFO, a device, a directory), gives `-1009` without
    /// sending anything.
    static func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1,
                                fileURL: URL, fileName: String? = nil, mimeType: String? = nil) -> Endpoint<FMEditResult> {
        let name = fileName ?? fileURL.lastPathComponent
        if let error = checkName(layout, "layout") ?? checkName(field, "container field")
            ?? (repetition < 1 ? .invalidArgument("The repetition must be 1 or more (got \(repetition))") : nil)
            ?? (name.isEmpty ? .invalidArgument("The file name is empty") : nil)
            ?? (mimeType.map(RequestBuilder.isValidHeaderValue) == false
                ? .invalidArgument("The MIME type contains control characters (it is sent as a part header)") : nil) {
            return failing(.post, error)
        }
        let prefix: Data
        switch UploadSource.opened(fileURL) {
        case .success(let source):
            defer { try? source.handle.close() }
            do {
                prefix = try source.handle.read(upToCount: 64) ?? Data()
            } catch {
                return failing(.post, FMError(code: FMError.ClientCode.fileError,
                                              message: "Cannot read \(fileURL.path)", underlying: String(describing: error)))
            }
        case .failure(let error):
            return failing(.post, error)
        }
        let type = (mimeType?.isEmpty == false ? mimeType : nil) ?? Multipart.mimeType(for: prefix, fileName: name)
        return Endpoint(.post, .database,
                        ["layouts", layout, "records", String(recordId), "containers", field, String(repetition)],
                        body: .multipartFile(fileURL, fileName: name, mimeType: type, boundary: Multipart.makeBoundary())) { response in
            try Envelope.decode(FMEditResult.self, from: response.body, status: response.status)
        }
    }

    /// One hop of a container download: the bytes, or where to go next with which cookie.
    enum ContainerHop: Sendable, Equatable {
        case data(Data)
        case redirect(URL, cookie: String?)
    }

    /// One `GET` of a container's streaming URL, without `Authorization`. A `302` is decoded (not an
    /// error) when performed with ``containerHopStatuses``: the caller follows `Location` itself, sending
    /// back the cookies of `Set-Cookie` in the `Cookie` header of the next hop.
    static func containerHop(url: URL, cookie: String? = nil) -> Endpoint<ContainerHop> {
        var endpoint = Endpoint<ContainerHop>(.get, .absolute(url), [], auth: .none) { response in
            switch response.status {
            case 200:
                return .data(response.body)
            case 301, 302, 303, 307, 308:
                guard let location = response.header("Location"),
                      let next = URL(string: location, relativeTo: url)?.absoluteURL,
                      let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https",
                      next.host?.isEmpty == false else {
                    throw FMError.malformed("a container redirect without a usable Location", status: response.status)
                }
                // The cookies belong to this origin: they follow a redirect within it, never to another one.
                guard origin(of: next) == origin(of: url) else { return .redirect(next, cookie: nil) }
                let cookies = mergeCookies(cookie, setCookie(in: response.header("Set-Cookie")))
                // A cookie that cannot go back (a control character: no cookie value holds one) is the server's fault.
                if let cookies, !RequestBuilder.isValidHeaderValue(cookies) {
                    throw FMError.malformed("a container redirect's Set-Cookie holds a control character", status: response.status)
                }
                return .redirect(next, cookie: cookies)
            default:
                throw FMError.malformed("unexpected status for a container download", status: response.status)
            }
        }
        if let cookie, !cookie.isEmpty { endpoint.headers["Cookie"] = cookie }
        return endpoint
    }

    /// The statuses a container hop decodes (send it with `perform(_:options:completion:)`).
    static let containerHopStatuses: Set<Int> = [200, 301, 302, 303, 307, 308]

    /// The most redirects a container download follows.
    static let maxContainerRedirects = 5

    // MARK: - Helpers

    /// An endpoint that the engine completes with `error` without sending anything. `segments`: the path of the
    /// call it stands for (names and ids become `{}` in its kind), so the line that says it was not sent names it;
    /// without one, `call` (the factory that refused it, by default) names it: `POST uploadContainer`.
    static func failing<V>(_ method: Endpoint<V>.Method, _ error: FMError, segments: [String] = [],
                           call: String = #function) -> Endpoint<V> {
        var endpoint = Endpoint<V>(method, .database, segments, invalid: error) { _ in throw error }
        if segments.isEmpty { endpoint.refusedCall = String(call.prefix { $0 != "(" }) }
        return endpoint
    }

    /// A JSON-body endpoint on the database scope, or a failing one when the payload cannot be sent.
    static func json<V>(_ method: Endpoint<V>.Method, _ segments: [String], _ payload: [String: Any],
                        decode: @escaping @Sendable (Endpoint<V>.Response) throws -> V) -> Endpoint<V> {
        switch JSONPayload.serialize(payload) {
        case .success(let data):
            return Endpoint(method, .database, segments, body: .json(data), decode: decode)
        case .failure(let error):
            return failing(method, error, segments: segments)
        }
    }

    /// A record read (E10, E11): a found set, `noRecords` its empty-found-set rule.
    private static func readEndpoint<V>(_ segments: [String], layout: String, base: [URLQueryItem], options: FMReadOptions,
                                        noRecords: Set<String>,
                                        read: @escaping @Sendable (Endpoint<V>.Response, _ parts: Int) throws -> V) -> Endpoint<V> {
        if let error = checkName(layout, "layout") ?? checkPortals(options.portals)
            ?? (options.layoutResponse.flatMap { checkName($0, "response layout") })
            ?? options.scripts.validationError {
            return failing(.get, error, segments: segments)
        }
        var query = base
        if let portals = options.portals {
            query.append(URLQueryItem(name: "portal", value: JSONPayload.queryString(portals.map(\.name))))
            for portal in portals {
                if let offset = portal.offset { query.append(URLQueryItem(name: "_offset." + portal.name, value: String(offset))) }
                if let limit = portal.limit { query.append(URLQueryItem(name: "_limit." + portal.name, value: String(limit))) }
            }
        }
        if let layoutResponse = options.layoutResponse { query.append(URLQueryItem(name: "layout.response", value: layoutResponse)) }
        if let dateFormat = options.dateFormat { query.append(URLQueryItem(name: "dateformats", value: String(dateFormat.rawValue))) }
        query += options.scripts.entries.map { URLQueryItem(name: $0.0, value: $0.1) }
        var endpoint = Endpoint(.get, .database, segments, query: query) { try read($0, 1) }.foundSetRead(noRecords: noRecords, read)
        endpoint.responseLayout = options.layoutResponse
        return endpoint
    }

    private static func rangeQuery(offset: Int?, limit: Int?, sort: [FMSort]) -> [URLQueryItem] {
        var query: [URLQueryItem] = []
        if let offset { query.append(URLQueryItem(name: "_offset", value: String(offset))) }
        if let limit { query.append(URLQueryItem(name: "_limit", value: String(limit))) }
        if !sort.isEmpty { query.append(URLQueryItem(name: "_sort", value: JSONPayload.queryString(sort.map(\.wireObject)))) }
        return query
    }

    /// Adds `options`, `dateformats` and the script keys of write options to a body.
    private static func add(_ options: FMWriteOptions, to payload: inout [String: Any]) {
        var modes: [String: Any] = [:]
        if let entry = options.entryMode { modes["entrymode"] = entry.rawValue }
        if let prohibit = options.prohibitMode { modes["prohibitmode"] = prohibit.rawValue }
        if !modes.isEmpty { payload["options"] = modes }
        if let dateFormat = options.dateFormat { payload["dateformats"] = dateFormat.rawValue }
        for (key, value) in options.scripts.entries { payload[key] = value }
    }

    static func checkName(_ name: String, _ what: String) -> FMError? {
        name.isEmpty ? .invalidArgument("The \(what) name is empty") : nil
    }

    static func checkWindow(offset: Int?, limit: Int?, what: String) -> FMError? {
        if let offset, offset < 1 { return .invalidArgument("The \(what) offset must be 1 or more (got \(offset))") }
        if let limit, limit < 1 { return .invalidArgument("The \(what) limit must be 1 or more (got \(limit))") }
        return nil
    }

    static func checkPortals(_ portals: [FMPortalRange]?) -> FMError? {
        for portal in portals ?? [] {
            if let error = checkName(portal.name, "portal")
                ?? checkWindow(offset: portal.offset, limit: portal.limit, what: "portal \"\(portal.name)\"") {
                return error
            }
        }
        return nil
    }

    /// Scheme, host and port (the default one when absent) of `url`: cookies are only sent back within one.
    static func origin(of url: URL) -> String {
        "\(url.scheme?.lowercased() ?? "")://\(url.connectionOrigin ?? ":\(url.connectionPort)")"
    }

    /// The `name=value` pairs of a `Set-Cookie` header's value (several cookies may be folded into one line).
    static func setCookie(in line: String?) -> String? {
        guard let line, !line.isEmpty else { return nil }
        var pairs: [String] = []
        // Split folded cookies on commas that start a new `name=…` (the comma of an Expires date is
        // followed by a day number, whose text up to `;` holds no `=`).
        var current = ""
        for piece in line.components(separatedBy: ",") {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            if !current.isEmpty, trimmed.prefix(while: { $0 != ";" }).contains("=") {
                if let pair = firstPair(current) { pairs.append(pair) }
                current = trimmed
            } else {
                current += current.isEmpty ? trimmed : "," + piece
            }
        }
        if let pair = firstPair(current) { pairs.append(pair) }
        return pairs.isEmpty ? nil : pairs.joined(separator: "; ")
    }

    private static func firstPair(_ cookie: String) -> String? {
        let pair = cookie.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
        return pair.contains("=") ? pair : nil
    }

    /// Merges a previous `Cookie` value with new pairs (new values replace old ones of the same name).
    static func mergeCookies(_ old: String?, _ new: String?) -> String? {
        var order: [String] = []
        var values: [String: String] = [:]
        for text in [old, new] {
            for pair in (text ?? "").components(separatedBy: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                let name = String(trimmed[..<equals])
                if values[name] == nil { order.append(name) }
                values[name] = trimmed
            }
        }
        return order.isEmpty ? nil : order.compactMap { values[$0] }.joined(separator: "; ")
    }
}

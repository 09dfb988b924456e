import Foundation

/// A successful answer of a route: the `response` object plus extra headers.
struct Reply {
    var response: JSON
    var headers: [(name: String, value: String)] = []
    /// When set, the final `response`, built from a snapshot of the state: run after the state lock
    /// is released (sorting and writing a large found set must not stall other clients). It throws
    /// ``AnswerTooLarge`` when the answer would pass ``EmulatorState/maxAnswerBytes``.
    var finish: (() throws -> JSON)?
    /// When set (instead of ``finish``), the final `response`, built after the state lock is released in steps that
    /// take it again through the ``StateLocker`` given (a find whose scripts run around its matching).
    var relockingFinish: ((StateLocker) throws -> JSON)?

    init(response: JSON, headers: [(name: String, value: String)] = [], finish: (() throws -> JSON)? = nil) {
        self.response = response
        self.headers = headers
        self.finish = finish
    }

    /// A reply whose final `response` `finish` builds, taking the lock again as it needs (``relockingFinish``).
    init(response: JSON, relockingFinish finish: @escaping (StateLocker) throws -> JSON) {
        self.response = response
        relockingFinish = finish
    }
}

/// Thrown by a writer whose answer would pass ``EmulatorState/maxAnswerBytes``: the answer is refused (HTTP 500,
/// FileMaker's 953) instead of being built (a cross-product portal, a nested `$expand` or a `$batch` of large
/// reads could otherwise ask for gigabytes from a few records).
struct AnswerTooLarge: Error {}

/// Runs a closure on the emulator's state under its lock, as a request's own work runs (``EmulatorCore``: the clock for
/// two-digit years, then blobs swept and webhook deliveries sent), with the emulator's time when the lock was taken (a
/// `$batch` part's writes are stamped with it); handed to ``StagedResponse/relockingBody``.
typealias StateLocker = ((inout EmulatorState, Date) -> Void) -> Void

/// `body`'s result, run under the lock `locker` takes (with the emulator's time then); throws what `body` throws.
func underLock<R>(_ locker: StateLocker, _ body: (inout EmulatorState, Date) throws -> R) throws -> R {
    try withoutActuallyEscaping(body) { work in
        var result: Result<R, any Error>?
        locker { state, now in result = Result { try work(&state, now) } }
        guard let result else { throw LockNotTaken() }
        return try result.get()
    }
}

/// Thrown by ``underLock(_:_:)`` when its locker did not run the work (``StagedResponse/finished()``, which cannot
/// take the lock again): the answer is refused.
struct LockNotTaken: Error {}

/// Thrown by a ``StagedResponse/pendingBody`` that finds, while writing, that the request has another answer:
/// `response` (an OData `$apply` whose evaluation on a snapshot failed answers its error).
struct AnsweredOtherwise: Error {
    let response: HTTPResponse
}

/// An answer whose body may still have to be written, outside the state lock.
struct StagedResponse {
    /// The response; its body is empty while ``pendingBody`` or ``relockingBody`` is set.
    var response: HTTPResponse
    /// Writes the body (from a snapshot of the state); throws ``AnswerTooLarge`` when it would pass the cap.
    var pendingBody: (() throws -> Data)?
    /// Writes the body in steps, taking the state lock again for those that need it through the ``StateLocker`` it is
    /// given (a `$batch`, part by part): other clients are answered between the steps.
    var relockingBody: ((StateLocker) throws -> Data)?
    /// Writes the whole answer, its status and headers too, in steps that take the state lock again through the
    /// ``StateLocker`` it is given (an OData write by `$filter`, whose count is known once it has written); the
    /// ``response`` stands for it until then.
    var relockingAnswer: ((StateLocker) throws -> HTTPResponse)?
    /// The answer when ``pendingBody`` throws.
    var refusal: HTTPResponse
    /// The answer when ``pendingBody`` throws a FileMaker error (a find matched nothing): the Data API's envelope.
    var failure: ((FMError) -> HTTPResponse)?

    init(response: HTTPResponse, pendingBody: (() throws -> Data)? = nil, refusal: HTTPResponse? = nil,
         failure: ((FMError) -> HTTPResponse)? = nil) {
        self.response = response
        self.pendingBody = pendingBody
        self.refusal = refusal ?? HTTPResponse(status: 500)
        self.failure = failure
    }

    /// An answer whose body `body` writes taking the lock again as it needs (``relockingBody``).
    init(response: HTTPResponse, relockingBody body: @escaping (StateLocker) throws -> Data, refusal: HTTPResponse,
         failure: ((FMError) -> HTTPResponse)? = nil) {
        self.init(response: response, refusal: refusal, failure: failure)
        relockingBody = body
    }

    /// An answer that `answer` writes whole, taking the lock again as it needs (``relockingAnswer``); `response` stands
    /// for it until then (the request log's status).
    init(response: HTTPResponse, relockingAnswer answer: @escaping (StateLocker) throws -> HTTPResponse, refusal: HTTPResponse) {
        self.init(response: response, refusal: refusal)
        relockingAnswer = answer
    }

    /// The complete response (runs ``pendingBody``), or ``refusal``; an answer with a ``relockingBody`` or a
    /// ``relockingAnswer`` is refused: it cannot be finished where the lock cannot be taken again.
    func finished() -> HTTPResponse {
        finishedOrRefused { _ in }.response
    }

    /// The complete response, and whether it is not the staged one: the ``refusal`` of an answer too large, or
    /// the ``failure`` of a FileMaker error found while finishing, or the answer of ``AnsweredOtherwise``. `locker`
    /// takes the state lock for a ``relockingBody`` or a ``relockingAnswer``: called after the lock is released
    /// (``EmulatorCore``), or on the state itself when the caller holds it.
    func finishedOrRefused(_ locker: StateLocker) -> (response: HTTPResponse, refused: Bool) {
        let finished = finishedTelling(locker)
        return (finished.response, finished.refused)
    }

    /// ``finishedOrRefused(_:)``, telling whether the answer is the ``refusal`` (`tooLarge`: the answer would pass the
    /// cap, or the lock could not be taken again) rather than another answer found while finishing.
    func finishedTelling(_ locker: StateLocker) -> (response: HTTPResponse, refused: Bool, tooLarge: Bool) {
        guard pendingBody != nil || relockingBody != nil || relockingAnswer != nil else { return (response, false, false) }
        var complete = response
        do {
            if let relockingAnswer {
                complete = try relockingAnswer(locker)
            } else if let relockingBody {
                complete.body = try relockingBody(locker)
            } else if let pendingBody {
                complete.body = try pendingBody()
            }
        } catch let e as FMError {
            guard let failure else { return (refusal, true, true) }
            return (failure(e), true, false)
        } catch let e as AnsweredOtherwise {
            return (e.response, true, false)
        } catch {
            return (refusal, true, true)
        }
        return (complete, false, false)
    }
}

/// One request being handled, with its decoded path and query and the session it authenticated.
struct RequestContext {
    let request: HTTPRequest
    /// Percent-decoded path segments after `/fmi/data/{version}`.
    let path: [String]
    let version: String
    /// Decoded query pairs in order (`+` is a space in query strings).
    let query: [(String, String)]
    let now: Date
    /// The token of the authenticated session, once authenticated.
    var token: String?
    /// The database spelling used in the path, after stripping `.fmp12`.
    var database: String = ""
    /// The parsed JSON body (an object; `{}` when empty).
    var body: JSON = .object([])

    /// The host of the listening socket, used when a request has no `Host` header.
    var fallbackHost = "127.0.0.1"

    /// The `Host` to put in container URLs.
    var host: String { request.header("Host") ?? fallbackHost }

    /// `scheme://host[:port]` the client used, for container URLs (see ``EmulatorState/origin(of:fallbackHost:)``).
    var origin = "http://127.0.0.1"

    func queryValue(_ name: String) -> String? {
        query.first { $0.0 == name }?.1 ?? query.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

/// Percent-decodes one path segment exactly once (`+` stays a plus); `nil` when malformed.
func decodePathSegment(_ raw: Substring) -> String? {
    raw.contains("%") ? String(raw).removingPercentEncoding : String(raw)
}

/// Decodes a query string into ordered pairs (`+` is a space, then percent-decoding).
func decodeQuery(_ raw: String?) -> [(String, String)] {
    guard let raw, !raw.isEmpty else { return [] }
    return raw.split(separator: "&").map { item in
        let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        func dec(_ s: Substring) -> String {
            let plus = s.replacingOccurrences(of: "+", with: " ")
            return plus.removingPercentEncoding ?? plus
        }
        return (dec(parts[0]), parts.count > 1 ? dec(parts[1]) : "")
    }
}

/// `s` without leading and trailing spaces and tabs (cheaper than Foundation's trimming on Linux).
func trimSpaces(_ s: String) -> String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = s.firstIndex(where: { !isSpace($0) }), let last = s.lastIndex(where: { !isSpace($0) }) else { return "" }
    return String(s[first...last])
}

/// The media type of a `Content-Type` value, lower-cased, without parameters.
func mediaType(_ value: String?) -> String? {
    guard let value else { return nil }
    return value.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
}

/// A request body parsed **before** the emulator's state lock is taken, so that a large body (tens of
/// MiB of JSON or multipart) never stalls other clients while it is parsed.
struct PreparedBody: Sendable {
    enum ParsedJSON: Sendable {
        /// No body, or only white space: `{}`.
        case empty
        /// A JSON object.
        case object(JSON)
        /// Not JSON, or not an object: 1708.
        case invalid
    }

    /// The body as JSON (meaningful for JSON requests).
    var json: ParsedJSON
    /// The multipart parts, for a `multipart/form-data` request (`nil` when malformed or not multipart).
    var parts: [MultipartFormData.Part]?

    init(_ request: HTTPRequest) {
        if mediaType(request.header("Content-Type")) == "multipart/form-data" {
            json = .invalid
            parts = try? MultipartFormData.parse(body: request.body, contentType: request.header("Content-Type") ?? "", sharing: true)
        } else {
            json = PreparedBody.parseJSON(request.body)
            parts = nil
        }
    }

    static func parseJSON(_ body: Data) -> ParsedJSON {
        guard body.contains(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else { return .empty }
        // Numbers in a request are binary64 (Claris; Docs/FILEMAKER-BEHAVIOUR.md): a 20-digit JSON number is
        // rounded as FileMaker Server rounds it; a number sent as a string keeps every digit.
        guard let json = try? JSON.parse(body, binary64Numbers: true), json.objectPairs != nil else { return .invalid }
        return .object(json)
    }
}

/// The parameters each endpoint knows (WIRE.md §6–§8, §11, §17). Anything else is HTTP 400, code 960,
/// `Unknown parameter(s): a, b` listing every unknown name in request order. Names compare exactly
/// (case-sensitive). Portal windows are `limit.<portal>` / `offset.<portal>` in a find body and
/// `_limit.<portal>` / `_offset.<portal>` in a GET query; each spelling in the other place is unknown.
enum KnownParameters {
    static let script = ["script", "script.param", "script.prerequest", "script.prerequest.param",
                         "script.presort", "script.presort.param"]
    static let loginBody: Set<String> = ["fmDataSource"]
    static let createBody = Set(["fieldData", "portalData", "options", "dateformats"] + script)
    static let editBody = Set(["fieldData", "portalData", "modId", "options", "dateformats"] + script)
    static let duplicateBody = Set(script)
    static let findBody = Set(["query", "sort", "offset", "limit", "portal", "layout.response", "dateformats"] + script)
    static let globalsBody: Set<String> = ["globalFields"]
    static let rangeQuery = Set(["_offset", "_limit", "_sort", "portal", "layout.response", "dateformats"] + script)
    static let recordQuery = Set(["portal", "layout.response", "dateformats"] + script)
    static let deleteQuery = Set(script)
    static let runScriptQuery: Set<String> = ["script.param"]
    static let layoutMetadataQuery: Set<String> = ["recordId"]
    static let containerQuery: Set<String> = ["modId"]
    /// Endpoints that take no query parameter (their parameters, if any, are in the body): every name is unknown.
    static let noQuery: Set<String> = []

    /// The unknown names among `keys`; `windowPrefixes` are the portal-window prefixes allowed here.
    static func unknown(_ keys: [String], allowed: Set<String>, windowPrefixes: [String] = []) -> [String] {
        var out: [String] = []
        for key in keys where !allowed.contains(key) && !out.contains(key) {
            if windowPrefixes.contains(where: { key.hasPrefix($0) && key.count > $0.count }) { continue }
            out.append(key)
        }
        return out
    }

    /// Throws 960 when the body object has keys outside `allowed`.
    static func checkBody(_ body: JSON, _ allowed: Set<String>, portalWindows: Bool = false) throws {
        let names = unknown((body.objectPairs ?? []).map(\.0), allowed: allowed,
                            windowPrefixes: portalWindows ? ["limit.", "offset."] : [])
        if !names.isEmpty { throw FMError.unknownParameters(names) }
    }

    /// Throws 960 when the query string has names outside `allowed`.
    static func checkQuery(_ query: [(String, String)], _ allowed: Set<String>, portalWindows: Bool = false) throws {
        let names = unknown(query.map(\.0), allowed: allowed, windowPrefixes: portalWindows ? ["_limit.", "_offset."] : [])
        if !names.isEmpty { throw FMError.unknownParameters(names) }
    }
}

/// The routes of the Data API, as (pattern, allowed methods).
enum Route {
    case productInfo, databases, validateSession
    case login, logout
    case layouts, layoutMetadata, scripts, globals
    case records, record, find, container, runScript
    case streaming

    /// Matches decoded segments after the version; `*` in a pattern is a name.
    static func match(_ path: [String]) -> (Route, [String])? {
        let lower = path.map { $0.lowercased() }
        func names(_ idx: [Int]) -> [String] { idx.map { path[$0] } }
        switch lower.count {
        case 1:
            switch lower[0] {
            case "productinfo": return (.productInfo, [])
            case "databases": return (.databases, [])
            case "validatesession": return (.validateSession, [])
            default: return nil
            }
        case 3 where lower[0] == "databases":
            switch lower[2] {
            case "sessions": return (.login, names([1]))
            case "layouts": return (.layouts, names([1]))
            case "scripts": return (.scripts, names([1]))
            case "globals": return (.globals, names([1]))
            default: return nil
            }
        case 4 where lower[0] == "databases":
            if lower[2] == "sessions" { return (.logout, names([1, 3])) }
            if lower[2] == "layouts" { return (.layoutMetadata, names([1, 3])) }
            return nil
        case 5 where lower[0] == "databases" && lower[2] == "layouts":
            if lower[4] == "records" { return (.records, names([1, 3])) }
            if lower[4] == "_find" { return (.find, names([1, 3])) }
            return nil
        case 6 where lower[0] == "databases" && lower[2] == "layouts":
            if lower[4] == "records" { return (.record, names([1, 3, 5])) }
            if lower[4] == "script" { return (.runScript, names([1, 3, 5])) }
            return nil
        case 8 where lower[0] == "databases" && lower[2] == "layouts" && lower[4] == "records" && lower[6] == "containers":
            return (.container, names([1, 3, 5, 7]))
        case 9 where lower[0] == "databases" && lower[2] == "layouts" && lower[4] == "records" && lower[6] == "containers":
            return (.container, names([1, 3, 5, 7, 8]))
        default:
            return nil
        }
    }

    /// The `Allow` header of a 405: the methods, with HEAD after GET.
    var allowHeader: String {
        methods.flatMap { $0 == "GET" ? ["GET", "HEAD"] : [$0] }.joined(separator: ", ")
    }

    var methods: [String] {
        switch self {
        case .productInfo, .databases, .validateSession, .layouts, .layoutMetadata, .scripts, .runScript, .streaming: return ["GET"]
        case .login, .find, .container: return ["POST"]
        case .logout: return ["DELETE"]
        case .globals: return ["PATCH"]
        case .records: return ["GET", "POST"]
        case .record: return ["GET", "PATCH", "DELETE", "POST"]
        }
    }
}

extension EmulatorState {
    /// Answers one request completely (the lock is held by the caller).
    mutating func route(_ received: HTTPRequest, now: Date) -> HTTPResponse {
        let staged = routeStaged(received, now: now)
        return staged.finishedOrRefused { body in body(&self, now) }.response
    }

    /// ``play(_:request:token:now:)``, leaving the body of an answer without a fault to be written
    /// after the lock is released (faults that rewrite the body need it at once).
    mutating func playStaged(_ fault: EmulatorFault?, request: HTTPRequest, token: String?, now: Date) -> StagedResponse {
        guard let fault else { return routeStaged(request, now: now) }
        return StagedResponse(response: play(fault, request: request, token: token, now: now))
    }

    /// Answers one request (the lock is held by the caller); a large answer's body is left to
    /// ``StagedResponse/pendingBody``, to be written after the lock is released.
    mutating func routeStaged(_ received: HTTPRequest, now: Date) -> StagedResponse {
        var request = received
        let rawSegments = request.rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var segments: [String] = []
        for raw in rawSegments {
            guard let s = decodePathSegment(raw) else {
                // Under `/fmi/odata` a malformed URL is told in OData's shape, as every OData answer is (ODATA.md §4.5).
                let lower = request.rawPath.lowercased()
                if lower == "/fmi/odata" || lower.hasPrefix("/fmi/odata/") {
                    return StagedResponse(response: EmulatorState.odataError(ODataError.syntax(String(raw))))
                }
                return StagedResponse(response: errorResponse(FMError("404", "Not Found", status: 404)))
            }
            segments.append(s)
        }
        if segments.last == "", segments.count > 1 { segments.removeLast() }

        if segments.count == 3, segments[0] == "Streaming_SSL" || segments[0] == "Streaming" {
            guard request.method == "GET" || request.method == "HEAD" else {
                return StagedResponse(response: methodNotAllowed(allow: "GET, HEAD"))
            }
            return StagedResponse(response: streamContainer(request, name: segments[2]))
        }

        // FileMaker's OData v4 API, over the same store (OData/).
        if segments.count >= 3, segments[0].lowercased() == "fmi", segments[1].lowercased() == "odata", segments[2].lowercased() == "v4" {
            return odataRouteStaged(request, segments: Array(segments[3...]), now: now)
        }
        if segments.count == 2, segments[0].lowercased() == "fmi", segments[1].lowercased() == "odata" {
            return StagedResponse(response: EmulatorState.odataError(ODataError(404, "-1002", "Error: syntax error in URL at: 'odata'")))
        }
        guard segments.count >= 4, segments[0].lowercased() == "fmi", segments[1].lowercased() == "data",
              ["v1", "v2", "vlatest"].contains(segments[2].lowercased()) else {
            return StagedResponse(response: errorResponse(FMError("404", "Not Found", status: 404)))
        }
        let rest = Array(segments[3...])
        guard let (route, names) = Route.match(rest) else {
            return StagedResponse(response: errorResponse(FMError("404", "Not Found", status: 404)))
        }
        // HEAD is GET without the body (RFC 9110 §9.3.2); the socket layer drops the body.
        if request.method == "HEAD", route.methods.contains("GET") { request.method = "GET" }
        guard route.methods.contains(request.method) else {
            return StagedResponse(response: methodNotAllowed(allow: route.allowHeader))
        }
        var ctx = RequestContext(request: request, path: rest, version: segments[2], query: decodeQuery(request.rawQuery), now: now)
        if let base = baseURL, let host = base.host { ctx.fallbackHost = base.port.map { "\(host):\($0)" } ?? host }
        ctx.origin = origin(of: request, fallbackHost: ctx.fallbackHost)
        do {
            let reply = try dispatch(route, names: names, ctx: &ctx)
            var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
            headers += reply.headers
            func body(_ response: JSON) -> Data {
                JSON.object([("response", response), ("messages", .array([.object([("code", .string("0")), ("message", .string("OK"))])]))]).data
            }
            if let finish = reply.relockingFinish {
                return StagedResponse(response: HTTPResponse(status: 200, headers: headers), relockingBody: { body(try finish($0)) },
                                      refusal: errorResponse(FMError("953")), failure: EmulatorState.errorResponse)
            }
            guard let finish = reply.finish else { return StagedResponse(response: HTTPResponse(status: 200, headers: headers, body: body(reply.response))) }
            return StagedResponse(response: HTTPResponse(status: 200, headers: headers), pendingBody: { body(try finish()) },
                                  refusal: errorResponse(FMError("953")), failure: EmulatorState.errorResponse)
        } catch let e as FMError {
            return StagedResponse(response: errorResponse(e))
        } catch {
            return StagedResponse(response: errorResponse(FMError("-1")))
        }
    }

    /// 405 with code 1704 and the `Allow` header RFC 9110 §15.5.6 requires.
    func methodNotAllowed(allow: String) -> HTTPResponse {
        var response = errorResponse(FMError("1704", status: 405))
        response.headers.append(("Allow", allow))
        return response
    }

    func errorResponse(_ e: FMError) -> HTTPResponse {
        EmulatorState.errorResponse(e)
    }

    /// The Data API's error envelope for `e`, at its HTTP status.
    static func errorResponse(_ e: FMError) -> HTTPResponse {
        let body = JSON.object([("messages", .array([.object([("code", .string(e.code)), ("message", .string(e.message))])])),
                                ("response", .object([]))])
        return HTTPResponse(status: e.status, headers: [("Content-Type", "application/json")], body: body.data)
    }

    private mutating func dispatch(_ route: Route, names: [String], ctx: inout RequestContext) throws -> Reply {
        let method = ctx.request.method
        switch route {
        case .productInfo:
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return productInfo()
        case .databases:
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return databaseList()
        case .validateSession:
            let reply = try validateSession(&ctx)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return reply
        case .login:
            try requireJSONContentType(ctx, required: false)
            try openDatabase(names[0], &ctx)
            try parseBody(&ctx)
            try KnownParameters.checkBody(ctx.body, KnownParameters.loginBody)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try login(&ctx)
        case .logout:
            try openDatabase(names[0], &ctx)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try logout(token: names[1], &ctx)
        case .layouts:
            try openSession(names[0], &ctx)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return layoutList()
        case .scripts:
            try openSession(names[0], &ctx)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return scriptList()
        case .globals:
            try requireJSONContentType(ctx, required: true)
            try openSession(names[0], &ctx)
            try parseBody(&ctx)
            try KnownParameters.checkBody(ctx.body, KnownParameters.globalsBody)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try setGlobals(&ctx)
        case .layoutMetadata:
            try openSession(names[0], &ctx)
            let layout = try findLayout(names[1])
            try KnownParameters.checkQuery(ctx.query, KnownParameters.layoutMetadataQuery)
            return try layoutMetadata(layout, &ctx)
        case .records:
            if method == "POST" { try requireJSONContentType(ctx, required: true) }
            try openSession(names[0], &ctx)
            let layout = try findLayout(names[1])
            if method == "POST" {
                try parseBody(&ctx)
                try KnownParameters.checkBody(ctx.body, KnownParameters.createBody)
                try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
                return try createRecord(layout, &ctx)
            }
            try KnownParameters.checkQuery(ctx.query, KnownParameters.rangeQuery, portalWindows: true)
            return try getRange(layout, &ctx)
        case .record:
            return try dispatchRecord(method: method, names: names, ctx: &ctx)
        case .find:
            try requireJSONContentType(ctx, required: true)
            try openSession(names[0], &ctx)
            let layout = try findLayout(names[1])
            try parseBody(&ctx)
            try KnownParameters.checkBody(ctx.body, KnownParameters.findBody, portalWindows: true)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try find(layout, &ctx)
        case .container:
            guard mediaType(ctx.request.header("Content-Type")) == "multipart/form-data" else {
                throw FMError("415", "Unsupported Media Type", status: 415)
            }
            try openSession(names[0], &ctx)
            let layout = try findLayout(names[1])
            let id = try recordId(names[2])
            try KnownParameters.checkQuery(ctx.query, KnownParameters.containerQuery)
            return try uploadContainer(layout, id: id, field: names[3], repetition: names.count > 4 ? names[4] : nil, &ctx)
        case .runScript:
            try openSession(names[0], &ctx)
            let layout = try findLayout(names[1])
            try KnownParameters.checkQuery(ctx.query, KnownParameters.runScriptQuery)
            return try runScriptRoute(layout, name: names[2], &ctx)
        case .streaming:
            throw FMError("404", "Not Found", status: 404)
        }
    }

    /// `/layouts/{layout}/records/{id}`: get (`GET`), edit (`PATCH`), delete (`DELETE`) or duplicate (`POST`).
    private mutating func dispatchRecord(method: String, names: [String], ctx: inout RequestContext) throws -> Reply {
        if method == "PATCH" { try requireJSONContentType(ctx, required: true) }
        if method == "POST" { try requireJSONContentType(ctx, required: false) }
        try openSession(names[0], &ctx)
        let layout = try findLayout(names[1])
        let id = try recordId(names[2])
        switch method {
        case "GET":
            try KnownParameters.checkQuery(ctx.query, KnownParameters.recordQuery, portalWindows: true)
            return try getRecord(layout, id: id, &ctx)
        case "PATCH":
            try parseBody(&ctx)
            try KnownParameters.checkBody(ctx.body, KnownParameters.editBody)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try editRecord(layout, id: id, &ctx)
        case "DELETE":
            try KnownParameters.checkQuery(ctx.query, KnownParameters.deleteQuery)
            return try deleteRecord(layout, id: id, &ctx)
        default:
            try parseBody(&ctx)
            try KnownParameters.checkBody(ctx.body, KnownParameters.duplicateBody)
            try KnownParameters.checkQuery(ctx.query, KnownParameters.noQuery)
            return try duplicateRecord(layout, id: id, &ctx)
        }
    }

    // MARK: Common steps

    func requireJSONContentType(_ ctx: RequestContext, required: Bool) throws {
        let type = mediaType(ctx.request.header("Content-Type"))
        if let type {
            guard type == "application/json" else { throw FMError("415", "Unsupported Media Type", status: 415) }
        } else if required || !ctx.request.body.isEmpty {
            throw FMError("415", "Unsupported Media Type", status: 415)
        }
    }

    func parseBody(_ ctx: inout RequestContext) throws {
        // Normally parsed before the state lock was taken (``PreparedBody``); parse here only when not.
        let parsed = prepared.map(\.json) ?? PreparedBody.parseJSON(ctx.request.body)
        switch parsed {
        case .empty: ctx.body = .object([])
        case let .object(json): ctx.body = json
        case .invalid: throw FMError("1708")
        }
    }

    /// Checks the database segment (strips `.fmp12`); 802 when unknown.
    func openDatabase(_ segment: String, _ ctx: inout RequestContext) throws {
        var name = segment
        if name.lowercased().hasSuffix(".fmp12") { name = String(name.dropLast(6)) }
        guard name.caseInsensitiveCompare(schema.database) == .orderedSame else { throw FMError("802") }
        ctx.database = name
    }

    /// Checks the database, then the Bearer token (bound to the database spelling); slides its expiry.
    mutating func openSession(_ segment: String, _ ctx: inout RequestContext) throws {
        try openDatabase(segment, &ctx)
        let token = try bearerToken(ctx, missingMessage: nil)
        guard var session = sessions[token], !isExpired(session, now: ctx.now), session.database == ctx.database else {
            throw FMError("952")
        }
        session.lastUsed = ctx.now
        sessions[token] = session
        ctx.token = token
    }

    func bearerToken(_ ctx: RequestContext, missingMessage: String?) throws -> String {
        guard let auth = ctx.request.header("Authorization").map(trimSpaces), !auth.isEmpty else {
            throw FMError("10", missingMessage)
        }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw FMError("952") }
        return trimSpaces(String(parts[1]))
    }

    func findLayout(_ name: String) throws -> EmulatorSchema.Layout {
        guard let layout = layout(name) else { throw FMError("105") }
        return layout
    }

    func recordId(_ segment: String) throws -> Int {
        guard let id = Int(segment), id >= 1 else { throw FMError("101") }
        return id
    }
}

import Foundation

// The control API: a small JSON-over-HTTP API on its own port, beside the Data API, so test suites
// in any language can do what Swift tests do in-process (inject faults, move the clock, expire
// tokens, reset, read the request log and records, set the traffic behaviours). Version 1 lives under
// `/v1`; every answer is JSON; a bad request is 400 `{"error": "…"}`, never a crash.

extension Emulator {
    /// Starts the control API (see the README's emulator section for its endpoints) on its own
    /// port and returns its base URL (`http://127.0.0.1:PORT`; the endpoints are under `/v1`). Calling
    /// it again while it runs returns the current URL. It is independent of the Data API: faults,
    /// ``serviceTime`` and the request log never apply to it, and ``stop()`` leaves it running.
    /// - Parameters:
    ///   - host: the address to bind (loopback by default).
    ///   - port: the port, or 0 for any free port.
    @discardableResult
    public func startControl(host: String = "127.0.0.1", port: UInt16 = 0) throws -> URL {
        if let url = controlURL { return url }
        let server = HTTPServer(handler: ControlHandler(target: WeakEmulator(self)), maxBodyBytes: 1024 * 1024)
        let bound = try server.start(host: host, port: port)
        guard let url = Emulator.url(host: host, port: bound) else {
            server.stop()
            throw HTTPServerError(message: "cannot form a URL for host \(host)")
        }
        core.control.withLock { $0 = (server, url) }
        return url
    }

    /// The control API's base URL while it runs, else `nil`.
    public var controlURL: URL? { core.control.withLock { $0?.url } }

    /// Stops the control API. Idempotent.
    public func stopControl() {
        let running = core.control.withLock { c -> HTTPServer? in
            let server = c?.server
            c = nil
            return server
        }
        running?.stop()
    }
}

/// The emulator a control server drives, held weakly so that the server does not keep it alive.
final class WeakEmulator: @unchecked Sendable {
    weak var value: Emulator?
    init(_ value: Emulator) { self.value = value }
}

/// A control request that cannot be carried out: its HTTP status and message.
struct ControlError: Error {
    var status: Int
    var message: String
    init(_ message: String, status: Int = 400) {
        self.status = status
        self.message = message
    }
}

/// Answers the control API.
struct ControlHandler: HTTPHandler {
    let target: WeakEmulator

    /// Version of the control API; bumped on an incompatible change (new endpoints and keys are not).
    static let version = 1

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard let emulator = target.value else { return Self.json(["error": "the emulator is gone"], status: 503) }
        do {
            return Self.json(try route(request, emulator))
        } catch let e as ControlError {
            return Self.json(["error": e.message], status: e.status)
        } catch {
            return Self.json(["error": "\(error)"], status: 400)
        }
    }

    /// Endpoints as (method, path) pairs, for 404/405 and the index.
    static let endpoints: [(method: String, path: String)] = [
        ("GET", "/v1"), ("GET", "/v1/status"),
        ("POST", "/v1/faults"), ("GET", "/v1/faults"), ("DELETE", "/v1/faults"),
        ("POST", "/v1/clock"),
        ("GET", "/v1/sessions"), ("DELETE", "/v1/sessions"), ("DELETE", "/v1/sessions/{token}"),
        ("POST", "/v1/restart"), ("POST", "/v1/reset"),
        ("GET", "/v1/log"), ("DELETE", "/v1/log"),
        ("GET", "/v1/tables/{table}/records"), ("POST", "/v1/tables/{table}/records"),
        ("GET", "/v1/settings"), ("PATCH", "/v1/settings"),
        ("GET", "/v1/counters"), ("POST", "/v1/counters/reset-max-in-flight"),
        ("POST", "/v1/claris-id/accept"), ("POST", "/v1/claris-id/revoke"), ("POST", "/v1/oauth/accept"),
        ("GET", "/v1/claris-id"), ("POST", "/v1/claris-id/revoke-refresh-tokens"), ("POST", "/v1/claris-id/mfa"),
        ("POST", "/v1/claris-id/behavior"),
    ]

    /// The endpoint a request names: its method (HEAD as GET), path pattern and path parameter; 404 or 405
    /// when there is none.
    private static func endpoint(of request: HTTPRequest) throws -> (method: String, pattern: String, parameter: String?) {
        var segments: [String] = []
        for raw in request.rawPath.split(separator: "/") {
            guard let s = decodePathSegment(raw) else { throw ControlError("malformed percent-encoding in the path") }
            segments.append(s)
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        let pattern: String
        var parameter: String?
        switch segments.count {
        case 0:
            pattern = "/v1"   // the root answers the index too
        case 3 where segments[0] == "v1" && segments[1] == "sessions":
            pattern = "/v1/sessions/{token}"
            parameter = segments[2]
        case 4 where segments[0] == "v1" && segments[1] == "tables" && segments[3] == "records":
            pattern = "/v1/tables/{table}/records"
            parameter = segments[2]
        default:
            pattern = "/" + segments.joined(separator: "/")
        }
        let methods = Self.endpoints.filter { $0.path == pattern }.map(\.method)
        guard !methods.isEmpty else {
            throw ControlError("no such control endpoint: \(request.method) \(request.rawPath) (see GET /v1)", status: 404)
        }
        guard methods.contains(method) else {
            throw ControlError("\(pattern) takes \(methods.joined(separator: ", ")), not \(request.method)", status: 405)
        }
        return (method, pattern, parameter)
    }

    private func route(_ request: HTTPRequest, _ emulator: Emulator) throws -> Any {
        let (method, pattern, parameter) = try Self.endpoint(of: request)
        let body = try Self.object(request.body)

        switch (method, pattern) {
        case ("GET", "/v1"):
            try Self.expectNoKeys(body)
            return ["api": "fm-emulator control", "version": Self.version,
                    "endpoints": Self.endpoints.map { "\($0.method) \($0.path)" }]
        case ("GET", "/v1/status"):
            var status = counters(emulator).merging(settings(emulator)) { a, _ in a }
            status["version"] = Self.version
            status["database"] = emulator.database
            status["dataURL"] = emulator.baseURL?.absoluteString ?? NSNull()
            status["pendingFaults"] = emulator.pendingFaultCount
            status["now"] = ISO8601DateFormatter().string(from: emulator.now)
            return status
        case ("POST", "/v1/faults"):
            let (fault, count, matching) = try Self.fault(from: body)
            emulator.inject(fault, count: count, matching: matching)
            return ["pendingFaults": emulator.pendingFaultCount]
        case ("GET", "/v1/faults"):
            let queued = emulator.core.state.withLock { $0.faults }
            return ["pendingFaults": queued.reduce(0) { $0 + $1.remaining },
                    "faults": queued.map { ["fault": Self.name(of: $0.fault), "remaining": $0.remaining,
                                            "matching": $0.matching.map { $0 as Any } ?? NSNull()] }]
        case ("DELETE", "/v1/faults"):
            emulator.clearFaults()
            return ["pendingFaults": 0]
        case ("POST", "/v1/clock"):
            try Self.allow(body, ["advance"])
            guard let seconds = try Self.number(body, "advance"), seconds >= 0, seconds < 1e10 else {
                throw ControlError("advance must be a number of seconds, 0 or more")
            }
            emulator.advanceClock(by: seconds)
            return ["now": ISO8601DateFormatter().string(from: emulator.now)]
        case ("GET", "/v1/sessions"):
            let tokens = emulator.activeTokens
            return ["count": tokens.count, "tokens": tokens]
        case ("DELETE", "/v1/sessions"):
            let count = emulator.activeSessionCount
            emulator.expireAllTokens()
            return ["expired": count]
        case ("DELETE", "/v1/sessions/{token}"):
            let token = parameter ?? ""
            let known = emulator.activeTokens.contains(token)
            emulator.expireToken(token)
            return ["expired": known ? 1 : 0]
        case ("POST", "/v1/restart"):
            try Self.expectNoKeys(body)
            emulator.restart()
            return ["restarted": true]
        case ("POST", "/v1/reset"):
            try Self.expectNoKeys(body)
            emulator.reset()
            return ["reset": true]
        case ("GET", "/v1/log"):
            var log = emulator.requestLog
            if let raw = decodeQuery(request.rawQuery).first(where: { $0.0 == "limit" })?.1 {
                guard let limit = Int(raw), limit >= 0 else { throw ControlError("limit must be a whole number, 0 or more") }
                log = Array(log.suffix(limit))
            }
            return ["requests": Self.loggedRequests(log)]
        case ("DELETE", "/v1/log"):
            emulator.clearRequestLog()
            return ["requests": [Any]()]
        case ("GET", "/v1/tables/{table}/records"):
            let table = parameter ?? ""
            guard emulator.hasTable(table) else { throw ControlError("unknown table \(table)", status: 404) }
            return ["table": table, "records": emulator.records(inTable: table).map(Self.jsonSafe)]
        case ("POST", "/v1/tables/{table}/records"):
            return try addRecord(toTable: parameter ?? "", body, emulator)
        case ("GET", "/v1/settings"):
            return settings(emulator)
        case ("PATCH", "/v1/settings"):
            try applySettings(body, emulator)
            return settings(emulator)
        case ("GET", "/v1/counters"):
            return counters(emulator)
        case ("POST", "/v1/counters/reset-max-in-flight"):
            try Self.expectNoKeys(body)
            emulator.resetMaxInFlight()
            return counters(emulator)
        default:
            return try routeSignIns(method, pattern, body, emulator)
        }
    }

    /// `POST /v1/tables/{table}/records`: adds a record to `table` from `fieldData` (field names to strings or
    /// numbers), bypassing layouts and privileges; answers its record id.
    private func addRecord(toTable table: String, _ body: [String: Any], _ emulator: Emulator) throws -> Any {
        guard emulator.hasTable(table) else { throw ControlError("unknown table \(table)", status: 404) }
        try Self.allow(body, ["fieldData"])
        guard let fieldData = body["fieldData"] as? [String: Any] else {
            throw ControlError("fieldData must be an object of field names to strings or numbers")
        }
        var fields: [String: String] = [:]
        for (name, value) in fieldData {
            if let text = value as? String {
                fields[name] = text
            } else if !Self.isJSONBool(value), let number = value as? NSNumber, number.doubleValue.isFinite {
                fields[name] = number.stringValue
            } else {
                throw ControlError("fieldData.\(name) must be a string or a number")
            }
        }
        do {
            return ["table": table, "recordId": try emulator.addRecord(toTable: table, fields)]
        } catch let error as EmulatorSchemaError {
            throw ControlError(error.message)
        }
    }

    /// The Claris ID and OAuth endpoints (sign-ins the emulator accepts, revokes and counts).
    private func routeSignIns(_ method: String, _ pattern: String, _ body: [String: Any], _ emulator: Emulator) throws -> Any {
        switch (method, pattern) {
        case ("POST", "/v1/claris-id/accept"), ("POST", "/v1/claris-id/revoke"):
            try Self.allow(body, ["token"])
            guard let token = try Self.string(body, "token"), !token.isEmpty else { throw ControlError("token must be a non-empty string") }
            guard token.utf8.count <= 16 * 1024 else { throw ControlError("token must be at most 16384 bytes") }
            if pattern.hasSuffix("accept") { emulator.acceptClarisIDToken(token) } else { emulator.revokeClarisIDToken(token) }
            return ["ok": true]
        case ("GET", "/v1/claris-id"):
            return ["enabled": emulator.clarisID, "tokenLifetime": emulator.clarisIDTokenLifetime, "signIns": emulator.clarisIDSignInCount,
                    "failedSignIns": emulator.clarisIDFailedSignInCount, "refreshes": emulator.clarisIDRefreshCount,
                    "requests": emulator.clarisIDRequestCount]
        case ("POST", "/v1/claris-id/revoke-refresh-tokens"):
            try Self.expectNoKeys(body)
            emulator.revokeClarisIDRefreshTokens()
            return ["ok": true]
        case ("POST", "/v1/claris-id/mfa"):
            try Self.allow(body, ["username", "code"])
            guard let username = try Self.string(body, "username"), !username.isEmpty else { throw ControlError("username must be a non-empty string") }
            guard username.utf8.count <= CognitoService.maxNameLength else {
                throw ControlError("username must be at most \(CognitoService.maxNameLength) bytes (Cognito's limit)")
            }
            emulator.requireClarisIDMFA(username: username, code: try Self.string(body, "code"))
            return ["ok": true]
        case ("POST", "/v1/claris-id/behavior"):
            try Self.allow(body, ["username", "behavior", "code"])
            guard let username = try Self.string(body, "username"), !username.isEmpty else { throw ControlError("username must be a non-empty string") }
            guard username.utf8.count <= CognitoService.maxNameLength else {
                throw ControlError("username must be at most \(CognitoService.maxNameLength) bytes (Cognito's limit)")
            }
            let behavior = try Self.clarisIDBehavior(name: try Self.string(body, "behavior"), code: try Self.string(body, "code"))
            emulator.setClarisIDBehavior(behavior, username: username)
            return ["ok": true, "username": username, "behavior": body["behavior"] ?? NSNull()]
        case ("POST", "/v1/oauth/accept"):
            try Self.allow(body, ["requestId", "identifier"])
            guard let id = try Self.string(body, "requestId"), let identifier = try Self.string(body, "identifier") else {
                throw ControlError("requestId and identifier are required strings")
            }
            emulator.acceptOAuth(requestId: id, identifier: identifier)
            return ["ok": true]
        default:
            throw ControlError("no such control endpoint: \(method) \(pattern)", status: 404)
        }
    }

    // MARK: Settings and counters

    private func settings(_ emulator: Emulator) -> [String: Any] {
        ["serviceTime": emulator.serviceTime, "serializesSessions": emulator.serializesSessions,
         "maxSessions": emulator.maxSessions.map { $0 as Any } ?? NSNull(), "rejectLogins": emulator.rejectsLogins,
         "logsBodies": emulator.logsBodies, "maxLoggedRequests": emulator.maxLoggedRequests,
         "maxLoggedBytes": emulator.maxLoggedBytes, "maxAnswerBytes": emulator.maxAnswerBytes]
    }

    private func counters(_ emulator: Emulator) -> [String: Any] {
        ["loginCount": emulator.loginCount, "logoutCount": emulator.logoutCount, "maxInFlight": emulator.maxInFlight,
         "activeSessions": emulator.activeSessionCount, "openConnections": emulator.openConnectionCount,
         "refusedConnections": emulator.refusedConnectionCount, "evictedConnections": emulator.evictedConnectionCount]
    }

    /// Checks every key before changing anything, so a bad request changes nothing.
    private func applySettings(_ body: [String: Any], _ emulator: Emulator) throws {
        try Self.allow(body, ["serviceTime", "serializesSessions", "maxSessions", "rejectLogins", "logsBodies",
                              "maxLoggedRequests", "maxLoggedBytes", "maxAnswerBytes"])
        let serviceTime = try Self.number(body, "serviceTime")
        if let serviceTime, !(serviceTime >= 0 && serviceTime <= 3600) {
            throw ControlError("serviceTime must be between 0 and 3600 seconds")
        }
        let serializes = try Self.bool(body, "serializesSessions")
        let reject = try Self.bool(body, "rejectLogins")
        let logsBodies = try Self.bool(body, "logsBodies")
        var maxSessions: Int??
        if let value = body["maxSessions"] {
            if value is NSNull {
                maxSessions = .some(nil)
            } else if let n = try Self.number(body, "maxSessions"), n >= 0, n <= 1_000_000, n == n.rounded() {
                maxSessions = .some(Int(n))
            } else {
                throw ControlError("maxSessions must be a whole number from 0 to 1000000, or null for no cap")
            }
        }
        let maxLoggedRequests = try Self.wholeNumber(body, "maxLoggedRequests", upTo: Self.maxLoggedRequestsLimit)
        let maxLoggedBytes = try Self.wholeNumber(body, "maxLoggedBytes", upTo: Self.maxLoggedBytesLimit)
        let maxAnswerBytes = try Self.wholeNumber(body, "maxAnswerBytes", upTo: Self.maxLoggedBytesLimit)
        if maxAnswerBytes == 0 { throw ControlError("maxAnswerBytes must be a whole number from 1 to \(Self.maxLoggedBytesLimit)") }
        if let serviceTime { emulator.serviceTime = serviceTime }
        if let maxLoggedRequests { emulator.maxLoggedRequests = maxLoggedRequests }
        if let maxLoggedBytes { emulator.maxLoggedBytes = maxLoggedBytes }
        if let maxAnswerBytes { emulator.maxAnswerBytes = maxAnswerBytes }
        if let serializes { emulator.serializesSessions = serializes }
        if let reject { emulator.rejectLogins(reject) }
        if let maxSessions { emulator.maxSessions = maxSessions }
        if let logsBodies { emulator.logsBodies = logsBodies }
    }

    /// The largest `maxLoggedRequests` the control API (and `fm-emulator --max-logged-requests`) accepts.
    static let maxLoggedRequestsLimit = 10_000_000
    /// The largest `maxLoggedBytes` the control API (and `fm-emulator --max-logged-bytes`) accepts: 16 GiB.
    static let maxLoggedBytesLimit = 16 << 30

    /// The whole number at `key` from 0 to `limit`, `nil` when the key is absent; 400 for anything else.
    static func wholeNumber(_ body: [String: Any], _ key: String, upTo limit: Int) throws -> Int? {
        guard body[key] != nil else { return nil }
        guard let n = try? number(body, key), n >= 0, n <= Double(limit), n == n.rounded() else {
            throw ControlError("\(key) must be a whole number from 0 to \(limit)")
        }
        return Int(n)
    }

    // MARK: Faults

    /// The keys each fault type takes (beside `fault`, `count` and `matching`).
    static let faultKeys: [String: [String]] = [
        "fileMakerError": ["code", "status", "message"], "delay": ["seconds"], "closeMidBody": [], "html502": [],
        "truncatedJSON": [], "expireSession": [], "status": ["status", "body", "contentType", "retryAfter"],
        "resetConnection": [], "drip": ["bytesPerSecond"], "gzip": [], "html401": [], "killSession": [],
    ]

    /// The control API's name of a fault's case.
    static func name(of fault: EmulatorFault) -> String {
        switch fault {
        case .fileMakerError: return "fileMakerError"
        case .delay: return "delay"
        case .closeMidBody: return "closeMidBody"
        case .html502: return "html502"
        case .truncatedJSON: return "truncatedJSON"
        case .expireSession: return "expireSession"
        case .status: return "status"
        case .resetConnection: return "resetConnection"
        case .drip: return "drip"
        case .gzip: return "gzip"
        case .html401: return "html401"
        case .killSession: return "killSession"
        }
    }

    static func fault(from body: [String: Any]) throws -> (EmulatorFault, Int, String?) {
        guard let type = try string(body, "fault") else {
            throw ControlError("fault is required: one of \(faultKeys.keys.sorted().joined(separator: ", "))")
        }
        guard let keys = faultKeys[type] else {
            throw ControlError("unknown fault \(type): one of \(faultKeys.keys.sorted().joined(separator: ", "))")
        }
        try allow(body, ["fault", "count", "matching"] + keys)
        var count = 1
        if let n = try number(body, "count") {
            guard n >= 1, n <= 1_000_000, n == n.rounded() else { throw ControlError("count must be a whole number from 1 to 1000000") }
            count = Int(n)
        }
        let matching = try string(body, "matching")
        func status(default value: Int?) throws -> Int {
            guard let n = try number(body, "status") else {
                if let value { return value }
                throw ControlError("status is required")
            }
            guard n >= 100, n <= 599, n == n.rounded() else { throw ControlError("status must be a whole number from 100 to 599") }
            return Int(n)
        }
        let fault: EmulatorFault
        switch type {
        case "fileMakerError":
            guard let code = try string(body, "code"), !code.isEmpty else { throw ControlError("code is required, e.g. \"952\"") }
            fault = .fileMakerError(code: code, status: try status(default: FMError.defaultStatus(for: code)), message: try string(body, "message"))
        case "delay":
            guard let seconds = try number(body, "seconds"), seconds >= 0, seconds <= 3600 else {
                throw ControlError("seconds must be a number from 0 to 3600")
            }
            fault = .delay(seconds)
        case "status":
            fault = .status(try status(default: nil), body: try string(body, "body") ?? "",
                            contentType: try string(body, "contentType") ?? "application/json",
                            retryAfter: try string(body, "retryAfter"))
        case "drip":
            guard let rate = try number(body, "bytesPerSecond"), rate >= 1, rate <= 1e9, rate == rate.rounded() else {
                throw ControlError("bytesPerSecond must be a whole number, 1 or more")
            }
            fault = .drip(bytesPerSecond: Int(rate))
        case "closeMidBody": fault = .closeMidBody
        case "html502": fault = .html502
        case "truncatedJSON": fault = .truncatedJSON
        case "expireSession": fault = .expireSession
        case "resetConnection": fault = .resetConnection
        case "gzip": fault = .gzip
        case "html401": fault = .html401
        default: fault = .killSession
        }
        return (fault, count, matching)
    }

    // MARK: Request log

    /// The log as JSON objects with every token replaced by `<token>` and credentials by `<redacted>`;
    /// `session` numbers the distinct tokens in order of first appearance (1, 2, …), `null` for none.
    static func loggedRequests(_ log: [RecordedRequest]) -> [[String: Any]] {
        var aliases: [String: Int] = [:]
        return log.map { r in
            var session: Any = NSNull()
            if let token = r.token {
                let alias = aliases[token] ?? aliases.count + 1
                aliases[token] = alias
                session = alias
            }
            func clean(_ text: String) -> String {
                var text = text
                if let token = r.token, !token.isEmpty { text = text.replacingOccurrences(of: token, with: "<token>") }
                return redactHexTokens(text)
            }
            let body = redactSecrets(clean(r.bodyText))
            let headers: [[String]] = r.headers.map { name, value in
                let lower = name.lowercased()
                if lower == "authorization" {
                    let scheme = value.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
                    return [name, scheme.lowercased() == "bearer" ? "Bearer <token>" : "\(scheme) <redacted>"]
                }
                if lower.hasPrefix("x-fm-data-oauth") || lower == "cookie" { return [name, "<redacted>"] }
                return [name, clean(value)]
            }
            return ["method": r.method, "target": clean(r.target), "path": clean(r.decodedPath), "status": r.status,
                    "session": session, "headers": headers, "body": body]
        }
    }

    /// JSON string values of secret keys (`password`, `oAuthIdentifier`, as in a login's
    /// `fmDataSource`) replaced by `<redacted>`; the rest of the text is unchanged.
    static func redactSecrets(_ text: String) -> String {
        var bytes = Array(text.utf8)
        for key in [#""password""#, #""oAuthIdentifier""#].map({ Array($0.utf8) }) {
            var i = 0
            while i + key.count <= bytes.count {
                guard bytes[i..<(i + key.count)].elementsEqual(key) else { i += 1; continue }
                var j = i + key.count
                func skipSpace() { while j < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[j]) { j += 1 } }
                skipSpace()
                guard j < bytes.count, bytes[j] == UInt8(ascii: ":") else { i += key.count; continue }
                j += 1
                skipSpace()
                guard j < bytes.count, bytes[j] == UInt8(ascii: "\"") else { i += key.count; continue }
                var end = j + 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                let replacement = Array(#""<redacted>""#.utf8)
                bytes.replaceSubrange(j..<min(end + 1, bytes.count), with: replacement)
                i = j + replacement.count
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Replaces every run of exactly 52 hexadecimal characters (a Data API token's shape) by `<token>`.
    static func redactHexTokens(_ text: String) -> String {
        var out = ""
        var run = ""
        func flush() {
            out += run.count == 52 ? "<token>" : run
            run = ""
        }
        for c in text {
            if c.isHexDigit, c.isASCII { run.append(c) } else {
                flush()
                out.append(c)
            }
        }
        flush()
        return out
    }

    // MARK: JSON in and out

    static func json(_ value: Any, status: Int = 200) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]))
            ?? Data(#"{"error":"the answer could not be encoded"}"#.utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: data)
    }

    /// Record values as JSON-safe values (text for anything else).
    static func jsonSafe(_ record: [String: Any]) -> [String: Any] {
        record.mapValues { value -> Any in
            switch value {
            case let s as String: return s
            case let i as Int: return i
            case let d as Double: return d.isFinite ? d : "\(d)"
            case let b as Bool: return b
            default: return "\(value)"
            }
        }
    }

    /// The body as a JSON object (`{}` when empty).
    static func object(_ body: Data) throws -> [String: Any] {
        if body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return [:] }
        guard let value = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            throw ControlError("the body is not valid JSON")
        }
        guard let object = value as? [String: Any] else { throw ControlError("the body must be a JSON object") }
        return object
    }

    /// The names of ``EmulatorClarisIDBehavior`` on the control API (`null` or `"none"`: no behaviour).
    static let clarisIDBehaviorNames = ["software-token-mfa", "sms-mfa", "new-password-required", "password-reset-required",
                                        "too-many-requests", "user-not-found", "security-refusal"]

    static func clarisIDBehavior(name: String?, code: String?) throws -> EmulatorClarisIDBehavior? {
        let needsCode = name == "software-token-mfa" || name == "sms-mfa"
        if needsCode {
            guard let code, !code.isEmpty else { throw ControlError("behavior \(name ?? "") needs a non-empty code") }
            guard code.utf8.count <= 64 else { throw ControlError("code must be at most 64 bytes") }
        } else if code != nil {
            throw ControlError("code applies to software-token-mfa and sms-mfa only")
        }
        switch name {
        case nil, "none": return nil
        case "software-token-mfa": return .softwareTokenMFA(code: code ?? "")
        case "sms-mfa": return .smsMFA(code: code ?? "")
        case "new-password-required": return .newPasswordRequired
        case "password-reset-required": return .passwordResetRequired
        case "too-many-requests": return .tooManyRequests
        case "user-not-found": return .userNotFound
        case "security-refusal": return .securityRefusal
        case let other?:
            throw ControlError("unknown behavior \(other) (known: none, \(clarisIDBehaviorNames.joined(separator: ", ")))")
        }
    }

    static func expectNoKeys(_ body: [String: Any]) throws {
        try allow(body, [])
    }

    static func allow(_ body: [String: Any], _ keys: [String]) throws {
        let unknown = body.keys.filter { !keys.contains($0) }.sorted()
        guard unknown.isEmpty else {
            let known = keys.isEmpty ? "none" : keys.joined(separator: ", ")
            throw ControlError("unknown key(s): \(unknown.joined(separator: ", ")) (known: \(known))")
        }
    }

    /// Whether `value` came from a JSON `true`/`false`: JSONSerialization gives a boolean NSNumber
    /// (type encoding `c`) for those on Linux and Apple platforms alike, and `1` also casts to `Bool`.
    static func isJSONBool(_ value: Any) -> Bool {
        guard let n = value as? NSNumber else { return false }
        return String(cString: n.objCType) == "c"
    }

    static func number(_ body: [String: Any], _ key: String) throws -> Double? {
        guard let value = body[key], !(value is NSNull) else { return nil }
        guard !isJSONBool(value), let n = value as? NSNumber, n.doubleValue.isFinite else {
            throw ControlError("\(key) must be a number")
        }
        return n.doubleValue
    }

    static func string(_ body: [String: Any], _ key: String) throws -> String? {
        guard let value = body[key], !(value is NSNull) else { return nil }
        guard let s = value as? String else { throw ControlError("\(key) must be a string") }
        return s
    }

    static func bool(_ body: [String: Any], _ key: String) throws -> Bool? {
        guard let value = body[key], !(value is NSNull) else { return nil }
        guard isJSONBool(value), let n = value as? NSNumber else { throw ControlError("\(key) must be true or false") }
        return n.boolValue
    }
}

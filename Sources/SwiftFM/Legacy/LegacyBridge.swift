import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// How every legacy call reaches the core: the core's own `Endpoint` for the Data API call
// (`Endpoints` / `SessionEndpoints`), with the caller's token, sent through `DataAPI.perform`
// (request building, percent-encoding, transport, envelope and error mapping, the callback queue),
// read as raw JSON and projected onto the tuple shapes of each era. The legacy layer has no HTTP
// code and no endpoint descriptions of its own.

/// A successful answer as the originals read it: the raw `response` object and the first message.
struct LegacyJSON: @unchecked Sendable {
    var response: [String: Any]
    var code: String
    var message: String
}

/// What every legacy completion is projected from: the `response` object (empty on failure),
/// the code (`"0"`, the FileMaker code, or a client-side code) and the message.
struct LegacyOutcome {
    var response: [String: Any]
    var code: String
    var message: String
    /// The whole error of a failure (what ``FMError/current`` shows inside the completion).
    var error: FMError?
    /// The server no longer knows the token the call carried (952, 112, an HTML 401).
    var sessionLost: Bool { error.map(Classifier.isSessionLost) ?? false }

    var isSuccess: Bool { code == "0" }
    /// `response.data`, the raw records.
    var records: [[String: Any]]? { isSuccess ? response["data"] as? [[String: Any]] : nil }

    init(_ result: Result<LegacyJSON, FMError>) {
        switch result {
        case .success(let json):
            self.response = json.response
            self.code = json.code
            self.message = json.message
            self.error = nil
        case .failure(let error):
            self.response = [:]
            self.code = error.code
            self.message = error.message
            self.error = error
        }
    }
}

typealias LegacyAuth = Endpoint<LegacyJSON>.Auth

/// The Data API calls the legacy surfaces make.
enum LegacyCall {
    case login(encodedAuth: String)
    case logout(token: String)
    case validate
    case create(layout: String, payload: [String: Any])
    case duplicate(layout: String, recordId: Int)
    case getRecords(layout: String, offset: Int?, limit: Int?, extra: [URLQueryItem])
    case getRecord(layout: String, recordId: Int)
    case find(layout: String, payload: [String: Any])
    case edit(layout: String, recordId: Int, payload: [String: Any], modId: Int?)
    case delete(layout: String, recordId: Int)
    case globals(payload: [String: Any])
    case productInfo
    case databases
    case layouts
    case layoutMetadata(layout: String)
    case scripts
    case runScript(layout: String, script: String, parameter: String?)
    /// `mimeType` nil: inferred by the core (content signature, then extension).
    case upload(layout: String, recordId: Int, field: String, fileName: String, mimeType: String?, data: Data)

    /// Host-scoped calls work with a host and no database.
    var needsDatabase: Bool {
        switch self {
        case .validate, .productInfo, .databases: return false
        default: return true
        }
    }

    /// The endpoint: the core's description of the call (`Endpoints`, `SessionEndpoints`: path, query,
    /// body, argument checks), authenticated with the caller's own token (never the managed session),
    /// and read as raw JSON, as the originals read it.
    func endpoint(token: String) -> Endpoint<LegacyJSON> {
        let bearer = LegacyAuth.token(token)
        switch self {
        case .login(let auth):
            // The core reads the token from `response.token`, else from `X-FM-Data-Access-Token`.
            let login = SessionEndpoints.login(encoded: auth, dataSources: [])
            var endpoint = LegacyCall.raw(login)
            endpoint.decode = { answer in
                let token = try login.decode(.init(answer))
                return LegacyJSON(response: ["token": token], code: "0", message: "OK")
            }
            return endpoint
        case .logout(let token):
            return LegacyCall.raw(SessionEndpoints.logout(token: token))
        case .validate:
            return LegacyCall.raw(SessionEndpoints.validate(token: token))
        case .create(let layout, let payload):
            return LegacyCall.raw(Endpoints.createRecord(layout: layout, payload: payload), auth: bearer)
        case .duplicate(let layout, let id):
            return LegacyCall.raw(Endpoints.duplicateRecord(layout: layout, recordId: id), auth: bearer)
        case .getRecords(let layout, let offset, let limit, let extra):
            var endpoint = LegacyCall.raw(Endpoints.getRecords(layout: layout, offset: offset, limit: limit), auth: bearer)
            endpoint.query += extra
            return endpoint
        case .getRecord(let layout, let id):
            return LegacyCall.raw(Endpoints.getRecord(layout: layout, recordId: id), auth: bearer)
        case .find(let layout, let payload):
            return LegacyCall.raw(Endpoints.find(layout: layout, payload: payload), auth: bearer)
        case .edit(let layout, let id, let payload, let modId):
            return LegacyCall.raw(Endpoints.editRecord(layout: layout, recordId: id, payload: payload, modId: modId), auth: bearer)
        case .delete(let layout, let id):
            return LegacyCall.raw(Endpoints.deleteRecord(layout: layout, recordId: id), auth: bearer)
        case .globals(let payload):
            // Old callers pass the whole body, `["globalFields": [...]]`; the factory takes the fields.
            let fields = payload["globalFields"] as? [String: Any] ?? [:]
            return LegacyCall.raw(Endpoints.setGlobals(fields), auth: bearer)
        case .productInfo:
            return LegacyCall.raw(Endpoints.productInfo())
        case .databases:
            // SwiftFM 2.x sent no credentials; send `fm-auth` when there is one (servers that filter databases need it).
            let auth = LegacyEnvironment.defaults.string(forKey: LegacyKey.auth).flatMap { $0.isEmpty ? nil : $0 }
            return LegacyCall.raw(Endpoints.databases(), auth: auth.map { LegacyAuth.basic(encoded: $0) } ?? LegacyAuth.none)
        case .layouts:
            return LegacyCall.raw(Endpoints.layouts(), auth: bearer)
        case .layoutMetadata(let layout):
            return LegacyCall.raw(Endpoints.layoutMetadata(layout: layout), auth: bearer)
        case .scripts:
            return LegacyCall.raw(Endpoints.scripts(), auth: bearer)
        case .runScript(let layout, let script, let parameter):
            return LegacyCall.raw(Endpoints.runScript(layout: layout, script: script, parameter: parameter), auth: bearer)
        case .upload(let layout, let id, let field, let fileName, let mimeType, let data):
            return LegacyCall.raw(
                Endpoints.uploadContainer(layout: layout, recordId: id, field: field, data: data, fileName: fileName, mimeType: mimeType),
                auth: bearer)
        }
    }

    /// The same request as `endpoint`, decoded as raw JSON (and with `auth` instead, when given).
    static func raw<V>(_ endpoint: Endpoint<V>, auth: LegacyAuth? = nil) -> Endpoint<LegacyJSON> {
        let method = Endpoint<LegacyJSON>.Method(rawValue: endpoint.method.rawValue) ?? .get
        let scope: Endpoint<LegacyJSON>.Scope
        switch endpoint.scope {
        case .host: scope = .host
        case .database: scope = .database
        case .absolute(let url): scope = .absolute(url)
        case .odata(let path, let kind): scope = .odata(path, kind: kind)
        }
        let body: Endpoint<LegacyJSON>.Body
        switch endpoint.body {
        case .none: body = .none
        case .json(let data): body = .json(data)
        case .multipart(let data, let boundary): body = .multipart(data, boundary: boundary)
        case .multipartFile(let url, let name, let type, let boundary):
            body = .multipartFile(url, fileName: name, mimeType: type, boundary: boundary)
        case .raw(let data, let contentType): body = .raw(data, contentType: contentType)
        case .file(let url, let contentType): body = .file(url, contentType: contentType)
        }
        let resolvedAuth: LegacyAuth
        if let auth {
            resolvedAuth = auth
        } else {
            switch endpoint.auth {
            case .none: resolvedAuth = .none
            case .basic(let encoded): resolvedAuth = .basic(encoded: encoded)
            case .session: resolvedAuth = .session
            case .token(let token): resolvedAuth = .token(token)
            }
        }
        var result = Endpoint<LegacyJSON>(
            method, scope, endpoint.segments, query: endpoint.query, body: body, auth: resolvedAuth,
            invalid: endpoint.invalid, decode: LegacyCall.decodeEnvelope)
        result.headers = endpoint.headers
        result.responseLayout = endpoint.responseLayout
        return result
    }

    /// Reads a 200 answer as the originals did, as raw `JSONSerialization` objects, through the core's
    /// envelope parser (`-1006` not JSON, `-1007` truncated or ill-shaped, FileMaker's code when not `"0"`).
    @Sendable static func decodeEnvelope(_ answer: Endpoint<LegacyJSON>.Response) throws -> LegacyJSON {
        let response = try Envelope.response(from: answer.body, status: answer.status)
        return LegacyJSON(response: response, code: "0", message: "OK")
    }
}

// MARK: - Sending

extension DataAPI {
    /// Sends one legacy call and delivers its outcome exactly once, on a library queue (never main).
    ///
    /// The configuration comes from ``legacyDefaults`` in the order `era` prefers; a missing
    /// configuration completes with `-1001` (the originals silently never called back). After a
    /// successful call made with the token in `fm-token`, `fm-token-expiry` slides to now + 900 s.
    /// Returns the call's cancel handle (SwiftFM 2.x cancels it when its task is cancelled).
    @discardableResult
    static func legacySend(
        _ call: LegacyCall, era: LegacyEra, token: String = "", handle: FMRequest? = nil,
        completion: @escaping (LegacyOutcome) -> Void
    ) -> FMRequest {
        // The configuration in force now stays in force for the completion (and the calls it makes).
        let scope = UncheckedBox(LegacyEnvironment.defaults)
        let endpoint = call.endpoint(token: token)
        var log = LegacyCallLog(kind: endpoint.kind, layout: endpoint.layout)
        let deliver: (LegacyOutcome, LegacyCallLog) -> Void = { outcome, log in
            // FMError.current is bound here too, for the path that never reached the core (-1001 below).
            FMError.withCurrent(outcome.error) {
                LegacyScope.$defaults.withValue(scope) { LegacyScope.$call.withValue(log) {
                    if outcome.isSuccess { LegacyEnvironment.slideExpiry(ifCurrent: token) }
                    // A lost session (a server restart): expire the stored token, so `isActiveToken()` is false
                    // and the 2019 pattern logs in again on its next call instead of failing for 15 minutes.
                    if outcome.sessionLost { LegacyEnvironment.expireToken(ifCurrent: token) }
                    completion(outcome)
                } }
            }
        }
        switch LegacyEnvironment.resolve(era, needsDatabase: call.needsDatabase) {
        case .failure(let error):
            let box = UncheckedBox(deliver)
            LegacyState.shared.queue.async { [log] in box.value(LegacyOutcome(.failure(error)), log) }
            return handle ?? FMRequest()
        case .success(let target):
            let service = LegacyState.shared.service(for: target)
            var options = CallOptions()
            // Drawn and read here, where the caller is, for the failure line too (as the call's own lines carry them).
            log.requestID = service.context.newRequestID()
            log.context = service.context.callerLogContext()
            log.secrets = service.logger.secrets
            options.requestID = log.requestID
            options.logContext = log.context
            options.handle = handle
            options.endsAt = LegacyScope.timeout.map(Deadline.fromNow)   // a test's seam; nil otherwise
            // A refused login says what to check, as the managed session's does (the setting named is the legacy key).
            let configuration = service.configuration
            let isLogin = if case .login = call { true } else { false }
            return service.perform(endpoint, options: options) { [log] result in
                deliver(LegacyOutcome(isLogin ? result.mapError(configuration.hintingLoginRefusal) : result), log)
            }
        }
    }

    // Projections shared by the era files. Each delivers the richest shape; the overloads narrow it.

    /// `(code, message)`.
    static func legacyStatus(
        _ call: LegacyCall, era: LegacyEra, token: String, completion: @escaping (String, String) -> Void
    ) {
        legacySend(call, era: era, token: token) { completion($0.code, $0.message) }
    }

    /// `(records?, code, message)`: `response.data`, nil on any failure (find's "no records" is `nil` and `"401"`).
    static func legacyRecords(
        _ call: LegacyCall, era: LegacyEra, token: String,
        completion: @escaping ([[String: Any]]?, String, String) -> Void
    ) {
        legacySend(call, era: era, token: token) { outcome in
            guard outcome.isSuccess else { return completion(nil, outcome.code, outcome.message) }
            guard let records = outcome.records else {
                let error = FMError.malformed("response.data is missing", status: 200)
                return FMError.withCurrent(error) { completion(nil, error.code, error.message) }
            }
            completion(records, outcome.code, outcome.message)
        }
    }

    /// `(record?, code, message)`: the first record; an empty answer is `nil` and `-1008` (the originals crashed).
    static func legacyRecord(
        _ call: LegacyCall, era: LegacyEra, token: String,
        completion: @escaping ([String: Any]?, String, String) -> Void
    ) {
        legacyRecords(call, era: era, token: token) { records, code, message in
            let (record, code, message) = firstRecord(records, code, message)
            let error = code == FMError.emptyResult.code && records != nil ? FMError.emptyResult : FMError.current
            FMError.withCurrent(error) { completion(record, code, message) }
        }
    }

    /// The first record of a one-record answer; an empty `data` array is `-1008` (the originals crashed on `records[0]`).
    static func firstRecord(
        _ records: [[String: Any]]?, _ code: String, _ message: String
    ) -> ([String: Any]?, String, String) {
        guard let records else { return (nil, code, message) }
        guard let first = records.first else { return (nil, FMError.emptyResult.code, FMError.emptyResult.message) }
        return (first, code, message)
    }

    /// `(recordId?, code, message)` of a create or duplicate, read from `response.recordId`.
    static func legacyRecordId(
        _ call: LegacyCall, era: LegacyEra, token: String,
        completion: @escaping (String?, String, String) -> Void
    ) {
        legacySend(call, era: era, token: token) { outcome in
            guard outcome.isSuccess else { return completion(nil, outcome.code, outcome.message) }
            guard let recordId = LegacyEnvironment.string(outcome.response["recordId"]) else {
                let error = FMError.malformed("response.recordId is missing", status: 200)
                return FMError.withCurrent(error) { completion(nil, error.code, error.message) }
            }
            completion(recordId, outcome.code, outcome.message)
        }
    }

    /// `(token?, expiry?, code, message)` of a login with base64 `user:pass`; writes `fm-token` and
    /// `fm-token-expiry` on success, as `refreshToken` always did.
    @discardableResult
    static func legacyLogin(
        auth: String, era: LegacyEra, handle: FMRequest? = nil, completion: @escaping (String?, Date?, String, String) -> Void
    ) -> FMRequest {
        legacySend(.login(encodedAuth: auth), era: era, handle: handle) { outcome in
            guard outcome.isSuccess else { return completion(nil, nil, outcome.code, outcome.message) }
            guard let token = outcome.response["token"] as? String, !token.isEmpty else {
                return FMError.withCurrent(.noToken) { completion(nil, nil, FMError.noToken.code, FMError.noToken.message) }
            }
            let expiry = LegacyEnvironment.storeToken(token)
            completion(token, expiry, outcome.code, outcome.message)
        }
    }

    /// `(code, message)` of a logout; clears `fm-token` (and writes `0` to `fm-token-expiry`) on success.
    static func legacyLogout(token: String, era: LegacyEra, completion: @escaping (String, String) -> Void) {
        legacySend(.logout(token: token), era: era) { outcome in
            if outcome.isSuccess { LegacyEnvironment.clearToken() }
            completion(outcome.code, outcome.message)
        }
    }
}

extension LegacyEnvironment {
    /// A record id or modId as the originals delivered it: a String (numbers are accepted too).
    static func string(_ value: Any?) -> String? {
        if let text = value as? String { return text }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }
}

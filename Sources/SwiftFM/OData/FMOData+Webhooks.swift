import Foundation

/// A webhook FileMaker Server calls when records of a table change (FileMaker Server 22.0.4 and later):
/// `Webhook.Add`, `Webhook.GetAll`, `Webhook.Get`, `Webhook.Delete`, `Webhook.Invoke`.
public struct FMODataWebhook: Sendable, Equatable {
    /// One change waiting to be delivered, as `Webhook.Get` lists it.
    public struct PendingOperation: Sendable, Equatable {
        /// `ADD`, `UPDATE`, `DELETE` or `SCHEMA`.
        public var operation: String
        /// The records' `ROWID`s.
        public var rowIDs: [Int]
        /// The delivery state (`NOT_SENT`, …).
        public var status: String
        /// The last delivery's error code (0 when none).
        public var lastErrorCode: Int
        /// The last delivery's error message.
        public var lastErrorMessage: String
        /// How many deliveries were tried.
        public var sendAttempts: Int

        /// Creates a pending operation.
        public init(operation: String, rowIDs: [Int], status: String, lastErrorCode: Int = 0, lastErrorMessage: String = "", sendAttempts: Int = 0) {
            self.operation = operation
            self.rowIDs = rowIDs
            self.status = status
            self.lastErrorCode = lastErrorCode
            self.lastErrorMessage = lastErrorMessage
            self.sendAttempts = sendAttempts
        }
    }

    /// The server's id (`nil` for a webhook not added yet).
    public var id: Int?
    /// The URL FileMaker posts to.
    public var url: String
    /// The table (entity set) whose changes are sent.
    public var tableName: String
    /// Headers always sent to the endpoint (`endpointHeaders`).
    public var headers: [String: String]
    /// Headers that shape the payload, such as `Prefer: fmodata.entity-ids` (`queryHeaders`).
    public var queryHeaders: [String: String]
    /// Whether schema changes are sent too.
    public var notifySchemaChanges: Bool
    /// The fields sent (empty: FileMaker's default).
    public var select: [String]
    /// Which changes are sent (`nil`: all). A filter read back from the server is a ``FMODataFilter/raw(_:)``.
    public var filter: FMODataFilter?
    /// Failed deliveries before FileMaker gives up (`0` retries until delivered; `nil` for the server's default).
    public var maxFailedAttempts: Int?
    /// Changes not delivered yet (read from the server).
    public var pendingOperations: [PendingOperation]

    /// Describes a webhook to add.
    public init(url: String, tableName: String, headers: [String: String] = [:], queryHeaders: [String: String] = [:],
                notifySchemaChanges: Bool = false, select: [String] = [], filter: FMODataFilter? = nil, maxFailedAttempts: Int? = nil) {
        self.id = nil
        self.url = url
        self.tableName = tableName
        self.headers = headers
        self.queryHeaders = queryHeaders
        self.notifySchemaChanges = notifySchemaChanges
        self.select = select
        self.filter = filter
        self.maxFailedAttempts = maxFailedAttempts
        self.pendingOperations = []
    }

    /// The `Webhook.Add` body, or `-1002`.
    func payload() -> Result<[String: Any], FMError> {
        guard !url.isEmpty, !tableName.isEmpty else { return .failure(.invalidArgument("A webhook needs a URL and a table")) }
        var body: [String: Any] = ["webhook": url, "tableName": tableName, "notifySchemaChanges": notifySchemaChanges]
        if !headers.isEmpty { body["endpointHeaders"] = headers }
        if !queryHeaders.isEmpty { body["queryHeaders"] = queryHeaders }
        if !select.isEmpty {
            var names: [String] = []
            do throws(FMError) {
                for field in select { names.append(try ODataText.name(field)) }
            } catch {
                return .failure(error)
            }
            body["select"] = names.joined(separator: ",")
        }
        if let filter {
            switch filter.expression() {
            case .success(let text): body["filter"] = text
            case .failure(let error): return .failure(error)
            }
        }
        if let maxFailedAttempts { body["maxFailedAttempts"] = maxFailedAttempts }
        return .success(body)
    }

    /// A webhook as `Webhook.Get` / `Webhook.GetAll` describe it.
    init(reading object: [String: Any], status: Int) throws(FMError) {
        guard let id = ODataWebhooks.integer(object["webhookID"]) else { throw .malformed("a webhook without webhookID", status: status) }
        self.init(url: object["webhook"] as? String ?? object["url"] as? String ?? "", tableName: object["tableName"] as? String ?? "")
        self.id = id
        headers = ODataWebhooks.strings(object["headers"] ?? object["endpointHeaders"])
        queryHeaders = ODataWebhooks.strings(object["queryHeaders"])
        notifySchemaChanges = (object["notifySchemaChanges"] as? NSNumber)?.boolValue ?? false
        select = (object["select"] as? String).map(ODataWebhooks.names) ?? []
        filter = (object["filter"] as? String).flatMap { $0.isEmpty ? nil : FMODataFilter.raw($0) }
        maxFailedAttempts = ODataWebhooks.integer(object["maxFailedAttempts"])
        pendingOperations = (object["pendingOperations"] as? [Any] ?? []).compactMap { item in
            guard let item = item as? [String: Any] else { return nil }
            return PendingOperation(operation: item["operation"] as? String ?? "",
                                    rowIDs: (item["rowIDs"] as? [Any] ?? []).compactMap { ODataWebhooks.integer($0) },
                                    status: item["status"] as? String ?? "",
                                    lastErrorCode: ODataWebhooks.integer(item["lastErrorCode"]) ?? 0,
                                    lastErrorMessage: item["lastErrorMessage"] as? String ?? "",
                                    sendAttempts: ODataWebhooks.integer(item["sendAttempts"]) ?? 0)
        }
    }
}

/// Reading webhook answers.
enum ODataWebhooks {
    static func integer(_ value: Any?) -> Int? {
        if let number = value as? NSNumber, String(cString: number.objCType) != "c" { return RawJSON.exactInt(number) }
        if let text = value as? String { return Int(text.trimmingCharacters(in: .whitespaces)) }
        return nil
    }

    /// The field names of a `select` list as FileMaker echoes it (`"first_name",age`): split at the commas outside
    /// double quotes, each name trimmed and unquoted (`""` inside quotes is one `"`), so that the webhook can be added
    /// again as it was read. A list with an unterminated quote is split at every comma, its names kept as they came.
    static func names(_ text: String) -> [String] {
        var names: [String] = []
        var name = ""
        var quoted = false
        var wasQuoted = false
        var characters = text.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            switch character {
            case "\"" where quoted && pending == "\"":
                name.append("\"")
                pending = characters.next()
            case "\"" where quoted:
                quoted = false
            case "\"" where name.trimmingCharacters(in: .whitespaces).isEmpty:
                quoted = true
                wasQuoted = true
                name = ""
            case "," where !quoted:
                names.append(wasQuoted ? name : name.trimmingCharacters(in: .whitespaces))
                name = ""
                wasQuoted = false
            default:
                if !(wasQuoted && !quoted) { name.append(character) }
            }
        }
        if quoted {
            return text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        names.append(wasQuoted ? name : name.trimmingCharacters(in: .whitespaces))
        return names.filter { !$0.isEmpty }
    }

    static func strings(_ value: Any?) -> [String: String] {
        guard let object = value as? [String: Any] else { return [:] }
        var result: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String { result[key] = text } else if let number = value as? NSNumber { result[key] = number.stringValue }
        }
        return result
    }

    /// `{"webhookResult":{"webhookID":5}}` (or a bare `webhookID`).
    static func resultID(_ response: Endpoint<Int>.Response) throws(FMError) -> Int {
        let object = try ODataEnvelope.object(response.body, status: response.status)
        let result = object["webhookResult"] as? [String: Any] ?? object
        guard let id = integer(result["webhookID"]) else { throw .malformed("no webhookID", status: response.status) }
        return id
    }
}

extension FMOData {
    func jsonCall<Value>(_ method: Endpoint<Value>.Method, _ path: String, kind: String, _ payload: Result<[String: Any], FMError>?,
                         decode: @escaping @Sendable (Endpoint<Value>.Response) throws -> Value) -> ODataCall<Value> {
        switch payload.map({ $0.flatMap { JSONPayload.serialize($0) } }) {
        case nil: return ODataCall(method: method, path: path, kind: kind, decode: decode)
        case .success(let data)?: return ODataCall(method: method, path: path, kind: kind, body: .json(data), decode: decode)
        case .failure(let error)?: return ODataCall(method: method, path: path, kind: kind, invalid: error, decode: decode)
        }
    }

    func addWebhookCall(_ webhook: FMODataWebhook) -> ODataCall<Int> {
        jsonCall(.post, "Webhook.Add", kind: "Webhook.Add", webhook.payload()) { try ODataWebhooks.resultID($0) }
    }

    func webhooksCall() -> ODataCall<[FMODataWebhook]> {
        ODataCall(method: .get, path: "Webhook.GetAll", kind: "Webhook.GetAll", accepting: { $0 == 200 }) { response in
            let object = try ODataEnvelope.object(response.body, status: response.status)
            guard let items = object["webhooks"] as? [Any] else { throw FMError.malformed("no \"webhooks\" array", status: response.status) }
            var hooks: [FMODataWebhook] = []
            for item in items {
                guard let item = item as? [String: Any] else { throw FMError.malformed("a webhook is not an object", status: response.status) }
                hooks.append(try FMODataWebhook(reading: item, status: response.status))
            }
            return hooks
        }
    }

    func webhookCall(id: Int) -> ODataCall<FMODataWebhook> {
        ODataCall(method: .get, path: "Webhook.Get(\(id))", kind: "Webhook.Get", accepting: { $0 == 200 }) { response in
            try FMODataWebhook(reading: try ODataEnvelope.object(response.body, status: response.status), status: response.status)
        }
    }

    func deleteWebhookCall(id: Int) -> ODataCall<Int> {
        ODataCall(method: .post, path: "Webhook.Delete(\(id))", kind: "Webhook.Delete") { response in
            response.body.isEmpty ? id : try ODataWebhooks.resultID(response)
        }
    }

    func invokeWebhookCall(id: Int, rowIDs: [Int]) -> ODataCall<[String: Any]> {
        // A body is required: `[]` asks for every record.
        jsonCall(.post, "Webhook.Invoke(\(id))", kind: "Webhook.Invoke", .success(["rowIDs": rowIDs])) { response in
            response.body.isEmpty ? [:] : try ODataEnvelope.object(response.body, status: response.status)
        }
    }

    /// Registers a webhook (`POST /{db}/Webhook.Add`). Not retried.
    /// - Parameters:
    ///   - webhook: the URL, table, headers, fields, filter and retry limit.
    ///   - completion: the new webhook's id or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func addWebhook(_ webhook: FMODataWebhook, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        send(addWebhookCall(webhook)) { completion($0.value, $0.code) }
    }

    /// Registers a webhook; returns its id. Throws ``FMError``.
    @discardableResult
    public func addWebhook(_ webhook: FMODataWebhook) async throws -> Int {
        try await sendAsync(addWebhookCall(webhook))
    }

    /// Lists the database's webhooks (`GET /{db}/Webhook.GetAll`).
    /// - Parameter completion: the webhooks or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func webhooks(completion: sending @escaping ([FMODataWebhook]?, String) -> Void) -> FMRequest {
        send(webhooksCall()) { completion($0.value, $0.code) }
    }

    /// Lists the database's webhooks. Throws ``FMError``.
    public func webhooks() async throws -> [FMODataWebhook] {
        try await sendAsync(webhooksCall())
    }

    /// Reads one webhook with its pending operations (`GET /{db}/Webhook.Get({id})`; `-1061` when unknown).
    /// - Parameters:
    ///   - id: the webhook's id.
    ///   - completion: the webhook or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func webhook(id: Int, completion: sending @escaping (FMODataWebhook?, String) -> Void) -> FMRequest {
        send(webhookCall(id: id)) { completion($0.value, $0.code) }
    }

    /// Reads one webhook. Throws ``FMError``.
    public func webhook(id: Int) async throws -> FMODataWebhook {
        try await sendAsync(webhookCall(id: id))
    }

    /// Removes a webhook (`POST /{db}/Webhook.Delete({id})`). Not retried.
    /// - Parameters:
    ///   - id: the webhook's id.
    ///   - completion: the removed webhook's id or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteWebhook(id: Int, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        send(deleteWebhookCall(id: id)) { completion($0.value, $0.code) }
    }

    /// Removes a webhook. Throws ``FMError``.
    @discardableResult
    public func deleteWebhook(id: Int) async throws -> Int {
        try await sendAsync(deleteWebhookCall(id: id))
    }

    /// Sends a webhook's payload now for the records `rowIDs` (their `ROWID`s; empty for every record),
    /// `POST /{db}/Webhook.Invoke({id})`. Not retried.
    /// - Parameters:
    ///   - id: the webhook's id.
    ///   - rowIDs: the records' `ROWID`s; empty for all.
    ///   - completion: the server's answer (the payload) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func invokeWebhook(id: Int, rowIDs: [Int] = [], completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(invokeWebhookCall(id: id, rowIDs: rowIDs)) { completion($0.value, $0.code) }
    }

    /// Sends a webhook's payload now for the records `rowIDs`. Throws ``FMError``.
    @discardableResult
    public func invokeWebhook(id: Int, rowIDs: [Int] = []) async throws -> [String: Any] {
        try await sendAsync(invokeWebhookCall(id: id, rowIDs: rowIDs))
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A webhook registered with `Webhook.Add` (ODATA.md §9).
struct ODataWebhook {
    var id: Int
    /// The entity set (table occurrence) named in `tableName`.
    var tableName: String
    var url: String
    /// `endpointHeaders` (legacy `headers`): sent with every delivery.
    var headers: [(String, String)]
    var notifySchemaChanges: Bool
    var select: String
    var filter: String
    /// 0: retry until delivered or deleted.
    var maxFailedAttempts: Int
    var pending: [ODataWebhookOperation] = []
}

/// A change waiting to be delivered (`pendingOperations`).
struct ODataWebhookOperation {
    var serial: Int
    var operation: String
    var rowIDs: [Int]
    var body: Data
    var sendAttempts = 0
    var lastErrorCode = 0
    var lastErrorMessage = ""
}

/// A record change noted by the store, turned into deliveries once the request is answered.
struct ODataChangeNote {
    var operation: String
    /// The base table.
    var table: String
    var record: StoredRecord
}

/// One POST to make, outside the state lock.
struct ODataDelivery: Sendable {
    var hook: Int
    var serial: Int
    var url: String
    var headers: [(String, String)]
    var body: Data
    var operation: String
    /// Set when FileMaker could not build the delivery's query (a bare `id` in the webhook's `select` or `filter`):
    /// every attempt fails so, without a request (``EmulatorState/webhookQueryError(_:)``).
    var failure: (code: Int, message: String)?
}

extension EmulatorState {
    /// Notes a change for the webhooks (nothing to do, and nothing kept, while none is registered).
    mutating func noteChange(_ operation: String, table: String, record: StoredRecord) {
        guard !odataWebhooks.isEmpty else { return }
        odataChangeNotes.append(ODataChangeNote(operation: operation, table: table, record: record))
    }

    /// The set a webhook watches.
    func webhookSet(_ hook: ODataWebhook) -> ODataSet? { odataSet(hook.tableName) }

    /// The payload FileMaker posts (the Invoke sample, ODATA.md §9): relative `@odata.context` naming the
    /// selected fields, rows with relative `@odata.id`/`@odata.editLink` and the selected fields (all but
    /// containers without `select`).
    func webhookPayload(_ hook: ODataWebhook, set: ODataSet, records: [StoredRecord]) -> Data {
        let select = hook.select.isEmpty ? nil : hook.select
        var ctx = ODataContext(request: HTTPRequest(method: "POST", target: "/"), now: Date())
        ctx.prefixed = true
        ctx.dbSegment = schema.database
        let columns = (try? odataColumns(set, select: select, ctx: ctx)) ?? []
        let relative = "fmi/odata/v4/" + ODataContext.encode(schema.database)
        var context = relative + "/$metadata#" + ODataContext.encode(set.name)
        if let select {
            context += "(" + EmulatorState.splitTopLevel(select, on: ",").map { "\"" + EmulatorState.unquoteName($0) + "\"" }.joined(separator: ",") + ")"
        }
        let rows = records.map { record -> JSON in
            let url = relative + "/" + ODataContext.encode(set.name) + "(" + ODataContext.encode(odataKeyText(set, record: record)) + ")"
            var pairs: [(String, JSON)] = [("@odata.editLink", .string(url)), ("@odata.id", .string(url))]
            for column in columns {
                switch column {
                case let .field(f): pairs.append((f.name, odataJSONValue(f.global ? .empty : record.value(f), ieee754: false)))
                case .rowID: pairs.append(("ROWID", .number(Double(record.id))))
                case .rowModID: pairs.append(("ROWMODID", .number(Double(record.modId))))
                }
            }
            return .object(pairs)
        }
        return JSON.object([("@odata.context", .string(context)), ("value", .array(rows))]).data
    }

    /// Turns the changes noted while answering a request into pending operations (one per webhook and
    /// kind of change, holding every matching row) and returns the deliveries to start.
    mutating func takeWebhookDeliveries() -> [ODataDelivery] {
        var deliveries = odataOutbox
        odataOutbox = []
        guard !odataChangeNotes.isEmpty else { return deliveries }
        let notes = odataChangeNotes
        odataChangeNotes = []
        for id in odataWebhooks.keys.sorted() {
            guard var hook = odataWebhooks[id], let set = webhookSet(hook) else { continue }
            let failure = webhookQueryError(hook)
            let expr = hook.filter.isEmpty ? nil : try? ODataFilter.parse(hook.filter)
            let fields = expr.flatMap { try? ODataEvaluator.resolve($0, in: set) } ?? [:]
            for operation in ["ADD", "UPDATE", "DELETE"] {
                var records: [StoredRecord] = []
                for note in notes where note.operation == operation && note.table.caseInsensitiveCompare(set.table) == .orderedSame {
                    if let expr {
                        let record = note.record
                        guard ODataEvaluator(fields: fields, value: { f in f.global ? .empty : record.value(f) }).matches(expr) else { continue }
                    }
                    if let i = records.firstIndex(where: { $0.id == note.record.id }) { records[i] = note.record } else { records.append(note.record) }
                }
                guard !records.isEmpty else { continue }
                odataWebhookSerial += 1
                let op = ODataWebhookOperation(serial: odataWebhookSerial, operation: operation, rowIDs: records.map(\.id),
                                               body: webhookPayload(hook, set: set, records: records))
                hook.pending.append(op)
                deliveries.append(ODataDelivery(hook: id, serial: op.serial, url: hook.url, headers: hook.headers, body: op.body,
                                                operation: operation, failure: failure))
            }
            odataWebhooks[id] = hook
        }
        // A delivery FileMaker cannot build fails its first attempt at once (`pendingOperations` shows it), then is
        // retried as a refused one is.
        return deliveries.compactMap { delivery in
            guard let failure = delivery.failure else { return delivery }
            return webhookAttempted(delivery, error: failure)
        }
    }

    /// What every delivery of `hook` fails with, as on FileMaker Server: a lower-case `id` unquoted in `select` or
    /// `filter` is `-1002 Error: syntax error in URL at: 'id'` (ODATA.md §9, §3.3; hooks:DISCOVERINGS.md: the webhook is
    /// created, its operations stay `NOT_SENT`). `nil` when its deliveries can be sent.
    func webhookQueryError(_ hook: ODataWebhook) -> (code: Int, message: String)? {
        let bareID = EmulatorState.splitTopLevel(hook.select, on: ",").contains { trimSpaces($0) == "id" }
        var error: ODataError? = bareID ? .syntax("id") : nil
        if error == nil, !hook.filter.isEmpty {
            do { _ = try ODataFilter.parse(hook.filter) } catch let e as ODataError { error = e } catch {}
        }
        return error.map { (Int($0.code) ?? -1, $0.message) }
    }

    /// Records the outcome of one attempt; returns the delivery to retry, if any.
    mutating func webhookAttempted(_ delivery: ODataDelivery, error: (code: Int, message: String)?) -> ODataDelivery? {
        guard var hook = odataWebhooks[delivery.hook], let i = hook.pending.firstIndex(where: { $0.serial == delivery.serial }) else {
            return nil
        }
        defer { odataWebhooks[delivery.hook] = hook }
        guard let error else {
            hook.pending.remove(at: i)
            return nil
        }
        hook.pending[i].sendAttempts += 1
        hook.pending[i].lastErrorCode = error.code
        hook.pending[i].lastErrorMessage = error.message
        if hook.maxFailedAttempts > 0, hook.pending[i].sendAttempts >= hook.maxFailedAttempts {
            hook.pending.remove(at: i)
            return nil
        }
        return delivery
    }

    // MARK: Endpoints

    /// `Webhook.Add`, `Webhook.GetAll`, `Webhook.Get(n)`, `Webhook.Delete(n)`, `Webhook.Invoke(n)`.
    mutating func odataWebhookRoute(_ action: String, method: String, _ ctx: ODataContext) throws -> HTTPResponse {
        let (name, keyText) = try EmulatorState.splitKey(action)
        func hookID() throws -> Int {
            guard let keyText, let n = Int(trimSpaces(keyText)) else { throw ODataError.syntax(action) }
            guard odataWebhooks[n] != nil else { throw ODataError(404, "-1061", "Specified WebHook not found") }
            return n
        }
        func requireMethod(_ m: String) throws {
            guard method == m else { throw ODataError(405, "-1003", "Unsupported OData operation - use \(m) for Webhook.\(name)") }
        }
        switch name.lowercased() {
        case "add":
            try requireMethod("POST")
            return try odataWebhookAdd(ctx)
        case "getall":
            try requireMethod("GET")
            let hooks = odataWebhooks.keys.sorted().compactMap { odataWebhooks[$0].map(webhookJSON) }
            return EmulatorState.odataJSON(200, .object([("@context", .string(ctx.base + "/$metadata#Webhook Processor")),
                                                         ("status", .string("ACTIVE")), ("webhooks", .array(hooks))]))
        case "get":
            try requireMethod("GET")
            let id = try hookID()
            guard case let .object(pairs)? = odataWebhooks[id].map(webhookJSON) else { throw ODataError(404, "-1061", "Specified WebHook not found") }
            return EmulatorState.odataJSON(200, .object([("@context", .string(ctx.base + "/$metadata#WebHook"))] + pairs))
        case "delete":
            try requireMethod("POST")
            let id = try hookID()
            odataWebhooks[id] = nil
            return EmulatorState.odataJSON(200, .object([("webhookResult", .object([("webhookID", .number(Double(id)))]))]))
        case "invoke":
            try requireMethod("POST")
            let id = try hookID()
            guard var hook = odataWebhooks[id], let set = webhookSet(hook), let table = table(set.table) else {
                throw ODataError(404, "-1061", "Specified WebHook not found")
            }
            let body = try odataBody(ctx)
            guard ctx.request.body.contains(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else {
                throw ODataError(400, "-1002", "Error: the request body must be JSON ({\"rowIDs\": [...]})")
            }
            var ids = table.order
            if let list = body["rowIDs"]?.arrayValue, !list.isEmpty {
                ids = list.compactMap { $0.scalarText.flatMap { Int($0) } }.filter { table.records[$0] != nil }
            }
            let records = ids.compactMap { table.records[$0] }
            let payload = webhookPayload(hook, set: set, records: records)
            odataWebhookSerial += 1
            hook.pending.append(ODataWebhookOperation(serial: odataWebhookSerial, operation: "INVOKE", rowIDs: ids, body: payload))
            odataWebhooks[id] = hook
            odataOutbox.append(ODataDelivery(hook: id, serial: odataWebhookSerial, url: hook.url, headers: hook.headers, body: payload,
                                             operation: "INVOKE"))
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json;charset=utf-8"), ("OData-Version", "4.0")],
                                body: payload)
        default:
            throw ODataError.syntax(action)
        }
    }

    func webhookJSON(_ hook: ODataWebhook) -> JSON {
        let pending = hook.pending.map { op in
            JSON.object([("operation", .string(op.operation)), ("rowIDs", .array(op.rowIDs.map { .number(Double($0)) })),
                         ("status", .string("NOT_SENT")), ("lastErrorCode", .number(Double(op.lastErrorCode))),
                         ("lastErrorMessage", .string(op.lastErrorMessage)), ("sendAttempts", .number(Double(op.sendAttempts)))])
        }
        return .object([("webhookID", .number(Double(hook.id))), ("tableName", .string(hook.tableName)), ("webhook", .string(hook.url)),
                        ("headers", .object(hook.headers.map { ($0.0, .string($0.1)) })), ("notifySchemaChanges", .bool(hook.notifySchemaChanges)),
                        ("select", .string(hook.select)), ("filter", .string(hook.filter)),
                        ("maxFailedAttempts", .number(Double(hook.maxFailedAttempts))), ("pendingOperations", .array(pending))])
    }

    mutating func odataWebhookAdd(_ ctx: ODataContext) throws -> HTTPResponse {
        let body = try odataBody(ctx)
        guard let url = body["webhook"]?.stringValue, let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", parsed.host != nil else {
            throw ODataError(400, "-1002", "Error: 'webhook' must be an http(s) URL")
        }
        guard let tableName = body["tableName"]?.stringValue else { throw ODataError(400, "-1002", "Error: 'tableName' is required") }
        guard let set = odataSet(tableName) else { throw ODataError(404, "-1020", "Table '\(tableName)' not defined in database") }
        let select = body["select"]?.stringValue ?? ""
        let filter = body["filter"]?.stringValue ?? ""
        _ = try odataColumns(set, select: select.isEmpty ? nil : select, ctx: ctx)
        if !filter.isEmpty {
            do {
                _ = try ODataEvaluator.resolve(try ODataFilter.parse(filter), in: set)
            } catch let e as ODataError where e == .syntax("id") {
                // Created; its deliveries fail (``webhookQueryError(_:)``).
            }
        }
        var headers: [(String, String)] = []
        for key in ["headers", "endpointHeaders"] {
            for (name, value) in body[key]?.objectPairs ?? [] {
                guard let text = value.scalarText else { throw ODataError(400, "-1002", "Error: header '\(name)' must be a string") }
                headers.removeAll { $0.0.caseInsensitiveCompare(name) == .orderedSame }
                headers.append((name, text))
            }
        }
        var maxFailed = 0
        if let m = body["maxFailedAttempts"] {
            guard let n = m.scalarText.flatMap({ Int($0) }), n >= 0 else { throw ODataError(400, "-1002", "Error: 'maxFailedAttempts' must be a whole number") }
            maxFailed = n
        }
        // IDs are the lowest free number: recycled after a delete (hooks DISCOVERINGS).
        var id = 1
        while odataWebhooks[id] != nil { id += 1 }
        odataWebhooks[id] = ODataWebhook(id: id, tableName: set.name, url: url, headers: headers,
                                         notifySchemaChanges: body["notifySchemaChanges"]?.boolValue ?? false,
                                         select: select, filter: filter, maxFailedAttempts: maxFailed)
        return EmulatorState.odataJSON(200, .object([("webhookResult", .object([("webhookID", .number(Double(id)))]))]))
    }
}

/// Posts webhook deliveries on a background queue, retrying failures after ``retryInterval``.
final class ODataWebhookSender: @unchecked Sendable {
    private let queue = DispatchQueue(label: "SwiftFMEmulator.webhooks")
    private let lock = NSLock()
    private var stopped = false
    private var interval: TimeInterval = 1
    /// Created with the first delivery (most emulators never send one), released by ``stop()``.
    private var urlSession: URLSession?

    /// The session to send with; `nil` once stopped.
    private func session() -> URLSession? {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return nil }
        if let urlSession { return urlSession }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        let created = URLSession(configuration: configuration)
        urlSession = created
        return created
    }

    var retryInterval: TimeInterval {
        get { lock.lock(); defer { lock.unlock() }; return interval }
        set { lock.lock(); interval = max(0.001, newValue); lock.unlock() }
    }

    var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    /// Ends deliveries and retries for good (the emulator is going away).
    func stop() {
        lock.lock()
        stopped = true
        let session = urlSession
        urlSession = nil
        lock.unlock()
        session?.finishTasksAndInvalidate()
    }

    /// Sends `deliveries`; `attempted` records each outcome and says whether to retry.
    func send(_ deliveries: [ODataDelivery], attempted: @escaping @Sendable (ODataDelivery, (code: Int, message: String)?) -> ODataDelivery?) {
        for delivery in deliveries {
            // One that cannot be built has failed its first attempt already: the next comes after the interval.
            if delivery.failure != nil {
                queue.asyncAfter(deadline: .now() + retryInterval) { [self] in attempt(delivery, attempted: attempted) }
            } else {
                attempt(delivery, attempted: attempted)
            }
        }
    }

    private func attempt(_ delivery: ODataDelivery, attempted: @escaping @Sendable (ODataDelivery, (code: Int, message: String)?) -> ODataDelivery?) {
        guard !isStopped else { return }
        if let failure = delivery.failure {
            guard let retry = attempted(delivery, failure), !isStopped else { return }
            queue.asyncAfter(deadline: .now() + retryInterval) { [self] in attempt(retry, attempted: attempted) }
            return
        }
        guard let url = URL(string: delivery.url) else { return }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = delivery.body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in delivery.headers { request.setValue(value, forHTTPHeaderField: name) }
        let prepared = request
        queue.async { [self] in
            guard let session = session() else { return }
            session.dataTask(with: prepared) { [self] _, response, error in
                var failure: (code: Int, message: String)?
                if let http = response as? HTTPURLResponse {
                    if !(200..<300).contains(http.statusCode) { failure = (http.statusCode, "HTTP \(http.statusCode)") }
                } else {
                    failure = (-1, error.map { String(describing: $0) } ?? "no answer")
                }
                guard let retry = attempted(delivery, failure), !isStopped else { return }
                queue.asyncAfter(deadline: .now() + retryInterval) { [self] in attempt(retry, attempted: attempted) }
            }.resume()
        }
    }
}

import Foundation

/// A FileMaker Data API emulator: an in-memory FileMaker solution answering the Data API over HTTP
/// on loopback, so test suites run without a FileMaker Server.
///
/// ```swift
/// try await Emulator.withRunning { emulator in
///     let base = emulator.baseURL!   // http://127.0.0.1:PORT
///     // log in at base/fmi/data/vLatest/databases/Music/sessions with admin/admin …
/// }
/// ```
///
/// Behaviour follows `shared/dataapi/WIRE.md` (its EMULATOR DEFAULTs where the real server is
/// uncertain); solutions are described by schema files (`Docs/SCHEMA.md` in the repository) or
/// ``EmulatorSchema`` values. All methods are thread-safe.
///
/// Choices made where the real server's behaviour is not documented:
/// - Layout, script and field names match case-insensitively; the database name too, but a token
///   only works with the exact database spelling (after dropping `.fmp12`) used at login (else 952).
/// - Unknown top-level body keys and unknown query parameters answer HTTP 400, code 960,
///   `Unknown parameter(s): a, b` (all of them, in request order; names are case-sensitive), checked after
///   the session and the layout; an unknown `options` key is 960 too (named `options.<key>`), an unknown
///   `entrymode`/`prohibitmode` value 1708. Portal windows are `limit.<portal>`/`offset.<portal>` in a find
///   body and `_limit.<portal>`/`_offset.<portal>` in a GET query (WIRE.md §17).
/// - Parameter errors (1708, 958, 960) answer HTTP 400; wrong verbs 405 with code 1704 and an `Allow`
///   header (HEAD works wherever GET does; OPTIONS is unsupported); unknown
///   paths 404 with code `"404"`; a wrong `Content-Type` 415 with code `"415"`.
/// - A range read of a table without records answers 500/101 "Record is missing", as FileMaker Server
///   does; an offset past the end answers 500/401, like a find without matches.
/// - `validateSession` answers `{"isSessionInUse":false}`; an empty login body counts as `{}`;
///   logging out an unknown token answers 401/952; the session cap is 500/956.
/// - ISO dates are accepted only with `dateformats: 2`; ISO timestamps are written with a `T`;
///   `dateformats: 1` is the same as 0. Date parts may be separated by any character other than a
///   letter, a digit, `:` or `+` (`04.11.2017`, `04-11-2017`).
/// - A number field stores text that is not a number as written and returns it as a JSON string (sorted
///   by the number FileMaker reads from it), unless the schema marks the field `numericOnly` (then 502).
///   Numbers are exact decimals (up to 400 integer digits), written back digit for digit.
/// - `options.entrymode: "script"` skips validation options; `options.prohibitmode: "script"` allows
///   writing `prohibitModification` fields (else 201).
/// - Container uploads answer `{"modId":…}`; the repetition defaults to 1; `modId` may come as a
///   query parameter or a multipart part. Streaming URLs use ``publicURL``, else a proxy's `X-Forwarded-Proto`/`X-Forwarded-Host`, else `http://` and the request's `Host`.
/// - Unknown scripts are top-level 104 on the run-script endpoint, `scriptError` 104 elsewhere.
/// - Portal writes accept the portal name or the table occurrence name, and `recordId`/`modId`
///   plain or `TO::`-prefixed; `newPortalRecordInfo` has one entry per field written in each new row, in
///   request order, also on create. A repeating field in a portal row reads as `TO::field(1)`, `(2)`, ….
///   A portal row edited by `recordId` or removed by `deleteRelated` must be related to the parent (else 101).
/// - A related field written with no related record, where the relationship does not allow creation, and
///   a new portal row through a relationship that does not allow creation (or more than one hop) are 101.
/// - Schema scripts with steps run under the emulator's lock; one stopped after 100,000 steps ends with
///   `scriptError` 1. The found set an answer returns is the request's, whatever the scripts did to theirs.
/// - `query`, `sort` and `_sort` must be JSON arrays, `dateformats` 0, 1 or 2 (else 1708).
/// - Stopping the emulator invalidates every token, like a server restart.
public final class Emulator: Sendable {
    let core: EmulatorCore

    /// The database name, e.g. `"Music"` for the built-in demo.
    public let database: String

    /// Creates an emulator serving the built-in demo solution (database `Music`).
    public convenience init() {
        self.init(schema: EmulatorSchema.demo)
    }

    /// Creates an emulator serving `schema`.
    ///
    /// Seed records that the schema's own rules reject are skipped; use ``init(schemaJSON:)`` or
    /// ``EmulatorSchema/validate()`` to be told about them.
    /// - Parameters:
    ///   - schema: the solution.
    ///   - now: the clock (``advanceClock(by:)`` adds to it); defaults to the system clock.
    public init(schema: EmulatorSchema, now: @escaping @Sendable () -> Date = { Date() }) {
        let start = now()
        let state: EmulatorState
        if let checked = try? EmulatorState(schema: schema, now: start) {
            state = checked
        } else {
            var unseeded = schema
            unseeded.records = [:]
            state = (try? EmulatorState(schema: unseeded, now: start)) ?? EmulatorState(empty: unseeded)
        }
        core = EmulatorCore(state: state, clock: now)
        database = schema.database
    }

    /// Creates an emulator from a validated schema, throwing on any problem (including seed records).
    init(checkedSchema schema: EmulatorSchema, now: @escaping @Sendable () -> Date = { Date() }) throws {
        try schema.validate()
        core = EmulatorCore(state: try EmulatorState(schema: schema, now: now()), clock: now)
        database = schema.database
    }

    /// Creates an emulator from a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the file is unreadable, malformed or inconsistent.
    public convenience init(schemaFile: URL) throws {
        try self.init(checkedSchema: try EmulatorSchema.load(from: schemaFile))
    }

    /// Creates an emulator from the JSON text of a schema file.
    /// - Throws: ``EmulatorSchemaError`` when the text is malformed or inconsistent.
    public convenience init(schemaJSON: Data) throws {
        try self.init(checkedSchema: try EmulatorSchema(jsonData: schemaJSON))
    }

    deinit {
        stop()
        stopControl()
        core.webhooks.stop()
    }

    /// The request handler (pure request → response), for tests that skip sockets.
    public var handler: any HTTPHandler { EmulatorHandler(core: core) }

    // MARK: Running

    /// Starts listening; returns the base URL (`http://127.0.0.1:PORT`, or `https://…` with ``tls``). Calling it
    /// again while running returns the current URL. Request bodies may be up to 64 MiB, container uploads up to 4 GiB
    /// (kept in unlinked temporary files, memory-mapped, not in the heap).
    /// - Parameters:
    ///   - host: the address to bind (loopback by default).
    ///   - port: the port, or 0 for any free port.
    /// - Throws: ``HTTPServerError`` when the address cannot be bound, or with ``tls`` when a file cannot be read
    ///   or used, the key does not match the certificate, or OpenSSL cannot be loaded (the message names which).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> URL {
        if let url = baseURL { return url }
        let (cap, idle, header, body, tls) = core.state.withLock {
            ($0.maxConnections, $0.connectionIdleTimeout, $0.connectionHeaderTimeout, $0.connectionBodyTimeout, $0.tls)
        }
        // Container uploads (multipart) up to 4 GiB, spooled to disk as they arrive; other bodies up to 64 MiB.
        let server = HTTPServer(handler: EmulatorHandler(core: core), maxUploadBytes: 4 << 30, idleTimeout: idle, maxConnections: cap,
                                headerTimeout: header, bodyTimeout: body, tls: tls)
        let bound = try server.start(host: host, port: port)
        let scheme = tls == nil ? "http" : "https"
        guard let url = Emulator.url(host: host, port: bound, scheme: scheme) else {
            server.stop()
            throw HTTPServerError(message: "cannot form a URL for host \(host)")
        }
        core.state.withLock {
            $0.server = server
            $0.port = bound
            $0.baseURL = url
            $0.servedScheme = scheme
        }
        return url
    }

    /// The URL of a server bound at `host` (as ``HTTPServer/start(host:port:)`` takes it): an IPv6 address in
    /// brackets once, whether or not it came with them (`::1` and `[::1]` alike), an empty host and `localhost` as
    /// `127.0.0.1` (what the server binds for them: a client whose `localhost` is `::1` first must not be sent
    /// there); `nil` when no URL can name it.
    static func url(host: String, port: UInt16, scheme: String = "http") -> URL? {
        let name = HTTPSocket.bindName(host)
        return URL(string: "\(scheme)://\(name.contains(":") ? "[\(name)]" : name):\(port)")
    }

    /// Serve HTTPS (TLS 1.2 or later) on the emulator's port with this certificate and key, instead of plain HTTP:
    /// ``start(host:port:)`` then returns an `https://` URL, and container URLs use `https`. `nil` (the default):
    /// plain HTTP. Set it before ``start(host:port:)``; a bad file fails the start (see ``EmulatorTLS``). Clients
    /// trust the certificate through its CA: `curl --cacert ca.pem`, Python `requests` with `verify="ca.pem"`,
    /// SwiftFM with `FMTLSOptions(caCertificates:)`. The control API (``startControl(host:port:)``) stays plain HTTP
    /// on its own port (the harness's back door; its URL says `http`).
    /// `fm-emulator --tls-certificate FILE --tls-key FILE` sets it.
    public var tls: EmulatorTLS? {
        get { core.state.withLock { $0.tls } }
        set { core.state.withLock { $0.tls = newValue } }
    }

    /// The most client connections served at once (one thread each). When they are all open, a new
    /// connection closes the one that has waited longest without a request in progress (an idle keep-alive
    /// connection, or one stalled inside a request head),
    /// as nginx does when `worker_connections` run out; only when all are busy with requests is it answered
    /// `503 Service Unavailable` with `Connection: close` (over ``tls`` after its handshake, see
    /// ``HTTPServer/tls``). 256 by default; set it before
    /// ``start(host:port:)``.
    public var maxConnections: Int {
        get { core.state.withLock { $0.maxConnections } }
        set { core.state.withLock { $0.maxConnections = max(1, newValue) } }
    }

    /// Seconds a keep-alive client connection may stay idle between requests (or before its first byte)
    /// before the emulator closes it. 60 by default; set it before ``start(host:port:)``.
    public var connectionIdleTimeout: TimeInterval {
        get { core.state.withLock { $0.connectionIdleTimeout } }
        set { core.state.withLock { $0.connectionIdleTimeout = newValue > 0 ? newValue : 60 } }
    }

    /// Seconds a request head may take from its first byte to its blank line before the emulator closes
    /// the connection, however steadily the bytes trickle in (nginx's `client_header_timeout`; a
    /// slowloris client is cut off by it). 10 by default; set it before ``start(host:port:)``.
    public var connectionHeaderTimeout: TimeInterval {
        get { core.state.withLock { $0.connectionHeaderTimeout } }
        set { core.state.withLock { $0.connectionHeaderTimeout = newValue > 0 ? newValue : 10 } }
    }

    /// Seconds a request body may go without a byte arriving before the emulator closes the connection
    /// (nginx's `client_body_timeout`). 30 by default; set it before ``start(host:port:)``.
    public var connectionBodyTimeout: TimeInterval {
        get { core.state.withLock { $0.connectionBodyTimeout } }
        set { core.state.withLock { $0.connectionBodyTimeout = newValue > 0 ? newValue : 30 } }
    }

    /// Client connections open now (0 when not running).
    public var openConnectionCount: Int { core.state.withLock { $0.server }?.openConnectionCount ?? 0 }

    /// Connections refused with 503 because ``maxConnections`` were open and busy, since the last start.
    public var refusedConnectionCount: Int { core.state.withLock { $0.server }?.refusedConnectionCount ?? 0 }

    /// Idle (or stalled) connections closed to admit a new one at ``maxConnections``, since the last start.
    public var evictedConnectionCount: Int { core.state.withLock { $0.server }?.evictedConnectionCount ?? 0 }

    /// The base URL while running, else `nil`.
    public var baseURL: URL? { core.state.withLock { $0.baseURL } }

    /// The URL clients reach the emulator at when it runs behind a reverse proxy or TLS front (for
    /// example `https://fm.example.com:8443`); only its scheme, host and port are used. Container URLs
    /// and the container redirect's `Location` carry them, as a real server's do. When `nil` (the
    /// default), a proxy's `X-Forwarded-Proto` and `X-Forwarded-Host` are honoured, else the request's
    /// `Host` over `http`. `fm-emulator --public-url URL` sets it.
    public var publicURL: URL? {
        get { core.state.withLock { $0.publicURL } }
        set { core.state.withLock { $0.publicURL = newValue } }
    }

    /// Stops listening and invalidates every token, like a server restart. Idempotent.
    public func stop() {
        let server: HTTPServer? = core.state.withLock { s in
            let server = s.server
            s.server = nil
            s.port = nil
            s.baseURL = nil
            if server != nil { s.sessions.removeAll() }
            return server
        }
        if server != nil { core.traffic.interruptHolds() }
        server?.stop()
    }

    /// Starts `emulator`, runs `body`, and always stops it (also when `body` throws).
    /// - Parameters:
    ///   - emulator: the emulator to run (the demo solution by default).
    ///   - isolation: the caller's actor, inherited so `body` need not be `Sendable`.
    ///   - body: the work to do while it listens.
    public static func withRunning<T>(_ emulator: Emulator = Emulator(), isolation: isolated (any Actor)? = #isolation,
                                      _ body: (Emulator) async throws -> T) async throws -> T {
        try emulator.start()
        do {
            let result = try await body(emulator)
            emulator.stop()
            return result
        } catch {
            emulator.stop()
            throw error
        }
    }

    /// A hook called once per request with a one-line summary (tokens redacted). Set it before
    /// ``start(host:port:)``; it is called outside the emulator's lock.
    public var onRequest: (@Sendable (String) -> Void)? {
        get { core.state.withLock { $0.onRequest } }
        set { core.state.withLock { $0.onRequest = newValue } }
    }

    // MARK: Clock

    /// Moves the emulator's clock forward (session expiry, `//` finds, auto-entered timestamps).
    public func advanceClock(by seconds: TimeInterval) {
        core.state.withLock { $0.clockOffset += seconds }
    }

    /// The emulator's current time.
    public var now: Date { core.state.withLock { core.clock().addingTimeInterval($0.clockOffset) } }

    // MARK: Sessions

    /// Invalidates one token (the next call with it answers 401/952).
    public func expireToken(_ token: String) {
        core.state.withLock { _ = $0.sessions.removeValue(forKey: token) }
    }

    /// Invalidates every token.
    public func expireAllTokens() {
        core.state.withLock { $0.sessions.removeAll() }
    }

    /// The number of sessions that have not expired.
    public var activeSessionCount: Int {
        core.state.withLock { s in
            let now = core.clock().addingTimeInterval(s.clockOffset)
            return s.sessions.values.filter { !s.isExpired($0, now: now) }.count
        }
    }

    /// The tokens of sessions that have not expired.
    public var activeTokens: [String] {
        core.state.withLock { s in
            let now = core.clock().addingTimeInterval(s.clockOffset)
            return s.sessions.values.filter { !s.isExpired($0, now: now) }.map(\.token).sorted()
        }
    }

    /// When `true`, every login answers 401 with code 212.
    public func rejectLogins(_ reject: Bool) {
        core.state.withLock { $0.rejectLogins = reject }
    }

    /// Whether logins are being refused (see ``rejectLogins(_:)``).
    var rejectsLogins: Bool { core.state.withLock { $0.rejectLogins } }

    /// Forgets every token, as a server restart does: the next call with any of them answers 401/952.
    /// Records, containers and settings stay.
    public func restart() {
        core.state.withLock { $0.sessions.removeAll() }
    }

    /// Puts the emulator back as it was created: the schema's records (containers dropped), no
    /// sessions (so no globals), no faults, an empty request log, login and logout counts 0,
    /// ``maxSessions`` from the schema, logins accepted, no Claris ID token or OAuth pair accepted,
    /// ``serviceTime`` 0, ``serializesSessions`` off and ``maxInFlight`` reset. The clock, registered
    /// scripts, ``onRequest`` and the listening sockets stay.
    public func reset() {
        core.state.withLock { s in
            let now = core.clock().addingTimeInterval(s.clockOffset)
            s.reloadRecords(now: now)
            s.sessions.removeAll()
            s.blobs.removeAll()
            s.streamingCookies.removeAll()
            s.faults.removeAll()
            s.log.removeAll()
            s.loginCount = 0
            s.logoutCount = 0
            s.maxSessions = s.schema.limits.maxSessions
            s.rejectLogins = false
            s.clarisIDTokens.removeAll()
            s.issuedClarisIDTokens.removeAll()
            s.oauthPairs.removeAll()
            s.odataWebhooks.removeAll()
            s.odataChangeNotes.removeAll()
            s.odataOutbox.removeAll()
        }
        core.traffic.reset()
    }

    /// The session cap: a login while this many sessions are open answers HTTP 500 with FileMaker code
    /// 956 "Maximum number of database or Admin API sessions exceeded (*)" (WIRE.md §3.2, §12: FileMaker
    /// errors are 500). Starts as the schema's `limits.maxSessions`; `nil` for no cap. Lowering it closes
    /// no open session.
    public var maxSessions: Int? {
        get { core.state.withLock { $0.maxSessions } }
        set { core.state.withLock { $0.maxSessions = newValue.map { max(0, $0) } } }
    }

    /// The most bytes of records one answer may hold: a Data API found set (its portals included), an OData
    /// read (its `$expand`s included) or a whole OData `$batch`; 256 MiB by default. An answer that would pass it
    /// is refused, not built: HTTP 500 with FileMaker code 953 "Exceeded limit on data the FileMaker Data API and
    /// OData can transmit (*)" (in a `$batch`, the request that would pass it answers so and ends the batch).
    /// FileMaker Server documents no such limit; without one a cross-product portal, a nested `$expand` or a
    /// `$batch` of large reads could ask for gigabytes from a few records. Also `fm-emulator --max-answer-bytes N`.
    public var maxAnswerBytes: Int {
        get { core.state.withLock { $0.maxAnswerBytes } }
        set { core.state.withLock { $0.maxAnswerBytes = max(1, newValue) } }
    }

    /// Successful logins (Basic, Claris ID and OAuth) since the emulator was created or ``reset()``.
    public var loginCount: Int { core.state.withLock { $0.loginCount } }

    /// Successful logouts since the emulator was created or ``reset()``.
    public var logoutCount: Int { core.state.withLock { $0.logoutCount } }

    /// Accepts `token` for Claris ID logins (`Authorization: FMID <token>`, as FileMaker Cloud takes);
    /// a login with a token not accepted (or revoked) answers 401/212. The answer carries the session
    /// token in the `X-FM-Data-Access-Token` header and in the body.
    public func acceptClarisIDToken(_ token: String) {
        core.state.withLock { _ = $0.clarisIDTokens.insert(token) }
    }

    /// Stops accepting `token` for Claris ID logins (as when a Claris ID token expires after an hour),
    /// whether it was accepted here or issued by the emulator's Cognito (``clarisID``), which forgets it;
    /// sessions it opened stay open.
    public func revokeClarisIDToken(_ token: String) {
        core.state.withLock {
            _ = $0.clarisIDTokens.remove(token)
            _ = $0.issuedClarisIDTokens.removeValue(forKey: token)
        }
        core.cognito.revoke(idToken: token)
    }

    /// Accepts an OAuth login whose `X-FM-Data-OAuth-Request-Id` and `X-FM-Data-OAuth-Identifier`
    /// headers are `requestId` and `identifier`; any other pair answers 401/212.
    public func acceptOAuth(requestId: String, identifier: String) {
        core.state.withLock { _ = $0.oauthPairs.insert(EmulatorState.oauthKey(requestId: requestId, identifier: identifier)) }
    }

    // MARK: Traffic

    /// Seconds each Data API request is held before it is answered (default 0), as a busy server
    /// takes; held requests do not hold the emulator's lock, so others proceed meanwhile.
    public var serviceTime: TimeInterval {
        get { core.traffic.currentServiceTime }
        set { core.traffic.currentServiceTime = newValue }
    }

    /// The most Data API requests in flight at once since the emulator was created or
    /// ``resetMaxInFlight()``. A request is in flight from when the emulator starts working on it
    /// (after waiting for its session's turn when ``serializesSessions`` is on) until its answer is
    /// ready (the ``serviceTime`` included; sending the answer not).
    public var maxInFlight: Int { core.traffic.mostInFlight }

    /// Restarts ``maxInFlight`` from the number in flight now.
    public func resetMaxInFlight() {
        core.traffic.resetMaxInFlight()
    }

    /// When `true`, requests carrying the same session token are handled one at a time, in arrival
    /// order (default `false`). A switch because whether FileMaker Server serialises a session's
    /// requests is UNCERTAIN (WIRE.md §3.2).
    public var serializesSessions: Bool {
        get { core.traffic.serializesSessions }
        set { core.traffic.serializesSessions = newValue }
    }

    // MARK: Faults

    /// Queues a fault for the next `count` requests whose percent-decoded path contains `matching`
    /// (any request when `nil`). Faults are consumed in the order queued.
    public func inject(_ fault: EmulatorFault, count: Int = 1, matching: String? = nil) {
        guard count > 0 else { return }
        core.state.withLock { $0.faults.append(PendingFault(fault: fault, remaining: count, matching: matching)) }
    }

    /// Drops every queued fault.
    public func clearFaults() {
        core.state.withLock { $0.faults.removeAll() }
    }

    /// How many more requests the queued faults will take.
    var pendingFaultCount: Int { core.state.withLock { $0.faults.reduce(0) { $0 + $1.remaining } } }

    // MARK: Observation

    /// Every request received, in arrival order.
    public var requestLog: [RecordedRequest] { core.state.withLock { $0.log.all } }

    /// How many requests ``requestLog`` keeps (the oldest are dropped first); 10 000 by default. Also set by
    /// `fm-emulator --max-logged-requests N` and the control API's `maxLoggedRequests` setting.
    public var maxLoggedRequests: Int {
        get { core.state.withLock { $0.log.maxCount } }
        set { core.state.withLock { $0.log.maxCount = max(0, newValue) } }
    }

    /// How many bytes ``requestLog`` keeps (targets, headers and kept bodies; the oldest entries are
    /// dropped first); 32 MiB by default. With ``maxLoggedRequests`` it bounds the log's memory. Also set by
    /// `fm-emulator --max-logged-bytes N` and the control API's `maxLoggedBytes` setting.
    public var maxLoggedBytes: Int {
        get { core.state.withLock { $0.log.maxBytes } }
        set { core.state.withLock { $0.log.maxBytes = max(0, newValue) } }
    }

    /// Whether ``requestLog`` keeps request bodies (``RecordedRequest/body``); `false` by default, when
    /// only their size is kept (``RecordedRequest/bodyByteCount``). Turn it on to assert on what a
    /// client sent; bodies count towards ``maxLoggedBytes``.
    public var logsBodies: Bool {
        get { core.state.withLock { $0.log.keepsBodies } }
        set { core.state.withLock { $0.log.keepsBodies = newValue } }
    }

    /// The bytes ``requestLog`` holds now.
    public var requestLogBytes: Int { core.state.withLock { $0.log.bytes } }

    /// Empties ``requestLog``.
    public func clearRequestLog() {
        core.state.withLock { $0.log.removeAll() }
    }

    // MARK: Scripts

    /// Registers (or replaces) a script by name; it takes precedence over a schema script of the same
    /// name. The closure runs while the emulator handles the request, under its lock: it must not call
    /// back into this emulator.
    public func registerScript(_ name: String, _ body: @escaping @Sendable (ScriptInvocation) -> ScriptOutcome) {
        core.state.withLock { $0.scriptClosures[name.lowercased()] = body }
    }

    // MARK: Direct data access

    /// A snapshot of a table's records in creation order. Each dictionary has `"recordId"` and
    /// `"modId"` (strings) and one key per field (`name(n)` for repetitions after the first):
    /// numbers as `Int` when integral, else `Double`; empty values as `""`; dates, times and
    /// timestamps as `MM/dd/yyyy`, `HH:mm:ss`, `MM/dd/yyyy HH:mm:ss`; containers as the file name.
    /// Global fields are per session and not included. Unknown table → `[]`.
    public func records(inTable table: String) -> [[String: Any]] {
        core.state.withLock { s in
            guard let t = s.table(table) else { return [] }
            return t.orderedRecords.map { r in
                var out: [String: Any] = ["recordId": String(r.id), "modId": String(r.modId)]
                for f in t.schema.fields where !f.global {
                    for rep in 1...f.repetitions {
                        out[rep == 1 ? f.name : "\(f.name)(\(rep))"] = r.value(f, repetition: rep).plain
                    }
                }
                return out
            }
        }
    }

    /// Adds a record to a table without HTTP (auto-enter and validation apply; any field of the table
    /// may be set). Values are given as text or numbers, like `fieldData`.
    /// - Returns: the new record's id.
    /// - Throws: ``EmulatorSchemaError`` naming the FileMaker error code when the record is rejected.
    @discardableResult
    public func addRecord(toTable table: String, _ fields: [String: String]) throws -> Int {
        try core.state.withLock { s in
            let now = core.clock().addingTimeInterval(s.clockOffset)
            do {
                let id = try s.createRecord(table: table, input: fields.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) },
                                            session: nil, dateformats: 0, now: now, restrictTo: nil)
                core.sendWebhooks(s.takeWebhookDeliveries())
                return id
            } catch let e as FMError {
                throw EmulatorSchemaError("record rejected with FileMaker error \(e.code): \(e.message)")
            }
        }
    }

    /// Whether the solution has table `name` (compared case-insensitively).
    func hasTable(_ name: String) -> Bool { core.state.withLock { $0.table(name) != nil } }

    /// The number of records in a table (0 for an unknown table).
    public func recordCount(inTable table: String) -> Int {
        core.state.withLock { $0.table(table)?.records.count ?? 0 }
    }
}

/// The shared state and the clock behind an ``Emulator``.
final class EmulatorCore: Sendable {
    let state: Locked<EmulatorState>
    let clock: @Sendable () -> Date
    /// Service time, in-flight counting and per-session serialisation, outside the state lock.
    let traffic = EmulatorTraffic()
    /// The control API's server and URL while it runs.
    let control = Locked<(server: HTTPServer, url: URL)?>(nil)
    /// Test hook: called with each request just before its body is parsed, outside the state lock.
    let beforeParseHook = Locked<(@Sendable (HTTPRequest) -> Void)?>(nil)
    /// Claris ID sign-in (Amazon Cognito), when ``Emulator/clarisID`` is on (Cognito/).
    let cognito = CognitoService()
    /// OData webhook deliveries (OData/ODataWebhooks.swift).
    let webhooks = ODataWebhookSender()

    /// Starts the webhook deliveries a change produced (outside the state lock).
    func sendWebhooks(_ deliveries: [ODataDelivery]) {
        guard !deliveries.isEmpty else { return }
        let state = self.state
        webhooks.send(deliveries) { delivery, error in state.withLock { $0.webhookAttempted(delivery, error: error) } }
    }

    var beforeParse: (@Sendable (HTTPRequest) -> Void)? { beforeParseHook.withLock { $0 } }

    init(state: EmulatorState, clock: @escaping @Sendable () -> Date) {
        self.state = Locked(state)
        self.clock = clock
    }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let segments = request.rawPath.split(separator: "/", omittingEmptySubsequences: false)
            .map { decodePathSegment($0) ?? String($0) }
        if let refused = answerODataFMID(request, segments: segments) { return refused }
        if let clarisID = answerClarisID(request) { return clarisID }
        let decodedPath = segments.joined(separator: "/")
        let token = EmulatorCore.carriedToken(request, segments: segments)
        let isDataAPI = segments.count > 2 && segments[1].lowercased() == "fmi" && segments[2].lowercased() == "data"
        guard isDataAPI else { return answer(request, decodedPath: decodedPath, token: token) }
        return traffic.pass(token: token) { answer(request, decodedPath: decodedPath, token: token) }
    }

    /// The session token a request carries: its `Bearer` token, or the token of a logout path.
    static func carriedToken(_ request: HTTPRequest, segments: [String]) -> String? {
        if let auth = request.header("Authorization").map(trimSpaces) {
            let parts = auth.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                let token = trimSpaces(String(parts[1]))
                if !token.isEmpty { return token }
            }
        }
        // "", fmi, data, {version}, databases, {db}, sessions, {token}
        if segments.count == 8, segments[4].lowercased() == "databases", segments[6].lowercased() == "sessions", !segments[7].isEmpty {
            return segments[7]
        }
        return nil
    }

    /// Plays any queued fault or routes the request, under the state lock; logs it; calls the hook. What the answer
    /// still has to write (or, for a `$batch`, to run part by part, taking the lock again) is done after the lock is
    /// released; when that ends in another answer (too large, a find that matched nothing), the log entry and the
    /// hook's line are amended to what the client got.
    private func answer(_ request: HTTPRequest, decodedPath: String, token: String?) -> HTTPResponse {
        // Parse the body before taking the state lock: a 60 MiB POST must not stall other clients.
        beforeParse?(request)
        let prepared = request.body.isEmpty ? nil : PreparedBody(request)
        var logged = 0
        var linePrefix = ""
        var year = 0
        let (staged, hook, line) = withRequestState(prepared: prepared) { s, now -> (StagedResponse, (@Sendable (String) -> Void)?, String) in
            year = DateEntry.year(of: now)
            let fault = s.takeFault(for: decodedPath, carriesToken: token != nil)
            let response = s.playStaged(fault, request: request, token: token, now: now)
            logged = s.log.append(RecordedRequest(method: request.method, target: request.target, decodedPath: decodedPath,
                                                  headers: request.headers, body: s.log.keepsBodies ? request.body : Data(),
                                                  bodyByteCount: request.body.count, status: response.response.status, token: token))
            guard let hook = s.onRequest else { return (response, nil, "") }
            linePrefix = "\(request.method) \(EmulatorCore.redact(decodedPath, issued: s.issuedTokens)) → "
            var line = linePrefix + "\(response.response.status)"
            if response.response.status != 200, let code = (try? JSON.parse(response.response.body))?["messages"]?.arrayValue?.first?["code"]?.stringValue {
                line += " (code \(code))"
            }
            return (response, hook, line)
        }
        // A large answer is written here, outside the lock, from the snapshot it holds; a batch takes the lock per part.
        // A find matching here reads two-digit years on the emulator's clock, as it would under the lock.
        let (response, refused) = DateEntry.$year.withValue(year) {
            staged.finishedOrRefused { body in withRequestState(prepared: nil) { s, now in body(&s, now) } }
        }
        guard refused else {
            hook?(line)
            return response
        }
        // Refused as too large (953), or a find that matched nothing (401), after it was logged: the log and the
        // hook tell what the client got.
        state.withLock { $0.log.amend(logged, status: response.status) }
        if let hook {
            let json = try? JSON.parse(response.body)
            let code = json?["messages"]?.arrayValue?.first?["code"]?.stringValue ?? json?["error"]?["code"]?.stringValue
            hook(linePrefix + "\(response.status)" + (code.map { " (code \($0))" } ?? ""))
        }
        return response
    }

    /// Runs `body` under the state lock as a request's work runs: with `prepared` as the request's parsed body, the
    /// emulator's clock (`now`, also for two-digit years); then sweeps unheld blobs and, after the lock is released,
    /// sends the webhook deliveries the work produced.
    private func withRequestState<R>(prepared: PreparedBody?, _ body: (inout EmulatorState, Date) -> R) -> R {
        var deliveries: [ODataDelivery] = []
        let result = state.withLock { s in
            let now = clock().addingTimeInterval(s.clockOffset)
            let outer = s.prepared
            s.prepared = prepared
            // Two-digit years are read relative to the emulator's clock.
            let result = DateEntry.$year.withValue(DateEntry.year(of: now)) { body(&s, now) }
            s.prepared = outer
            s.sweepBlobs()
            deliveries = s.takeWebhookDeliveries()
            return result
        }
        sendWebhooks(deliveries)
        return result
    }

    /// Replaces path segments that are tokens: any token this emulator issued, and anything shaped like
    /// a Data API token (52 hex characters); and, in the others, every control, line-separator or bidirectional-control
    /// character (decoded from `%0A`, `%1B`, `%E2%80%AE`, …) by U+FFFD, so that a client's path cannot forge a line of
    /// the request log (`--verbose`), colour it or reorder it.
    static func redact(_ path: String, issued: IssuedTokens?) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { seg in
            (seg.count == 52 && seg.allSatisfy(\.isHexDigit)) || issued?.contains(String(seg)) == true ? "<token>" : oneLine(seg)
        }.joined(separator: "/")
    }

    /// `text` with every control, line-separator or bidirectional-control character replaced by U+FFFD.
    static func oneLine(_ text: Substring) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value >= 0x7F }) else { return String(text) }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: out.append("\u{FFFD}")
            default: out.append(scalar.properties.isBidiControl ? "\u{FFFD}" : scalar)
            }
        }
        return String(out)
    }
}

/// The ``HTTPHandler`` of an emulator.
struct EmulatorHandler: HTTPHandler {
    let core: EmulatorCore

    func handle(_ request: HTTPRequest) -> HTTPResponse { core.handle(request) }
}

extension EmulatorState {
    /// Replaces every table with the schema's seed records (skipping them all when one is rejected,
    /// as ``Emulator/init(schema:now:)`` does).
    mutating func reloadRecords(now: Date) {
        let fresh = (try? EmulatorState(schema: schema, now: now)) ?? EmulatorState(empty: schema)
        tables = fresh.tables
        recordsGeneration += 1
    }

    /// An empty state (no tables) for a schema that cannot even be instantiated unseeded.
    init(empty schema: EmulatorSchema) {
        var s = schema
        s.records = [:]
        self.schema = s
        maxSessions = s.limits.maxSessions
        for t in s.tables { tables[t.name.lowercased()] = TableState(schema: t) }
        graph = RelationGraph(s)
    }
}

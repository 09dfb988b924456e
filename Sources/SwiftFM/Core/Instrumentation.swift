import Foundation

/// Traces SwiftFM's calls (``FMConfiguration/instrumentation``): one span per call, for
/// swift-distributed-tracing (the companion package `SwiftFMServer`), OpenTelemetry or your own tracer.
///
/// ``startCall(_:)`` is called synchronously on the caller's thread, or in the caller's task for the `async`
/// methods, as the call begins: task-local values (a tracing `ServiceContext`, a request id) can be read
/// there. The span it returns is ended exactly once, through ``FMCallSpan/end(_:)``, with the call's outcome,
/// on one of SwiftFM's queues, before the call's completion runs. Retries and replays after a lost session
/// are ``FMCallSpan/record(_:)`` events; a login that a call waits for is a call of its own whose
/// ``FMCallStart/parent`` is that call's span. With no instrumentation set nothing is traced or measured.
///
/// See <doc:TracingAndLogLevels>.
public protocol FMInstrumentation: AnyObject, Sendable {
    /// A call begins: returns its span. Keep it quick; it runs on the caller's thread.
    func startCall(_ call: FMCallStart) -> any FMCallSpan
}

/// The span of one call, returned by ``FMInstrumentation/startCall(_:)``.
public protocol FMCallSpan: AnyObject, Sendable {
    /// Something happened within the call (a retry, a replay after a lost session): an event on the span.
    func record(_ event: FMCallEvent)
    /// The call ended: called exactly once, with its outcome, before its completion runs.
    func end(_ outcome: FMCallOutcome)
}

/// What is known of a call as it begins.
public struct FMCallStart: Sendable, CustomStringConvertible {
    /// The endpoint kind, as in ``FMCallMetrics/endpoint``: e.g. `"GET layouts/{}/records"`, `"POST sessions"`.
    public var endpoint: String
    /// The HTTP method (`"GET"`, `"POST"`, `"PATCH"`, `"DELETE"`).
    public var method: String
    /// The layout the call reads or writes, when it names one.
    public var layout: String?
    /// The table (entity set) an ``FMOData`` call reads or writes, when it names one, as written (not
    /// percent-encoded); `nil` for Data API calls, which name a ``layout``.
    public var table: String?
    /// The database (``FMConfiguration/database``).
    public var database: String
    /// The server's host name or address (`nil` when the host is invalid).
    public var serverAddress: String?
    /// The server's port (the scheme's default when the host names none; `nil` when the host is invalid).
    public var serverPort: Int?
    /// `"http"` or `"https"` (`nil` when the host is invalid).
    public var scheme: String?
    /// A number for the call, unique in the process: the `fm.request_id` of its log lines.
    public var requestID: UInt64
    /// The span of the call this one was made for: a login that a waiting call started (`nil` otherwise).
    public var parent: (any FMCallSpan)?

    /// Creates a start record (instrumentations' tests).
    public init(endpoint: String, method: String, layout: String? = nil, table: String? = nil, database: String, serverAddress: String? = nil,
                serverPort: Int? = nil, scheme: String? = nil, requestID: UInt64 = 0, parent: (any FMCallSpan)? = nil) {
        self.endpoint = endpoint
        self.method = method
        self.layout = layout
        self.table = table
        self.database = database
        self.serverAddress = serverAddress
        self.serverPort = serverPort
        self.scheme = scheme
        self.requestID = requestID
        self.parent = parent
    }

    /// One line with every field but the parent.
    public var description: String {
        Redaction.oneLine("FMCallStart(\(endpoint), \(table.map { "table \($0)" } ?? "layout \(layout ?? "-")"), database \(database), "
            + "server \(scheme ?? "?")://\(serverAddress ?? "?")" + (serverPort.map { ":\($0)" } ?? "") + ", request \(requestID))")
    }
}

/// Something that happened within a call, recorded on its span.
public struct FMCallEvent: Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public enum Kind: String, Sendable, Equatable {
        /// A transient failure (``code``) is retried after ``FMCallEvent/wait`` seconds.
        case retry
        /// The server no longer knew the session (``code``: 952, 112, an HTML 401): SwiftFM logs in again and
        /// sends the call once more.
        case replay
    }
    /// What happened.
    public var kind: Kind
    /// The attempt that failed, from 1.
    public var attempt: Int
    /// The code of that failure.
    public var code: String
    /// Seconds until the next attempt (``Kind/retry``).
    public var wait: TimeInterval?

    /// Creates an event (instrumentations' tests).
    public init(kind: Kind, attempt: Int, code: String, wait: TimeInterval? = nil) {
        self.kind = kind
        self.attempt = attempt
        self.code = code
        self.wait = wait
    }

    /// One line with every field.
    public var description: String {
        Redaction.oneLine("FMCallEvent(\(kind.rawValue), attempt \(attempt), code \(code)" + (wait.map { ", wait \($0) s" } ?? "") + ")")
    }
}

/// How a call ended, handed to ``FMCallSpan/end(_:)``.
public struct FMCallOutcome: Sendable, CustomStringConvertible {
    /// `"0"` on success, else the FileMaker or client code the completion gets.
    public var code: String
    /// The error the completion gets (`nil` on success).
    public var error: FMError?
    /// The HTTP status of the last answer (`nil` when none arrived).
    public var httpStatus: Int?
    /// HTTP requests sent for the call (retries and a replay included; 0 when none left).
    public var attempts: Int
    /// Request body bytes sent, over every attempt.
    public var bytesSent: Int
    /// Answer body bytes received, over every attempt.
    public var bytesReceived: Int
    /// Seconds from the call's start to its first request leaving (rate limit, session, concurrency cap).
    public var queueWait: TimeInterval
    /// Seconds from the call's start to its end.
    public var duration: TimeInterval

    /// Creates an outcome (instrumentations' tests).
    public init(code: String, error: FMError? = nil, httpStatus: Int? = nil, attempts: Int, bytesSent: Int = 0,
                bytesReceived: Int = 0, queueWait: TimeInterval = 0, duration: TimeInterval = 0) {
        self.code = code
        self.error = error
        self.httpStatus = httpStatus
        self.attempts = attempts
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.queueWait = queueWait
        self.duration = duration
    }

    /// `true` when the call failed.
    public var isFailure: Bool { code != "0" }

    /// One line with every field.
    public var description: String {
        Redaction.oneLine("FMCallOutcome(code \(code), status \(httpStatus.map(String.init) ?? "-"), \(attempts) attempt(s), queueWait \(queueWait) s, "
            + "duration \(duration) s, sent \(bytesSent) B, received \(bytesReceived) B)")
    }
}

/// Holds the instrumentation inside ``FMConfiguration`` (compared by identity, so the configuration stays `Equatable`).
struct InstrumentationBox: Sendable, Equatable {
    let instrumentation: (any FMInstrumentation)?
    static func == (lhs: InstrumentationBox, rhs: InstrumentationBox) -> Bool { lhs.instrumentation === rhs.instrumentation }
}

/// Numbers calls for log lines and spans (only when a logger or an instrumentation is set).
enum RequestIDs {
    private static let next = Locked<UInt64>(0)

    static func make() -> UInt64 {
        next.withLock { value in
            value &+= 1
            return value
        }
    }
}

extension Endpoint {
    /// The layout the endpoint names (the segment after `layouts`), if any.
    var layout: String? {
        guard let index = segments.firstIndex(of: "layouts"), index + 1 < segments.count else { return nil }
        return segments[index + 1]
    }

    /// The table (entity set) an OData call on one names (its kind starts with `{set}`): the path's segment after
    /// the database, up to a `/` or the query (both percent-encoded in a name and a key), without the key that
    /// ends it when the call names one (`{set}({key})…`), decoded. A set's name keeps its parentheses unencoded
    /// (`Sales (2024)` is `Sales%20(2024)`), so the key is the parenthesised group that ends the segment, found
    /// from its end (its quoted text may hold parentheses too).
    var table: String? {
        guard case .odata(let path, let kind) = scope, kind.hasPrefix("{set}"), let slash = path.firstIndex(of: "/") else { return nil }
        let rest = path[path.index(after: slash)...]
        var name = rest.prefix { $0 != "/" && $0 != "?" }
        if kind.hasPrefix("{set}({key})"), let open = Self.keyStart(name) { name = name[..<open] }
        guard !name.isEmpty else { return nil }
        return String(name).removingPercentEncoding ?? String(name)
    }

    /// Where the key `(…)` that ends `segment` opens: its last `)` matched backwards, parentheses inside quoted
    /// text (`'…'`, a quote written twice inside) not counted; `nil` when the segment ends otherwise.
    private static func keyStart(_ segment: Substring) -> Substring.Index? {
        guard segment.last == ")" else { return nil }
        var depth = 0
        var quoted = false
        var index = segment.endIndex
        while index > segment.startIndex {
            index = segment.index(before: index)
            switch segment[index] {
            case "'": quoted.toggle()
            case ")" where !quoted: depth += 1
            case "(" where !quoted:
                depth -= 1
                if depth == 0 { return index }
            default: break
            }
        }
        return nil
    }
}

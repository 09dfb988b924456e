import Foundation

/// Receives what every call and every pool session cost (``FMConfiguration/metrics``): forward it to
/// swift-metrics, a Prometheus text endpoint or your own counters (see <doc:LimitsAndRetries>).
///
/// SwiftFM calls it on its own queues, right when a call completes (before its completion runs) or a
/// session opens, closes or is lost: keep it quick and thread-safe. With no observer nothing is measured.
public protocol FMMetricsObserver: AnyObject, Sendable {
    /// One call completed (logins and logouts included).
    func callFinished(_ call: FMCallMetrics)
    /// A pool session opened, closed, was lost, or a login failed.
    func poolEvent(_ event: FMPoolEvent)
    /// How many pool sessions are open (hold a valid token) and how many of those a call holds: a snapshot,
    /// taken after a call takes or gives back a session, a login ends or a session is lost or closed.
    /// Does nothing unless implemented.
    func poolUsage(open: Int, busy: Int)
}

extension FMMetricsObserver {
    /// Does nothing: observers written before ``poolUsage(open:busy:)`` keep compiling.
    public func poolUsage(open: Int, busy: Int) {}
}

/// What one call cost.
public struct FMCallMetrics: Sendable, Equatable, CustomStringConvertible {
    /// The endpoint kind: the method and the path with names and ids as `{}`, e.g. `"GET layouts/{}/records"`,
    /// `"POST layouts/{}/_find"`, `"POST sessions"` (a login), `"DELETE sessions/{}"` (a logout).
    public var endpoint: String
    /// Seconds from the call's start to its first request leaving: the rate limit, a free session (and its
    /// login), the concurrency cap. The whole call when nothing was sent.
    public var queueWait: TimeInterval
    /// Seconds from the call's start to its completion.
    public var duration: TimeInterval
    /// The outcome: `"0"` on success, else the FileMaker or client code the completion gets.
    public var code: String
    /// HTTP requests sent for the call (retries and a replay after a lost session included; 0 when none left).
    public var attempts: Int
    /// Request body bytes sent, over every attempt (a streamed file upload counts 0).
    public var bytesSent: Int
    /// Answer body bytes received, over every attempt (a download streamed to a file counts 0).
    public var bytesReceived: Int

    /// Creates a record (observers' tests).
    public init(endpoint: String, queueWait: TimeInterval, duration: TimeInterval, code: String, attempts: Int,
                bytesSent: Int, bytesReceived: Int) {
        self.endpoint = endpoint
        self.queueWait = queueWait
        self.duration = duration
        self.code = code
        self.attempts = attempts
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }

    /// One line with every field.
    public var description: String {
        Redaction.oneLine("FMCallMetrics(\(endpoint), code \(code), \(attempts) attempt(s), queueWait \(queueWait) s, duration \(duration) s, "
            + "sent \(bytesSent) B, received \(bytesReceived) B)")
    }
}

/// Something that happened to a pool session.
public struct FMPoolEvent: Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public enum Kind: String, Sendable, Equatable {
        /// A login opened the session (``FMPoolEvent/loginDuration`` says how long it took, hook included).
        case opened
        /// SwiftFM closed the session: idle too long (``FMPoolEvent/reason`` `"idle"`) or a shutdown (`"shutdown"`).
        case closed
        /// The server no longer knew the session (952, 112, an HTML 401; ``FMPoolEvent/code``).
        case lost
        /// A login failed (``FMPoolEvent/code``, ``FMPoolEvent/loginDuration``).
        case loginFailed
    }
    /// What happened.
    public var kind: Kind
    /// The pool slot, from 0 (slot 0's token is the one the token store holds).
    public var session: Int
    /// Seconds the login took (``Kind/opened``, ``Kind/loginFailed``).
    public var loginDuration: TimeInterval?
    /// The code that lost the session or failed the login.
    public var code: String?
    /// Why SwiftFM closed it (``Kind/closed``): `"idle"` or `"shutdown"`.
    public var reason: String?

    /// Creates an event (observers' tests).
    public init(kind: Kind, session: Int, loginDuration: TimeInterval? = nil, code: String? = nil, reason: String? = nil) {
        self.kind = kind
        self.session = session
        self.loginDuration = loginDuration
        self.code = code
        self.reason = reason
    }

    /// One line with every field.
    public var description: String {
        Redaction.oneLine("FMPoolEvent(\(kind.rawValue), session \(session)"
            + (loginDuration.map { ", login \($0) s" } ?? "") + (code.map { ", code \($0)" } ?? "")
            + (reason.map { ", \($0)" } ?? "") + ")")
    }
}

/// Holds the observer inside ``FMConfiguration`` (compared by identity, so the configuration stays `Equatable`).
struct MetricsBox: Sendable, Equatable {
    let observer: (any FMMetricsObserver)?
    static func == (lhs: MetricsBox, rhs: MetricsBox) -> Bool { lhs.observer === rhs.observer }
}

/// What a call records for its ``FMCallMetrics`` and its span's ``FMCallOutcome`` (only when an observer or an
/// instrumentation is set).
final class CallMeter: Sendable {
    private struct State {
        var firstSend: UInt64?
        var attempts = 0
        var sent = 0
        var received = 0
        var status: Int?
    }
    let endpoint: String
    /// The call's span (``FMConfiguration/instrumentation``).
    let span: (any FMCallSpan)?
    let started = DispatchTime.now().uptimeNanoseconds
    private let state = Locked(State())

    init(endpoint: String, span: (any FMCallSpan)? = nil) {
        self.endpoint = endpoint
        self.span = span
    }

    /// A request leaves with `bytes` of body.
    func sending(bytes: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        state.withLock { state in
            if state.firstSend == nil { state.firstSend = now }
            state.attempts += 1
            state.sent += bytes
        }
    }

    /// An answer of `bytes` arrived, with HTTP `status`.
    func received(bytes: Int, status: Int) {
        state.withLock { state in
            state.received += bytes
            state.status = status
        }
    }

    /// The record, at completion with `code`.
    func finish(code: String) -> FMCallMetrics {
        finish(code: code, now: DispatchTime.now().uptimeNanoseconds, state: state.value)
    }

    private func finish(code: String, now: UInt64, state: State) -> FMCallMetrics {
        let seconds = { (from: UInt64, to: UInt64) in Double(to &- min(from, to)) / 1e9 }
        return FMCallMetrics(endpoint: endpoint, queueWait: seconds(started, state.firstSend ?? now), duration: seconds(started, now),
                             code: code, attempts: state.attempts, bytesSent: state.sent, bytesReceived: state.received)
    }

    /// The call ended with `error` (`nil`: success): ends the span, then tells `observer`. Called once (the delivery).
    func end(error: FMError?, observer: (any FMMetricsObserver)?) {
        let code = error?.code ?? "0"
        let state = self.state.value
        let metrics = finish(code: code, now: DispatchTime.now().uptimeNanoseconds, state: state)
        span?.end(FMCallOutcome(code: code, error: error, httpStatus: state.status, attempts: metrics.attempts,
                                bytesSent: metrics.bytesSent, bytesReceived: metrics.bytesReceived,
                                queueWait: metrics.queueWait, duration: metrics.duration))
        observer?.callFinished(metrics)
    }
}

extension Endpoint {
    /// The endpoint kind for metrics: the method and the path, names and ids as `{}`. Built in one string, for
    /// every measured call (an array of parts, a set of fixed segments and a join cost about 5,000 instructions).
    var kind: String {
        switch scope {
        case .odata(_, let kind):
            return method.rawValue + " odata/" + kind
        case .absolute:
            return method.rawValue + " {container}"
        case .host, .database:
            if segments.isEmpty, let refusedCall { return method.rawValue + " " + refusedCall }
            var kind = method.rawValue + " "
            kind.reserveCapacity(48)
            var nameNext = false // after `layouts` and `script` comes a name, even one spelled like a fixed segment
            for (index, segment) in segments.enumerated() {
                if index > 0 { kind += "/" }
                let fixed = !nameNext && Self.isFixedSegment(segment)
                kind += fixed ? segment : "{}"
                nameNext = fixed && (segment == "layouts" || segment == "script")
            }
            return kind
        }
    }

    /// The fixed path segments of the Data API's endpoints; any other segment is a name or an id.
    private static func isFixedSegment(_ segment: String) -> Bool {
        switch segment {
        case "layouts", "records", "_find", "script", "scripts", "globals", "sessions", "containers", "productInfo",
             "databases", "validateSession":
            return true
        default:
            return false
        }
    }
}

import Foundation
import Metrics
import SwiftFM

/// An `FMMetricsObserver` that records through swift-metrics' `MetricsSystem` (or a factory of
/// your own): set it as `FMConfiguration.metrics`.
///
/// Names (with the prefix, `swiftfm` by default) and dimensions, beside the ``dimensions`` given at creation:
///
/// | Name | Kind | Dimensions | Value |
/// | --- | --- | --- | --- |
/// | `swiftfm_calls_total` | counter | `endpoint`, `outcome` (`success`/`failure`), `code` | 1 per call (logins and logouts included) |
/// | `swiftfm_call_duration_seconds` | timer | `endpoint`, `outcome` | the call's duration, start to completion |
/// | `swiftfm_call_queue_wait_seconds` | timer | `endpoint` | start to the first request leaving |
/// | `swiftfm_call_retries_total` | counter | `endpoint` | requests past the first (retries and a replay after a lost session) |
/// | `swiftfm_bytes_sent_total` | counter | `endpoint` | request body bytes |
/// | `swiftfm_bytes_received_total` | counter | `endpoint` | answer body bytes |
/// | `swiftfm_logins_total` | counter | `outcome`, `code` | 1 per pool login (`code` `0` on success) |
/// | `swiftfm_login_duration_seconds` | timer | `outcome` | the login, new-session hook included |
/// | `swiftfm_sessions_lost_total` | counter | `code` | sessions the server no longer knew (952, 112, 401) |
/// | `swiftfm_sessions_closed_total` | counter | `reason` (`idle`/`shutdown`) | sessions SwiftFM logged out |
/// | `swiftfm_pool_sessions_open` | gauge | | pool sessions holding a valid token |
/// | `swiftfm_pool_sessions_busy` | gauge | | open sessions a call holds |
///
/// `endpoint` is `FMCallMetrics.endpoint`: the method and the path with names and ids as `{}`
/// (`GET layouts/{}/records`), so its values are few. `code` is FileMaker's or SwiftFM's code, which the
/// server's answer names: so that a server or proxy answering with codes of its own cannot grow the values
/// without bound, a code that is not a short integer, and any server code past the first ``maxCodes`` distinct
/// ones, is `other`. Success (`0`) and SwiftFM's client codes (`-1000` … `-1099`: a timeout, a cancel, a
/// shutdown) are a fixed set outside that bound: they are always themselves, however many codes a server sent
/// first. Metric objects are made once per name and dimensions and reused.
public final class FMSwiftMetricsObserver: FMMetricsObserver {
    /// The prefix of every name.
    public let prefix: String
    /// Dimensions added to every metric (e.g. `[("database", "Music")]`).
    public let dimensions: [(String, String)]
    /// How many distinct server `code` values are recorded; later ones are `other` (success, `0`, and SwiftFM's
    /// client codes, `-1000` … `-1099`, are not counted: they are always recorded as themselves).
    public static let maxCodes = 64
    /// The factory given at creation; `nil`: `MetricsSystem.factory`, read as each metric is made.
    private let factory: (any MetricsFactory)?
    private let cache = Mutex()

    /// Creates an observer.
    /// - Parameters:
    ///   - prefix: the prefix of every name (`swiftfm`).
    ///   - dimensions: added to every metric.
    ///   - factory: where metrics go; by default `MetricsSystem.factory`, what `MetricsSystem.bootstrap` set,
    ///     read as each metric is first made (not when the observer is created): an observer made before
    ///     the bootstrap records through the backend it sets.
    public init(prefix: String = "swiftfm", dimensions: [(String, String)] = [], factory: (any MetricsFactory)? = nil) {
        self.prefix = prefix
        self.dimensions = dimensions
        self.factory = factory
    }

    /// Records one call.
    public func callFinished(_ call: FMCallMetrics) {
        let outcome = call.code == "0" ? "success" : "failure"
        let endpoint = [("endpoint", call.endpoint)]
        counter("calls_total", endpoint + [("outcome", outcome), ("code", cache.code(call.code))]).increment()
        timer("call_duration_seconds", endpoint + [("outcome", outcome)]).recordSeconds(call.duration)
        timer("call_queue_wait_seconds", endpoint).recordSeconds(call.queueWait)
        if call.attempts > 1 { counter("call_retries_total", endpoint).increment(by: call.attempts - 1) }
        if call.bytesSent > 0 { counter("bytes_sent_total", endpoint).increment(by: call.bytesSent) }
        if call.bytesReceived > 0 { counter("bytes_received_total", endpoint).increment(by: call.bytesReceived) }
    }

    /// Records a pool event.
    public func poolEvent(_ event: FMPoolEvent) {
        switch event.kind {
        case .opened, .loginFailed:
            let outcome = event.kind == .opened ? "success" : "failure"
            counter("logins_total", [("outcome", outcome), ("code", cache.code(event.code ?? "0"))]).increment()
            if let duration = event.loginDuration {
                timer("login_duration_seconds", [("outcome", outcome)]).recordSeconds(duration)
            }
        case .lost:
            counter("sessions_lost_total", [("code", event.code.map(cache.code) ?? "")]).increment()
        case .closed:
            counter("sessions_closed_total", [("reason", event.reason ?? "")]).increment()
        }
    }

    /// Records the pool's open and busy sessions.
    public func poolUsage(open: Int, busy: Int) {
        gauge("pool_sessions_open").record(open)
        gauge("pool_sessions_busy").record(busy)
    }

    private func counter(_ name: String, _ extra: [(String, String)]) -> Counter {
        cache.metric(prefix + "_" + name, dimensions + extra) { Counter(label: $0, dimensions: $1, factory: factory ?? MetricsSystem.factory) }
    }

    private func timer(_ name: String, _ extra: [(String, String)]) -> Metrics.Timer {
        cache.metric(prefix + "_" + name, dimensions + extra) {
            Metrics.Timer(label: $0, dimensions: $1, preferredDisplayUnit: .seconds, factory: factory ?? MetricsSystem.factory)
        }
    }

    private func gauge(_ name: String) -> Gauge {
        cache.metric(prefix + "_" + name, dimensions) { Gauge(label: $0, dimensions: $1, factory: factory ?? MetricsSystem.factory) }
    }
}

extension Metrics.Timer {
    /// Records `seconds` (negative or NaN as 0; past `Int64.max` nanoseconds, infinity included, as `Int64.max`).
    fileprivate func recordSeconds(_ seconds: TimeInterval) {
        let nanoseconds = (seconds.isNaN ? 0 : max(0, seconds)) * 1e9
        recordNanoseconds(nanoseconds < 9.2e18 ? Int64(nanoseconds.rounded()) : .max)
    }
}

/// Metric objects by name and dimensions, made once.
private final class Mutex: @unchecked Sendable {
    // @unchecked: `metrics` is only touched under `lock`.
    private let lock = NSLock()
    private var metrics: [String: AnyObject] = [:]
    private var codes: Set<String> = []

    /// `code` as a dimension value: `0` and a client code (`-1000` … `-1099`) always; a server's short integer
    /// (`952`) among the first `FMSwiftMetricsObserver.maxCodes` seen; anything else `other`.
    func code(_ code: String) -> String {
        let digits = code.hasPrefix("-") ? code.dropFirst() : code[...]
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return "other" }
        // A fixed set of at most 101 values, which a server cannot grow: never spent from the bound.
        if code == "0" || (code.count == 5 && code.hasPrefix("-10")) { return code }
        lock.lock()
        defer { lock.unlock() }
        if codes.contains(code) { return code }
        guard codes.count < FMSwiftMetricsObserver.maxCodes else { return "other" }
        codes.insert(code)
        return code
    }

    func metric<M: AnyObject>(_ label: String, _ dimensions: [(String, String)],
                              make: (String, [(String, String)]) -> M) -> M {
        let key = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        lock.lock()
        defer { lock.unlock() }
        if let existing = metrics[key] as? M { return existing }
        let made = make(label, dimensions)
        metrics[key] = made
        return made
    }
}

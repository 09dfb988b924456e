import Foundation
import SwiftFM
import Tracing

/// An `FMInstrumentation` that starts a client span per call through swift-distributed-tracing:
/// set it as `FMConfiguration.instrumentation`.
///
/// Each call's span is started under the caller's `ServiceContext` (read on the caller's task as the call
/// begins), or under the span of the call it was made for (a login a waiting call started), and ended once
/// with the outcome. Its name is the endpoint kind (`GET layouts/{}/records`), its kind `.client`, and its
/// attributes follow OpenTelemetry's HTTP client conventions, plus FileMaker's:
///
/// | Attribute | When | Value |
/// | --- | --- | --- |
/// | `http.request.method` | start | `GET`, `POST`, `PATCH`, `DELETE` |
/// | `server.address`, `server.port`, `url.scheme` | start | the configured host |
/// | `url.template` | start | the endpoint kind's path (`layouts/{}/records`) |
/// | `db.namespace`, `filemaker.database` | start | the database |
/// | `filemaker.layout` | start, when the call names one | the layout |
/// | `filemaker.table` | start, when an `FMOData` call names one | the table (entity set) |
/// | `filemaker.request_id` | start | the call's number (as `fm.request_id` in its log lines) |
/// | `http.response.status_code` | end, when an answer arrived | the last answer's status |
/// | `filemaker.code` | end | `0`, or the FileMaker or client code |
/// | `filemaker.attempts` | end | requests sent |
/// | `http.request.resend_count` | end, when > 0 | requests past the first |
/// | `filemaker.queue_wait_ms` | end | milliseconds before the first request left |
/// | `http.request.body.size`, `http.response.body.size` | end | body bytes over every attempt |
/// | `error.type` | end, on failure | the code |
///
/// A failed call's span has the error recorded and status `.error` (message: the code and the error's
/// message). Retries and replays after a lost session are events `filemaker.retry` and `filemaker.replay`
/// (attributes `filemaker.attempt`, `filemaker.code`, and `filemaker.wait_ms` for a retry).
public final class FMTracingInstrumentation: FMInstrumentation {
    /// The tracer given at creation; `nil`: `InstrumentationSystem.tracer`, read as each call begins.
    private let tracer: (any Tracer)?

    /// Creates an instrumentation over `tracer`; by default `InstrumentationSystem.tracer`, what
    /// `InstrumentationSystem.bootstrap` set, read as each call begins (as swift-distributed-tracing's `withSpan`
    /// reads it), not when this is created: an instrumentation made before the bootstrap traces through the
    /// tracer it sets.
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Starts the call's span (on the caller's task, so under its `ServiceContext`).
    public func startCall(_ call: FMCallStart) -> any FMCallSpan {
        let context = (call.parent as? FMTracingSpan)?.span.context ?? ServiceContext.current ?? .topLevel
        let span = (tracer ?? InstrumentationSystem.tracer).startSpan(call.endpoint, context: context, ofKind: .client)
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["http.request.method"] = call.method
                if let address = call.serverAddress { attributes["server.address"] = address }
                if let port = call.serverPort { attributes["server.port"] = port }
                if let scheme = call.scheme { attributes["url.scheme"] = scheme }
                if let space = call.endpoint.firstIndex(of: " ") {
                    attributes["url.template"] = String(call.endpoint[call.endpoint.index(after: space)...])
                }
                attributes["db.namespace"] = call.database
                attributes["filemaker.database"] = call.database
                if let layout = call.layout { attributes["filemaker.layout"] = layout }
                if let table = call.table { attributes["filemaker.table"] = table }
                attributes["filemaker.request_id"] = Int(truncatingIfNeeded: call.requestID)
            }
        }
        return FMTracingSpan(span: span)
    }
}

/// The span of one call (``FMTracingInstrumentation``).
final class FMTracingSpan: FMCallSpan, @unchecked Sendable {
    // @unchecked: `isEnded` is only touched under `ended`.
    let span: any Span
    private let ended = NSLock()
    private var isEnded = false

    init(span: any Span) { self.span = span }

    func record(_ event: FMCallEvent) {
        var attributes: SpanAttributes = [:]
        attributes["filemaker.attempt"] = event.attempt
        attributes["filemaker.code"] = event.code
        if let wait = event.wait { attributes["filemaker.wait_ms"] = wait * 1000 }
        span.addEvent(SpanEvent(name: "filemaker." + event.kind.rawValue, attributes: attributes))
    }

    func end(_ outcome: FMCallOutcome) {
        ended.lock()
        let first = !isEnded
        isEnded = true
        ended.unlock()
        guard first else { return }
        span.updateAttributes { attributes in
            if let status = outcome.httpStatus { attributes["http.response.status_code"] = status }
            attributes["filemaker.code"] = outcome.code
            attributes["filemaker.attempts"] = outcome.attempts
            if outcome.attempts > 1 { attributes["http.request.resend_count"] = outcome.attempts - 1 }
            attributes["filemaker.queue_wait_ms"] = outcome.queueWait * 1000
            attributes["http.request.body.size"] = outcome.bytesSent
            attributes["http.response.body.size"] = outcome.bytesReceived
            if outcome.isFailure { attributes["error.type"] = outcome.code }
        }
        if outcome.isFailure {
            let message = outcome.error.map { "\($0.code): \($0.message)" } ?? outcome.code
            if let error = outcome.error { span.recordError(error) }
            span.setStatus(SpanStatus(code: .error, message: message))
        }
        span.end()
    }
}

import Foundation
import InMemoryTracing
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing
import Tracing

@Suite struct TracingTests {
    private func client(_ emulator: Emulator, _ tracer: InMemoryTracer) throws -> DataAPI {
        var configuration = try configuration(for: emulator)
        configuration.instrumentation = FMTracingInstrumentation(tracer: tracer)
        return DataAPI(configuration: configuration)
    }

    /// One client span per call, under the caller's span (its `ServiceContext`); the login the first call
    /// waits for is a span under that call's; every span is ended exactly once.
    @Test func spansNestUnderTheCallersContext() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            let parentID = try await tracer.withSpan("handler") { span in
                _ = try await api.getRecords(layout: "Artists", limit: 2)
                _ = try await api.getRecord(layout: "Artists", recordId: 1)
                return span.context.inMemorySpanContext?.spanID
            }
            let spans = tracer.finishedSpans
            let handler = try #require(spans.first { $0.operationName == "handler" })
            #expect(handler.spanID == parentID)
            let calls = spans.filter { $0.operationName == "GET layouts/{}/records" || $0.operationName == "GET layouts/{}/records/{}" }
            #expect(calls.count == 2)
            for call in calls {
                #expect(call.kind == .client)
                #expect(call.parentSpanID == handler.spanID)
                #expect(call.traceID == handler.traceID)
                #expect(call.status == nil)
                #expect(call.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
                #expect(call.attributes["filemaker.layout"]?.toSpanAttribute() == .string("Artists"))
                #expect(call.attributes["filemaker.code"]?.toSpanAttribute() == .string("0"))
                #expect(call.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
                #expect(call.attributes["filemaker.attempts"]?.toSpanAttribute() == .int64(1))
                #expect(call.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            }
            // Each call ended once: one finished span per request id.
            let ids = calls.compactMap { $0.attributes["filemaker.request_id"]?.toSpanAttribute() }
            #expect(Set(ids.map { "\($0)" }).count == 2)
            let login = try #require(spans.first { $0.operationName == "POST sessions" })
            let first = try #require(calls.first { $0.operationName == "GET layouts/{}/records" })
            #expect(login.parentSpanID == first.spanID)
            #expect(spans.filter { $0.operationName == "POST sessions" }.count == 1)
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// A failed call's span is marked: status `.error`, the error recorded, `error.type` and `filemaker.code`.
    @Test func errorsAreMarked() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            let span = try #require(tracer.finishedSpans.first { $0.operationName == "GET layouts/{}/records" })
            #expect(span.status?.code == .error)
            #expect(span.errors.count == 1)
            #expect((span.errors.first?.error as? FMError)?.code == "105")
            #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("105"))
            #expect(span.attributes["filemaker.code"]?.toSpanAttribute() == .string("105"))
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// An OData call on a table names it (`filemaker.table`), as a Data API call names its layout.
    @Test func anODataCallNamesItsTable() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let odata = FMOData(sharing: try client(emulator, tracer))
            _ = try await odata.records(from: "Artists", query: FMODataQuery(top: 1))
            let span = try #require(tracer.finishedSpans.first { $0.operationName == "GET odata/{set}" })
            #expect(span.attributes["filemaker.table"]?.toSpanAttribute() == .string("Artists"))
            #expect(span.attributes["filemaker.layout"] == nil)
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// A retry and a replay after a lost session are events on the call's one span.
    @Test func retriesAndReplaysAreEvents() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            tracer.clearFinishedSpans()

            emulator.inject(.html502, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let retried = tracer.popFinishedSpans().filter { $0.operationName == "GET layouts/{}/records" }
            #expect(retried.count == 1)
            #expect(retried.first?.events.map(\.name) == ["filemaker.retry"])
            #expect(retried.first?.attributes["filemaker.attempts"]?.toSpanAttribute() == .int64(2))

            emulator.inject(.expireSession, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let spans = tracer.popFinishedSpans()
            let replayed = spans.filter { $0.operationName == "GET layouts/{}/records" }
            #expect(replayed.count == 1)
            #expect(replayed.first?.events.map(\.name) == ["filemaker.replay"])
            #expect(replayed.first?.events.first?.attributes["filemaker.code"]?.toSpanAttribute() == .string("952"))
            // The renewed login is traced under the call that waited for it.
            let login = try #require(spans.first { $0.operationName == "POST sessions" })
            #expect(login.parentSpanID == replayed.first?.spanID)
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// A callback caller's span is started under the caller's `ServiceContext` too (read synchronously as the
    /// call begins), and a call made from a completion (no task, no context) is a root span. Held on main.
    @Test func callbackCallersNestUnderTheirContext() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            let parentID = await tracer.withSpan("handler") { span in
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    api.getRecords(layout: "Artists", limit: 1) { _, _ in
                        api.getRecords(layout: "Artists", limit: 2) { _, _ in continuation.resume() }
                    }
                }
                return span.context.inMemorySpanContext?.spanID
            }
            let calls = tracer.finishedSpans.filter { $0.operationName == "GET layouts/{}/records" }
            #expect(calls.count == 2)
            let first = try #require(calls.first { $0.attributes["filemaker.request_id"] != nil && $0.parentSpanID == parentID })
            #expect(first.traceID == tracer.finishedSpans.first { $0.operationName == "handler" }?.traceID)
            #expect(calls.filter { $0.parentSpanID == nil }.count == 1)   // the one made from the completion
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// A call cancelled in flight (-1005), one in flight when the client is shut down with no grace and one
    /// refused afterwards (-1012): each span ends exactly once, marked as an error with its code, and no span
    /// is left open. Held on main.
    @Test func cancelledAndShutDownCallsEndTheirSpans() async throws {
        try await Emulator.withRunning { emulator in
            let hold = Hold()
            emulator.onRequest = { line in if line.contains("/layouts/Artists/records") { hold.arrive() } }
            defer { hold.releaseAll() }
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            _ = try await api.getRecords(layout: "Artists", limit: 1)   // logged in: no login span below
            tracer.clearFinishedSpans()

            func failure(_ body: @escaping @Sendable () async throws -> Void, then act: (Task<Void, any Error>) async -> Void) async -> String? {
                let arrived = hold.arm()
                let call = Task { try await body() }
                #expect(await arrived.wait())
                await act(call)
                do {
                    try await call.value
                    return "0"
                } catch let error as FMError {
                    return error.code
                } catch {
                    return "\(error)"
                }
            }
            let cancelled = await failure({ _ = try await api.getRecords(layout: "Artists", limit: 1) }) { $0.cancel() }
            #expect(cancelled == FMError.ClientCode.cancelled)
            let shutDown = await failure({ _ = try await api.getRecords(layout: "Artists", limit: 1) }) { _ in await api.shutdown(grace: 0) }
            #expect(shutDown == FMError.ClientCode.shuttingDown)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "Artists", limit: 1) }

            let spans = tracer.finishedSpans.filter { $0.operationName == "GET layouts/{}/records" }
            let codes = spans.map { $0.attributes["filemaker.code"]?.toSpanAttribute() }
            #expect(codes == [.string(FMError.ClientCode.cancelled), .string(FMError.ClientCode.shuttingDown),
                              .string(FMError.ClientCode.shuttingDown)])
            for span in spans {
                #expect(span.status?.code == .error)
                #expect(span.errors.count == 1)
            }
            let ids = spans.compactMap { $0.attributes["filemaker.request_id"]?.toSpanAttribute() }.map { "\($0)" }
            #expect(Set(ids).count == spans.count)   // one span per call, each ended once
            #expect(tracer.finishedSpans.filter { $0.operationName == "DELETE sessions/{}" }.count == 1)
            #expect(tracer.activeSpans.isEmpty)
        }
    }

    /// No span holds a secret: not the password, the Basic value or a session token, in a name, an
    /// attribute, an event, a status message or a recorded error; over logins, a replay after 952, a failed
    /// call and the logouts of a shutdown. Held on main.
    @Test func noSecretReachesASpan() async throws {
        try await Emulator.withRunning { emulator in
            let tracer = InMemoryTracer()
            let api = try client(emulator, tracer)
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            emulator.inject(.expireSession, count: 1, matching: "/layouts/Artists/records")
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "NoSuchLayout") }
            let secrets = secrets(of: emulator)
            await api.shutdown(grace: 5)
            #expect(secrets.count >= 4)   // the two credentials and both sessions' tokens

            let spans = tracer.finishedSpans
            #expect(spans.filter { $0.operationName == "DELETE sessions/{}" }.count == 1)
            for span in spans {
                var text = span.operationName
                span.attributes.forEach { key, value in text += " \(key)=\(value)" }
                for event in span.events {
                    text += " " + event.name
                    event.attributes.forEach { key, value in text += " \(key)=\(value)" }
                }
                text += " \(span.status.map { "\($0.code) \($0.message ?? "")" } ?? "")"
                for error in span.errors { text += " \(error.error) \(String(reflecting: error.error))" }
                for secret in secrets { #expect(!text.contains(secret), "\(text)") }
            }
        }
    }
}

/// Holds the emulator's matching requests (on its threads) until released; each `arm()` is the arrival of
/// the next one.
private final class Hold: @unchecked Sendable {
    // @unchecked: state under `lock`.
    private let lock = NSLock()
    private var next: Signal?
    private var held = 0
    private let release = DispatchSemaphore(value: 0)

    /// The next matching request will be held: its arrival.
    func arm() -> Signal {
        let signal = Signal()
        lock.withLock { next = signal }
        return signal
    }

    /// On the emulator's thread: holds the request when armed.
    func arrive() {
        let signal = lock.withLock { () -> Signal? in
            defer { next = nil }
            if next != nil { held += 1 }
            return next
        }
        guard let signal else { return }
        signal.fire()
        _ = release.wait(timeout: .now() + 120)
    }

    /// Lets every held request go.
    func releaseAll() {
        for _ in 0..<lock.withLock({ held }) { release.signal() }
    }
}

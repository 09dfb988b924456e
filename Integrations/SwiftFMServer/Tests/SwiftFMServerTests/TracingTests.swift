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
}

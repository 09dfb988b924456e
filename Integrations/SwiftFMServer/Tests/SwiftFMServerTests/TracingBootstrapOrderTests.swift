// Contract: an FMTracingInstrumentation made without a tracer starts each call's span with whatever
// InstrumentationSystem.bootstrap set by the time the call begins, as swift-distributed-tracing's own `withSpan`
// does, not with what was set when the instrumentation was created: a configuration (and its instrumentation)
// may be built before the daemon bootstraps its tracing backend, and its spans still reach that backend.
import Foundation
import InMemoryTracing
import SwiftFM
import SwiftFMServer
import Testing
import Tracing

@Suite struct TheDefaultTracerIsReadAsACallBegins {
    /// Instrumentation first, bootstrap second, then a call's span: it reaches the bootstrapped tracer, ended
    /// with its outcome. Failed on main: the instrumentation had kept the tracer of its creation (the no-op one),
    /// and no span was recorded. (In a process of its own: a process bootstraps InstrumentationSystem once.)
    @Test func anInstrumentationMadeBeforeTheBootstrap() async {
        await #expect(processExitsWith: .success) {
            let instrumentation = FMTracingInstrumentation()
            let tracer = InMemoryTracer()
            InstrumentationSystem.bootstrap(tracer)
            let span = instrumentation.startCall(FMCallStart(endpoint: "GET layouts/{}/records", method: "GET", layout: "Artists",
                                                             database: "Music"))
            span.end(FMCallOutcome(code: "0", httpStatus: 200, attempts: 1))
            guard let finished = tracer.finishedSpans.first, tracer.finishedSpans.count == 1,
                  finished.operationName == "GET layouts/{}/records",
                  finished.attributes["filemaker.layout"]?.toSpanAttribute() == .string("Artists") else { exit(1) }
        }
    }
}

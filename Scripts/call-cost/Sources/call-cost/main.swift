// `call-cost CONFIGURATION CALLS URL`: gets record 1 of the demo solution's Artists layout from the emulator at URL
// CALLS times through the callback API, from the main thread, each call waited on with a semaphore (the way a
// Dispatch daemon calls), after 100 calls to log in and warm up. Run under `valgrind --tool=callgrind` with two
// values of CALLS, the difference of the two counts divided by the difference of the calls is the client's
// instructions per call, free of the machine's load (see ../call-cost.sh).
import Dispatch
import Foundation
import SwiftFM

final class NoOpMetrics: FMMetricsObserver {
    func callFinished(_ call: FMCallMetrics) {}
    func poolEvent(_ event: FMPoolEvent) {}
}

final class NoOpInstrumentation: FMInstrumentation {
    final class Span: FMCallSpan {
        func record(_ event: FMCallEvent) {}
        func end(_ outcome: FMCallOutcome) {}
    }
    func startCall(_ call: FMCallStart) -> any FMCallSpan { Span() }
}

/// The configurations compared, each a change to the default one.
let configurations: [String: @Sendable (inout FMConfiguration) -> Void] = [
    "default": { _ in },
    "no-policy": { $0.retry = .none; $0.maxConcurrentRequests = nil },
    "standard+cap": { $0.retry = .standard; $0.maxConcurrentRequests = 8 },
    "metrics": { $0.metrics = NoOpMetrics() },
    "instrumentation": { $0.instrumentation = NoOpInstrumentation() },
]

let arguments = CommandLine.arguments
guard arguments.count == 4, let change = configurations[arguments[1]], let calls = Int(arguments[2]), calls >= 0 else {
    FileHandle.standardError.write(Data("usage: call-cost \(configurations.keys.sorted().joined(separator: "|")) CALLS URL\n".utf8))
    exit(2)
}
var configuration = FMConfiguration(host: arguments[3], database: "Music", credentials: .basic(username: "admin", password: "admin"))
change(&configuration)
let api = DataAPI(configuration: configuration)
let done = DispatchSemaphore(value: 0)
final class Failures: @unchecked Sendable { var count = 0 }
let failures = Failures()
for _ in 0..<(100 + calls) {
    api.getRecord(layout: "Artists", recordId: 1) { _, code in
        if code != "0" { failures.count += 1 }
        done.signal()
    }
    if done.wait(timeout: .now() + 120) == .timedOut { failures.count += 1; break }
}
guard failures.count == 0 else {
    FileHandle.standardError.write(Data("call-cost: \(failures.count) calls failed\n".utf8))
    exit(1)
}

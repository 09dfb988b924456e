// fm-daemon: SwiftFM in a server-side Swift daemon. swift-log for its lines, swift-metrics for its
// numbers, swift-distributed-tracing for a span per call and swift-service-lifecycle for its lifetime, all
// wired with one ServiceGroup: SIGTERM or SIGINT (or the poller finishing its rounds) starts a graceful
// shutdown; the poller stops first, then FMService drains the calls in flight and logs every session out.
//
//   swift run fm-daemon                       # against an in-process emulator (the demo solution)
//   FM_HOST=fms.example.com FM_DATABASE=Music FM_USER=… FM_PASSWORD=… FM_LAYOUT=Artists swift run fm-daemon
//   FM_DAEMON_ROUNDS=0 swift run fm-daemon    # poll until SIGTERM / SIGINT (default: 5 rounds, then stop)
//
// A real daemon bootstraps its backends once, before anything else: MetricsSystem.bootstrap with
// swift-prometheus, InstrumentationSystem.bootstrap with swift-otel; unbootstrapped, both are no-ops.
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Tracing

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardOutput(label: label)
    handler.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return handler
}
let logger = Logger(label: "fm-daemon")

// The target: a FileMaker Server from the environment, or an emulator in this process.
let environment = ProcessInfo.processInfo.environment
var emulator: Emulator?
var configuration: FMConfiguration
let layout: String
if let host = environment["FM_HOST"], let database = environment["FM_DATABASE"],
   let user = environment["FM_USER"], let password = environment["FM_PASSWORD"] {
    configuration = FMConfiguration(host: host, database: database, username: user, password: password)
    layout = environment["FM_LAYOUT"] ?? "Artists"
} else {
    let local = Emulator()
    let url = try local.start()
    emulator = local
    configuration = FMConfiguration(host: url.absoluteString, database: local.database, username: "admin", password: "admin")
    layout = "Artists"
}

// The four: metrics and tracing in the configuration, the logger at creation, the service for the lifetime.
configuration.metrics = FMSwiftMetricsObserver(dimensions: [("database", configuration.database)])
configuration.instrumentation = FMTracingInstrumentation()
let api = DataAPI(configuration: configuration, logger: logger)

/// Reads the layout's first records every `interval` seconds, `rounds` times (0: until shutdown), each
/// round under a span of its own, so SwiftFM's spans nest under it.
struct Poller: Service {
    let api: DataAPI
    let layout: String
    let rounds: Int
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Stops polling when graceful shutdown starts: only the pause between polls is cut short. A poll in
        // flight is not cancelled (that would fail it with -1005): it finishes, as FMService lets it, and the
        // poller then returns normally (throwing would count as a failure and cancel the whole group).
        var round = 0
        while (rounds == 0 || round < rounds) && !Task.isShuttingDownGracefully && !Task.isCancelled {
            round += 1
            await withSpan("poll") { _ in
                do {
                    let found = try await api.getRecords(layout: layout, limit: 5)
                    logger.info("polled", metadata: ["round": "\(round)", "records": "\(found.records.count)"])
                } catch {
                    // The message too: it names the host, the port and the cause ("connection refused", a wrong password).
                    logger.warning("poll failed: \((error as? FMError)?.message ?? "\(error)")",
                                   metadata: ["round": "\(round)", "code": "\((error as? FMError)?.code ?? "")"])
                }
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break   // graceful shutdown (or cancellation) ended the pause
            }
        }
    }
}

let rounds = environment["FM_DAEMON_ROUNDS"].flatMap(Int.init) ?? 5
let poller = Poller(api: api, layout: layout, rounds: rounds, interval: .milliseconds(200), logger: logger)
// FMService first: the group stops services in reverse order, so the poller stops before the client drains.
var serviceConfiguration = ServiceGroupConfiguration(
    services: [
        .init(service: FMService(api, grace: 10)),
        // The poller finishing its rounds shuts the whole daemon down gracefully.
        .init(service: poller, successTerminationBehavior: .gracefullyShutdownGroup),
    ],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger
)
serviceConfiguration.maximumGracefulShutdownDuration = .seconds(30)
let group = ServiceGroup(configuration: serviceConfiguration)
logger.info("fm-daemon starting", metadata: ["host": "\(configuration.host)", "database": "\(configuration.database)"])
try await group.run()
emulator?.stop()
logger.info("fm-daemon stopped")

// fm-daemon: SwiftFM in a server-side Swift daemon. swift-log for its lines, swift-metrics for its
// numbers, swift-distributed-tracing for a span per call and swift-service-lifecycle for its lifetime, all
// wired with one ServiceGroup: SIGTERM or SIGINT (or the poller finishing its rounds) starts a graceful
// shutdown; the poller stops first, then FMService drains the calls in flight and logs every session out.
//
//   swift run fm-daemon                       # against an in-process emulator (the demo solution)
//   FM_HOST=fms.example.com FM_DATABASE=Music FM_USER=… FM_PASSWORD=… FM_LAYOUT=Artists swift run fm-daemon
//   FM_DAEMON_ROUNDS=0 swift run fm-daemon    # poll until SIGTERM / SIGINT (default: 5 rounds, then stop)
//
// The environment is checked before anything starts: FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD all four
// or none (then the emulator), none empty, a host SwiftFM can use (http or https, no user info), FM_LAYOUT not
// empty, FM_DAEMON_ROUNDS a whole number ≥ 0, LOG_LEVEL a swift-log level. A bad one ends the daemon at once
// with one line on standard error naming the variable and exit status 78 (EX_CONFIG); a failure to start
// (the emulator) or a failed service group with exit status 1. Its lines name the server by its address only.
// SIGPIPE is ignored: a log reader that goes away loses the lines, not the daemon.
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

// A log reader that goes away (a shipper restarted, `fm-daemon | head`) must not kill the daemon before it
// drains and logs its sessions out: a write to its closed pipe then fails quietly instead of raising SIGPIPE.
signal(SIGPIPE, SIG_IGN)

/// Ends the daemon with `status` after one line on standard error (before logging is set up, or instead of it).
func fail(_ status: Int32, _ message: String) -> Never {
    FileHandle.standardError.write(Data("fm-daemon: \(message)\n".utf8))
    exit(status)
}

/// Exit status of a bad environment: sysexits' EX_CONFIG.
let badConfiguration: Int32 = 78
let environment = ProcessInfo.processInfo.environment

// Everything the environment says, checked before anything starts.
let level: Logger.Level
if let text = environment["LOG_LEVEL"] {
    guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
        fail(badConfiguration, "LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
    }
    level = parsed
} else {
    level = .info
}
let rounds: Int
if let text = environment["FM_DAEMON_ROUNDS"] {
    guard let parsed = Int(text), parsed >= 0 else {
        fail(badConfiguration, "FM_DAEMON_ROUNDS must be a whole number ≥ 0 (0: poll until SIGTERM or SIGINT)")
    }
    rounds = parsed
} else {
    rounds = 5
}
let layout = environment["FM_LAYOUT"] ?? "Artists"
guard !layout.isEmpty else { fail(badConfiguration, "FM_LAYOUT is empty: set it to a layout's name, or leave it unset (Artists)") }
let serverNames = ["FM_HOST", "FM_DATABASE", "FM_USER", "FM_PASSWORD"]
let unset = serverNames.filter { (environment[$0] ?? "").isEmpty }
guard unset.count == serverNames.count || unset.isEmpty else {
    fail(badConfiguration, "\(unset.joined(separator: ", ")) not set or empty: set FM_HOST, FM_DATABASE, FM_USER and "
         + "FM_PASSWORD together for a FileMaker Server, or none of them for the in-process emulator")
}
let server: FMConfiguration? = unset.isEmpty
    ? FMConfiguration(host: environment["FM_HOST"] ?? "", database: environment["FM_DATABASE"] ?? "",
                      username: environment["FM_USER"] ?? "", password: environment["FM_PASSWORD"] ?? "")
    : nil
// The host is not echoed: it may hold user info (a password) or a query.
if let server, server.baseURL == nil {
    fail(badConfiguration, "FM_HOST is not a host SwiftFM can use: a host name or address, with an optional http:// or "
         + "https:// scheme, port and path, and no user info (the credentials go in FM_USER and FM_PASSWORD)")
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardOutput(label: label)
    handler.logLevel = level
    return handler
}
let logger = Logger(label: "fm-daemon")

// The target: the FileMaker Server of the environment, or an emulator in this process.
var emulator: Emulator?
var configuration: FMConfiguration
if let server {
    configuration = server
} else {
    let local = Emulator()
    let url: URL
    do {
        url = try local.start()
    } catch {
        fail(1, "the in-process emulator did not start: \(error)")
    }
    emulator = local
    configuration = FMConfiguration(host: url.absoluteString, database: local.database, username: "admin", password: "admin")
}

// The four: metrics and tracing in the configuration, the logger at creation, the service for the lifetime.
configuration.metrics = FMSwiftMetricsObserver(dimensions: [("database", configuration.database)])
configuration.instrumentation = FMTracingInstrumentation()
let api = DataAPI(configuration: configuration, logger: logger)

/// Reads the layout's first records every `interval` seconds, `rounds` times (0: until shutdown), each
/// round under a span of its own, so SwiftFM's spans nest under it.
struct Poller: Service, CustomStringConvertible {
    let api: DataAPI
    let layout: String
    let rounds: Int
    let interval: Duration
    let logger: Logger

    /// What the ServiceGroup logs of it: not the client's configuration (its host as written).
    var description: String { "Poller(layout: \(layout), rounds: \(rounds))" }

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
// The server by its address only (`baseURL`: scheme, host, port and path; FM_HOST's other parts are not logged).
logger.info("fm-daemon starting", metadata: ["host": "\(configuration.baseURL?.absoluteString ?? "")", "database": "\(configuration.database)"])
do {
    try await group.run()
} catch {
    logger.error("fm-daemon failed: \(error)")
    emulator?.stop()
    exit(1)
}
emulator?.stop()
logger.info("fm-daemon stopped")

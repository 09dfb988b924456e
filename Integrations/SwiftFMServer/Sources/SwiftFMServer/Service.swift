import Foundation
import ServiceLifecycle
import SwiftFM

/// A swift-service-lifecycle `Service` that owns the lifetime of one or more `DataAPI` clients (or
/// any client with a graceful shutdown): put it in a `ServiceGroup` and the group shuts them down gracefully.
///
/// ``run()`` waits for the group's graceful shutdown, then shuts every client down with
/// `DataAPI.shutdown(grace:)`: new calls complete at once with `-1012`, calls in flight may
/// finish for up to ``grace`` seconds, then every session is logged out; `run()` returns when that is done.
/// When the task is cancelled instead (the group is cancelled), the clients are shut down with no grace; when it
/// is cancelled while they drain (the group's `maximumGracefulShutdownDuration` passed), the rest of the grace
/// is cut short: every shutdown is asked again with a grace of 0, so calls still in flight complete at once
/// with `-1012`, and `run()` returns once the sessions are logged out.
///
/// Logging out is one request per session, each bounded by its client's `FMConfiguration.timeout`: against a
/// server that does not answer, a cancelled `run()` returns only when those requests time out. A
/// `ServiceGroupConfiguration.maximumCancellationDuration` (which ends the process with a `fatalError` once it
/// passes) must therefore be longer than the clients' `timeout`.
///
/// A `ServiceGroup` shuts its services down in reverse order: list this service before the services that
/// make calls through its clients (an HTTP server, a poller), so they stop first and it drains what they
/// left in flight.
public struct FMService: Service, CustomStringConvertible {
    /// The `DataAPI` clients this service shuts down.
    public let clients: [DataAPI]
    /// How long calls in flight may finish after graceful shutdown starts (`nil`: each client's
    /// `FMConfiguration.timeout`).
    public let grace: TimeInterval?
    /// Every client's shutdown, each given the grace (0 when cancelled).
    private let shutdowns: [@Sendable (TimeInterval?) async -> Void]

    /// A service owning `client`.
    public init(_ client: DataAPI, grace: TimeInterval? = nil) {
        self.init(clients: [client], grace: grace)
    }

    /// A service owning every client in `clients` (shut down together).
    public init(clients: [DataAPI], grace: TimeInterval? = nil) {
        self.clients = clients
        self.grace = grace
        self.shutdowns = clients.map { client in { grace in await client.shutdown(grace: grace) } }
    }

    /// A service owning another kind of client through its graceful shutdown. (An `FMOData` made with
    /// `FMOData(sharing:)` needs none: it is drained with the `DataAPI` it shares, through ``init(_:grace:)``.)
    /// `shutdown` gets the grace in seconds (`nil`: the client's own default; 0 when cancelled) and returns
    /// when the client is shut down. When the service is cancelled while `shutdown` drains, it is called once
    /// more with 0: it should then end what is still in flight (a `DataAPI`'s `shutdown(grace: 0)` does).
    public init(grace: TimeInterval? = nil, shutdown: @escaping @Sendable (_ grace: TimeInterval?) async -> Void) {
        self.clients = []
        self.grace = grace
        self.shutdowns = [shutdown]
    }

    /// Waits for graceful shutdown (or cancellation), then shuts the clients down and returns.
    public func run() async throws {
        let shutdowns = self.shutdowns
        do {
            try await gracefulShutdown()
        } catch {
            // The task was cancelled: nothing is waited for.
            return await Self.shutDown(shutdowns, grace: 0)
        }
        // Cancelled while draining: the grace is over, ask again with none (a DataAPI ends its calls then).
        await withTaskCancellationHandler {
            await Self.shutDown(shutdowns, grace: grace)
        } onCancel: {
            Task { await Self.shutDown(shutdowns, grace: 0) }
        }
    }

    /// Runs every shutdown at once with `grace` and returns when all have.
    private static func shutDown(_ shutdowns: [@Sendable (TimeInterval?) async -> Void], grace: TimeInterval?) async {
        await withTaskGroup(of: Void.self) { group in
            for shutdown in shutdowns {
                group.addTask { await shutdown(grace) }
            }
        }
    }

    /// `"FMService(n client(s))"`.
    public var description: String { "FMService(\(shutdowns.count) client(s))" }
}

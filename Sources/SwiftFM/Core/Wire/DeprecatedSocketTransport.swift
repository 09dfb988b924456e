import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)

// MARK: - The removed socket transport's name, kept for source compatibility (Linux)

/// Deprecated: SwiftFM's own HTTP/1.1-over-sockets transport was removed; this name remains so that code written
/// against it keeps compiling, and forwards every request to ``FMCurlTransport``.
///
/// Deprecated since the release after 2026-11-27 (CHANGELOG "Unreleased"). Its only edge was 1.18–1.20× per call
/// over plain `http://` to a local emulator, which did not outweigh a hand-written HTTP parser and inflater facing
/// hostile servers. Every ``send(_:events:)`` goes to an ``FMCurlTransport`` made with the same `idleTimeout` and
/// `maxConnectionsPerHost` (system trust, the environment's proxy), for `http://` and `https://` alike; where
/// libcurl cannot be loaded, to an ``FMURLSessionTransport`` with the same connection limit (its idle timeout 5 s
/// longer, as the removed transport gave its own), as ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)``
/// falls back. Use ``FMCurlTransport``
/// instead, or let `DataAPI(configuration:)` choose.
@available(*, deprecated, message: "removed in favour of FMCurlTransport, to which it forwards; use FMCurlTransport or DataAPI(configuration:)'s default")
public final class FMSocketTransport: FMTransport, SendsBodyFileAsItWas, Sendable {
    /// The transport every request goes to.
    let base: any FMTransport

    /// `SendsBodyFileAsItWas`: as the transport it forwards to (``FMCurlTransport`` does; ``FMURLSessionTransport`` does not).
    var sendsBodyFileAsItWas: Bool { (base as? any SendsBodyFileAsItWas)?.sendsBodyFileAsItWas ?? false }

    /// Creates a transport that forwards to an ``FMCurlTransport`` (or, without libcurl, an ``FMURLSessionTransport``).
    ///
    /// - Parameters:
    ///   - idleTimeout: the longest silence allowed while connecting, sending or receiving, in seconds.
    ///   - maxConnectionsPerHost: the most connections open at once to one host and port (at least 1).
    ///   - keepAlive: accepted and ignored: libcurl closes a connection idle for longer than its own limit.
    public convenience init(idleTimeout: TimeInterval = 60, maxConnectionsPerHost: Int = 64, keepAlive: TimeInterval = 30) {
        self.init(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, library: .standard)
    }

    /// The same, with the libcurl to load (the tests point it at a missing one).
    init(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, library: CurlLibrary) {
        if library.error == nil {
            base = FMCurlTransport(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, library: library)
        } else {
            // A margin past the idle timeout (often the call's deadline): see defaultIdleTimeout(for:).
            base = FMURLSessionTransport(idleTimeout: idleTimeout + 5, maxConnectionsPerHost: max(1, maxConnectionsPerHost))
        }
    }

    /// Starts the request on the transport it forwards to; see ``FMTransport/send(_:events:)``.
    public func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        base.send(request, events: events)
    }
}
#endif

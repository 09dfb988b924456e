#if canImport(Glibc)
import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

/// `FMSocketTransport` was removed; its name remains, deprecated, so code written against it keeps compiling, and
/// every request goes to ``FMCurlTransport`` (or, where libcurl cannot be loaded, ``FMURLSessionTransport``) with
/// the limits it was made with.
@Suite("FMSocketTransport, deprecated, forwards to the shipped transports")
struct DeprecatedSocketTransportTests {
    @Test func theOldInitialiserStillMakesCallsThroughFMCurlTransport() async throws {
        let made = LegacySocketTransport.maker.make(idleTimeout: 30, maxConnectionsPerHost: 4, keepAlive: 30)
        let curl = try #require(LegacySocketTransport.maker.base(of: made) as? FMCurlTransport)
        #expect(curl.idleTimeout == 30)
        let records = try await Self.readBands(through: made)
        #expect(records == ["John Doe", "John Smith", "Joe Example", "David"])
    }

    @Test func withoutLibcurlItForwardsToURLSession() async throws {
        let made = LegacySocketTransport.maker.make(idleTimeout: 30, maxConnectionsPerHost: 4, library: .at("/nonexistent/libcurl.so.4"))
        let session = try #require(LegacySocketTransport.maker.base(of: made) as? FMURLSessionTransport)
        #expect(session.requestTimeout == 35)
        let records = try await Self.readBands(through: made)
        #expect(records == ["John Doe", "John Smith", "Joe Example", "David"])
    }

    /// Logs in and reads the `Bands` layout of the in-process emulator through `transport`, the answer gzip-encoded:
    /// the bands' names.
    static func readBands(through transport: any FMTransport) async throws -> [String] {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        emulator.inject(.gzip, count: 1, matching: "/records")
        let configuration = FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin", timeout: 30)
        let api = DataAPI(configuration: configuration, transport: transport)
        let found = try await api.getRecords(layout: "Bands")
        await api.shutdown()
        #expect(emulator.requestLog.filter { $0.method == "POST" && $0.decodedPath.hasSuffix("/sessions") }.count == 1)
        return found.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
    }
}

/// The deprecated type, reached through a protocol requirement: a deprecated witness is not diagnosed at the
/// call site, so the suite builds without warnings (the usual way to test a deprecated API).
private protocol LegacySocketTransportMaking: Sendable {
    func make(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, keepAlive: TimeInterval) -> any FMTransport
    func make(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, library: CurlLibrary) -> any FMTransport
    func base(of transport: any FMTransport) -> (any FMTransport)?
}

private struct LegacySocketTransport: LegacySocketTransportMaking {
    static let maker: any LegacySocketTransportMaking = LegacySocketTransport()

    @available(*, deprecated)
    func make(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, keepAlive: TimeInterval) -> any FMTransport {
        FMSocketTransport(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, keepAlive: keepAlive)
    }

    @available(*, deprecated)
    func make(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, library: CurlLibrary) -> any FMTransport {
        FMSocketTransport(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, library: library)
    }

    @available(*, deprecated)
    func base(of transport: any FMTransport) -> (any FMTransport)? {
        (transport as? FMSocketTransport)?.base
    }
}
#endif

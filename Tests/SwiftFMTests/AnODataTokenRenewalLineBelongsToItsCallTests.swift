import Foundation
import Testing
@testable import SwiftFM

/// An OData call whose Claris ID token was rejected (HTTP 401) renews it once: the `warning` line that says so is a line
/// of that call, like its `→` and `←` lines. It carries the call's metadata: the caller's logging context
/// (``FMConfiguration/logMetadataProvider``, read as the call began), `fm.endpoint`, `fm.code`, and the `fm.request_id`
/// of the request that was rejected (the number on that request's own `→` and `←` lines).
@Suite("Log metadata: an OData token renewal's line belongs to its call")
struct AnODataTokenRenewalLineBelongsToItsCallTests {
    enum Trace {
        @TaskLocal static var id: String?
    }

    /// Failed before: the renewal line had no metadata at all (no caller's context, no `fm.request_id`).
    @Test func theRenewalLineCarriesTheCallersContextAndTheRejectedRequest() async throws {
        let provider = FMClarisIDTokenProvider { refresh, done in done(.success(refresh ? "id-token-2" : "id-token-1")) }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: .clarisID(provider))
        configuration.timeout = 3600
        configuration.logMetadataProvider = FMLogMetadataProvider { Trace.id.map { ["trace_id": $0] } ?? [:] }
        let h = Harness(configuration: configuration) { request in
            request.header("Authorization") == "FMID id-token-1" ? .json(401, ODataBodies.badLogin) : .json(200, ODataBodies.collection)
        }
        let odata = FMOData(sharing: h.api)
        let page = try await Trace.$id.withValue("renewed") { try await odata.records(from: "contacts") }
        #expect(page.rows.count == 1)
        let events = h.logs.values
        let renewal = try #require(events.first { $0.message.contains("asking for a new one") }, "\(events.map(\.message))")
        #expect(renewal.level == .warning)
        #expect(renewal.metadata["trace_id"] == "renewed", "\(renewal.metadata)")
        let rejected = try #require(events.first { $0.message.hasPrefix("← ") && $0.metadata["http.response.status_code"] == "401" })
        #expect(renewal.metadata["fm.request_id"] != nil && renewal.metadata["fm.request_id"] == rejected.metadata["fm.request_id"],
                "\(renewal.metadata) vs \(rejected.metadata)")
        #expect(renewal.metadata["fm.endpoint"] == rejected.metadata["fm.endpoint"])
        #expect(renewal.metadata["fm.code"] == rejected.metadata["fm.code"])
        for line in events {
            #expect(line.metadata["trace_id"] == "renewed", "\(line.message) \(line.metadata)")
        }
        #expect(events.filter { $0.level == .error }.isEmpty, "a renewed token is no failure: \(events.map { "[\($0.level)] \($0.message)" })")
    }
}

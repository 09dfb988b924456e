import Foundation
import Testing
@testable import SwiftFM

/// ``FMConfiguration/logMetadataProvider`` is read once per call, as it begins, and never again for that call: not for a
/// retry after a transient failure, not for the replay after a lost session (952) nor for the login that replay waits
/// for, not for an OData request sent again with a renewed Claris ID token, not for a container download's redirect hops
/// nor a callback walk's next pages (once per operation); every line of it carries what that one read returned.
/// (Held on main when written; kept as the rule's guard.)
@Suite("Log metadata: the provider is read once per call or operation")
struct TheLogMetadataProviderIsReadOncePerOperationTests {
    final class Reads: @unchecked Sendable {
        let count = Locked(0)
        lazy var provider = FMLogMetadataProvider { [count] in
            let n = count.withLock { $0 += 1; return $0 }
            return ["read": String(n)]
        }
    }

    static func configuration(_ reads: Reads, credentials: FMCredentials? = .basic(username: "admin", password: "s3cret-pass")) -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: credentials)
        configuration.timeout = 3600
        configuration.logMetadataProvider = reads.provider
        return configuration
    }

    static func expectOneRead(_ reads: Reads, _ events: [FMLogEvent], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reads.count.withLock { $0 } == 1, sourceLocation: sourceLocation)
        let lines = events.filter { $0.metadata["fm.request_id"] != nil && $0.metadata["fm.endpoint"] != "POST sessions" }
        #expect(!lines.isEmpty, sourceLocation: sourceLocation)
        for line in lines { #expect(line.metadata["read"] == "1", "\(line.message) \(line.metadata)", sourceLocation: sourceLocation) }
    }

    @Test func aCallRetriedAndReplayedAfterALostSession() async throws {
        let reads = Reads()
        let page = ACallsLinesCarryTheCallersLogContextTests.page(records: 1, found: 1)
        let served = Locked(0)
        let h = Harness(configuration: Self.configuration(reads), store: FMMemoryTokenStore(FMStoredToken(token: "old-token", expiry: .distantFuture))) { request in
            if request.url?.path.hasSuffix("/sessions") == true { return .json(200, Bodies.login()) }
            switch served.withLock({ $0 += 1; return $0 }) {
            case 1: return .json(401, Bodies.expired)
            case 2: return .json(503, "")
            default: return .json(200, page)
            }
        }
        h.api.retryJitter.withLock { $0 = { _ in 0 } }
        _ = try await h.api.getRecords(layout: "Contacts", limit: 1)
        #expect(served.withLock { $0 } == 3)
        Self.expectOneRead(reads, h.logs.values)
        #expect(h.logs.values.contains { $0.message.contains("replaying once") && $0.metadata["read"] == "1" })
        #expect(h.logs.values.contains { $0.message.contains("retry") && $0.metadata["read"] == "1" }, "\(h.logs.values.map(\.message))")
    }

    @Test func anODataCallWithARenewedToken() async throws {
        let reads = Reads()
        let provider = FMClarisIDTokenProvider { refresh, done in done(.success(refresh ? "id-token-2" : "id-token-1")) }
        let h = Harness(configuration: Self.configuration(reads, credentials: .clarisID(provider))) { request in
            request.header("Authorization") == "FMID id-token-1" ? .json(401, ODataBodies.badLogin) : .json(200, ODataBodies.collection)
        }
        _ = try await FMOData(sharing: h.api).records(from: "contacts")
        #expect(h.stub.requests.count == 2)
        Self.expectOneRead(reads, h.logs.values)
    }

    @Test func aDownloadsHopsAndAWalksPages() async throws {
        let reads = Reads()
        let h = Harness(configuration: Self.configuration(reads), store: FirstContactRuleTests.loggedIn) { request in
            guard let url = request.url else { return nil }
            if url.path.contains("Streaming") {
                let n = Int(url.lastPathComponent.dropFirst("hop".count)) ?? 0
                return n < 3 ? .json(302, "", headers: ["Location": "https://fms.example.com/Streaming_SSL/MainDB/hop\(n + 1)"])
                    : .body(200, Data("bytes".utf8), contentType: "application/octet-stream")
            }
            return .json(200, ACallsLinesCarryTheCallersLogContextTests.page(records: 2, found: 10))
        }
        let done = Recorder<String>()
        h.api.downloadContainer(url: URL(string: "https://fms.example.com/Streaming_SSL/MainDB/hop0")!) { _, code in done.record(code) }
        #expect(await done.value().first == "0")
        Self.expectOneRead(reads, h.logs.values)

        let walked = Recorder<String>()
        let before = h.logs.values.count
        reads.count.withLock { $0 = 0 }
        h.api.forEachPage(layout: "Contacts", pageSize: 2, page: { _ in true }) { _, code in walked.record(code) }
        #expect(await walked.value().first == FMError.ClientCode.malformedResponse)   // the same page a third time
        Self.expectOneRead(reads, Array(h.logs.values.dropFirst(before)))
    }
}

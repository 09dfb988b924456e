import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The hand-over of ResultHandoverTests, on the paths it did not cover: a page of a walk (the async sequence
// `pages` and the callback `forEachPage` both fetch through `PageSource.fetch`), a found-set read of the async
// surface (`bridgeRead`: getRecords, getRecord, find), and a call outside the pipeline (`OneShot`).
// Each check reads `isKnownUniquelyReferenced` inside the completion, synchronously: what the completion got is
// the only reference when nothing upstream still holds the value while it runs.

@Suite("Result hand-over, other paths")
struct ResultHandoverAttackTests {
    private static let endpoint = HandoverFixture.endpoint
    private static func harness() -> Harness { HandoverFixture.harness() }

    /// Whether `result` holds the only reference to its value (`nil` for a failure).
    private static func unique(_ result: consuming Result<Counted?, FMError>) -> Bool? {
        guard var value = try? (consume result).get() else { return nil }
        return isKnownUniquelyReferenced(&value)
    }

    /// A page of a walk (`pages(layout:…)`, `forEachPage`): `PageSource.fetch` hands its completion the
    /// only reference.
    @Test func aPageOfAWalkIsHandedOver() async {
        let h = Self.harness()
        let source = PageSource<Counted>(api: h.api, pageSize: 1, invalid: nil, endpoint: { _, _ in Self.endpoint },
                                         counts: { _ in (1, 1) }, ids: { _ in [] })
        let unique = Recorder<Bool?>()
        source.fetch(offset: 1, handle: nil, requestID: h.api.context.newRequestID()) { (result: consuming Result<Counted?, FMError>) in
            unique.record(Self.unique(result))
        }
        #expect(await unique.value().first ?? nil == true)
    }

    /// The async page sequence returns the only reference to each page.
    @Test func theAsyncPageSequenceReturnsTheOnlyReference() async throws {
        let h = Self.harness()
        let source = PageSource<Counted>(api: h.api, pageSize: 1, invalid: nil, endpoint: { _, _ in Self.endpoint },
                                         counts: { _ in (1, 2) }, ids: { _ in [] })
        var pages = FMPages(source: source).makeAsyncIterator()
        for _ in 0..<2 {
            var page = try await pages.next()
            #expect(page != nil && isKnownUniquelyReferenced(&page!))
        }
    }

    /// A found-set read of the async surface (getRecords, getRecord, find) returns the only reference.
    @Test func anAsyncFoundSetReadReturnsTheOnlyReference() async throws {
        let h = Self.harness()
        for _ in 0..<20 {
            var found = try await h.api.bridgeRead(Self.endpoint)
            #expect(isKnownUniquelyReferenced(&found))
        }
    }

    /// A call outside the pipeline (`OneShot`: `complete`, a login asked for directly) delivered inline.
    @Test func aOneShotHandsItsResultOver() async {
        let unique = Recorder<Bool?>()
        let call = OneShot<Counted?>(queue: nil) { (result: consuming Result<Counted?, FMError>) in
            unique.record(Self.unique(result))
        }
        call.finish(.success(Counted()))
        #expect(await unique.value().first ?? nil == true)
    }
}

/// The body of an answer, as a container download or a raw found set's `rawResponse` carries it.
@Suite("Result hand-over, the answer's bytes")
struct ResultHandoverBodyTests {
    /// Whether `data` holds the only reference to its bytes: writing to a shared buffer copies it first.
    private static func ownsItsBytes(_ data: inout Data) -> Bool {
        let before = data.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        data[0] ^= 1
        return before == data.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
    }

    @Test(arguments: [true, false]) func theBodyIsHandedOver(inline: Bool) async {
        let body = String(repeating: "x", count: 4096)
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in
            .json(200, Bodies.value(body))
        }
        let endpoint = Endpoint<Data>(.get, .database, ["layouts", "Contacts", "records"], auth: .session) { $0.body }
        let owns = Recorder<Bool?>()
        var options = CallOptions()
        options.inline = inline
        h.api.perform(endpoint, options: options) { (result: consuming Result<Data, FMError>) in
            guard var data = try? (consume result).get() else { return owns.record(nil) }
            owns.record(Self.ownsItsBytes(&data))
        }
        #expect(await owns.value().first ?? nil == true)
    }

    /// A container downloaded into memory (`downloadContainer(url:)`, async and callback): the hop's bytes
    /// reach the completion unshared.
    @Test func aContainerDownloadIsHandedOver() async throws {
        let body = String(repeating: "y", count: 4096)
        let h = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in
            .json(200, body)
        }
        let url = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/1.png"))
        let owns = Recorder<Bool?>()
        _ = h.api.followContainer(url: url, cookie: nil, hopsLeft: 1) { (result: consuming Result<Data, FMError>, _: UInt64) in
            guard var data = try? (consume result).get() else { return owns.record(nil) }
            owns.record(Self.ownsItsBytes(&data))
        }
        #expect(await owns.value().first ?? nil == true)
    }
}

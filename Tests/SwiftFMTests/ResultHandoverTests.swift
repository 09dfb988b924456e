import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A result is handed over, not shared: when the completion (inline for the async bridge, or on the callback
// queue) receives a call's value, SwiftFM holds no other reference to it. What the caller drops is freed by the
// caller, then and there, never afterwards on one of SwiftFM's threads, where freeing a large found set would
// hold up the transport's other transfers (and be charged to whatever runs next).

/// A decoded value whose references can be counted; it can stand for a page or a found set.
final class Counted: @unchecked Sendable, EmptiableFoundSet {
    static var empty: Counted { Counted() }
}

/// The hand-over tests' fixture: a DataAPI whose session is open and whose server answers every read, and an
/// endpoint that decodes each answer into a fresh ``Counted``.
enum HandoverFixture {
    static func harness() -> Harness {
        Harness(store: FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture))) { _ in
            .json(200, Bodies.value("x"))
        }
    }

    static let endpoint = Endpoint<Counted>(.get, .database, ["layouts", "Contacts", "records"], auth: .session) { _ in
        Counted()
    }
}

@Suite("Result hand-over")
struct ResultHandoverTests {
    private static let endpoint = HandoverFixture.endpoint
    private static func harness() -> Harness { HandoverFixture.harness() }

    /// Whether the completion's value was the only reference, read inside the completion.
    private static func holdsTheOnlyReference(_ h: Harness, inline: Bool) async -> Bool? {
        let unique = Recorder<Bool?>()
        var options = CallOptions()
        options.inline = inline
        h.api.perform(endpoint, options: options) { (result: consuming Result<Counted, FMError>) in
            var payload = try? (consume result).get()
            unique.record(payload == nil ? nil : isKnownUniquelyReferenced(&payload!))
        }
        return await unique.value().first ?? nil
    }

    @Test func anInlineCompletionGetsTheOnlyReference() async {
        #expect(await Self.holdsTheOnlyReference(Self.harness(), inline: true) == true)
    }

    @Test func aCompletionOnTheCallbackQueueGetsTheOnlyReference() async {
        #expect(await Self.holdsTheOnlyReference(Self.harness(), inline: false) == true)
    }

    @Test func theAsyncBridgeReturnsTheOnlyReference() async throws {
        let h = Self.harness()
        for _ in 0..<20 {
            var payload = try await h.api.bridge(Self.endpoint)
            #expect(isKnownUniquelyReferenced(&payload))
        }
    }

    /// An FMOData call, inline and on the callback queue: the same hand-over through its credentials step.
    @Test(arguments: [true, false]) func anODataCompletionGetsTheOnlyReference(inline: Bool) async {
        let h = ODataHarness { _ in .json(200, #"{"value":[]}"#) }
        let call = ODataCall<Counted>(method: .get, path: "Contacts", kind: "{set}") { _ in Counted() }
        let unique = Recorder<Bool?>()
        h.odata.send(call, inline: inline) { (result: consuming Result<Counted, FMError>) in
            var payload = try? (consume result).get()
            unique.record(payload == nil ? nil : isKnownUniquelyReferenced(&payload!))
        }
        #expect(await unique.value().first ?? nil == true)
    }
}

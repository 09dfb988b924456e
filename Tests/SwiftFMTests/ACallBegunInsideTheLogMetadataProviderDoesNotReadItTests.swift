import Foundation
import Testing
@testable import SwiftFM

/// ``FMLogMetadataProvider/metadata()`` is the caller's code, run synchronously as a call begins: a call it begins
/// itself (a lookup through the same client, directly or in a task it starts) does not read the provider again, and
/// carries no caller's context, so a provider that uses SwiftFM cannot recurse without end (each call reading the
/// provider, which begins a call, which reads the provider, … until the stack overflows, or without end in tasks). The
/// outer call still carries what the provider returned.
@Suite("Log metadata: a call begun inside the provider does not read it again")
struct ACallBegunInsideTheLogMetadataProviderDoesNotReadItTests {
    final class Box: @unchecked Sendable { var api: DataAPI? }

    /// Failed before: the nested call read the provider again, which began another call, and so on (bounded here at 4
    /// levels, where a provider without a bound overflows the stack).
    @Test func aProviderThatCallsSwiftFMIsReadOncePerOuterCall() async throws {
        let body = ACallsLinesCarryTheCallersLogContextTests.page(records: 1, found: 1)
        let depth = Locked(0), deepest = Locked(0), reads = Locked(0)
        let box = Box()
        let nested = Recorder<String>()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.logMetadataProvider = FMLogMetadataProvider {
            reads.withLock { $0 += 1 }
            let level = depth.withLock { $0 += 1; return $0 }
            deepest.withLock { $0 = max($0, level) }
            defer { depth.withLock { $0 -= 1 } }
            if level < 4, let api = box.api {
                api.getRecords(layout: "Lookup", limit: 1) { _, code in nested.record(code) }
            }
            return ["trace_id": "outer-\(level)"]
        }
        let h = Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        box.api = h.api
        _ = try await h.api.getRecords(layout: "Contacts", limit: 1)
        #expect(deepest.withLock { $0 } == 1, "the provider was read inside itself")
        #expect(reads.withLock { $0 } == 1)
        let codes = await nested.value()
        #expect(codes == ["0"], "the provider's own call completes: \(codes)")
        let outer = h.logs.values.filter { $0.metadata["fm.layout"] == "Contacts" }
        #expect(!outer.isEmpty && outer.allSatisfy { $0.metadata["trace_id"] == "outer-1" }, "\(outer.map(\.metadata))")
        let inner = h.logs.values.filter { $0.metadata["fm.layout"] == "Lookup" }
        #expect(!inner.isEmpty && inner.allSatisfy { $0.metadata["trace_id"] == nil }, "\(inner.map(\.metadata))")
    }

    /// The same from a thread that runs no task (a callback method called on a dispatch queue).
    @Test func fromAThreadWithoutATask() async throws {
        let body = ACallsLinesCarryTheCallersLogContextTests.page(records: 1, found: 1)
        let depth = Locked(0), deepest = Locked(0)
        let box = Box()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.logMetadataProvider = FMLogMetadataProvider {
            let level = depth.withLock { $0 += 1; return $0 }
            deepest.withLock { $0 = max($0, level) }
            defer { depth.withLock { $0 -= 1 } }
            if level < 4, let api = box.api { api.getRecords(layout: "Lookup", limit: 1) { _, _ in } }
            return ["trace_id": "thread"]
        }
        let h = Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn) { _ in .json(200, body) }
        box.api = h.api
        let done = Recorder<String>()
        DispatchQueue(label: "no task").async {
            h.api.getRecords(layout: "Contacts", limit: 1) { _, code in done.record(code) }
        }
        #expect(await done.value().first == "0")
        #expect(deepest.withLock { $0 } == 1)
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Contract: leaving a secret inside the configured host or database name (the shown-names rule of
/// ``Redaction/scrub(_:secrets:shown:)`` and ``Redaction/scrubCut(_:secrets:shown:)``) costs work in proportion to the
/// text, not to the number of the secret's occurrences times the number of the names' occurrences. A text is any size:
/// a log handler redacts what its logger adds to a line with ``FMLogEvent/redact(_:)``, and a password may be part of
/// the host (`acme` of `fms.acme.com`). Bounded here by a wait on the result that only a cost of that square's order
/// misses (a text with 100,000 occurrences of each).
@Suite("Redacting around the configured names is linear")
struct RedactingAroundTheConfiguredNamesIsLinearTests {
    /// Runs `work` on a thread of its own and waits for it at most `seconds`.
    static func within(_ seconds: Int, _ work: @escaping @Sendable () -> String) -> String? {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<String?>(nil)
        Thread {
            let value = work()
            result.withLock { $0 = value }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return result.withLock { $0 }
    }

    /// Failed before: still running after the bound (each of 100,000 occurrences of the password checked against each
    /// of 100,000 occurrences of the host).
    @Test func aHostHoldingThePasswordManyTimesOverIsLeftWithinTheBound() {
        let text = String(repeating: "fms.acme.com ", count: 100_000) + "pw acme"
        let expected = String(repeating: "fms.acme.com ", count: 100_000) + "pw " + Redaction.placeholder
        let result = Self.within(60) { Redaction.scrub(text, secrets: ["acme"], shown: ["fms.acme.com"]) }
        #expect(result.map { $0 == expected } == true, "\(result == nil ? "still running after 60 s" : "not as expected")")
    }

    /// Failed before: still running after the bound (each of 100,000 hidden starts before a `…` checked against each of
    /// 100,000 starts of the host there).
    @Test func manyCutsInsideAHostAreHandledWithinTheBound() {
        let text = String(repeating: "acm…", count: 100_000)
        let expected = String(repeating: Redaction.placeholder + "…", count: 100_000)
        let result = Self.within(60) { Redaction.scrubCut(text, secrets: ["acme-1"], shown: ["acme.com"]) }
        #expect(result.map { $0 == expected } == true, "\(result == nil ? "still running after 60 s" : "not as expected")")
    }
}

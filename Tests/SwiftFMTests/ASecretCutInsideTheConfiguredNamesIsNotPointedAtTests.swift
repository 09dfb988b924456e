import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Contract: the shown-names rule (``Redaction/scrub(_:secrets:shown:)``: a secret inside the configured host or database
/// name is left there, not pointed at) holds for a text a limit cut inside such a name (`fms.acm…` of `fms.acme.com`,
/// whose password is `acme`): the start of a known name just before a `…` is that name, cut, so the start of a secret
/// inside it (`acm`) and a whole secret inside it (`fms.acme.co…`) are left there. The known name's start must be longer
/// than the part of the secret it holds: a cut text that is the secret's start and no more (`password acm…`, or
/// `acme…` where the host is `acme.com`) still hides it, since nothing of a known name around it is left to point from.
@Suite("A secret cut inside the configured names is not pointed at")
struct ASecretCutInsideTheConfiguredNamesIsNotPointedAtTests {
    static let p = Redaction.placeholder

    /// Failed before: `cannot reach fms.<redacted>…` and `cannot reach fms.<redacted>.co…`.
    @Test func aSecretInsideAShownNameCutThereIsLeft() {
        let shown = ["fms.acme.com", "Sales"]
        #expect(Redaction.scrubCut("cannot reach fms.acm…", secrets: ["acme"], shown: shown) == "cannot reach fms.acm…")
        #expect(Redaction.scrubCut("cannot reach fms.acme.co…", secrets: ["acme"], shown: shown) == "cannot reach fms.acme.co…")
        #expect(Redaction.scrub("cannot reach fms.acme.co…", secrets: ["acme"], shown: shown) == "cannot reach fms.acme.co…")
        // Wherever else the same text holds the secret, it is hidden.
        #expect(Redaction.scrubCut("password acme; fms.acm…", secrets: ["acme"], shown: shown) == "password \(Self.p); fms.acm…")
    }

    /// Held: the start of a secret before a cut, and a secret there, are hidden when no longer start of a known name holds them.
    @Test func aSecretCutOutsideTheShownNamesIsHidden() {
        #expect(Redaction.scrubCut("password acm…", secrets: ["acme"], shown: ["fms.acme.com"]) == "password \(Self.p)…")
        #expect(Redaction.scrubCut("password acm…", secrets: ["acme"], shown: ["acme.com"]) == "password \(Self.p)…")
        #expect(Redaction.scrub("password acme…", secrets: ["acme"], shown: ["acme.com"]) == "password \(Self.p)…")
        #expect(Redaction.scrubCut("fms.acmx.acm…", secrets: ["acme"], shown: ["fms.acme.com"]) == "fms.acmx.\(Self.p)…")
        #expect(Redaction.scrubCut("x fms.acm…", secrets: ["acme"], shown: []) == "x fms.\(Self.p)…")
    }

    /// Failed before: a FileMaker message that a cut ended inside the configured host showed `fms.<redacted>…` in the error
    /// the call completed with and in the client's lines.
    @Test func aClientsErrorCutInsideItsHostNamesIt() {
        let padding = String(repeating: "x", count: 600 - "fms.acm".count)
        let stub = StubTransport { request in
            guard request.url?.path.hasSuffix("/sessions") == true else { return .json(200, Bodies.value("ok")) }
            return .json(401, #"{"messages":[{"code":"212","message":"\#(padding)fms.acme.com refused the account"}],"response":{}}"#)
        }
        let configuration = FMConfiguration(host: "https://fms.acme.com", database: "Sales", username: "admin", password: "acme")
        let lines = Locked<[FMLogEvent]>([])
        let api = DataAPI(configuration: configuration, transport: stub, logger: { event in lines.withLock { $0.append(event) } })
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        guard case .failure(let error)? = call.wait().first else { Issue.record("the call did not fail"); return }
        #expect(error.message.contains("\(padding)fms.acm…"), "\(error.message)")
        let everything = ([error.message, error.underlying ?? "", error.description] + lines.value.flatMap { [$0.message] + Array($0.metadata.values) })
            .joined(separator: "\n")
        #expect(!everything.contains("fms.\(Self.p)"), "\(everything)")
    }
}

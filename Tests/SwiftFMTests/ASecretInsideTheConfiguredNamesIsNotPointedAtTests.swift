import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Contract: a secret that is part of a name the reader knows already (the client's configured host or database) is
/// left as it is inside that name: redacting it there would say which part of a known name the secret is (the
/// password `acme` of `fms.acme.com` shown as `fms.<redacted>.com`). Everywhere else in the same text (a server echoing
/// the password, a line naming it) it is still redacted, in log lines and in the errors calls complete with.
@Suite("A secret inside the configured names is not pointed at")
struct ASecretInsideTheConfiguredNamesIsNotPointedAtTests {
    static let p = Redaction.placeholder

    @Test func aSecretInsideAShownNameIsLeftThereOnly() {
        let text = "cannot reach fms.acme.com: password acme rejected (acme)"
        #expect(Redaction.scrub(text, secrets: ["acme"], shown: ["fms.acme.com"])
                == "cannot reach fms.acme.com: password \(Self.p) rejected (\(Self.p))")
        // A secret longer than the name, or overlapping its edge, is redacted whole.
        #expect(Redaction.scrub("x fms.acme.com-2024 y", secrets: ["fms.acme.com-2024"], shown: ["fms.acme.com"]) == "x \(Self.p) y")
        #expect(Redaction.scrub("x fms.acme.comet y", secrets: ["comet"], shown: ["fms.acme.com"]) == "x fms.acme.\(Self.p) y")
        #expect(Redaction.scrub("abc", secrets: ["acme"], shown: [""]) == "abc")
    }

    /// Failed before: the error and the log lines of a call to `fms.acme.com` with the password `acme` said
    /// `fms.<redacted>.com`, and a server's echo of the password was redacted (held).
    @Test func aClientsLinesAndErrorsNameItsHost() {
        let stub = StubTransport { request in
            guard request.url?.path.hasSuffix("/sessions") == true else { return .json(200, Bodies.value("ok")) }
            return .json(401, #"{"messages":[{"code":"212","message":"Invalid user account and/or password acme; please try again"}],"response":{}}"#)
        }
        let configuration = FMConfiguration(host: "https://fms.acme.com", database: "Sales", username: "admin", password: "acme")
        let lines = Locked<[FMLogEvent]>([])
        let api = DataAPI(configuration: configuration, transport: stub, logger: { event in lines.withLock { $0.append(event) } })
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        guard case .failure(let error)? = call.wait().first else { Issue.record("the call did not fail"); return }
        let everything = ([error.message, error.underlying ?? ""] + lines.value.flatMap { [$0.message] + Array($0.metadata.values) })
            .joined(separator: "\n")
        #expect(!everything.contains("\(Self.p).com"), "\(everything)")
        #expect(everything.contains("password \(Self.p);"), "\(everything)")
        #expect(!everything.contains("password acme"), "\(everything)")
    }
}

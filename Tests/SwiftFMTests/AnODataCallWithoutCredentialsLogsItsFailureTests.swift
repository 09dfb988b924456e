import Foundation
import Testing
@testable import SwiftFM

/// An OData call that fails before it is sent because it has no credentials to send (its Claris ID token provider
/// failed, or the configuration has none OData can use: `-1001`) is a failed call like one refused for an argument that
/// cannot be sent, and so is one whose deadline passes while its token is awaited (`-1004`): it logs one error line, `KIND not sent: ERROR`, with `fm.request_id` (the number drawn for it, as its
/// span's), `fm.endpoint`, `fm.code` and the caller's logging context; nothing is sent. So a walk whose next page's token
/// cannot be had says why it ended, as every other failed walk does.
@Suite("Log metadata: an OData call without credentials logs its failure")
struct AnODataCallWithoutCredentialsLogsItsFailureTests {
    static func harness(_ credentials: FMCredentials?) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: credentials)
        configuration.timeout = 3600
        configuration.logMetadataProvider = FMLogMetadataProvider { ["trace_id": "no-credentials"] }
        return Harness(configuration: configuration) { _ in nil }
    }

    static let failing = FMClarisIDTokenProvider { _, done in
        done(.failure(FMError(code: FMError.ClientCode.signInFailed, message: "no")))
    }

    /// Failed before: the call completed with its code and logged no line at all.
    @Test(arguments: [(FMCredentials.clarisID(failing), FMError.ClientCode.signInFailed),
                      (FMCredentials.oauth(requestId: "r", identifier: "i"), FMError.ClientCode.invalidConfiguration)])
    func oneErrorLineNamesTheCall(_ credentials: FMCredentials, _ code: String) async {
        let h = Self.harness(credentials)
        let done = Recorder<String>()
        FMOData(sharing: h.api).records(from: "contacts") { _, code in done.record(code) }
        #expect(await done.value().first == code)
        #expect(h.stub.requests.isEmpty)
        h.drain()
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.count == 1, "\(h.logs.values.map(\.message))")
        let line = errors.first
        #expect(line?.message.hasPrefix("GET odata/{set} not sent:") == true, "\(String(describing: line?.message))")
        #expect(line?.metadata["fm.code"] == code)
        #expect(line?.metadata["fm.endpoint"] == "GET odata/{set}")
        #expect(line?.metadata["fm.request_id"] != nil)
        #expect(line?.metadata["trace_id"] == "no-credentials", "\(String(describing: line?.metadata))")
    }

    /// Failed before: the call completed with -1004 and logged no line at all (a Data API call whose deadline passes
    /// while it waits for its session says so at error).
    @Test func aDeadlinePassingWhileTheTokenIsAwaitedLogsOneErrorLine() async {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts",
                                            credentials: .clarisID(FMClarisIDTokenProvider { _, _ in }))   // never answers
        configuration.timeout = 0.2
        configuration.logMetadataProvider = FMLogMetadataProvider { ["trace_id": "no-token"] }
        let h = Harness(configuration: configuration) { _ in nil }
        let done = Recorder<String>()
        FMOData(sharing: h.api).records(from: "contacts") { _, code in done.record(code) }
        #expect(await done.value().first == FMError.ClientCode.timeout)
        h.drain()
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.count == 1, "\(h.logs.values.map(\.message))")
        #expect(errors.first?.metadata["fm.code"] == FMError.ClientCode.timeout)
        #expect(errors.first?.metadata["fm.request_id"] != nil)
        #expect(errors.first?.metadata["trace_id"] == "no-token", "\(String(describing: errors.first?.metadata))")
    }
}

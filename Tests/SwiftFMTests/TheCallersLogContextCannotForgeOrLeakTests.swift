import Foundation
import Testing
@testable import SwiftFM

/// What ``FMConfiguration/logMetadataProvider`` returns is the caller's, and reaches a line only as the caller's:
/// - it is redacted like the rest of the line, its keys as well as its values: a password, a Basic value or a session
///   token never reaches a line through the provider (a key of the caller's own making may hold one too);
/// - SwiftFM's keys (`fm.request_id`, `fm.endpoint`, `fm.layout`, `fm.table`, `fm.code`, `http.response.status_code`) are
///   SwiftFM's alone, on every line: a provider's value under one of them is dropped, also on the lines where SwiftFM
///   does not set that key (a request line has no `fm.code`, a container download no `fm.layout`), so that a reader or an
///   alert keyed on `fm.code` never counts a value the caller made up.
@Suite("Log metadata: the caller's context can neither forge SwiftFM's keys nor leak a secret")
struct TheCallersLogContextCannotForgeOrLeakTests {
    static let reserved = ["fm.request_id", "fm.endpoint", "fm.layout", "fm.table", "fm.code", "http.response.status_code"]

    static func harness(_ provider: FMLogMetadataProvider, _ handler: @escaping StubTransport.Handler) -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.logMetadataProvider = provider
        return Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: token, expiry: .distantFuture)), handler)
    }

    static let token = "session-token-0123456789"
    static let page = ACallsLinesCarryTheCallersLogContextTests.page(records: 1, found: 1)

    /// Failed before: the `→` lines carried the provider's `fm.code` ("952") and `http.response.status_code`, the
    /// download's lines its `fm.layout`, the Data API lines its `fm.table`.
    @Test func aProvidersValueUnderSwiftFMsKeysReachesNoLine() async throws {
        let forged = Dictionary(uniqueKeysWithValues: Self.reserved.map { ($0, "forged") }).merging(["tenant": "acme"]) { a, _ in a }
        let h = Self.harness(FMLogMetadataProvider { forged }) { request in
            (request.url?.path ?? "").contains("Streaming") ? .body(200, Data("bytes".utf8), contentType: "application/octet-stream")
                : .json(200, Self.page)
        }
        _ = try await h.api.getRecords(layout: "Contacts", limit: 1)
        _ = try await h.api.downloadContainer(url: URL(string: "https://fms.example.com/Streaming_SSL/MainDB/photo.bin")!)
        let lines = h.logs.values.filter { $0.metadata["fm.request_id"] != nil }
        #expect(lines.count >= 4, "\(lines.map(\.message))")
        for line in lines {
            #expect(line.metadata["tenant"] == "acme", "\(line.message) \(line.metadata)")
            for key in Self.reserved {
                #expect(line.metadata[key] != "forged", "\(line.message): \(key) \(line.metadata)")
            }
        }
    }

    /// Failed before: a key holding the password, the Basic value or the session token reached the lines as it was
    /// (the values were redacted, the keys were not).
    @Test func noSecretReachesALineThroughTheProvidersKeysOrValues() async throws {
        let basic = Data("admin:s3cret-pass".utf8).base64EncodedString()
        let token = Self.token
        let secrets = ["s3cret-pass", basic, token]
        let h = Self.harness(FMLogMetadataProvider {
            ["password": "s3cret-pass", "auth": "Basic \(basic)", "session": token,
             "key-s3cret-pass": "1", "Basic \(basic)": "2", "t.\(token)": "3", "trace_id": "t-1"]
        }) { _ in .json(200, Self.page) }
        _ = try await h.api.getRecords(layout: "Contacts", limit: 1)
        let lines = h.logs.values.filter { $0.metadata["fm.request_id"] != nil }
        #expect(lines.count >= 2, "\(lines.map(\.message))")
        for line in lines {
            #expect(line.metadata["trace_id"] == "t-1")
            for (key, value) in line.metadata {
                for secret in secrets {
                    #expect(!key.contains(secret) && !value.contains(secret), "\(line.message): \(key) = \(value)")
                }
            }
        }
    }
}

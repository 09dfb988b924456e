import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: `FMConfiguration.host` has a scheme only when it starts with one (`scheme://`, as `Redaction.host` reads
// it); a `://` further on — in a query, a fragment or a path — is part of what follows and changes nothing. A host's
// query and fragment are never sent (they are dropped, as they always were), so a host that holds a URL in them
// resolves to the same base URL as the host without it. Before, any `://` in the host was taken for the scheme's:
// `fms.example.com/?next=https://x` was refused as an invalid host while `fms.example.com/?next=x` was accepted.
// A host that cannot be used is refused (`-1001`) with a message that says what is wrong with it — not a URL, a scheme
// other than http(s), no host name, user info, a port out of range — showing the host as `Redaction.host` does:
// never its user info, password, query or fragment. Every surface that resolves the host (the Data API, OData, a
// request built for either) says the same.
@Suite("A host's scheme is the one it starts with; an unusable host says what is wrong with it")
struct AHostIsReadByTheSchemeItStartsWithTests {
    private static func base(_ host: String) -> Result<URLComponents, FMError> {
        FMConfiguration(host: host, database: "Music", username: "admin", password: "pw").resolvedBase()
    }

    /// Failed before (the first of each pair): `-1001` "Invalid host", where the second was accepted.
    @Test(arguments: [
        ("fms.example.com/?next=https://other.example.com", "fms.example.com/?next=other"),
        ("fms.example.com?u=http://x", "fms.example.com?u=x"),
        ("fms.example.com:8443#a://b", "fms.example.com:8443#ab"),
        ("fms.example.com/prefix?to=https://x/y", "fms.example.com/prefix"),
    ])
    func aLaterSchemeSeparatorChangesNothing(_ host: String, _ without: String) throws {
        let resolved = try Self.base(host).get()
        let expected = try Self.base(without).get()
        #expect(resolved.url == expected.url, "\(host): \(String(describing: resolved.url)) \(String(describing: expected.url))")
        #expect(resolved.scheme == "https" && resolved.host == "fms.example.com", "\(host)")
        #expect(resolved.query == nil && resolved.fragment == nil, "\(host)")
    }

    /// Held: a host that starts with its scheme keeps reading so, a later `://` in its fragment or query changing nothing.
    @Test func aLeadingSchemeWithALaterOneIsAccepted() throws {
        let resolved = try Self.base("http://fms.example.com:8080/p#a://b").get()
        #expect(resolved.url?.absoluteString == "http://fms.example.com:8080/p", "\(String(describing: resolved.url))")
        let query = try Self.base("HTTPS://fms.example.com/p?next=https://x").get()
        #expect(query.url?.absoluteString == "https://fms.example.com/p", "\(String(describing: query.url))")
    }

    /// Failed before: the legacy settings (`fm-host`, `fm-db-path`) with a URL in their query were no host at all.
    @Test func theLegacySettingsReadTheSameRule() throws {
        let host = try #require(LegacyEnvironment.parseHost("fms.example.com:8443/?next=https://other.example.com"))
        #expect(host == LegacyEnvironment.parseHost("fms.example.com:8443/?next=other"))
        #expect(host.absoluteString == "https://fms.example.com:8443", "\(host)")
        let path = try #require(LegacyEnvironment.parseDatabasePath("fms.example.com/fmi/data/v1/databases/Music?next=https://x"))
        #expect(path.server.absoluteString == "https://fms.example.com" && path.database == "Music", "\(path.server)")
    }

    /// Failed before: the request of a host with a URL in its query was never sent (`-1001`).
    @Test func aCallGoesToTheHostAndSendsNoneOfItsQuery() async throws {
        var configuration = FMConfiguration(host: "fms.example.com/?next=https://other.example.com", database: "Contacts",
                                            username: "admin", password: "s3cret-pass")
        configuration.retry = .none
        let h = Harness(configuration: configuration) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("ok"))
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        #expect(await done.value().first?.testValue == "ok")
        for request in h.stub.requests {
            #expect(request.url?.host == "fms.example.com", "\(String(describing: request.url))")
            #expect(!(request.url?.absoluteString.contains("other.example.com") ?? true), "\(String(describing: request.url))")
        }
    }

    /// Failed before: each message was the bare "Invalid host: HOST" (or, for the user info hidden behind a later `://`,
    /// said nothing of it), so the reader had to guess what was wrong.
    @Test(arguments: [
        ("ftp://fms.example.com?key=hunter2-secret", "scheme"),
        ("ftp://admin:hunter2-secret@fms.example.com", "scheme"),
        ("https://admin:hunter2-secret@fms.example.com", "user info"),
        ("admin:hunter2-secret@fms.example.com/?next=https://other.example.com", "user info"),
        ("hunter2-secret@fms.example.com#x://y", "user info"),
        ("https://", "no host name"),
        ("http://:8443/x?key=hunter2-secret", "no host name"),
        ("fms example.com/?key=hunter2-secret", "cannot be read as a URL"),
        ("fms.example.com:99999/?key=hunter2-secret", "port"),
        ("https://fms.example.com:0#hunter2-secret", "port"),
    ])
    func anUnusableHostSaysWhatIsWrong(_ host: String, _ words: String) throws {
        guard case .failure(let error) = Self.base(host) else {
            Issue.record("\(host) was accepted")
            return
        }
        #expect(error.code == FMError.ClientCode.invalidConfiguration)
        #expect(error.message.hasPrefix("Invalid host \"\(Redaction.host(host))\": "), "\(error.message)")
        #expect(error.message.contains(words), "\(error.message)")
        for secret in ["hunter2-secret", "admin"] {
            #expect(!error.description.contains(secret), "\(error)")
        }
    }

    /// Failed before: an OData call and a request built for it said only "Invalid host: HOST", whatever was wrong.
    @Test func everySurfaceSaysTheSame() async throws {
        let host = "ftp://fms.example.com?key=hunter2-secret"
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "pw")
        guard case .failure(let expected) = configuration.resolvedBase() else {
            Issue.record("accepted")
            return
        }
        #expect(expected.message.contains("scheme"), "\(expected.message)")
        let h = Harness(configuration: configuration) { _ in .json(200, Bodies.ok) }
        do {
            _ = try await FMOData(sharing: h.api).records(from: "contacts")
            Issue.record("an OData call to an unusable host succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.invalidConfiguration)
            #expect(error.message == expected.message, "\(error.message)")
        }
        let odata = Endpoint<String>(.get, .odata("Music/contacts", kind: "{set}"), []) { _ in "" }
        guard case .failure(let built) = RequestBuilder.url(for: odata, configuration: configuration) else {
            Issue.record("a URL was built")
            return
        }
        #expect(built.message == expected.message, "\(built.message)")
        #expect(h.stub.requests.isEmpty)
    }
}

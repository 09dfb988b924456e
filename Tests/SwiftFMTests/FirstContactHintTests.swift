import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// What a new user's first mistakes print says what went wrong and what to check: a wrong port or host name
/// said "connection refused" or "no such host" and that it was not retried, but not what to look at; a wrong
/// password or misspelt database name read "Invalid user account and/or password; please try again" or
/// "Unable to open file" (HTTP 500), which named neither the database nor the setting to fix.
@Suite("First-contact messages say what to check")
struct FirstContactHintTests {
    static let unknownDatabase = #"{"messages":[{"code":"802","message":"Unable to open file"}],"response":{}}"#

    @Test(arguments: [URLError.Code.cannotConnectToHost, .cannotFindHost])
    func aHostThatNeverAnsweredSaysWhatToCheck(_ failure: URLError.Code) async throws {
        let h = Harness { _ in .failure(failure) }
        let error = try await Self.failure(of: h.api)
        #expect(error.code == FMError.ClientCode.transport)
        #expect(error.message.contains(failure == .cannotConnectToHost ? ": connection refused; " : ": no such host; "), "\(error)")
        #expect(error.message.hasSuffix("not retried: fms.example.com:443 has not answered this client yet: check the host and port "
                                        + "(FMConfiguration.host) and that the server is running there"), "\(error)")
    }

    /// `http://` to a port that speaks only TLS and closes a plain request without a word (IIS, a bare TLS
    /// server; nginx's 400 page is named already) said only "the connection closed before an answer".
    @Test func aPlainRequestClosedByATLSPortSaysToTryHTTPS() async throws {
        let plain = FMConfiguration(host: "http://fms.example.com:443", database: "Music", username: "admin", password: "admin")
        let h = Harness(configuration: plain) { _ in .failure(.networkConnectionLost) }
        let error = try await Self.failure(of: h.api)
        #expect(error.message.contains("closed before an answer"), "\(error)")
        #expect(error.message.hasSuffix("; if that port speaks HTTPS, write the host as https://fms.example.com:443"), "\(error)")
        // Over https, or refused rather than closed, there is no such hint.
        let tls = Harness { _ in .failure(.networkConnectionLost) }
        #expect(try await Self.failure(of: tls.api).message.contains("speaks HTTPS") == false)
        let refused = Harness(configuration: plain) { _ in .failure(.cannotConnectToHost) }
        #expect(try await Self.failure(of: refused.api).message.contains("speaks HTTPS") == false)
    }

    @Test func aWrongPasswordNamesTheDatabaseTheHostAndWhatToCheck() async throws {
        let h = Harness { _ in .json(401, Bodies.badLogin) }
        let error = try await Self.failure(of: h.api)
        #expect(error.code == "212" && error.httpStatus == 401)
        #expect(error.message.hasPrefix("Invalid user account and/or password; please try again; "), "\(error)")
        #expect(error.message.contains("the login to database Contacts on fms.example.com:443 was refused"), "\(error)")
        #expect(error.message.contains("check the account name and password"), "\(error)")
        #expect(!error.message.contains("s3cret-pass"), "\(error)")
        // The callback surface sees the same error.
        let seen = Recorder<(String, String?)>()
        h.api.getRecords(layout: "Artists", limit: 1) { _, code in seen.record((code, FMError.current?.message)) }
        let (code, message) = try #require(await seen.value().first)
        #expect(code == "212" && message == error.message)
    }

    @Test func anUnknownDatabaseNamesItTheHostAndWhatToCheck() async throws {
        let configuration = FMConfiguration(host: "http://127.0.0.1:3000", database: "Musik", username: "admin", password: "admin")
        let h = Harness(configuration: configuration) { _ in .json(500, Self.unknownDatabase) }
        let error = try await Self.failure(of: h.api)
        #expect(error.code == "802" && error.httpStatus == 500)
        #expect(error.message.hasPrefix("Unable to open file; "), "\(error)")
        #expect(error.message.contains("no database Musik is open on 127.0.0.1:3000"), "\(error)")
        #expect(error.message.contains("check FMConfiguration.database"), "\(error)")
    }

    /// Only a refused login is hinted: the same code from another call is FileMaker's answer as it came.
    @Test func aRecordCallAnswered802IsNotHinted() async throws {
        let h = Harness { request in
            request.url?.path.hasSuffix("/sessions") == true ? .json(200, Bodies.login()) : .json(500, Self.unknownDatabase)
        }
        let error = try await Self.failure(of: h.api)
        #expect(error == FMError(code: "802", message: "Unable to open file", httpStatus: 500))
    }

    /// `http://` to a FileMaker Server that redirects plain HTTP to HTTPS (its default on port 80) said only
    /// "The server answered something that is not JSON (HTTP 301)".
    @Test(arguments: [301, 302, 307, 308])
    func aRedirectToHTTPSSaysToWriteHTTPS(_ status: Int) async throws {
        let configuration = FMConfiguration(host: "http://fms.example.com", database: "Music", username: "admin", password: "admin")
        let h = Harness(configuration: configuration) { request in
            .json(status, "<html>Moved</html>", headers: ["Location": "https://fms.example.com" + (request.url?.path ?? "/")])
        }
        let error = try await Self.failure(of: h.api)
        #expect(error.httpStatus == status)
        #expect(error.message.hasPrefix("Wrong scheme: fms.example.com:80 redirects to https://fms.example.com/fmi/data/"), "\(error)")
        #expect(error.message.hasSuffix("write the host as https://fms.example.com"), "\(error)")
    }

    /// A wrong port where another web server answers (404, 405 or 501 with an HTML page) said only "The server
    /// answered something that is not JSON (HTTP 404)", naming neither the host nor what to check.
    @Test(arguments: [404, 405, 501])
    func anotherWebServerOnThePortSaysWhatToCheck(_ status: Int) async throws {
        let configuration = FMConfiguration(host: "http://127.0.0.1:8080", database: "Music", username: "admin", password: "admin")
        let h = Harness(configuration: configuration) { _ in .body(status, Data("<html>Not Found</html>".utf8), contentType: "text/html") }
        let error = try await Self.failure(of: h.api)
        #expect(error.code == FMError.ClientCode.notJSON && error.httpStatus == status)
        #expect(error.message == "No FileMaker Data API at 127.0.0.1:8080: it answered HTTP \(status) with something that is not JSON; "
                + "check the host and port (FMConfiguration.host) and that the Data API is enabled on the server", "\(error)")
        // A proxy's 502 page stays what it is: FileMaker is there, behind it, and away.
        var once = configuration
        once.retry = .none   // a 502 is ridden out until the deadline otherwise
        let proxy = Harness(configuration: once) { _ in .body(502, Data("<html>Bad Gateway</html>".utf8), contentType: "text/html") }
        #expect(try await Self.failure(of: proxy.api) == FMError.notJSON(status: 502))
    }

    /// A redirect elsewhere (not to https), or from an https host, is not hinted; nor is a container's redirect.
    @Test func aRedirectThatIsNotToHTTPSIsNotHinted() async throws {
        let plain = FMConfiguration(host: "http://fms.example.com", database: "Music", username: "admin", password: "admin")
        let h = Harness(configuration: plain) { _ in .json(301, "<html>Moved</html>", headers: ["Location": "http://elsewhere.example.com/"]) }
        #expect(try await Self.failure(of: h.api).message.hasPrefix("Wrong scheme") == false)
        let tls = Harness { _ in .json(301, "<html>Moved</html>", headers: ["Location": "https://elsewhere.example.com/"]) }
        #expect(try await Self.failure(of: tls.api).message.hasPrefix("Wrong scheme") == false)
    }

    /// The logger, "the best debugging aid there is", said `login failed: -1003` and `← POST … failed -1003`
    /// without the cause the call's error carries. The login's lines are warnings (a refused login is transient:
    /// the waiting call decides); the call's end is the error, with the cause.
    @Test func theLogSaysWhyALoginFailed() async throws {
        let h = Harness { _ in .failure(.cannotConnectToHost) }
        _ = try await Self.failure(of: h.api)
        let lines = h.logs.values.map(\.message)
        #expect(lines.contains { $0.hasPrefix("← POST") && $0.contains("-1003") && $0.contains("fms.example.com:443") && $0.contains("connection refused") },
                "\(lines)")
        #expect(lines.contains { $0.hasPrefix("login failed: -1003") && $0.contains("connection refused") }, "\(lines)")
        let errors = h.logs.values.filter { $0.level == .error }.map(\.message)
        #expect(errors.count == 1 && errors.first?.contains("not sent, its login failed: -1003") == true
                && errors.first?.contains("fms.example.com:443") == true && errors.first?.contains("connection refused") == true, "\(errors)")
        #expect(!lines.joined().contains("s3cret-pass"))
    }

    /// A server key that matches none of the pins said "…matches none of FMConfiguration.tls.pinnedPublicKeys. Add its
    /// certificate authority to the system trust store …": a remedy for an untrusted authority, which cannot help a pin.
    @Test func aPinMismatchDoesNotSayToTrustTheAuthority() {
        let curl = URLError(.serverCertificateUntrusted, userInfo: [NSLocalizedDescriptionKey:
            "curl 90: SSL: public key does not match pinned public key — the public key of fms.example.com matches none of FMConfiguration.tls.pinnedPublicKeys"])
        let error = FMError.fromTransport(curl, url: URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo"))
        #expect(error.message.contains("matches none of FMConfiguration.tls.pinnedPublicKeys"), "\(error)")
        #expect(!error.message.contains("trust store"), "\(error)")
        // An authority nobody trusts still gets the trust store remedy.
        let untrusted = URLError(.serverCertificateUntrusted, userInfo: [NSLocalizedDescriptionKey: "curl 60: SSL certificate problem: self-signed certificate"])
        #expect(FMError.fromTransport(untrusted, url: URL(string: "https://fms.example.com")).message.contains("trust store"))
    }

    static func failure(of api: DataAPI) async throws -> FMError {
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
        } catch let error as FMError {
            return error
        }
        Issue.record("the call succeeded")
        throw FMError(code: "0", message: "")
    }
}

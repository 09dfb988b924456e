import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A transport failure says what happened: a TLS handshake against plain HTTP names the scheme to write and is
/// never retried (a certificate problem is not a scheme problem), nginx's "plain HTTP to an HTTPS port" page names
/// `https://`, and an underlying URLError prints with its name beside SwiftFM's own code.
@Suite("Transport failures name their cause")
struct TransportFailureTextTests {
    static func urlError(_ code: Int, _ text: String) -> NSError {
        NSError(domain: NSURLErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: text])
    }

    /// What libcurl says when plain HTTP answers a ClientHello ("wrong version number"), when the server
    /// closes (`SSL_ERROR_SYSCALL`), and Apple's `secureConnectionFailed`: -1003 naming `http://host:port`,
    /// and never retried. A certificate problem is not a scheme problem.
    @Test func aFailedHandshakeNamesTheSchemeAndIsNotRetried() throws {
        let url = URL(string: "https://127.0.0.1:3000/fmi/data/vLatest/productInfo")
        for failure in [Self.urlError(-1, "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"),
                        Self.urlError(-1, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:3000"),
                        Self.urlError(-1200, "An SSL error has occurred")] {
            let error = FMError.fromTransport(failure, url: url)
            #expect(error.code == FMError.ClientCode.transport && error.isWrongScheme)
            #expect(error.message.contains("http://127.0.0.1:3000"), "\(error)")
            #expect(Classifier.verdict(for: error, beforeAnswer: true, usedSession: false, headers: [:]) == .final)
        }
        let certificate = FMError.fromTransport(Self.urlError(-1202, "The certificate for this server is invalid"), url: url)
        #expect(!certificate.isWrongScheme)
        #expect(!FMError.fromTransport(Self.urlError(-1, "SSL routines::wrong version number"),
                                       url: URL(string: "http://127.0.0.1:3000/x")).isWrongScheme)
    }

    /// nginx answers plain HTTP on its HTTPS port with a 400 page: the call says to write `https://`.
    @Test func plainHTTPToATLSPortNamesHTTPS() async throws {
        let page = "<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head></html>"
        var configuration = FMConfiguration(host: "http://fms.example.com:8443", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = .standard
        let h = Harness(configuration: configuration) { _ in .body(400, Data(page.utf8), contentType: "text/html") }
        let recorder = Recorder<(String, FMError?)>()
        h.api.getRecords(layout: "Contacts") { _, code in recorder.record((code, FMError.current)) }
        let (code, error) = try #require(await recorder.value().first)
        #expect(code == FMError.ClientCode.transport)
        #expect(error?.message.contains("https://fms.example.com:8443") == true, "\(String(describing: error))")
        #expect(h.stub.requests.count == 1, "not retried")
    }

    /// SwiftFM's client codes print as `FMError -1004`, an underlying URLError as `URLError(-1004 name)`:
    /// never two bare `-1004`s of different meaning in one line.
    @Test func anUnderlyingURLErrorPrintsWithItsName() {
        let error = FMError.fromTransport(URLError(.cannotConnectToHost))
        let text = String(describing: error)
        #expect(text.hasPrefix("FMError -1003: "))
        #expect(text.contains("URLError(-1004 cannotConnectToHost)"), "\(text)")
        #expect(FMError.fromTransport(URLError(.timedOut)).code == FMError.ClientCode.timeout)
        let timedOut = FMError.fromTransport(URLError(.timedOut), url: URL(string: "https://fms.example.com/fmi/data/vLatest/databases/Music"))
        #expect(timedOut.message == "The request to fms.example.com:443 timed out", "\(timedOut.message)")
    }
}

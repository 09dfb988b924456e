import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

// Contract: a TLS front that wants a client certificate and did not get a good one (nginx with
// `ssl_verify_client on` completes the handshake and answers HTTP 400 "No required SSL certificate was sent", or
// "The SSL certificate error" for one it rejects) fails the call with a message that says so and names the
// setting to fix (`FMConfiguration.tls.clientCertificate`), not only "something that is not JSON". Any other
// 400 page keeps the plain words.

@Suite("A TLS front's missing or rejected client certificate page is named")
struct ClientCertificatePageTests {
    static func page(_ title: String) -> String {
        "<html>\r\n<head><title>400 \(title)</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n"
            + "<center>\(title)</center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
    }

    private func failure(answering page: String) async throws -> FMError {
        let emulator = Emulator()
        let base = try emulator.start()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: base.absoluteString, database: emulator.database, username: "admin", password: "admin")
        configuration.retry = .none
        let api = DataAPI(configuration: configuration)
        emulator.inject(.status(400, body: page, contentType: "text/html"), count: 1)
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 1)
        } catch let error as FMError {
            return error
        }
        Issue.record("a call answered with nginx's 400 page succeeded")
        return FMError(code: "0", message: "")
    }

    @Test("no client certificate sent: the message says the server requires one and names the setting")
    func missingClientCertificate() async throws {
        let error = try await failure(answering: Self.page("No required SSL certificate was sent"))
        #expect(error.httpStatus == 400)
        #expect(error.message.contains("requires a client certificate"), "\(error.message)")
        #expect(error.message.contains("FMConfiguration.tls.clientCertificate"), "\(error.message)")
    }

    @Test("a client certificate the front rejects: the message says it was rejected")
    func rejectedClientCertificate() async throws {
        let error = try await failure(answering: Self.page("The SSL certificate error"))
        #expect(error.message.contains("rejected the client certificate"), "\(error.message)")
        #expect(error.message.contains("FMConfiguration.tls.clientCertificate"), "\(error.message)")
    }

    @Test("another 400 page keeps the plain words")
    func otherPageIsNotAboutCertificates() async throws {
        let error = try await failure(answering: Self.page("Request Header Or Cookie Too Large"))
        #expect(error.code == FMError.ClientCode.notJSON)
        #expect(!error.message.contains("client certificate"), "\(error.message)")
    }
}

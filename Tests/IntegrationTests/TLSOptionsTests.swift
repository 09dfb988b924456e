import Foundation
import Testing
import SwiftFM
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// TLS per client (``FMTLSOptions``) over a real nginx in front of `fm-emulator`, with the system's
/// trust store untouched (it does not know the test CA). Enabled only when `FM_TLS_CA` is set:
/// `Tests/tls/run.sh` makes a throwaway CA (and a second, wrong one), a client certificate, a second nginx
/// server that requires one (`ssl_verify_client on`), and the pins, then runs this suite.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["FM_TLS_CA"] != nil, "needs Tests/tls/run.sh (nginx TLS front)"))
struct TLSOptionsTests {
    let environment = ProcessInfo.processInfo.environment
    var base: String { environment["FM_TLS_BASE_URL"] ?? "" }
    func file(_ name: String) -> URL? { environment[name].map { URL(fileURLWithPath: $0) } }

    func client(_ tls: FMTLSOptions, host: String? = nil) -> DataAPI {
        var configuration = FMConfiguration(host: host ?? base, database: "Music", username: "admin", password: "admin", timeout: 30)
        configuration.tls = tls
        return DataAPI(configuration: configuration)
    }

    /// The code and message of one find (a login first).
    func outcome(_ api: DataAPI) async -> (code: String, message: String) {
        do {
            let found = try await api.getRecords(layout: "Artists", limit: 1)
            return (found.isEmpty ? "empty" : "0", "")
        } catch let error as FMError {
            return (error.code, "\(error)")
        } catch {
            return ("not an FMError", "\(error)")
        }
    }

    @Test func theSystemStoreDoesNotKnowTheCA() async {
        let (code, message) = await outcome(client(FMTLSOptions()))
        #expect(code == FMError.ClientCode.transport, "\(message)")
    }

    /// First contact over a real TLS front: a certificate the client does not trust fails the first
    /// call at once — no retry under the default policy — naming the host, the cause and the remedy.
    @Test func anUntrustedCertificateFailsAtOnceWithoutARetry() async {
        let lines = LineSink()
        let configuration = FMConfiguration(host: base, database: "Music", username: "admin", password: "admin")
        let api = DataAPI(configuration: configuration, logger: { lines.append("\($0)") })
        let (code, message) = await outcome(api)
        #expect(code == FMError.ClientCode.transport, "\(message)")
        #expect(message.contains("127.0.0.1") && message.contains("certificate"), "\(message)")
        #expect(message.contains("caCertificates") || message.contains("trust store"), "names a remedy: \(message)")
        let logged = lines.lines
        #expect(!logged.contains { $0.contains("retry") }, "a certificate failure is not retried: \(logged)")
    }

    @Test func aCATrustedThroughCaCertificatesAlone() async {
        let (code, message) = await outcome(client(FMTLSOptions(caCertificates: file("FM_TLS_CA"))))
        #expect(code == "0", "\(message)")
    }

    @Test func theWrongCAIsRefusedNamingTheRemedy() async {
        let (code, message) = await outcome(client(FMTLSOptions(caCertificates: file("FM_TLS_WRONG_CA"))))
        #expect(code == FMError.ClientCode.transport)
        #expect(message.contains("caCertificates") && message.contains("127.0.0.1"), "\(message)")
    }

    @Test func theRightPinIsAcceptedAndAWrongOneRefused() async throws {
        let right = try #require(environment["FM_TLS_PIN"])
        let wrong = try #require(environment["FM_TLS_WRONG_PIN"])
        let ca = file("FM_TLS_CA")
        let accepted = await outcome(client(FMTLSOptions(caCertificates: ca, pinnedPublicKeys: [wrong, right])))
        #expect(accepted.code == "0", "\(accepted.message)")
        let refused = await outcome(client(FMTLSOptions(caCertificates: ca, pinnedPublicKeys: [wrong])))
        #expect(refused.code == FMError.ClientCode.transport)
        #expect(refused.message.contains("pinnedPublicKeys"), "\(refused.message)")
    }

    @Test func aServerRequiringAClientCertificate() async throws {
        let mtls = try #require(environment["FM_TLS_MTLS_URL"])
        let ca = file("FM_TLS_CA")
        let without = await outcome(client(FMTLSOptions(caCertificates: ca), host: mtls))
        #expect(without.code != "0", "answered without a client certificate")
        // nginx answers HTTP 400 "No required SSL certificate was sent": the message names the setting to fix.
        #expect(without.message.contains("FMConfiguration.tls.clientCertificate"), "\(without.message)")
        let with = await outcome(client(FMTLSOptions(caCertificates: ca, clientCertificate: file("FM_TLS_CLIENT_CERT"),
                                                     clientKey: file("FM_TLS_CLIENT_KEY")), host: mtls))
        #expect(with.code == "0", "\(with.message)")
    }
}

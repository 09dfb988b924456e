// Contract: a client certificate or key this client cannot use (libcurl's result 58, before anything reached the
// server) is named as such, with the transport's remedy once (FMConfiguration.tls.clientCertificate / clientKey),
// never as a certificate the server rejected; words that carry no remedy (a server that refused the certificate, as
// URLSession reports it) keep "the server rejected the client certificate". A server that refuses the handshake for
// want of a client certificate (TLS 1.3: libcurl's result 56 on the first read, "alert certificate required") is a TLS
// failure named with its remedy once, never retried nor told as a connection closed before an answer; a plain
// connection reset (56 without an alert) stays a lost connection.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

@Suite struct ClientCertificateFailureWordsTests {
    private let url = URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo")

    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test func aClientKeyThisClientCannotUseIsNotBlamedOnTheServer() throws {
        let advice = try #require(CurlTransfer.advice(forResult: 58, detail: "unable to set private key file", host: "fms.example.com"))
        let words = "curl 58: unable to set private key file: '/tmp/key.pem' type PEM — " + advice
        let error = FMError.fromTransport(URLError(.clientCertificateRejected, userInfo: [NSLocalizedDescriptionKey: words]), url: url)
        #expect(!error.message.contains("the server rejected"), "\(error.message)")
        #expect(Self.occurrences(of: "FMConfiguration.tls.clientCertificate", in: error.message) == 1, "\(error.message)")
        #expect(error.isTLSFailure)
    }

    @Test func aCertificateTheServerRefusedKeepsItsWords() {
        let error = FMError.fromTransport(URLError(.clientCertificateRejected, userInfo: [NSLocalizedDescriptionKey: "bad certificate"]),
                                          url: url)
        #expect(error.message.contains("the server rejected the client certificate"), "\(error.message)")
    }

    /// FMCurlTransport's error for `result` with libcurl's words `detail`, as its transfers make it.
    private func curlError(_ result: Int32, _ detail: String) -> URLError {
        let advice = CurlTransfer.advice(forResult: result, detail: detail, host: "fms.example.com").map { " — " + $0 } ?? ""
        return URLError(CurlTransfer.urlCode(forResult: result, detail: detail),
                        userInfo: [NSLocalizedDescriptionKey: "curl \(result): \(detail)" + advice])
    }

    @Test func aServerThatWantsAClientCertificateIsATLSFailureWithItsRemedy() {
        let detail = "OpenSSL SSL_read: OpenSSL/3.0.13: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0"
        let error = FMError.fromTransport(curlError(56, detail), url: url)
        #expect(error.isTLSFailure, "\(error)")
        #expect(!error.message.contains("closed before an answer"), "\(error.message)")
        #expect(Self.occurrences(of: "FMConfiguration.tls.clientCertificate", in: error.message) == 1, "\(error.message)")
    }

    @Test func aConnectionResetStaysALostConnection() {
        let error = FMError.fromTransport(curlError(56, "Recv failure: Connection reset by peer"), url: url)
        #expect(!error.isTLSFailure)
        #expect(error.message.contains("the connection closed before an answer"), "\(error.message)")
    }
}

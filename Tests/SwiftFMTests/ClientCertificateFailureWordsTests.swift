// Contract: a client certificate or key this client cannot use (libcurl's result 58, before anything reached the
// server) is named as such, with the transport's remedy once (FMConfiguration.tls.clientCertificate / clientKey),
// never as a certificate the server rejected; words that carry no remedy (a server that refused the certificate, as
// URLSession reports it) keep "the server rejected the client certificate".
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
}

// Contract: a certificate the client does not trust gets one remedy in its message. When the transport's
// words already say what to do (FMCurlTransport names FMConfiguration.tls.caCertificates, the system trust
// store and a public authority), the message adds no second remedy; words without one still get it.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

@Suite("An untrusted certificate names its remedy once")
struct UntrustedCertificateRemedyTests {
    /// What FMCurlTransport says for curl's result 60 (an authority this machine does not trust): its words before
    /// its advice named the system trust store and a public authority, and its words today.
    static let curlWords = [
        "curl 60: SSL certificate problem: self-signed certificate — the certificate of fms.example.com does not verify: "
            + "trust its CA with FMConfiguration.tls.caCertificates (a PEM bundle, for this client only) or install it into the system store",
        "curl 60: SSL certificate problem: self-signed certificate — "
            + (CurlTransfer.advice(forResult: 60, detail: "SSL certificate problem: self-signed certificate", host: "fms.example.com") ?? ""),
    ]

    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test(arguments: curlWords)
    func theTransportsRemedyIsNotFollowedByASecondOne(_ words: String) {
        let failure = URLError(.serverCertificateUntrusted, userInfo: [NSLocalizedDescriptionKey: words])
        let error = FMError.fromTransport(failure, url: URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo"))
        #expect(error.message.contains("certificate not trusted: curl 60"), "\(error.message)")
        #expect(Self.occurrences(of: "system", in: error.message) == 1, "\(error.message)")
        #expect(Self.occurrences(of: "FMConfiguration.tls.caCertificates", in: error.message) == 1, "\(error.message)")
    }

    /// Words that name no remedy (another transport, Foundation's own) still get one.
    @Test func wordsWithoutARemedyStillGetOne() {
        let failure = URLError(.serverCertificateUntrusted, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"])
        let error = FMError.fromTransport(failure, url: URL(string: "https://fms.example.com"))
        #expect(Self.occurrences(of: "system trust store", in: error.message) == 1, "\(error.message)")
        #expect(error.message.contains("public authority"), "\(error.message)")
    }

    /// The curl transport's own advice for an authority it does not trust (results 60 and 51) carries the whole
    /// remedy, so the message needs no other: the per-client bundle, then the one remedy text the message would add.
    @Test(arguments: [Int32(60), 51])
    func theCurlTransportsAdviceNamesTheWholeRemedy(_ result: Int32) throws {
        let advice = try #require(CurlTransfer.advice(forResult: result, detail: "", host: "fms.example.com"))
        #expect(advice.contains("fms.example.com"))
        #expect(advice.contains("FMConfiguration.tls.caCertificates"))
        #expect(advice.hasSuffix(FMError.trustRemedyClause), "\(advice)")
    }
}

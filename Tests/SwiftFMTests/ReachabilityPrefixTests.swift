import Foundation
import Testing
@testable import SwiftFM

/// A URL that begins with the configured host's `scheme://authority/` has that host's origin, found without parsing
/// the URL: for every way a host can be configured (letter case, percent-escapes, IPv6 literals and zones, a trailing
/// dot, an empty, default or zero-padded port, a base path) and every URL that extends that prefix (`//`, `@`, `\`,
/// `:` right after it) or resembles it, the rule answers as a client that parses every URL does.
@Suite("Reachability: the configured host's prefix gives the origin parsing gives")
struct ReachabilityPrefixTests {
    static let hosts = [
        "https://FMS.Example.com", "fms.example.com", "HTTPS://H", "https://fms.example.com.", "https://fms.example.com:",
        "https://fms.example.com:443", "https://fms.example.com:0443", "http://fms.example.com:80", "http://a.b:65535",
        "http://127.0.0.1:3000", "https://1.2.3.4", "http://[::1]:8080", "https://[::FFFF:1.2.3.4]", "https://[0:0::1]",
        "https://[fe80::1%25eth0]:8443", "https://[::1%25lo]", "https://fms%2Eexample.com", "https://%66ms.example.com",
        "https://H%C3%A9", "https://xn--caf-dma.example", "https://h_x", "https://h~x", "https://h!x", "https://h(x)",
        "https://h:8443/base/", "https://fms.example.com/filemaker", "https://h/fmi/data/v1/databases/x", "https://h?x=1", "https://h#f",
    ]

    static let others = ["https://fms.example.com/x", "https://fms.example.com:443/x", "https://FMS.EXAMPLE.COM/x", "https://fms.example.com./x",
                         "http://127.0.0.1:3000/x", "https://h/x", "https://H/x", "https://h:443/x", "https://[::1]/x", "http://[::1]:8080/x"]

    @Test(arguments: hosts)
    func theOriginFoundByPrefixIsTheParsedOne(host: String) throws {
        let configuration = FMConfiguration(host: host, database: "Contacts", username: "admin", password: "pw")
        let base = try configuration.resolvedBase().get()
        let url = try RequestBuilder.url(for: Endpoints.productInfo(), configuration: configuration).get()
        let text = url.absoluteString
        let authorityEnd = try #require(text.range(of: "://").map { text[$0.upperBound...].firstIndex(of: "/") ?? text.endIndex })
        let prefix = String(text[..<authorityEnd])
        let extended = ["/", "/x?y#z", "//evil.example/", "/@evil.example/", "/..//x", "/%2F%2Fevil/", "/\\evil", "/:80/", "/?", "/#"].map { prefix + $0 }
        let urls = ([text] + extended + Self.others).compactMap(URL.init(string:))
        for answered in urls {
            let byPrefix = Reachability(now: { Date(timeIntervalSince1970: 0) }, home: base)
            let byParsing = Reachability(now: { Date(timeIntervalSince1970: 0) }, home: nil)
            byPrefix.answered(answered)
            byParsing.answered(answered)
            for probe in urls {
                #expect(byPrefix.standing(probe) == byParsing.standing(probe),
                        "configured \(host): after an answer from \(answered.absoluteString), \(probe.absoluteString)")
            }
        }
    }
}

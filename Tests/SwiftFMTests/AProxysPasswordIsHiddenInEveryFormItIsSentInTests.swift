import Foundation
import Testing
@testable import SwiftFM

/// Contract: the credentials in `FMConfiguration.proxy` (`http://user:password@proxy:3128`) are secrets of the client's
/// log lines (and, through the same list, of its errors) in every form they are sent in: the password as written in the
/// URL (percent-encoded), as curl sends it, decoded, inside the `Proxy-Authorization` Basic value (Foundation on Linux
/// hands the password back still percent-encoded, on Darwin decoded), and that Basic value itself.
@Suite struct AProxysPasswordIsHiddenInEveryFormItIsSentInTests {
    static let decoded = "pr@xy/pw-secret"
    static let proxy = URL(string: "http://proxy%2Duser:pr%40xy%2Fpw-secret@proxy.example.com:3128")!

    /// Failed before (on Linux): the decoded password and the Basic value were shown as they were.
    @Test func aLineThatEchoesTheProxysCredentialsShowsThemInNoForm() throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.proxy = Self.proxy
        let basic = Data("proxy-user:\(Self.decoded)".utf8).base64EncodedString()
        let lines = Recorder<FMLogEvent>(expecting: 1)
        // The default transport (curl): the one that honours a proxy. Nothing is sent.
        let api = DataAPI(configuration: configuration, logger: { lines.record($0) })
        api.logger.log(.error, "proxy saw \(Self.decoded) and \(basic) and pr%40xy%2Fpw-secret", metadata: ["echo": Self.decoded])
        let line = try #require(lines.wait().first)
        let texts = [line.message] + line.metadata.values
        for text in texts {
            #expect(!text.contains("pw-secret") && !text.contains(basic), "\(text)")
        }
        #expect(line.message.hasPrefix("proxy saw "), "\(line.message)")
    }
}

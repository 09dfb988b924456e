import Foundation
import Testing
@testable import SwiftFM

/// The contract: an unusable ``FMConfiguration/host`` fails with `-1001` `Invalid host "HOST": WHAT IS WRONG`, and that
/// message is one bounded line that holds no secret: HOST is shown as ``Redaction/host(_:)`` shows it (no user info,
/// query or fragment), with every control, line-separator or bidirectional-control character replaced (U+FFFD) and at
/// most a few hundred characters of it (then `…`), as every other text an error quotes (``FMError/serverText(_:limit:)``).
/// A host comes from a configuration file, an environment variable or a legacy `fm-host` default, which a daemon may
/// take from a tenant: a line break in it must not forge a line in the log that quotes the error, and a megabyte of it
/// must not be a megabyte per call's error. What a reason names (the scheme, the port) never carries the user info.
@Suite("An unusable host is named on one bounded line, without secrets")
struct AnUnusableHostIsNamedOnOneBoundedLineWithoutSecretsTests {
    private static func message(_ host: String) -> String? {
        let configuration = FMConfiguration(host: host, database: "db", credentials: .basic(username: "u", password: "p"))
        guard case .failure(let error) = configuration.resolvedBase() else { return nil }
        #expect(error.code == FMError.invalidConfiguration("").code)
        return error.message
    }

    /// Failed before: the message held the host's line break and bidi control as they were.
    @Test func aLineBreakOrBidiControlInTheHostIsReplaced() throws {
        for host in ["fms.example.com\n2026-11-29 INFO forged line", "fms.example.com\r\nX", "fms.\u{202E}moc.elpmaxe", "fms\u{2028}x y"] {
            let message = try #require(Self.message(host), "\(host.debugDescription) accepted")
            #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control
                        || $0.properties.generalCategory == .lineSeparator || $0.properties.isBidiControl },
                    "\(message.debugDescription)")
            #expect(message.hasPrefix("Invalid host \""))
        }
    }

    /// Failed before: a 200,000-character host was a 200,000-character message.
    @Test func aHugeHostIsCut() throws {
        let message = try #require(Self.message("ftp://fms.example.com/" + String(repeating: "ab", count: 100_000)))
        #expect(message.count < 2_000, "\(message.count) characters")
        #expect(message.contains("…"))
    }

    /// Held: no user info, query or fragment of an unusable host reaches its message, whatever the reason named.
    @Test func noSecretReachesTheMessage() throws {
        let secret = "s3cretPW"
        let hosts = [
            "https://admin:\(secret)@fms.example.com", "admin:\(secret)@fms.example.com", "https://:\(secret)@fms.example.com",
            "ftp://admin:\(secret)@fms.example.com", "ftp://fms.example.com/?token=\(secret)", "ftp://fms.example.com/#\(secret)",
            "https://fms.example.com:99999/?k=\(secret)#\(secret)", "https://admin:\(secret)@", "https:// admin:\(secret)@fms.example.com",
            "https://admin:s3/\(secret)@fms.example.com", "https://admin:a#\(secret)@fms.example.com", "https://a:\(secret)@b@fms.example.com",
            "https://fms.example.com:12ab?x=\(secret)", "javascript://admin:\(secret)@fms.example.com", "https://?\(secret)",
            "fms.example.com:0/?next=https://admin:\(secret)@evil.example", "ht tp://fms.example.com/?\(secret)",
            "https://fms.example.com:70000#\(secret)", "https://[::1/?\(secret)",
        ]
        for host in hosts {
            guard let message = Self.message(host) else { continue }
            #expect(!message.contains(secret), "\(host) → \(message)")
            #expect(!message.contains("admin"), "\(host) → \(message)")
        }
        // These are refused (a scheme other than http/https, user info, a port out of range, no host name).
        for host in hosts.prefix(9) { #expect(Self.message(host) != nil, "\(host) accepted") }
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Contract: `Redaction.host` (what `FMConfiguration.description`, `DataAPI.description` and the invalid-host error
/// show) never shows a password written in a host's user info, however it is written (a raw `/`, `?`, `#` or `@` in
/// it included), and reads a host whose `@` comes only after its host[:port] (in its path, query or fragment) as
/// that host, not as user info. The user info ends at an `@` followed by a host[:port] (up to the next `/`, `?`,
/// `#`): at the last such `@` when the text before the first `/`, `?`, `#` is no host[:port] (it holds an `@`, or a
/// `:` not followed by a port), and everything before it is replaced. A host[:port] there with no `@` is the host
/// (as the resolver reads it): shown, and, when an `@` follows it, nothing after it (nor its port) is shown, since
/// read the other way what follows would be a password.
@Suite("A host's user info ends at the @ before its host")
struct AHostsUserInfoEndsAtTheAtBeforeItsHostTests {
    static let P = Redaction.placeholder

    /// (host as configured, as shown, the secret that must never show).
    static let cases: [(String, String, String?)] = [
        // Failed before: an `@` in the query was read as user info (`<redacted>@b`).
        ("fms.example.com/?x=a@b", "fms.example.com/\(P)", nil),
        ("https://fms.example.com/?email=a@b.example.com", "https://fms.example.com/\(P)", nil),
        ("fms.example.com#a@b", "fms.example.com#\(P)", nil),
        ("fms.example.com/files/a@b/c", "fms.example.com/\(P)", nil),
        ("[fe80::1%25en0]/?x=a@b", "[fe80::1%25en0]/\(P)", nil),
        // An `@` after a host and its port: the port too is hidden (read as user info, `1234/x` is a password).
        ("fms.example.com:8443/?x=a@b", "fms.example.com:\(P)/\(P)", nil),
        ("https://admin:9731/x@fms.example.com", "https://admin:\(P)/\(P)", "9731"),
        // An `@` after which no host follows: the host, its query hidden as always.
        ("host?x=@", "host?\(P)", nil),
        ("https://fms.example.com:8443/p?key=@", "https://fms.example.com:8443/p?\(P)", nil),
        // User info: everything up to the last `@` followed by a host.
        ("https://user:p@ss@host", "https://\(P)@host", "p@ss"),
        ("https://user:pa/ss@host", "https://\(P)@host", "pa/ss"),
        ("https://user:pa/ss@host/path?x=a@b", "https://\(P)@b", "pa/ss"),
        ("user:p@ss?x=@host", "\(P)@host", "p@ss?x="),
        ("https://admin:p#ss@host/x", "https://\(P)@host/x", "p#ss"),
        ("admin:p?ss@host?x", "\(P)@host?\(P)", "p?ss"),
        ("https://admin:secret-pw@fms.example.com:8443/p?key=k", "https://\(P)@fms.example.com:8443/p?\(P)", "secret-pw"),
        ("user:pw@[::1]:8443/p?k=v", "\(P)@[::1]:8443/p?\(P)", "pw"),
        ("user:pa/ss@[::1]", "\(P)@[::1]", "pa/ss"),
        ("user:pw-secret@", "\(P)@", "pw-secret"),
        ("token-as-user@fms.example.com", "\(P)@fms.example.com", "token-as-user"),
        ("user:pa ss@host/x", "\(P)@host/x", "pa ss"),
        // No `@`: as written, the query and fragment hidden.
        ("fms.example.com:8443/p?key=k#f", "fms.example.com:8443/p?\(P)", nil),
        ("[::1]:8443/p", "[::1]:8443/p", nil),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000", nil),
    ]

    @Test(arguments: cases)
    func aHostIsShownWithoutItsUserInfo(host: String, shown: String, secret: String?) {
        let text = Redaction.host(host)
        #expect(text == shown, "\(host)")
        if let secret {
            #expect(!text.contains(secret), "\(host) shown as \(text)")
            let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "other")
            #expect(!configuration.description.contains(secret), "\(configuration)")
            if case .failure(let error) = configuration.resolvedBase() { #expect(!error.description.contains(secret), "\(error)") }
        }
    }
}

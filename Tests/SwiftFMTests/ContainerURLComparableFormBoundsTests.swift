import Foundation
import Testing
@testable import SwiftFM

// Contract: the form container redirects are compared in (`URL.comparableForm`, RFC 3986's normal form) never makes
// two URLs equal that a server may tell apart — the query's order and the user info are kept as written — and any URL
// a server can send (relative to the hop it answered, huge, with odd escapes, an IPv6 literal, user info) is put in
// that form without a crash, in one pass over its text.
@Suite("Container redirect URLs keep what tells them apart, however hostile")
struct ContainerURLComparableFormBoundsTests {
    /// Held: the query's order and the user info tell URLs apart.
    @Test(arguments: [
        ("https://fms.example.com/a?x=1&y=2", "https://fms.example.com/a?y=2&x=1"),
        ("https://admin@fms.example.com/a", "https://fms.example.com/a"),
        ("https://admin@fms.example.com/a", "https://Admin@fms.example.com/a"),
        ("https://fms.example.com/a%3Fx", "https://fms.example.com/a?x"),
    ])
    func theQueryOrderAndTheUserInfoTellURLsApart(_ first: String, _ second: String) throws {
        let (a, b) = (try #require(URL(string: first)), try #require(URL(string: second)))
        #expect(a.comparableForm != b.comparableForm, "\(first) \(second)")
    }

    /// Held: a redirect relative to the hop it answered is compared as the URL it resolves to.
    @Test func aRelativeRedirectIsComparedResolved() throws {
        let base = try #require(URL(string: "https://fms.example.com/Streaming/photo.bin?RCType=x"))
        let relative = try #require(URL(string: "/Streaming/%70hoto.bin?RCType=x", relativeTo: base))
        #expect(relative.comparableForm == base.comparableForm)
    }

    /// Held: a huge URL (200 000 escapes) is put in its form, each escape of an unreserved character decoded.
    @Test func aHugeURLIsPutInItsForm() throws {
        let url = try #require(URL(string: "https://fms.example.com/" + String(repeating: "%7e", count: 200_000)))
        #expect(url.comparableForm == "https://fms.example.com/" + String(repeating: "~", count: 200_000))
    }

    /// Held: odd URLs a server may send are put in a form without a crash, and one spelling of each equals itself.
    @Test(arguments: ["https://fms.example.com/a%", "https://fms.example.com/a%4", "https://[::1]/a", "https://[::1", "https://:443/",
                      "https://a:b@c:d@fms.example.com:/", "https://fms.example.com:99999999999999999999/a", "https:", "https://",
                      "mailto:a@b", "https://FMS.example.com:0443/%7E?%7e#x"])
    func anOddURLIsPutInAFormWithoutACrash(_ text: String) {
        guard let url = URL(string: text) else { return }
        #expect(url.comparableForm == url.comparableForm)
        #expect(!url.comparableForm.contains("#"))
    }
}

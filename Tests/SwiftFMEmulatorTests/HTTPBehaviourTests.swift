import Foundation
import Testing
@testable import SwiftFMEmulator

/// Transport-level behaviour (WIRE.md §1, §3.3, §10).
@Suite struct HTTPBehaviourTests {
    let path = "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records"

    /// §10.2/§15 pair 24: a container URL matches `…/Streaming_SSL/MainDB/<HEX>(.\w+)??RCType=…`
    /// whatever the uploaded file is called; an extension with a space or a slash made an invalid URL
    /// (space) or one that no longer reaches the bytes (slash → 404).
    @Test(arguments: Via.allCases) func containerURLsStayWellFormedForOddFilenames(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let pattern = #"^https?://.+/Streaming_SSL/MainDB/[0-9A-F]+(\.\w+)?\?RCType=EmbeddedRCFileProcessor$"#
        for (i, filename) in ["a.b c", "x.a/b", "y.p?g", "z.tar.gz", "plain", "dot."].enumerated() {
            let id = i + 1
            let bytes = Data("file \(i)".utf8)
            #expect(upload(h, path: "\(path)/\(id % 4 + 1)/containers/portrait/1", part: "upload", filename: filename, data: bytes,
                           contentType: "application/octet-stream").status == 200)
            let url = h.send("GET", "\(path)/\(id % 4 + 1)", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
            #expect(url.range(of: pattern, options: .regularExpression) != nil, "\(filename): \(url)")
            let target = url.range(of: "/Streaming_SSL/").map { String(url[$0.lowerBound...]) } ?? url
            var answer = h.send("GET", target, bearer: false, contentType: nil)
            if answer.status == 302 {
                let cookie = answer.header("Set-Cookie")?.split(separator: ";").first.map(String.init) ?? ""
                answer = h.send("GET", target, bearer: false, contentType: nil, headers: [("Cookie", cookie)])
            }
            let second = answer
            #expect(second.status == 200, "\(filename)")
            #expect(second.body == bytes, "\(filename)")
        }
        #expect(upload(h, path: "\(path)/1/containers/portrait/1", part: "upload", filename: "z.tar.gz", data: Data([1]),
                       contentType: "application/octet-stream").status == 200)
        let gz = h.send("GET", "\(path)/1", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
        #expect(gz.contains(".gz?RCType="))
    }

    /// §1.2/§3.3: a token only works with the database spelling used at login, so logging out with
    /// another spelling answers 952 — but that refused request must not end the session.
    @Test(arguments: Via.allCases) func logoutWithAnotherSpellingLeavesTheSessionAlone(_ via: Via) throws {
        let h = try Harness(via: via)
        let token = try h.login()
        let wrong = h.send("DELETE", "/fmi/data/vLatest/databases/contacts/sessions/\(token)", bearer: false, contentType: nil)
        #expect(wrong.status == 401)
        #expect(wrong.code == "952")
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        let right = h.send("DELETE", "/fmi/data/vLatest/databases/Contacts.fmp12/sessions/\(token)", bearer: false, contentType: nil)
        #expect(right.status == 200)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).code == "952")
    }

    /// §1 / RFC 9110 §9.3.2: HEAD is GET without the body, so every GET route answers HEAD; a 405
    /// names the allowed methods in `Allow` (RFC 9110 §15.5.6). OPTIONS stays unsupported (405/1704).
    @Test(arguments: Via.allCases) func headWorksWhereGetDoesAnd405SaysWhatIsAllowed(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let head = h.send("HEAD", "/fmi/data/vLatest/productInfo", bearer: false, contentType: nil)
        #expect(head.status == 200)
        if via == .http { #expect(head.body.isEmpty) }
        #expect(h.send("HEAD", "\(path)/1", contentType: nil).status == 200)
        #expect(h.send("HEAD", "\(path)/1", bearer: false, contentType: nil).status == 401)
        let delete = h.send("DELETE", "/fmi/data/vLatest/productInfo", bearer: false, contentType: nil)
        #expect(delete.status == 405)
        #expect(delete.code == "1704")
        #expect(delete.header("Allow") == "GET, HEAD")
        let put = h.send("PUT", "\(path)/1", body: "{}")
        #expect(put.status == 405)
        #expect(put.header("Allow") == "GET, HEAD, PATCH, DELETE, POST")
        let options = h.send("OPTIONS", "\(path)", bearer: false, contentType: nil)
        #expect(options.status == 405)
        #expect(options.code == "1704")
        #expect(options.header("Allow") == "GET, HEAD, POST")
    }
}

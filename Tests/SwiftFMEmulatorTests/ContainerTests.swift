import Foundation
import Testing
@testable import SwiftFMEmulator

// The emulator's containers: upload errors as FileMaker answers them, repetition 1 by default and a new upload
// replacing the old; an unknown streaming URL is 404, and a forged cookie is redirected, never served.

@Suite struct ContainerTests {
    let path = "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records"

    @Test func uploadErrors() throws {
        let h = try Harness()
        try h.login()
        let png = Data([1, 2, 3])
        #expect(upload(h, path: "\(path)/1/containers/name/1", part: "upload", filename: "a.png", data: png).code == "102")
        #expect(upload(h, path: "\(path)/1/containers/nope/1", part: "upload", filename: "a.png", data: png).code == "102")
        #expect(upload(h, path: "\(path)/99/containers/portrait/1", part: "upload", filename: "a.png", data: png).code == "101")
        #expect(upload(h, path: "\(path)/1/containers/portrait/2", part: "upload", filename: "a.png", data: png).code == "111")
        #expect(upload(h, path: "\(path)/1/containers/portrait/1?modId=5", part: "upload", filename: "a.png", data: png).code == "306")
        #expect(upload(h, path: "\(path)/1/containers/portrait/1?modId=0", part: "upload", filename: "a.png", data: png).status == 200)
        let json = h.send("POST", "\(path)/1/containers/portrait/1", body: "{}")
        #expect(json.status == 415)
        let wrongPart = upload(h, path: "\(path)/1/containers/portrait/1", part: "file", filename: "a.png", data: png)
        #expect(wrongPart.status == 400)
        #expect(wrongPart.message == "Upload payload must contain a part named 'upload'.")
    }

    @Test func repetitionDefaultsToOneAndNewUploadsReplace() throws {
        let h = try Harness()
        try h.login()
        #expect(upload(h, path: "\(path)/2/containers/Portrait", part: "upload", filename: "notes.txt", data: Data("v1".utf8), contentType: "").status == 200)
        let first = h.send("GET", "\(path)/2", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
        #expect(first.contains(".txt?RCType=EmbeddedRCFileProcessor"))
        let up2 = upload(h, path: "\(path)/2/containers/portrait/1", part: "upload", filename: "blob", data: Data("v2".utf8), contentType: "")
        #expect(up2.response["modId"]?.stringValue == "2")
        let second = h.send("GET", "\(path)/2", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
        #expect(second != first)
        #expect(second.range(of: #"/MainDB/[0-9A-F]+\?RCType"#, options: .regularExpression) != nil)
        let target = String(second.dropFirst("http://127.0.0.1:3000".count))
        let cookie = h.send("GET", target, bearer: false, contentType: nil).header("Set-Cookie")?.split(separator: ";").first.map(String.init) ?? ""
        let bytes = h.send("GET", target, bearer: false, contentType: nil, headers: [("Cookie", cookie)])
        #expect(bytes.body == Data("v2".utf8))
        #expect(bytes.header("Content-Type") == "application/octet-stream")
        #expect(h.emulator.records(inTable: "Contacts")[1]["portrait"] as? String == "blob")
        // The URL follows the Host the reader used.
        let other = h.send("GET", "\(path)/2", contentType: nil, headers: [])
        #expect(other.data.first?["fieldData"]?["portrait"]?.stringValue?.hasPrefix("http://127.0.0.1:3000/Streaming_SSL/") == true)
    }

    @Test func streamingUnknownAndWrongCookie() throws {
        let h = try Harness()
        #expect(h.send("GET", "/Streaming_SSL/MainDB/ABCDEF.png?RCType=EmbeddedRCFileProcessor", bearer: false, contentType: nil).status == 404)
        try h.login()
        _ = upload(h, path: "\(path)/1/containers/portrait/1", part: "upload", filename: "a.png", data: Data([9]))
        let url = h.send("GET", "\(path)/1", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
        let target = String(url.dropFirst("http://127.0.0.1:3000".count))
        #expect(h.send("GET", target, bearer: false, contentType: nil, headers: [("Cookie", "X-FMS-Session-Key=forged")]).status == 302)
    }
}

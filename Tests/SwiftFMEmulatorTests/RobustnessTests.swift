import Foundation
import Testing
@testable import SwiftFMEmulator

/// Malformed input never traps and always gets a JSON envelope (or a plain HTTP error for non-API paths).
@Suite struct RobustnessTests {
    @Test func oddRequestsGetEnvelopes() throws {
        let h = try Harness()
        try h.login()
        let targets = [
            "", "/", "//", "/fmi", "/fmi/data", "/fmi/data/vLatest", "/fmi/data/vLatest/", "/fmi/data/vLatest/databases/",
            "/fmi/data/vLatest/databases/%ZZ/layouts", "/fmi/data/vLatest/databases/Contacts/layouts/%", "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records/-1",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records/abc", "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records/99999999999999999999999",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records?_offset=99999999999999999999&_limit=-5",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records?_offset=9223372036854775807&_limit=9223372036854775807",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records/1?_limit.notes=9223372036854775807&_offset.notes=9223372036854775807",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records?_sort=%5B%5B%5D%5D&portal=%7B%7D",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records?&&=&a&=b&portal=%5B1%2Cnull%5D",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/script/",
            "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records/1/containers/portrait/0",
            "/Streaming_SSL/MainDB/", "/Streaming_SSL/MainDB/../../etc/passwd",
        ]
        let bodies = ["", "{", "[]", "null", "{\"fieldData\":[]}", "{\"fieldData\":{\"name\":{\"a\":1}}}", "{\"query\":{}}",
                      "{\"query\":[1,2]}", "{\"query\":[{\"omit\":\"true\"}]}", "{\"portalData\":{\"notes\":[{\"recordId\":\"x\"}]},\"fieldData\":{}}",
                      "{\"fieldData\":{\"deleteRelated\":[1]}}", "{\"fieldData\":{\"deleteRelated\":\"nodot\"}}", "{\"globalFields\":[]}",
                      "{\"sort\":\"x\",\"query\":[{\"name\":\"a\"}]}", "{\"limit\":\"x\",\"query\":[{\"name\":\"a\"}]}",
                      String(repeating: "[", count: 5000), "\u{FEFF}{}", "{\"fieldData\":{\"name\":\"\\ud800\"}}"]
        for target in targets {
            for method in ["GET", "POST", "PATCH", "DELETE", "PUT"] {
                for body in bodies.prefix(method == "GET" ? 1 : bodies.count) {
                    let a = h.send(method, target, body: body)
                    #expect((200...599).contains(a.status))
                    if target.hasPrefix("/fmi"), a.status != 302 {
                        #expect(a.code != nil, "\(method) \(target) \(body)")
                    }
                }
            }
        }
        for body in bodies {
            for path in ["\(h.base)/layouts/Contacts/records", "\(h.base)/layouts/Contacts/records/1", "\(h.base)/layouts/Contacts/_find",
                         "\(h.base)/globals", "\(h.base)/sessions"] {
                for method in ["POST", "PATCH"] {
                    let a = h.send(method, path, body: body)
                    #expect(a.code != nil, "\(method) \(path) \(body)")
                    #expect(a.status == 200 || a.isEmptyResponse, "\(method) \(path) \(body)")
                }
            }
        }
        // Still healthy afterwards.
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records/2", contentType: nil).status == 200)
    }

    @Test func oddMultipartBodies() throws {
        let h = try Harness()
        try h.login()
        let path = "\(h.base)/layouts/Contacts/records/1/containers/portrait/1"
        let bodies = ["", "--", "--b", "--b\r\n", "--b\r\nContent-Disposition: form-data; name=\"upload\"\r\n\r\nabc",
                      "--b\r\nContent-Disposition: form-data; name=\"upload\"\r\n\r\nabc\r\n--b--", "garbage--b--b--b"]
        for ct in ["multipart/form-data", "multipart/form-data; boundary=", "multipart/form-data; boundary=b", "multipart/form-data; boundary=\"b\""] {
            for body in bodies {
                let r = h.emulator.handler.handle(HTTPRequest(method: "POST", target: path,
                                                              headers: [("Authorization", "Bearer \(h.token)"), ("Content-Type", ct)], body: Data(body.utf8)))
                #expect([200, 400].contains(r.status), "\(ct) \(body)")
            }
        }
    }
}

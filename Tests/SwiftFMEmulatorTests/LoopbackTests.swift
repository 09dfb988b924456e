import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFMEmulator

// The emulator over loopback HTTP with URLSession (not the SwiftFM client): login, create, get and logout, container
// upload and streaming with its cookie, delivery faults, and an idempotent start and stop.

/// Whether the real socket server is available in this build (the branch may still carry a stand-in).
let socketServerAvailable: Bool = {
    let probe = Emulator()
    defer { probe.stop() }
    return (try? probe.start()) != nil
}()

/// Raw HTTP over loopback with URLSession (not the SwiftFM client).
@Suite(.enabled(if: socketServerAvailable, "needs the real HTTPServer"))
struct LoopbackTests {
    struct Reply {
        var status: Int
        var headers: [AnyHashable: Any]
        var data: Data
        var json: JSON? { try? JSON.parse(data) }
        func header(_ name: String) -> String? {
            headers.first { ($0.key as? String)?.caseInsensitiveCompare(name) == .orderedSame }?.value as? String
        }
    }

    /// Refuses redirects so a test sees the 302 itself.
    final class NoRedirect: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            completionHandler(nil)
        }
    }

    func send(_ session: URLSession, _ method: String, _ url: URL, token: String? = nil, basic: String? = nil,
              contentType: String? = "application/json", body: Data? = nil, headers: [String: String] = [:]) async throws -> Reply {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let basic { request.setValue("Basic \(Data(basic.utf8).base64EncodedString())", forHTTPHeaderField: "Authorization") }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Reply(status: http.statusCode, headers: http.allHeaderFields, data: data)
    }

    @Test func loginCreateGetLogoutOverHTTP() async throws {
        let emulator = try Emulator(schemaJSON: Data(contactsSchemaJSON.utf8))
        try await Emulator.withRunning(emulator) { emu in
            let base = try #require(emu.baseURL)
            #expect(base.absoluteString.hasPrefix("http://127.0.0.1:"))
            let session = URLSession(configuration: .ephemeral)
            let db = base.appendingPathComponent("fmi/data/vLatest/databases/Contacts")
            let login = try await send(session, "POST", db.appendingPathComponent("sessions"), basic: "admin:admin", body: Data("{}".utf8))
            #expect(login.status == 200)
            let token = try #require(login.header("X-FM-Data-Access-Token"))
            #expect(login.json?["response"]?["token"]?.stringValue == token)
            #expect(login.header("Content-Type") == "application/json")

            let create = try await send(session, "POST", db.appendingPathComponent("layouts/Contacts/records"), token: token,
                                        body: Data(#"{"fieldData":{"name":"Over HTTP","id":7}}"#.utf8))
            #expect(create.status == 200)
            let id = try #require(create.json?["response"]?["recordId"]?.stringValue)

            let get = try await send(session, "GET", try #require(URL(string: "\(db.absoluteString)/layouts/My%20Layout%2FOdd/records/\(id)")),
                                     token: token, contentType: nil)
            #expect(get.status == 200)
            #expect(get.json?["response"]?["data"]?.arrayValue?.first?["fieldData"]?["name"]?.stringValue == "Over HTTP")

            let missing = try await send(session, "GET", db.appendingPathComponent("layouts/Contacts/records/999"), token: token, contentType: nil)
            #expect(missing.status == 500)
            #expect(missing.json?["messages"]?.arrayValue?.first?["code"]?.stringValue == "101")

            let out = try await send(session, "DELETE", db.appendingPathComponent("sessions/\(token)"), contentType: nil)
            #expect(out.status == 200)
            let after = try await send(session, "GET", base.appendingPathComponent("fmi/data/vLatest/validateSession"), token: token, contentType: nil)
            #expect(after.status == 401)
            #expect(after.json?["messages"]?.arrayValue?.first?["code"]?.stringValue == "952")
            #expect(emu.requestLog.count == 6)
        }
        #expect(emulator.baseURL == nil)
    }

    @Test func containerUploadAndStreamingWithCookie() async throws {
        let emulator = try Emulator(schemaJSON: Data(contactsSchemaJSON.utf8))
        try await Emulator.withRunning(emulator) { emu in
            let base = try #require(emu.baseURL)
            let db = base.appendingPathComponent("fmi/data/vLatest/databases/Contacts")
            let session = URLSession(configuration: .ephemeral)
            let login = try await send(session, "POST", db.appendingPathComponent("sessions"), basic: "admin:admin", body: Data("{}".utf8))
            let token = try #require(login.header("X-FM-Data-Access-Token"))

            let bytes = Data((0..<2000).map { UInt8($0 % 251) })
            let boundary = "loopback-boundary-123"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"pic.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
            body.append(bytes)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let up = try await send(session, "POST", db.appendingPathComponent("layouts/Contacts/records/1/containers/portrait/1"), token: token,
                                    contentType: "multipart/form-data; boundary=\(boundary)", body: body)
            #expect(up.status == 200)

            let get = try await send(session, "GET", db.appendingPathComponent("layouts/Contacts/records/1"), token: token, contentType: nil)
            let urlText = try #require(get.json?["response"]?["data"]?.arrayValue?.first?["fieldData"]?["portrait"]?.stringValue)
            let url = try #require(URL(string: urlText))
            #expect(url.port == base.port)

            // Step by step: 302 + Set-Cookie, then 200 with the cookie.
            let manual = URLSession(configuration: .ephemeral, delegate: NoRedirect(), delegateQueue: nil)
            let first = try await send(manual, "GET", url, contentType: nil)
            #expect(first.status == 302)
            let cookie = try #require(first.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
            let second = try await send(manual, "GET", url, contentType: nil, headers: ["Cookie": cookie])
            #expect(second.status == 200)
            #expect(second.data == bytes)
            #expect(second.header("Content-Type") == "image/png")

            // A plain URLSession with a cookie store follows the redirect with the cookie.
            let (followed, response) = try await URLSession(configuration: .ephemeral).data(from: url)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(followed == bytes)
        }
    }

    @Test func deliveryFaultsOverHTTP() async throws {
        let emulator = Emulator()
        try await Emulator.withRunning(emulator) { emu in
            let url = try #require(emu.baseURL).appendingPathComponent("fmi/data/vLatest/productInfo")
            let session = URLSession(configuration: .ephemeral)
            emu.inject(.html502)
            let html = try await send(session, "GET", url, contentType: nil)
            #expect(html.status == 502)
            #expect(html.header("Content-Type")?.hasPrefix("text/html") == true)

            emu.inject(.truncatedJSON)
            let truncated = try await send(session, "GET", url, contentType: nil)
            #expect(truncated.status == 200)
            #expect(truncated.json == nil)

            emu.inject(.closeMidBody)
            await #expect(throws: (any Error).self) { _ = try await send(session, "GET", url, contentType: nil) }

            let ok = try await send(session, "GET", url, contentType: nil)
            #expect(ok.status == 200)
        }
    }

    @Test func startTwiceReturnsTheSameURLAndStopIsIdempotent() throws {
        let emulator = Emulator()
        let a = try emulator.start()
        let b = try emulator.start()
        #expect(a == b)
        emulator.stop()
        emulator.stop()
        #expect(emulator.baseURL == nil)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFMEmulator

/// Behind a reverse proxy or TLS front, container URLs and the container redirect carry the
/// scheme and host the client used: the emulator's public URL, else `X-Forwarded-Proto`/`X-Forwarded-Host`,
/// else `http` and `Host`.
@Suite struct ProxyHeadersTests {
    /// Uploads a container to record 1 of `Contacts`; returns its URL (as read with `extra` headers) and the
    /// `Location` of the first, cookie-less download of it (with the same headers).
    func urls(_ h: Harness, _ extra: [(name: String, value: String)]) throws -> (container: String, location: String) {
        let stored = upload(h, path: "\(h.base)/layouts/Contacts/records/1/containers/portrait", part: "upload",
                            filename: "p.png", data: Data([1, 2, 3]))
        try #require(stored.status == 200)
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil, headers: extra)
        let container = try #require(a.data.first?["fieldData"]?["portrait"]?.stringValue)
        let path = try #require(container.range(of: "/Streaming_SSL/").map { String(container[$0.lowerBound...]) })
        let first = h.send("GET", path, bearer: false, contentType: nil, headers: extra)
        #expect(first.status == 302)
        return (container, first.header("Location") ?? "")
    }

    @Test func withoutAProxyTheHostHeaderOverHTTP() throws {
        let h = try Harness()
        try h.login()
        let (container, location) = try urls(h, [])
        #expect(container.hasPrefix("http://127.0.0.1:3000/Streaming_SSL/MainDB/"))
        #expect(location.hasPrefix("http://127.0.0.1:3000/Streaming_SSL/MainDB/"))
    }

    @Test func forwardedProtoAndHostAreHonoured() throws {
        let h = try Harness()
        try h.login()
        let (container, location) = try urls(h, [("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "fm.example.com:8443")])
        #expect(container.hasPrefix("https://fm.example.com:8443/Streaming_SSL/MainDB/"))
        #expect(location.hasPrefix("https://fm.example.com:8443/Streaming_SSL/MainDB/"))
        // A proto alone keeps the Host header; a chain of proxies sends lists: the first (the client's) wins.
        #expect(try urls(h, [("X-Forwarded-Proto", "HTTPS")]).container.hasPrefix("https://127.0.0.1:3000/"))
        let chained = try urls(h, [("X-Forwarded-Proto", "https, http"), ("X-Forwarded-Host", " public.example , 10.0.0.2:80")])
        #expect(chained.container.hasPrefix("https://public.example/Streaming_SSL/"))
        #expect(chained.location.hasPrefix("https://public.example/Streaming_SSL/"))
    }

    @Test func implausibleForwardedValuesAreIgnored() throws {
        let h = try Harness()
        try h.login()
        let (container, location) = try urls(h, [("X-Forwarded-Proto", "javascript"), ("X-Forwarded-Host", "evil.example/x?y=\"z\"")])
        #expect(container.hasPrefix("http://127.0.0.1:3000/Streaming_SSL/"))
        #expect(location.hasPrefix("http://127.0.0.1:3000/Streaming_SSL/"))
    }

    @Test func thePublicURLWins() throws {
        let h = try Harness()
        try h.login()
        h.emulator.publicURL = URL(string: "https://fm.example.org:9443/ignored/path")
        #expect(h.emulator.publicURL?.absoluteString == "https://fm.example.org:9443/ignored/path")
        let (container, location) = try urls(h, [("X-Forwarded-Proto", "http"), ("X-Forwarded-Host", "other.example")])
        #expect(container.hasPrefix("https://fm.example.org:9443/Streaming_SSL/MainDB/"))
        #expect(location.hasPrefix("https://fm.example.org:9443/Streaming_SSL/MainDB/"))
        h.emulator.publicURL = URL(string: "https://[::1]")
        #expect(try urls(h, []).container.hasPrefix("https://[::1]/Streaming_SSL/"))
        h.emulator.publicURL = nil
        #expect(try urls(h, []).container.hasPrefix("http://127.0.0.1:3000/"))
    }

    @Test func originOfAPublicURL() {
        #expect(EmulatorState.origin(of: URL(string: "https://a.example")!) == "https://a.example")
        #expect(EmulatorState.origin(of: URL(string: "HTTP://a.example:80/x?y")!) == "http://a.example:80")
        #expect(EmulatorState.origin(of: URL(string: "ftp://a.example")!) == nil)
        #expect(EmulatorState.origin(of: URL(fileURLWithPath: "/tmp")) == nil)
    }
}

@Suite("fm-emulator --public-url", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct PublicURLExecutableTests {
    @Test("Bad public URLs print usage and exit 2", arguments: [["--public-url"], ["--public-url", "ftp://x.example"], ["--public-url", "not a url"]])
    func badPublicURL(arguments: [String]) throws {
        let emulator = try HTTPEmulatorProcess(arguments)
        #expect(emulator.waitForExit() == 2)
        #expect(emulator.standardErrorText.contains("usage: fm-emulator"))
    }

    @Test func containerURLsUseThePublicURL() async throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--public-url", "https://fm.example.test:9443"])
        defer { emulator.process.terminate() }
        let line = try #require(emulator.firstLine())
        let base = String(line.dropFirst("listening on ".count)) + "/fmi/data/vLatest/databases/Music"
        let session = makeHTTPTestSession()
        defer { session.finishTasksAndInvalidate() }
        func call(_ method: String, _ path: String, _ body: Data?, _ headers: [String: String]) async throws -> JSON {
            var request = URLRequest(url: try #require(URL(string: base + path)))
            request.httpMethod = method
            for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
            request.httpBody = body
            let (data, _) = try await session.data(for: request)
            return try JSON.parse(data)
        }
        let login = try await call("POST", "/sessions", Data("{}".utf8),
                                   ["Authorization": "Basic " + Data("admin:admin".utf8).base64EncodedString(), "Content-Type": "application/json"])
        let token = try #require(login["response"]?["token"]?.stringValue)
        let boundary = "publicURLBoundary"
        var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body.append(Data([1, 2, 3]))
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        _ = try await call("POST", "/layouts/Artists/records/1/containers/headshot", body,
                           ["Authorization": "Bearer \(token)", "Content-Type": "multipart/form-data; boundary=\(boundary)"])
        let record = try await call("GET", "/layouts/Artists/records/1", nil, ["Authorization": "Bearer \(token)"])
        let url = record["response"]?["data"]?.arrayValue?.first?["fieldData"]?["headshot"]?.stringValue ?? ""
        #expect(url.hasPrefix("https://fm.example.test:9443/Streaming_SSL/MainDB/"), "\(url)")
    }
}

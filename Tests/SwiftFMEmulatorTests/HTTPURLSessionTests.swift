import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFMEmulator

/// The socket layer through URLSession (libcurl on Linux), the client the library itself uses.
@Suite("HTTPServer through URLSession")
struct HTTPURLSessionTests {
    private func request(_ port: UInt16, _ path: String, method: String = "GET", body: Data? = nil,
                         headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    @Test("GET and POST with a JSON body, several on one session")
    func getAndPost() async throws {
        try await withHTTPServer { _, port in
            let session = makeHTTPTestSession()
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await session.data(for: request(port, "/fmi/data/vLatest/productInfo"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") == "application/json")
            let echo = try JSONDecoder().decode(HTTPEcho.self, from: data)
            #expect(echo.target == "/fmi/data/vLatest/productInfo")

            let json = Data(#"{"query":[{"name":"=Brian"}]}"#.utf8)
            for i in 0..<3 {
                let (postData, _) = try await session.data(for: request(
                    port, "/find/\(i)", method: "POST", body: json, headers: ["Content-Type": "application/json"]))
                let postEcho = try JSONDecoder().decode(HTTPEcho.self, from: postData)
                #expect(postEcho.method == "POST")
                #expect(postEcho.target == "/find/\(i)")
                #expect(postEcho.bodyData == json)
                #expect(postEcho.header("Content-Type") == "application/json")
            }
        }
    }

    @Test("A large upload (curl sends Expect: 100-continue) arrives intact")
    func largeUpload() async throws {
        try await withHTTPServer { _, port in
            let session = makeHTTPTestSession()
            defer { session.finishTasksAndInvalidate() }
            let body = Data((0..<(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            let (data, response) = try await session.data(for: request(
                port, "/upload", method: "POST", body: body, headers: ["Content-Type": "application/octet-stream"]))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let echo = try JSONDecoder().decode(HTTPEcho.self, from: data)
            #expect(echo.bodyData == body)
        }
    }

    @Test("A large response body arrives intact")
    func largeDownload() async throws {
        try await withHTTPServer { _, port in
            let session = makeHTTPTestSession()
            defer { session.finishTasksAndInvalidate() }
            let (data, _) = try await session.data(for: request(port, "/bytes/5000000"))
            #expect(data.count == 5_000_000)
            #expect(data == Data((0..<5_000_000).map { UInt8(truncatingIfNeeded: $0) }))
        }
    }

    @Test("An oversized body is refused with 413")
    func oversize() async throws {
        try await withHTTPServer(maxBodyBytes: 1024) { _, port in
            let session = makeHTTPTestSession()
            defer { session.finishTasksAndInvalidate() }
            let body = Data(repeating: 1, count: 4096)
            let (_, response) = try await session.data(for: request(port, "/big", method: "POST", body: body))
            #expect((response as? HTTPURLResponse)?.statusCode == 413)
        }
    }

    @Test("closeMidBody makes the client fail instead of receiving a short body as complete")
    func closeMidBody() async throws {
        try await withHTTPServer { _, port in
            let session = makeHTTPTestSession()
            defer { session.finishTasksAndInvalidate() }
            await #expect(throws: (any Error).self) {
                _ = try await session.data(for: request(port, "/closemid"))
            }
            // The server is fine afterwards.
            let (data, _) = try await session.data(for: request(port, "/ok"))
            #expect(try JSONDecoder().decode(HTTPEcho.self, from: data).target == "/ok")
        }
    }

    @Test("200 concurrent requests are all answered correctly")
    func concurrentRequests() async throws {
        try await withHTTPServer { _, port in
            let session = makeHTTPTestSession(maxConnections: 250)
            defer { session.finishTasksAndInvalidate() }
            let results = try await withThrowingTaskGroup(of: (Int, HTTPEcho).self) { group in
                for i in 0..<200 {
                    let req = request(port, "/concurrent/\(i)?n=\(i)", method: "POST", body: Data("body \(i)".utf8))
                    group.addTask {
                        let (data, _) = try await session.data(for: req)
                        return (i, try JSONDecoder().decode(HTTPEcho.self, from: data))
                    }
                }
                var all: [Int: HTTPEcho] = [:]
                for try await (i, echo) in group { all[i] = echo }
                return all
            }
            #expect(results.count == 200)
            for (i, echo) in results {
                #expect(echo.target == "/concurrent/\(i)?n=\(i)")
                #expect(echo.bodyData == Data("body \(i)".utf8))
            }
        }
    }

    @Test("A delayed response on one connection does not hold up other requests")
    func delayDoesNotBlock() async throws {
        let server = HTTPServer(handler: HTTPEchoHandler())
        let port = try server.start()
        let session = makeHTTPTestSession(maxConnections: 8)
        defer { session.finishTasksAndInvalidate() }
        let order = HTTPOrderLog()
        // An hour's delay (the server's stop cuts it short): on a loaded machine the three fast requests, and this
        // test's task resuming after each, may take minutes, and must still come first.
        var slowRequest = request(port, "/delay/3600")
        slowRequest.timeoutInterval = 3600
        let slow = Task { [slowRequest] in
            let result = try? await session.data(for: slowRequest)
            order.append(result == nil ? "slow-failed" : "slow")
        }
        for i in 0..<3 {
            let (data, _) = try await session.data(for: request(port, "/fast/\(i)"))
            #expect(try JSONDecoder().decode(HTTPEcho.self, from: data).target == "/fast/\(i)")
            order.append("fast")
        }
        #expect(order.entries == ["fast", "fast", "fast"])
        server.stop() // cuts the delay short
        await slow.value
        #expect(order.entries == ["fast", "fast", "fast", "slow-failed"])
    }
}

/// A thread-safe list of events, to assert ordering without timing.
final class HTTPOrderLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []

    func append(_ item: String) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var entries: [String] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

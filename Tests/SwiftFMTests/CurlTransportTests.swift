#if canImport(Glibc)
import Foundation
import FoundationNetworking
import Glibc
import Testing
@testable import SwiftFM

/// ``FMCurlTransport``, on the system's libcurl. Deadlines, caps, chunked bodies and compression
/// bombs run through it in ``HostileServerTests`` (the `curl` wire); here what is its own: keep-alive, never
/// two writes, leftovers, the connection limit, content decoding, streamed uploads, the missing library.
@Suite("libcurl transport (loopback)")
struct CurlTransportTests {
    /// A day's connection age, not libcurl's 118 s: on a loaded machine a test task can wait that long between
    /// two requests, and its kept-alive connection would then be dropped as too old (the tests count connections).
    func transport(limit: Int = 64) -> FMCurlTransport {
        FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: limit, maxConnectionAge: 86_400, library: .standard)
    }

    @Test func libcurlLoads() {
        #expect(FMCurlTransport.isAvailable)
        #expect(FMCurlTransport.libraryVersion?.isEmpty == false)
    }

    // MARK: keep-alive

    @Test func reusesAKeptAliveConnection() async {
        let server = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok()) }
        defer { server.stop() }
        let transport = transport()
        for _ in 0..<5 { #expect(await roundTrip(transport, server.url + "/x").text == "ok") }
        #expect(server.requests.count == 5)
        #expect(server.connections == 1)
        #expect(server.requests.allSatisfy { !$0.head.lowercased().contains("expect:") })
    }

    @Test func aConnectionTheServerClosedWhileIdleIsNotUsed() async {
        let server = KeepAliveServer { _, _, _ in .answerAndClose(KeepAliveServer.ok()) }
        defer { server.stop() }
        let transport = transport()
        #expect(await roundTrip(transport, server.url + "/a").text == "ok")
        #expect(await server.waitForCloses(1))
        #expect(await roundTrip(transport, server.url + "/b", method: "POST", body: Data("{}".utf8)).text == "ok")
        #expect(await server.waitForCloses(2))
        #expect(await roundTrip(transport, server.url + "/c", method: "PATCH", body: Data("{}".utf8)).text == "ok")
        #expect(server.requests.map(\.connection) == [0, 1, 2])
        #expect(server.requests.map(\.body) == [Data(), Data("{}".utf8), Data("{}".utf8)])
    }

    // MARK: never two writes

    /// The server takes the second request on a kept-alive connection and drops it unanswered (as a server that
    /// closed the connection as the request arrived). libcurl sends a plain GET again on a new connection; a
    /// POST, a PATCH with its body, a DELETE and a GET that runs a script reach the server once and fail
    /// with `networkConnectionLost`. Without the prerequest guard libcurl sent the DELETE and both script GETs
    /// twice (the POST and PATCH were kept once by the seek callback that refuses to rewind their bodies).
    @Test(arguments: [("POST", "/3", "{}"), ("PATCH", "/3", "{\"a\":1}"), ("DELETE", "/3", ""), ("GET", "/3?script=Log", ""),
                      ("GET", "/layouts/L/script/Log", "")])
    func aStaleConnectionIsRedialledForAReadButAWriteIsNeverSentTwice(_ method: String, _ path: String, _ body: String) async {
        let server = KeepAliveServer { _, _, index in index == 0 ? .answer(KeepAliveServer.ok()) : .close }
        defer { server.stop() }
        let transport = transport()
        #expect(await roundTrip(transport, server.url + "/1").text == "ok")
        #expect(await roundTrip(transport, server.url + "/2").text == "ok")
        #expect(server.requests.map { String($0.head.prefix(6)) } == ["GET /1", "GET /2", "GET /2"])
        #expect(server.requests.map(\.connection) == [0, 0, 1])
        let write = await roundTrip(transport, server.url + path, method: method, body: body.isEmpty ? nil : Data(body.utf8))
        #expect(write.error?.code == .networkConnectionLost, "\(String(describing: write.error))")
        #expect(server.requests.filter { $0.head.hasPrefix("\(method) \(path) ") }.count == 1, "\(server.requests.map(\.head))")
    }

    @Test func theEnginesRuleDecidesOverTheMethod() {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/fmi/data/vLatest/databases/DB/layouts/L/_find")!)
        request.httpMethod = "POST"
        #expect(!CurlTransfer.isReplayable(FMTransportRequest(urlRequest: request)))
        var marked = FMTransportRequest(urlRequest: request)
        marked.mayBeSentTwice = true
        #expect(CurlTransfer.isReplayable(marked))
        var read = FMTransportRequest(urlRequest: URLRequest(url: URL(string: "http://127.0.0.1/records")!))
        #expect(CurlTransfer.isReplayable(read))
        read.mayBeSentTwice = false
        #expect(!CurlTransfer.isReplayable(read))
    }

    // MARK: leftovers

    /// An answer longer than its Content-Length, and a 204 that carries a body: the bytes left over are never
    /// read as the next request's answer, and that connection is not used again.
    @Test(arguments: ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforgd",
                      "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforgd"])
    func bytesLeftAfterAnAnswerCloseTheConnection(_ first: String) async {
        let server = KeepAliveServer { _, connection, index in
            connection == 0 && index == 0 ? .answer(first) : .answer(KeepAliveServer.ok("second"))
        }
        defer { server.stop() }
        let transport = transport()
        let one = await roundTrip(transport, server.url + "/1")
        #expect(one.error == nil)
        #expect(one.text == (first.contains("204") ? "" : "ok"))
        let two = await roundTrip(transport, server.url + "/2")
        #expect(two.text == "second", "the leftover was read as the second answer: \(two.text)")
        #expect(server.requests.map(\.connection) == [0, 1])
    }

    // MARK: connection limit

    @Test func neverOpensMoreConnectionsThanItsLimit() async {
        let gate = ConcurrencyGate(target: 3)
        let server = KeepAliveServer { _, _, _ in
            gate.hold()
            return .answer(KeepAliveServer.ok())
        }
        defer { server.stop() }
        let transport = transport(limit: 3)
        let texts = await withTaskGroup(of: String.self) { group in
            for i in 0..<12 { group.addTask { await roundTrip(transport, server.url + "/\(i)").text } }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(texts == Array(repeating: "ok", count: 12))
        #expect(gate.mostAtOnce == 3)
        #expect(server.mostOpen <= 3)
    }

    // MARK: bodies

    /// `gzip` of ``jsonText`` (`python3 -c 'import gzip; gzip.compress(text, compresslevel=9, mtime=0)'`).
    static let gzipped = "H4sIAAAAAAACA6tWKkotLsjPK05VsqpWSkksSVSyio6t1VHKTS0uTkxPLQZyq5WS81OA8koGSnBxIM/fW6k2thYABqZuBUEAAAA="
    static let jsonText = #"{"response":{"data":[]},"messages":[{"code":"0","message":"OK"}]}"#
    /// `zlib.compress(records, 6)` (dynamic Huffman blocks) of ``records``.
    static let zlibbed = """
        eJxV2DuO3UAMRNG9vHiCLrK7SXo3BuzAgWcDA+/dwASvrtJSdKHfkb5ef369fqyP1+fPv79fP16f6/Xv4+t7lMd6j+FR+72m19B73Vj7vR6ved7r9brjvRbWea/t\
        9dz3Ol5vOgJphTbGuU7Ia+cJfeM+IXAcKBRqOVFolByp4u5MoVPhUKFU6dRYPDduDXHHqeS5PK4N1Oo6NzZ39wZ7y73B3nZvsLfdG+wd9wZ6Y7k3F68696a4uzfR\
        G4GLl1dvujd5/aZ7E72x3ZvojePeLO7uTfTGdW+yt9y72dvu3ext9272jns3enPhdt3c3bt5x8q9G70Z7t3F3b0bvZnu3ejN7d6D3jzuPeLu3oPevO497C33HvYW\
        HlDsbfce9o57D3vHvQe9e7n3oHfLvRe9O9x7xd29F7073XvRu7d77+bu3oveffBI5jP5uvfyqXzde9lb7r3sbfcWe8e9xd5xb6H3LPcWeo/cW5u7ewu9J9xb6D2J\
        l1Bxd2/xPbTdW+g9x72N3nPd2+Lu3mZvubfZ2+5t9rZ7m73j3kbvXe7t4o7XLnqv3Nt884Z7B7033Tvi7t5B793uHfTe497Z3N076L3XvcPecu+wt9w77G1Ag71D\
        ajysAWwsamOBGwvJBU9poblAKq3NA0DHQnUBVlrILthKq3gA7lgILwhLC+VFZD2U9WDWw1kop7SK1KK1itiitorcorea3iK4muCiuJriIrma5KK5GuYS0dVAl6iu\
        3iQmjQl2ie5quEuEVwNeorwa8hLp1aCXaK+GvUR8NfAl6mugL5FfA36J/hr4SwTYBHlNX0NgIsEGBBMNNjCYiLABwkSFDRQmMmzAMNFhA4eJEBtATJTYQGIixQYU\
        Ey3GDwueccyUNqIpMUBMlBggpofEUEyJAWKixAAxUWKAmM7jSY6d9zZyKbHihxSvb/RSYoCYKDFATJSYIDGRYgLFRIsJFhMxJmBM1JigMZFjAsdEjwke032cZn5A\
        8osKIhNJJpBMNJlgMhFlAspElQkqE1kmsEx0WcBlqsdvAZRTZgGZiTQL0Ey0WSS/nXmJA2eizgI6E3kW4Jnos4DPRKAFgCYKLSA0kWgBoqkf/0RQTqQFkCYqLaE0\
        kWm5+NuAdzecJkItATVRagmpiVRLUE20WsJqItYSWBO1ltCayLUE10SvJbwmgi0BNlFs2fxjwvJvsv0H6GET9A==
        """
    /// What ``zlibbed`` decodes to.
    static let records = (0..<200).map { #"{"id":\#($0),"name":"n\#($0 * 7 % 1000)"},"# }.joined()

    @Test func decodesGzipAndDeflate() async throws {
        let gzip = try #require(Data(base64Encoded: Self.gzipped))
        let zlib = try #require(Data(base64Encoded: Self.zlibbed))
        let server = HostileServer { _, index in
            let (coding, body) = index == 0 ? ("gzip", gzip) : ("deflate", zlib)
            return .endless(head: HostileServer.head("200 OK", ["Content-Encoding": coding, "Content-Length": "\(body.count)"]),
                            chunk: body, limit: body.count)
        }
        defer { server.stop() }
        let transport = transport()
        let first = await roundTrip(transport, server.url + "/a")
        #expect(first.error == nil)
        #expect(first.text == Self.jsonText)
        let second = await roundTrip(transport, server.url + "/b")
        #expect(second.error == nil)
        #expect(second.text == Self.records)
        #expect(server.heads.allSatisfy { $0.contains("\r\nAccept-Encoding: ") && $0.contains("gzip") }, "\(server.heads)")
    }

    @Test func aCorruptOrUnknownEncodingFailsClearly() async throws {
        var corrupt = [UInt8](try #require(Data(base64Encoded: Self.gzipped)))
        corrupt[corrupt.count - 6] ^= 0xFF // the CRC-32
        let bad = Data(corrupt)
        let server = HostileServer { _, index in
            index == 0
                ? .endless(head: HostileServer.head("200 OK", ["Content-Encoding": "gzip", "Content-Length": "\(bad.count)"]),
                           chunk: bad, limit: bad.count)
                : .answer(HostileServer.head("200 OK", ["Content-Encoding": "x-unknown", "Content-Length": "2"]) + "{}")
        }
        defer { server.stop() }
        let transport = transport()
        let first = await roundTrip(transport, server.url + "/a")
        #expect(first.error?.code == .cannotDecodeContentData, "\(String(describing: first.error))")
        let second = await roundTrip(transport, server.url + "/b")
        #expect(second.error?.code == .cannotDecodeContentData, "\(String(describing: second.error))")
    }

    @Test func streamsAnUploadFromAFile() async throws {
        let server = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok()) }
        defer { server.stop() }
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("curl-upload-\(UUID().uuidString).bin")
        try payload.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var request = URLRequest(url: URL(string: server.url + "/upload")!)
        request.httpMethod = "POST"
        request.setValue("multipart/form-data; boundary=x", forHTTPHeaderField: "Content-Type")
        let outcome = Locked(ExchangeOutcome())
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _ = transport().send(FMTransportRequest(urlRequest: request, bodyFile: file), events: FMTransportEvents(
                response: { response in outcome.withLock { $0.status = response.statusCode }; return true },
                data: { data in outcome.withLock { $0.body.append(data) }; return true },
                complete: { error in
                    outcome.withLock { $0.error = error as? URLError }
                    continuation.resume()
                }))
        }
        #expect(outcome.value.error == nil)
        #expect(outcome.value.text == "ok")
        #expect(server.requests.first?.head.contains("Content-Length: \(payload.count)") == true)
        #expect(server.requests.first?.head.contains("Content-Type: multipart/form-data; boundary=x") == true)
        #expect(server.requests.first?.body == payload)
    }

    // MARK: cancel

    @Test func cancelEndsATransferOnceWithCancelled() async {
        let server = HostileServer { _, _ in .silent }
        defer { server.stop() }
        let completions = Locked(0)
        let code = Locked<URLError.Code?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let task = transport().send(FMTransportRequest(urlRequest: URLRequest(url: URL(string: server.url + "/silent")!)),
                                        events: FMTransportEvents(response: { _ in true }, data: { _ in true }, complete: { error in
                                            code.withLock { $0 = (error as? URLError)?.code }
                                            if completions.withLock({ $0 += 1; return $0 == 1 }) { continuation.resume() }
                                        }))
            task.cancel()
            task.cancel()
        }
        #expect(code.value == .cancelled)
        #expect(completions.value == 1)
    }

    // MARK: above the transport

    @Test func aContainerRedirectCarriesTheCookieAndStreamsToAFile() async throws {
        let payload = String(repeating: "0123456789abcdef", count: 200_000) // 3.2 MB: the transfer pauses and resumes
        let server = KeepAliveServer { head, _, _ in
            if !head.contains("Cookie: X-FMS-Session-Key=s3cret") {
                return .answer("HTTP/1.1 302 Found\r\nLocation: /Streaming_SSL/MainDB/next.bin\r\n"
                               + "Set-Cookie: X-FMS-Session-Key=s3cret; Path=/; HttpOnly\r\nContent-Length: 0\r\n\r\n")
            }
            return .answer("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(payload.utf8.count)\r\n\r\n" + payload)
        }
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 30)
        configuration.maxResponseBytes = 1024 // a file download is not capped by it
        let api = DataAPI(configuration: configuration, transport: transport())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let saved = try await api.downloadContainer(url: URL(string: server.url + "/Streaming_SSL/MainDB/first.bin?RCType=EmbeddedRCFileProcessor")!, to: file)
        #expect(try String(contentsOf: saved, encoding: .utf8) == payload)
        let heads = server.requests.map(\.head)
        #expect(heads.count == 2)
        #expect(heads.last?.hasPrefix("GET /Streaming_SSL/MainDB/next.bin HTTP/1.1") == true)
        #expect(server.connections == 1, "the redirect went out on the kept-alive connection")
    }

    // MARK: silence

    /// The idle timeout bounds silence, the head included: a head of short lines arriving a byte at a time,
    /// never silent for more than a few hundredths of a second but about eight seconds long in all, is read whole under a 3 s idle timeout
    /// (curl's own low-speed check, used before, counts body bytes only). Silence is measured per header line
    /// and per body chunk.
    @Test func aSlowHeadIsNotSilence() async {
        let answer = "HTTP/1.1 200 OK\r\n" + (0..<16).map { "X-\($0): a\r\n" }.joined() + "Content-Length: 2\r\n\r\n{}"
        let server = HostileServer { _, _ in .drip(head: "", body: Data(answer.utf8), interval: 0.04) }
        defer { server.stop() }
        let outcome = await roundTrip(FMCurlTransport(idleTimeout: 3), server.url + "/slow")
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(outcome.text == "{}")
    }

    @Test func aSilentServerEndsAtTheIdleTimeout() async {
        let server = HostileServer { _, _ in .silent }
        defer { server.stop() }
        let outcome = await roundTrip(FMCurlTransport(idleTimeout: 0.5), server.url + "/silent")
        #expect(outcome.error?.code == .timedOut, "\(String(describing: outcome.error))")
    }

    // MARK: lifetime

    /// A released transport's thread ends, and its multi handle (with its connections and wake-up descriptors)
    /// is cleaned up, once its last transfer ended: a daemon that makes clients again and again keeps no threads.
    @Test func aReleasedTransportsThreadEnds() async throws {
        let server = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok()) }
        defer { server.stop() }
        var transport: FMCurlTransport? = transport()
        let engine = try #require(transport?.engine)
        #expect(await roundTrip(try #require(transport), server.url + "/x").text == "ok")
        #expect(!engine.waitUntilFinished(timeout: 0))
        transport = nil
        #expect(await onOwnThread { engine.waitUntilFinished(timeout: TestBound.seconds) })
    }

    // MARK: the library

    @Test func aMissingLibraryFailsEveryCallClearly() async {
        let library = CurlLibrary.at("/nonexistent/libcurl.so.4")
        #expect(library.error != nil)
        let transport = FMCurlTransport(idleTimeout: 5, maxConnectionsPerHost: 4, library: library)
        let outcome = await roundTrip(transport, "http://127.0.0.1:9/x")
        #expect(outcome.error?.code == .unsupportedURL)
        #expect(outcome.error?.localizedDescription.contains("libcurl could not be loaded") == true, "\(String(describing: outcome.error))")
    }
}
#endif

#if canImport(Glibc)
/// TLS options and a proxy are honoured by FMCurlTransport, and never ignored by a transport that
/// cannot honour them. (Over a real TLS front: `TLSOptionsTests`, run by `Tests/tls/run.sh`.)
@Suite("TLS options and proxy (no network)")
struct TLSOptionsUnitTests {
    @Test func aTransportThatCannotHonourThemFailsEveryCall() async {
        let server = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok()) }
        defer { server.stop() }
        // The hang bound: the refusal comes at once, and a loaded machine could pass 30 s first (-1004).
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw",
                                            timeout: TestBound.seconds)
        configuration.tls = FMTLSOptions(caCertificates: URL(fileURLWithPath: "/tmp/ca.pem"), pinnedPublicKeys: ["sha256//AAAA"])
        let api = DataAPI(configuration: configuration, transport: FMURLSessionTransport(idleTimeout: 30))
        do {
            _ = try await api.getRecords(layout: "L")
            Issue.record("sent")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.invalidConfiguration)
            #expect(error.message.contains("tls.caCertificates, tls.pinnedPublicKeys"), "\(error)")
            #expect(error.message.contains("FMURLSessionTransport"), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
        #expect(server.requests.isEmpty)
        // An FMCurlTransport made with other options is refused too.
        let other = DataAPI(configuration: configuration, transport: FMCurlTransport(idleTimeout: 30))
        await #expect(throws: FMError.self) { _ = try await other.getRecords(layout: "L") }
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: ["http://127.0.0.1:8080", "https://fms.example.com"])
    func theDefaultIsCurlWhereLibcurlLoads(_ host: String) {
        let configuration = FMConfiguration(host: host, database: "DB", username: "a", password: "b")
        #expect(defaultTransport(for: configuration) is FMCurlTransport)
        #expect(defaultTransportChoice(for: configuration, libraryPath: "libcurl.so.4").note == nil)
    }

    /// The default transport's silence limit is the deadline plus a margin, as URLSession's: a silence shorter
    /// than the call's deadline must not end it (a container dripped at a byte a second under a 1 s `timeout`
    /// and a long `containerTimeout` ended with the idle timeout on a loaded machine).
    @Test(arguments: [1.0, 30.0])
    func theDefaultCurlTransportLeavesTheDeadlineToTheCall(timeout: TimeInterval) throws {
        var configuration = FMConfiguration(host: "http://127.0.0.1:8080", database: "DB", username: "a", password: "b")
        configuration.timeout = timeout
        let curl = try #require(defaultTransport(for: configuration) as? FMCurlTransport)
        #expect(curl.idleTimeout == timeout + 5)
        #expect(curl.idleTimeout == urlSessionTransport(for: configuration).requestTimeout)
    }

    @Test func aMissingLibcurlFallsBackToURLSessionSayingSoOnce() {
        let events = Locked<[FMLogEvent]>([])
        let configuration = FMConfiguration(host: "https://fms.example.com", database: "DB", username: "a", password: "b")
        let api = DataAPI(configuration: configuration, callbackQueue: nil, tokenStore: FMMemoryTokenStore(),
                          logger: { event in events.withLock { $0.append(event) } }, now: { Date() },
                          curlLibraryPath: "/nonexistent/libcurl.so.4")
        #expect(api.transport is FMURLSessionTransport)
        #expect(events.value.count == 1)
        #expect(events.value.first?.level == .warning)
        #expect(events.value.first?.message.contains("libcurl could not be loaded") == true, "\(events.value)")
        let loaded = DataAPI(configuration: configuration, callbackQueue: nil, tokenStore: FMMemoryTokenStore(),
                             logger: { event in events.withLock { $0.append(event) } }, now: { Date() }, curlLibraryPath: "libcurl.so.4")
        #expect(loaded.transport is FMCurlTransport)
        #expect(events.value.count == 1)
    }

    @Test func theDefaultTransportHonoursThem() {
        var configuration = FMConfiguration(host: "https://fms.example.com", database: "DB", username: "a", password: "b")
        configuration.tls = FMTLSOptions(caCertificates: URL(fileURLWithPath: "/tmp/ca.pem"))
        let transport = defaultTransport(for: configuration)
        #expect((transport as? FMCurlTransport)?.tls == configuration.tls)
        #expect(refusal(of: transport, for: configuration) == nil)
    }

    @Test func aProxyGoesThroughAndItsCredentialsAreRedacted() async throws {
        // A plain HTTP proxy sees the absolute URL of the request.
        let proxy = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok("via proxy")) }
        defer { proxy.stop() }
        var configuration = FMConfiguration(host: "http://fms.invalid:8080", database: "DB", username: "admin", password: "pw", timeout: 30)
        configuration.proxy = URL(string: "http://proxyuser:proxysecret@127.0.0.1:\(proxy.port)")
        #expect(!"\(configuration)".contains("proxysecret"))
        #expect(!"\(configuration)".contains("proxyuser"))
        let transport = defaultTransport(for: configuration)
        let outcome = await roundTrip(transport, "http://fms.invalid:8080/fmi/data/vLatest/productInfo")
        #expect(outcome.text == "via proxy", "\(String(describing: outcome.error))")
        let head = try #require(proxy.requests.first?.head)
        #expect(head.hasPrefix("GET http://fms.invalid:8080/fmi/data/vLatest/productInfo HTTP/1.1"), "\(head)")
        #expect(head.contains("Proxy-Authorization: Basic "), "\(head)")
    }
}
#endif

#if canImport(Glibc)
/// Claris ID's Cognito requests go through SwiftFM's transport like every other request: bounded by
/// the sign-in's deadline and a size cap, never redirected. (Before, a private URLSession followed a 307 to
/// another host and the sign-in succeeded with that host's token; an endless answer was read past the failure;
/// a dripping Cognito held the sign-in.)
@Suite("Claris ID through the transport (hostile Cognito)")
struct ClarisIDTransportTests {
    func signInCode(_ server: HostileServer, wire: Wire, timeout: TimeInterval = 30) async -> (code: String, message: String) {
        let configuration = FMClarisIDConfiguration(userPoolID: "us-west-2_TEST", clientID: "client", cognitoURL: URL(string: server.url + "/")!)
        let signIn = ClarisIDSignIn(username: "user@example.com", password: "pw", configuration: configuration, mfa: nil,
                                    refreshTokenStore: nil, timeout: timeout, transport: wire.transport(idleTimeout: 300))
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, FMError>, Never>) in
            signIn.fetch(refresh: false) { continuation.resume(returning: $0) }
        }
        switch result {
        case .success(let token): return ("0", token)
        case .failure(let error): return (error.code, "\(error)")
        }
    }

    @Test(arguments: Wire.allCases)
    func aRedirectIsAnErrorNamingIt(_ wire: Wire) async {
        let elsewhere = HostileServer { _, _ in .answer(HostileServer.json(#"{"ChallengeName":"PASSWORD_VERIFIER"}"#)) }
        defer { elsewhere.stop() }
        let server = HostileServer { _, _ in
            .answer("HTTP/1.1 307 Temporary Redirect\r\nLocation: \(elsewhere.url)/\r\nContent-Length: 0\r\n\r\n")
        }
        defer { server.stop() }
        let (code, message) = await signInCode(server, wire: wire)
        #expect(code == FMError.ClientCode.transport)
        #expect(message.contains("307") && message.contains("redirect"), "\(message)")
        #expect(elsewhere.heads.isEmpty, "the redirect was followed")
    }

    @Test(arguments: Wire.allCases)
    func anEndlessAnswerStopsAtTheCap(_ wire: Wire) async {
        let server = HostileServer { _, _ in
            .endless(head: HostileServer.head("200 OK", ["Content-Type": "application/x-amz-json-1.1"]), first: Data("{\"a\":\"".utf8),
                     chunk: Data(repeating: UInt8(ascii: "x"), count: 64 * 1024), limit: 64 << 20)
        }
        defer { server.stop() }
        let (code, message) = await signInCode(server, wire: wire)
        #expect(code == FMError.ClientCode.responseTooLarge, "\(message)")
        #expect(server.count("POST ") == 1)
    }

    @Test(arguments: Wire.allCases)
    func aDrippingCognitoMeetsTheDeadline(_ wire: Wire) async {
        let body = Data(repeating: UInt8(ascii: " "), count: 400)
        let server = HostileServer { _, _ in
            .drip(head: HostileServer.head("200 OK", ["Content-Type": "application/x-amz-json-1.1", "Content-Length": "400"]),
                  body: body, interval: 0.05)
        }
        defer { server.stop() }
        let (code, message) = await signInCode(server, wire: wire, timeout: 1)
        #expect(code == FMError.ClientCode.timeout, "\(message)")
    }
}
#endif

/// A head's fields as `FMCurlTransport` hands them over: a field repeated in any letter case joins the first one's value
/// with `", "`, under the first one's name; names are the same when equal with their ASCII letters folded.
@Suite("libcurl transport: a head's repeated fields")
struct CurlHeadFieldsTests {
    /// The rule written plainly: an index by name with its ASCII capitals made small (HTTP's field names are ASCII
    /// tokens; `É` and `é` are not the same name, as header lookups read them).
    static func oracle(_ lines: [(String, String)]) -> [String: String] {
        func key(_ name: String) -> String { String(decoding: name.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self) }
        var fields: [String: String] = [:]
        var first: [String: String] = [:]
        for (name, value) in lines {
            if let kept = first[key(name)] {
                fields[kept] = fields[kept, default: ""] + ", " + value
            } else {
                first[key(name)] = name
                fields[name] = value
            }
        }
        return fields
    }

    @Test func repeatsJoinUnderTheFirstName() {
        let lines = [("Set-Cookie", "a=1"), ("X-Note", "x"), ("set-cookie", "b=2"), ("SET-COOKIE", "c=3"), ("x-notes", "y")]
        #expect(CurlTransfer.fields(of: lines) == ["Set-Cookie": "a=1, b=2, c=3", "X-Note": "x", "x-notes": "y"])
        #expect(CurlTransfer.fields(of: []) == [:])
    }

    @Test func headsOfAnySizeFollowTheRule() {
        let names = ["Set-Cookie", "set-cookie", "SET-cookie", "Content-Type", "content-type", "X", "x", "X-", "Via", "VIA", "Date",
                     "X-FM-Data-Access-Token", "x-fm-data-access-token", "É", "é", "Ab", "aB"]
        var generator = SystemRandomNumberGenerator()
        for count in Array(0...32) + [100, 400] {
            for _ in 0..<20 {
                let lines = (0..<count).map { index in (names.randomElement(using: &generator) ?? "X", "v\(index)") }
                #expect(CurlTransfer.fields(of: lines) == Self.oracle(lines), "\(lines)")
            }
        }
    }
}

#if canImport(Glibc)
import Foundation
import FoundationNetworking
import Glibc
import Testing
@testable import SwiftFM

// `FMSocketTransport` does for `http://` what the URLSession transport does: content decoding, keep-alive with a
// safe redial (never a write twice), its connection limit, container redirects with the cookie, https handed on.

/// What one exchange through a transport produced.
struct ExchangeOutcome: Sendable {
    var status: Int?
    var headers: [String: String] = [:]
    var body = Data()
    var error: URLError?
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Sends one request through `transport` and awaits its end.
func roundTrip(_ transport: any FMTransport, _ url: String, method: String = "GET", body: Data? = nil,
              headers: [String: String] = [:]) async -> ExchangeOutcome {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body
    let outcome = Locked(ExchangeOutcome())
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        _ = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
            response: { response in
                outcome.withLock {
                    $0.status = response.statusCode
                    $0.headers = response.allHeaderFields as? [String: String] ?? [:]
                }
                return true
            },
            data: { data in
                outcome.withLock { $0.body.append(data) }
                return true
            },
            complete: { error in
                outcome.withLock { $0.error = error as? URLError ?? error.map { _ in URLError(.unknown) } }
                continuation.resume()
            }))
    }
    return outcome.value
}

/// ``FMSocketTransport``, SwiftFM's own HTTP/1.1 transport for `http://` hosts, keeps what the URLSession
/// transport does for the requests it carries: content decoding, keep-alive with a safe redial, the
/// connection limit, and everything above the transport (container redirects with the cookie, streaming to
/// files, a redirect to `https` handed to URLSession). Deadlines, caps, chunked bodies and compression bombs
/// run through both transports in ``HostileServerTests``.
///
/// Connections are kept alive for an hour here: on a loaded machine the suite's own steps can be more than the
/// default 30 s apart, and a connection closed for idleness would read as a connection not reused.
@Suite("Socket transport (loopback)")
struct SocketTransportTests {
    static let json = #"{"response":{"data":[{"fieldData":{"name":"gzipped"},"portalData":{},"recordId":"1","modId":"0"}],"dataInfo":{"database":"DB","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1}},"messages":[{"code":"0","message":"OK"}]}"#

    // MARK: compression

    @Test func asksForGzipAndDeflateAndDecodesThem() async throws {
        let gzip = InflateTests.bytes(InflateTests.fixture("gzipFixed"))
        let zlib = InflateTests.bytes(InflateTests.fixture("zlibDynamic"))
        let server = HostileServer { _, index in
            if index == 0 {
                return .endless(head: HostileServer.head("200 OK", ["Content-Encoding": "gzip", "Content-Length": "\(gzip.count)"]),
                                chunk: Data(gzip), limit: gzip.count)
            }
            // Chunked, in two chunks.
            let half = zlib.count / 2
            var chunked = Data(String(half, radix: 16).utf8) + Data("\r\n".utf8) + Data(zlib[..<half]) + Data("\r\n".utf8)
            chunked += Data(String(zlib.count - half, radix: 16).utf8) + Data("\r\n".utf8) + Data(zlib[half...]) + Data("\r\n0\r\n\r\n".utf8)
            return .endless(head: HostileServer.head("200 OK", ["Content-Encoding": "deflate", "Transfer-Encoding": "chunked"]),
                            chunk: chunked, limit: chunked.count)
        }
        defer { server.stop() }
        let transport = FMSocketTransport(idleTimeout: 300, keepAlive: 3600)
        let first = await roundTrip(transport, server.url + "/a")
        #expect(first.error == nil)
        #expect(first.text == InflateFixtures.text)
        let second = await roundTrip(transport, server.url + "/b")
        #expect(second.error == nil)
        #expect(second.body.count == InflateTests.fixture("zlibDynamic").length)
        #expect(InflateTests.crc([UInt8](second.body)) == InflateTests.fixture("zlibDynamic").crc32)
        #expect(server.heads.allSatisfy { $0.contains("\r\nAccept-Encoding: gzip, deflate") }, "\(server.heads)")
    }

    @Test func aGzippedAnswerFromTheCallSurface() async throws {
        var gzipped = [UInt8]([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])
        let plain = [UInt8](Self.json.utf8)
        var crc = CRC32()
        for byte in plain { crc.update(byte) }
        // One stored block (RFC 1951 §3.2.4), then CRC-32 and size.
        gzipped += [1, UInt8(plain.count & 0xFF), UInt8(plain.count >> 8), UInt8(~plain.count & 0xFF), UInt8((~plain.count >> 8) & 0xFF)]
        gzipped += plain
        gzipped += [UInt8]([crc.value, UInt32(plain.count)].flatMap { value in (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } })
        let body = Data(gzipped)
        let server = HostileServer { head, _ in
            HostileServer.isLogin(head) ? HostileServer.login()
                : .endless(head: HostileServer.head("200 OK", ["Content-Type": "application/json", "Content-Encoding": "gzip",
                                                               "Content-Length": "\(body.count)"]), chunk: body, limit: body.count)
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, .socket, timeout: 30)
        let (records, code) = await withCheckedContinuation { continuation in
            api.getRecords(layout: "L") { records, code in continuation.resume(returning: (records?.count, code)) }
        }
        #expect(code == "0")
        #expect(records == 1)
    }

    @Test func aCorruptOrUnknownEncodingFailsClearly() async {
        var corrupt = InflateTests.bytes(InflateTests.fixture("gzipFixed"))
        corrupt[corrupt.count - 6] ^= 0xFF // the CRC-32
        let bad = Data(corrupt)
        let server = HostileServer { head, index in
            HostileServer.isLogin(head) ? HostileServer.login()
                : index == 0
                ? .endless(head: HostileServer.head("200 OK", ["Content-Type": "application/json", "Content-Encoding": "gzip",
                                                               "Content-Length": "\(bad.count)"]), chunk: bad, limit: bad.count)
                : .answer(HostileServer.head("200 OK", ["Content-Type": "application/json", "Content-Encoding": "br", "Content-Length": "2"]) + "{}")
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, .socket, timeout: 30, retry: .none)
        for expected in ["CRC-32", "Content-Encoding br"] {
            do {
                _ = try await api.getRecords(layout: "L")
                Issue.record("decoded")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.transport)
                #expect("\(error)".contains(expected), "\(error)")
                #expect("\(error)".contains("cannotDecodeContentData"), "\(error)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    // MARK: keep-alive

    @Test func reusesAKeptAliveConnection() async {
        let server = KeepAliveServer { _, _, _ in .answer(KeepAliveServer.ok()) }
        defer { server.stop() }
        let transport = FMSocketTransport(idleTimeout: 300, keepAlive: 3600)
        for _ in 0..<5 { #expect(await roundTrip(transport, server.url + "/x").text == "ok") }
        #expect(server.requests.count == 5)
        #expect(server.connections == 1)
    }

    @Test func aConnectionTheServerClosedWhileIdleIsNotUsed() async {
        // The server closes each connection right after its first answer (as a server whose keep-alive
        // timeout passed): every request, writes included, goes out once on a fresh connection.
        let server = KeepAliveServer { _, _, _ in .answerAndClose(KeepAliveServer.ok()) }
        defer { server.stop() }
        let transport = FMSocketTransport(idleTimeout: 300, keepAlive: 3600)
        #expect(await roundTrip(transport, server.url + "/a").text == "ok")
        #expect(await server.waitForCloses(1))
        #expect(await roundTrip(transport, server.url + "/b", method: "POST", body: Data("{}".utf8)).text == "ok")
        #expect(await server.waitForCloses(2))
        #expect(await roundTrip(transport, server.url + "/c", method: "PATCH", body: Data("{}".utf8)).text == "ok")
        #expect(server.requests.map(\.connection) == [0, 1, 2])
    }

    @Test func aStaleConnectionIsRedialledForAReadButAWriteIsNeverSentTwice() async {
        // The server takes the second request on a kept-alive connection and drops it unanswered (it had
        // closed the connection as the request arrived): a GET goes again, once, on a new connection; a POST
        // does not (the server may have acted on it; SwiftFM's retry policy decides).
        let server = KeepAliveServer { _, _, index in index == 0 ? .answer(KeepAliveServer.ok()) : .close }
        defer { server.stop() }
        let transport = FMSocketTransport(idleTimeout: 300, keepAlive: 3600)
        #expect(await roundTrip(transport, server.url + "/1").text == "ok")
        #expect(await roundTrip(transport, server.url + "/2").text == "ok")
        #expect(server.requests.map { String($0.head.prefix(6)) } == ["GET /1", "GET /2", "GET /2"])
        #expect(server.requests.map(\.connection) == [0, 0, 1])
        let write = await roundTrip(transport, server.url + "/3", method: "POST", body: Data("{}".utf8))
        #expect(write.error?.code == .networkConnectionLost)
        #expect(server.requests.filter { $0.head.hasPrefix("POST /3") }.count == 1)
    }

    // MARK: connection limit

    @Test func neverOpensMoreConnectionsThanItsLimit() async {
        let gate = ConcurrencyGate(target: 3)
        let server = KeepAliveServer { _, _, _ in
            gate.hold()
            return .answer(KeepAliveServer.ok())
        }
        defer { server.stop() }
        let transport = FMSocketTransport(idleTimeout: 300, maxConnectionsPerHost: 3, keepAlive: 3600)
        let texts = await withTaskGroup(of: String.self) { group in
            for i in 0..<12 { group.addTask { await roundTrip(transport, server.url + "/\(i)").text } }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(texts == Array(repeating: "ok", count: 12))
        #expect(gate.mostAtOnce == 3)
        #expect(server.mostOpen <= 3)
        #expect(server.connections <= 3)
    }

    // MARK: above the transport

    @Test func aContainerRedirectCarriesTheCookieAndStreamsToAFile() async throws {
        let payload = String(repeating: "0123456789abcdef", count: 20_000) // 320 KB, chunked
        let server = KeepAliveServer { head, _, _ in
            if !head.contains("Cookie: X-FMS-Session-Key=s3cret") {
                return .answer("HTTP/1.1 302 Found\r\nLocation: /Streaming_SSL/MainDB/next.bin\r\n"
                               + "Set-Cookie: X-FMS-Session-Key=s3cret; Path=/; HttpOnly\r\nContent-Length: 0\r\n\r\n")
            }
            var chunked = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            var rest = Substring(payload)
            while !rest.isEmpty {
                let piece = rest.prefix(40_000)
                rest = rest.dropFirst(piece.count)
                chunked += String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n"
            }
            return .answer(chunked + "0\r\n\r\n")
        }
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 30)
        configuration.maxResponseBytes = 1024 // a file download is not capped by it
        let api = DataAPI(configuration: configuration, transport: FMSocketTransport(idleTimeout: 300, keepAlive: 3600))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("socket-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let saved = try await api.downloadContainer(url: URL(string: server.url + "/Streaming_SSL/MainDB/first.bin?RCType=EmbeddedRCFileProcessor")!, to: file)
        #expect(try String(contentsOf: saved, encoding: .utf8) == payload)
        let heads = server.requests.map(\.head)
        #expect(heads.count == 2)
        #expect(heads.last?.hasPrefix("GET /Streaming_SSL/MainDB/next.bin HTTP/1.1") == true)
        #expect(heads.allSatisfy { !$0.contains("Authorization") })
        #expect(server.connections == 1, "the redirect went out on the kept-alive connection")
    }

    @Test func aRedirectToHTTPSIsHandedToURLSession() async throws {
        // A plain listener on the https port: what arrives there is a TLS handshake (URLSession's), never HTTP.
        let (listener, tlsPort) = bindLoopback()
        listen(listener, 4)
        let firstBytes = Locked<[UInt8]>([])
        let accepted = Thread {
            while true { // every connection: read the first bytes, close
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 3)
                var got = 0
                while got < 3 {
                    let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, 3 - got) }
                    guard n > 0 else { break }
                    got += n
                }
                firstBytes.withLock { if $0.isEmpty { $0 = Array(buffer[0..<got]) } }
                close(client)
            }
        }
        accepted.start()
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        let server = KeepAliveServer { _, _, _ in
            .answer("HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1:\(tlsPort)/Streaming_SSL/MainDB/x.bin\r\nContent-Length: 0\r\n\r\n")
        }
        defer { server.stop() }
        let api = DataAPI(configuration: FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 30),
                          transport: FMSocketTransport(idleTimeout: 300, keepAlive: 3600))
        do {
            _ = try await api.downloadContainer(url: URL(string: server.url + "/Streaming_SSL/MainDB/x.bin")!)
            Issue.record("a plain listener answered a TLS handshake")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport, "\(error)")
        }
        #expect(firstBytes.value.first == 0x16, "a TLS handshake record: \(firstBytes.value)")
    }
}
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// The socket layer over raw TCP: framing, keep-alive, limits, faults, lifecycle.
@Suite("HTTPServer over raw sockets")
struct HTTPServerRawTests {
    @Test("Two requests on one keep-alive connection")
    func keepAlive() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET /one?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let first = try client.readResponse()
            #expect(first.status == 200)
            #expect(first.header("Connection") == "keep-alive")
            #expect(try first.echo().target == "/one?x=1")
            try client.send("GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let second = try client.readResponse()
            #expect(try second.echo().target == "/two")
            #expect(try second.echo().method == "GET")
        }
    }

    @Test("Pipelined requests in one write are answered in order")
    func pipelining() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            var batch = ""
            for i in 0..<5 {
                batch += "POST /p\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)"
            }
            batch += "GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            try client.send(batch)
            for i in 0..<5 {
                let echo = try client.readResponse().echo()
                #expect(echo.target == "/p\(i)")
                #expect(echo.bodyData == Data("\(i)".utf8))
            }
            let last = try client.readResponse()
            #expect(try last.echo().target == "/last")
            #expect(last.header("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test("A request split into single bytes is reassembled")
    func byteByByte() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            let request = "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
            for byte in request.utf8 { try client.send([byte]) }
            let echo = try client.readResponse().echo()
            #expect(echo.target == "/slow")
            #expect(echo.bodyData == Data("hello".utf8))
        }
    }

    @Test("Content-Length body with binary bytes")
    func contentLengthBody() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            let body: [UInt8] = (0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try client.send("PUT /bin HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
            try client.send(body)
            let echo = try client.readResponse().echo()
            #expect(echo.method == "PUT")
            #expect(echo.bodyData == Data(body))
            #expect(echo.header("content-length") == "2048")
        }
    }

    @Test("Chunked body with extensions and trailers")
    func chunkedBody() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n"
                + "1\r\n \r\n"
                + "A\r\n0123456789\r\n"
                + "0\r\nX-Trailer: yes\r\n\r\n")
            let echo = try client.readResponse().echo()
            #expect(echo.bodyData == Data("hello 0123456789".utf8))
            // The connection is still usable afterwards.
            try client.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().echo().target == "/after")
        }
    }

    @Test("Expect: 100-continue gets an interim response before the body is sent")
    func expectContinue() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            try client.send("data")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(try final.echo().bodyData == Data("data".utf8))
        }
    }

    @Test("Expect: 100-continue with an oversized body gets 413 instead of 100")
    func expectContinueTooLarge() throws {
        try withHTTPServerSync(maxBodyBytes: 1000) { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test("HEAD gets headers with Content-Length but no body")
    func head() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("HEAD /bytes/100 HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse(isHead: true)
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "100")
            try client.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().echo().target == "/next")
        }
    }

    @Test("HTTP/1.0 closes unless keep-alive is asked for; Connection: close is honoured")
    func connectionSemantics() throws {
        try withHTTPServerSync { _, port in
            let old = try HTTPRawClient(port: port)
            try old.send("GET /a HTTP/1.0\r\n\r\n")
            #expect(try old.readResponse().header("Connection") == "close")
            #expect(old.isClosedByServer())

            let oldKeepAlive = try HTTPRawClient(port: port)
            try oldKeepAlive.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try oldKeepAlive.readResponse().header("Connection") == "keep-alive")
            try oldKeepAlive.send("GET /b HTTP/1.0\r\n\r\n")
            #expect(try oldKeepAlive.readResponse().echo().target == "/b")
            #expect(oldKeepAlive.isClosedByServer())

            let closing = try HTTPRawClient(port: port)
            try closing.send("GET /c HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(try closing.readResponse().status == 200)
            #expect(closing.isClosedByServer())

            let handlerCloses = try HTTPRawClient(port: port)
            try handlerCloses.send("GET /close HTTP/1.1\r\n\r\n")
            #expect(try handlerCloses.readResponse().header("Connection") == "close")
            #expect(handlerCloses.isClosedByServer())
        }
    }

    @Test("Absolute-form targets are reduced to origin form; encoded targets stay raw")
    func targets() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET http://127.0.0.1:\(port)/fmi/data/v1/a%20b?x=%2F HTTP/1.1\r\n\r\n"
                + "GET HTTP://h?q=1 HTTP/1.1\r\n\r\n"
                + "GET /fmi/data/v1/databases/My%2FDB/layouts/%C3%A9?_limit=1 HTTP/1.1\r\n\r\n")
            #expect(try client.readResponse().echo().target == "/fmi/data/v1/a%20b?x=%2F")
            #expect(try client.readResponse().echo().target == "/?q=1")
            #expect(try client.readResponse().echo().target == "/fmi/data/v1/databases/My%2FDB/layouts/%C3%A9?_limit=1")
        }
    }

    @Test("Header names are kept in order and looked up case-insensitively")
    func headers() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\nAuthorization:   Bearer abc  \r\nx-Custom: 1\r\n\r\n")
            let echo = try client.readResponse().echo()
            #expect(echo.headers == [["Host", "x"], ["Authorization", "Bearer abc"], ["x-Custom", "1"]])
            #expect(echo.header("AUTHORIZATION") == "Bearer abc")
        }
    }

    @Test("Malformed requests get 400 and the connection closes", arguments: [
        "GARBAGE\r\n\r\n",
        "GET /\r\n\r\n",
        "GET / HTTP/1.1 extra\r\n\r\n",
        "GET / FTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",
    ])
    func malformed(request: String) throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send(request)
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.header("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test("Unsupported version, transfer coding and expectation get their own statuses")
    func unsupported() throws {
        try withHTTPServerSync { _, port in
            for (request, status) in [
                ("GET / HTTP/2.0\r\n\r\n", 505),
                ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
                ("POST / HTTP/1.1\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx", 417),
            ] {
                let client = try HTTPRawClient(port: port)
                try client.send(request)
                #expect(try client.readResponse().status == status)
                #expect(client.isClosedByServer())
            }
        }
    }

    @Test("Oversized bodies get 413, oversized headers 431")
    func limits() throws {
        try withHTTPServerSync(maxHeaderBytes: 1024, maxBodyBytes: 1000) { _, port in
            let big = try HTTPRawClient(port: port)
            try big.send("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n")
            #expect(try big.readResponse().status == 413)
            #expect(big.isClosedByServer())

            let bigChunked = try HTTPRawClient(port: port)
            try bigChunked.send("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" + String(repeating: "a", count: 512)
                + "\r\n200\r\n")
            #expect(try bigChunked.readResponse().status == 413)

            let bigHead = try HTTPRawClient(port: port)
            try bigHead.send("GET / HTTP/1.1\r\nX-Long: " + String(repeating: "h", count: 2000) + "\r\n\r\n")
            #expect(try bigHead.readResponse().status == 431)
            #expect(bigHead.isClosedByServer())

            // A head that never ends is cut off at the limit too.
            let endless = try HTTPRawClient(port: port)
            try endless.send("GET / HTTP/1.1\r\n" + String(repeating: "X-A: b\r\n", count: 200))
            #expect(try endless.readResponse().status == 431)

            // Exactly at the limit is fine.
            let ok = try HTTPRawClient(port: port)
            try ok.send("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "z", count: 1000))
            #expect(try ok.readResponse().status == 200)
        }
    }

    @Test("closeMidBody announces the full length, sends half, then closes")
    func closeMidBody() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET /closemid HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(throws: HTTPTestError.self) { try client.readResponse() }
            // What arrived: the full head announcing 1000 bytes, and exactly 500 of them.
            let raw = try HTTPRawClient(port: port)
            try raw.send("GET /closemid HTTP/1.1\r\nHost: x\r\n\r\n")
            let bytes = raw.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains("Content-Length: 1000\r\n"))
            guard let split = text.range(of: "\r\n\r\n") else {
                Issue.record("no header terminator")
                return
            }
            #expect(text[split.upperBound...].utf8.count == 500)
        }
    }

    @Test("A delayed response does not hold up another connection; stop() cuts it short")
    func delayDoesNotBlockOthers() throws {
        let server = HTTPServer(handler: HTTPEchoHandler())
        let port = try server.start()
        defer { server.stop() }
        let slow = try HTTPRawClient(port: port)
        try slow.send("GET /delay/3600 HTTP/1.1\r\nHost: x\r\n\r\n")   // an hour: the fast requests come first however busy the machine
        // Make sure the slow request reached the handler before the fast one starts: a request on the
        // slow connection is answered strictly after it, so instead use a second connection and compare.
        let fast = try HTTPRawClient(port: port)
        for i in 0..<3 {
            try fast.send("GET /fast\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try fast.readResponse().echo().target == "/fast\(i)")
        }
        #expect(!slow.hasDataNow())
        server.stop()
        // The delayed response is dropped and its connection closed.
        #expect(slow.readToEnd().isEmpty)
    }

    @Test("A delayed response arrives, and later requests on its connection wait for it")
    func delayedResponseArrivesInOrder() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET /delay/0.05 HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().echo().target == "/delay/0.05")
            #expect(try client.readResponse().echo().target == "/after")
        }
    }

    @Test("200 concurrent raw connections are all answered")
    func manyConnections() throws {
        try withHTTPServerSync { _, port in
            let clients = try (0..<200).map { _ in try HTTPRawClient(port: port) }
            for (i, client) in clients.enumerated() {
                try client.send("POST /c\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)")
            }
            for (i, client) in clients.enumerated().reversed() {
                let echo = try client.readResponse().echo()
                #expect(echo.target == "/c\(i)")
                #expect(echo.bodyData == Data("\(i)".utf8))
            }
        }
    }

    @Test("stop() with open connections returns, closes them and frees the port")
    func stopWithOpenConnections() throws {
        let server = HTTPServer(handler: HTTPEchoHandler())
        let port = try server.start()
        #expect(server.port == port)
        let idle = try HTTPRawClient(port: port)
        try idle.send("GET /x HTTP/1.1\r\n\r\n")
        _ = try idle.readResponse()
        let partial = try HTTPRawClient(port: port)
        try partial.send("POST /y HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part")
        let connectedOnly = try HTTPRawClient(port: port)

        server.stop()
        #expect(server.port == nil)
        #expect(idle.isClosedByServer())
        #expect(partial.isClosedByServer())
        #expect(connectedOnly.isClosedByServer())
        server.stop() // idempotent

        // The port is free again: a new server can bind it.
        let again = HTTPServer(handler: HTTPEchoHandler())
        #expect(try again.start(port: port) == port)
        let client = try HTTPRawClient(port: port)
        try client.send("GET /again HTTP/1.1\r\n\r\n")
        #expect(try client.readResponse().echo().target == "/again")
        again.stop()

        // The first server object can be started again too.
        let restarted = try server.start()
        defer { server.stop() }
        let third = try HTTPRawClient(port: restarted)
        try third.send("GET /restarted HTTP/1.1\r\n\r\n")
        #expect(try third.readResponse().echo().target == "/restarted")
    }

    @Test("stop() is safe from several threads at once and from inside a handler")
    func concurrentStop() async throws {
        let server = HTTPServer(handler: HTTPEchoHandler())
        _ = try server.start()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { server.stop() } }
        }
        #expect(server.port == nil)

        let selfStopping = HTTPSelfStoppingHandler()
        let stoppable = HTTPServer(handler: selfStopping)
        selfStopping.server.set(stoppable)
        let port = try stoppable.start()
        let client = try HTTPRawClient(port: port)
        try client.send("GET /stop HTTP/1.1\r\n\r\n")
        // The connection ends (with or without the response), and the listener is gone.
        _ = client.readToEnd()
        #expect(stoppable.port == nil)
    }

    @Test("A busy port is reported as an HTTPServerError")
    func portInUse() throws {
        try withHTTPServerSync { _, port in
            let second = HTTPServer(handler: HTTPEchoHandler())
            do {
                _ = try second.start(port: port)
                Issue.record("bound a port that is in use")
                second.stop()
            } catch let error as HTTPServerError {
                #expect(error.isAddressInUse)
                #expect(error.message.contains("\(port)"))
            }
        }
    }

    @Test("Starting twice throws; localhost binds to 127.0.0.1")
    func startTwiceAndLocalhost() throws {
        let server = HTTPServer(handler: HTTPEchoHandler())
        let port = try server.start(host: "localhost")
        defer { server.stop() }
        #expect(throws: HTTPServerError.self) { try server.start() }
        let client = try HTTPRawClient(port: port, host: "127.0.0.1")
        try client.send("GET /lh HTTP/1.1\r\n\r\n")
        #expect(try client.readResponse().echo().target == "/lh")
    }

    @Test("Random garbage never crashes the server")
    func garbage() throws {
        try withHTTPServerSync(maxHeaderBytes: 4096) { _, port in
            var generator = SplitMix64(seed: 42)
            for round in 0..<40 {
                let client = try HTTPRawClient(port: port)
                var bytes = (0..<(64 + round * 50)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                if round % 2 == 0 {
                    // Plausible prefix, then junk.
                    bytes = Array("POST /g HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + bytes
                }
                try? client.send(bytes)
                if round % 3 == 0 { continue } // disconnect without reading
                shutdown(client.fd, Int32(SHUT_WR))
                _ = client.readToEnd()
            }
            let client = try HTTPRawClient(port: port)
            try client.send("GET /alive HTTP/1.1\r\n\r\n")
            #expect(try client.readResponse().echo().target == "/alive")
        }
    }

    @Test("Status codes without a body (204, 304) send no Content-Length or body")
    func bodylessStatuses() throws {
        try withHTTPServerSync { _, port in
            let client = try HTTPRawClient(port: port)
            try client.send("GET /status/204 HTTP/1.1\r\n\r\nGET /status/304 HTTP/1.1\r\n\r\nGET /status/404 HTTP/1.1\r\n\r\n")
            let noContent = try client.readResponse()
            #expect(noContent.status == 204)
            #expect(noContent.header("Content-Length") == nil)
            #expect(try client.readResponse().status == 304)
            let notFound = try client.readResponse()
            #expect(notFound.status == 404)
            #expect(notFound.body == Data("status 404".utf8))
        }
    }
}

/// A handler that stops its own server from inside `handle`.
final class HTTPSelfStoppingHandler: HTTPHandler {
    final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private var server: HTTPServer?
        func set(_ s: HTTPServer) { lock.lock(); server = s; lock.unlock() }
        func get() -> HTTPServer? { lock.lock(); defer { lock.unlock() }; return server }
    }
    let server = Box()

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        server.get()?.stop()
        return HTTPResponse(status: 200)
    }
}

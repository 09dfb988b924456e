#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import SwiftFMEmulator

/// The emulator under abuse, with nginx as the reference (`client_header_timeout`,
/// `client_body_timeout`, reuse of idle keep-alive connections when `worker_connections` run out, 400 for
/// bytes that are not HTTP). Deadlines are injected short; every wait is on the server's own event (a
/// connection's phase, a close), bounded generously; nothing is timed.
@Suite struct AbuseTests {
    private static let productInfo = "GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: x\r\n\r\n"
    /// A head that announces a body and waits for `100 Continue`: once that arrives, the server holds the
    /// connection in its body phase.
    private static let headAwaitingBody = "POST /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    /// The first bytes of a TLS 1.2/1.3 ClientHello record (content type 22, version 3.1, length 512, handshake
    /// type 1, length, client version 3.3, then random bytes), as curl or URLSession send to an `https://` URL.
    private static let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
        + (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } + [0x20]

    private func server(_ emulator: Emulator) throws -> HTTPServer {
        try #require(emulator.core.state.withLock { $0.server })
    }

    @Test func aTLSClientHelloIsAnswered400AndClosedAtOnce() throws {
        let emulator = Emulator()
        emulator.connectionIdleTimeout = 600 // only the refusal can end this connection within the test
        let url = try emulator.start()
        defer { emulator.stop() }
        let client = try HTTPRawClient(port: try #require(url.port.map(UInt16.init)))
        try client.send(Self.clientHello)
        let answer = try client.readResponse()
        #expect(answer.status == 400)
        #expect(answer.header("Connection") == "close")
        #expect(client.isClosedByServer())
    }

    @Test func theParserRefusesBytesThatCannotStartARequestLine() {
        var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 64 * 1024, maxBodyBytes: 1024))
        parser.append(Self.clientHello)
        guard case .failure(400, _)? = parser.next() else {
            Issue.record("a ClientHello must be refused at once")
            return
        }
        // A method longer than any HTTP method, without a space yet, is refused too; a request line still
        // arriving is not.
        var long = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 64 * 1024, maxBodyBytes: 1024))
        long.append(Array(String(repeating: "A", count: HTTPRequestParser.maxMethodBytes + 1).utf8))
        guard case .failure(400, _)? = long.next() else {
            Issue.record("a 33-character method must be refused")
            return
        }
        var partial = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 64 * 1024, maxBodyBytes: 1024))
        partial.append(Array("\r\nGE".utf8))
        #expect(partial.next() == nil)
        #expect(partial.phase == .head)
    }

    /// Slowloris: a head whose bytes keep trickling in is still cut off at the head deadline (the idle
    /// timeout, 600 s here, never comes into play).
    @Test func aTricklingHeadIsClosedAtTheHeadDeadline() throws {
        let emulator = Emulator()
        emulator.connectionIdleTimeout = 600
        emulator.connectionHeaderTimeout = 0.5
        let url = try emulator.start()
        defer { emulator.stop() }
        let client = try HTTPRawClient(port: try #require(url.port.map(UInt16.init)))
        try client.send("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\n")
        // One header byte every 50 ms, for at least 5 minutes (the hang bound): the server must close first.
        var closed = false
        for _ in 0..<6000 {
            if client.hasDataNow() {
                closed = client.isClosedByServer()
                break
            }
            if (try? client.send("X")) == nil {
                closed = true
                break
            }
            usleep(50_000)
        }
        #expect(closed, "the server kept a trickling head open past its deadline")
    }

    @Test func aStalledBodyIsClosedAtTheBodyDeadline() throws {
        let emulator = Emulator()
        emulator.connectionIdleTimeout = 600
        emulator.connectionBodyTimeout = 0.5
        let url = try emulator.start()
        defer { emulator.stop() }
        let client = try HTTPRawClient(port: try #require(url.port.map(UInt16.init)))
        try client.send("POST /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{\"a\"")
        #expect(client.isClosedByServer(), "a body that stopped arriving must be closed at the body deadline")
    }

    /// At the cap, the longest-idle keep-alive connection is closed to admit a new client.
    @Test func theLongestIdleConnectionMakesRoomForANewClient() throws {
        let emulator = Emulator()
        emulator.maxConnections = 2
        emulator.connectionIdleTimeout = 600
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let server = try server(emulator)
        let first = try HTTPRawClient(port: port)
        try first.send(Self.productInfo)
        #expect(try first.readResponse().status == 200)
        #expect(server.waitForConnections(timeout: 300) { $0 == [.idle] })
        let second = try HTTPRawClient(port: port)
        try second.send(Self.productInfo)
        #expect(try second.readResponse().status == 200)
        #expect(server.waitForConnections(timeout: 300) { $0 == [.idle, .idle] })

        let third = try HTTPRawClient(port: port)
        try third.send(Self.productInfo)
        #expect(try third.readResponse().status == 200)
        #expect(first.isClosedByServer(), "the longest-idle connection is the one closed")
        #expect(emulator.evictedConnectionCount == 1)
        #expect(emulator.refusedConnectionCount == 0)
        try second.send(Self.productInfo)
        #expect(try second.readResponse().status == 200)
    }

    /// Connections stalled inside a request head (slowloris) make room too, once no idle one is left.
    @Test func aNormalClientIsAnsweredWhileSlowHeadsHoldEverySlot() throws {
        let emulator = Emulator()
        emulator.maxConnections = 4
        emulator.connectionIdleTimeout = 600
        emulator.connectionHeaderTimeout = 600 // only eviction can admit the normal client
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let server = try server(emulator)
        var slow: [HTTPRawClient] = []
        for _ in 0..<4 {
            let c = try HTTPRawClient(port: port)
            try c.send("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nX-Slow: ")
            slow.append(c)
        }
        #expect(server.waitForConnections(timeout: 300) { $0.count == 4 && $0.allSatisfy { $0 == .head } })
        let normal = try HTTPRawClient(port: port)
        try normal.send(Self.productInfo)
        #expect(try normal.readResponse().status == 200)
        #expect(emulator.evictedConnectionCount >= 1)
        #expect(slow[0].isClosedByServer(), "the head that started first is the one closed")
    }

    /// The connection closed is the one that has waited longest, whether idle or inside a head: a client
    /// that has just connected (idle, its request not yet read) is not closed in favour of a slow head that
    /// has been trickling in for longer.
    @Test func aJustAcceptedConnectionIsNotClosedBeforeAnOlderSlowHead() throws {
        let emulator = Emulator()
        emulator.maxConnections = 2
        emulator.connectionIdleTimeout = 600
        emulator.connectionHeaderTimeout = 600
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let server = try server(emulator)
        let slow = try HTTPRawClient(port: port)
        try slow.send("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nX-Slow: ")
        #expect(server.waitForConnections(timeout: 300) { $0 == [.head] })
        let fresh = try HTTPRawClient(port: port)
        #expect(server.waitForConnections(timeout: 300) { $0.count == 2 && $0.contains(.idle) })
        let third = try HTTPRawClient(port: port)
        try third.send(Self.productInfo)
        #expect(try third.readResponse().status == 200)
        #expect(slow.isClosedByServer(), "the older slow head is the one closed")
        try fresh.send(Self.productInfo)
        #expect(try fresh.readResponse().status == 200, "the client that had just connected is served")
    }

    /// Only when every connection is busy inside a request is a new one refused with 503.
    @Test func connectionsBeyondTheCapAreRefusedWhenAllAreBusy() throws {
        let emulator = Emulator()
        emulator.maxConnections = 2
        emulator.connectionIdleTimeout = 600
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let a = try HTTPRawClient(port: port), b = try HTTPRawClient(port: port)
        for c in [a, b] {
            try c.send(Self.headAwaitingBody)
            #expect(try c.readResponse().status == 100)
        }
        let third = try HTTPRawClient(port: port)
        try third.send(Self.productInfo)
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.header("Connection") == "close")
        #expect(third.isClosedByServer())
        #expect(emulator.refusedConnectionCount == 1)
        #expect(emulator.evictedConnectionCount == 0)
        // The busy connections are unaffected.
        try a.send("{}")
        #expect(try a.readResponse().status < 500)
    }
}

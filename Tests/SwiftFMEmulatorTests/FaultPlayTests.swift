#if canImport(Glibc)
import Glibc

// Each fault as a client sees it over a real socket: a status with Retry-After, a reset after the request ran, drips
// that hold no lock, real gzip, an HTML 401, killed and expired sessions, faults on logout; session behaviour and
// the traffic counters.

#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFMEmulator

/// A running emulator (the §15 solution) and raw HTTP requests to it.
final class RawEmulator {
    let emulator: Emulator
    let port: UInt16
    let base = "/fmi/data/vLatest/databases/Contacts"

    init() throws {
        emulator = try Emulator(schemaJSON: Data(contactsSchemaJSON.utf8))
        let url = try emulator.start()
        port = try #require(url.port.map(UInt16.init))
    }

    deinit { emulator.stop() }

    func client() throws -> HTTPRawClient { try HTTPRawClient(port: port) }

    /// The request text for `method target`, with a bearer token and a JSON body when given.
    func requestText(_ method: String, _ target: String, token: String? = nil, body: String? = nil,
                     headers: [String] = []) -> String {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1"]
        if let token { lines.append("Authorization: Bearer \(token)") }
        lines += headers
        if let body {
            lines.append("Content-Type: application/json")
            lines.append("Content-Length: \(body.utf8.count)")
        }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    /// Sends one request on a new connection and reads the answer.
    func send(_ method: String, _ target: String, token: String? = nil, body: String? = nil,
              headers: [String] = []) throws -> HTTPRawResponse {
        let c = try client()
        try c.send(requestText(method, target, token: token, body: body, headers: headers))
        return try c.readResponse(isHead: method == "HEAD")
    }

    func login(headers: [String] = ["Authorization: Basic YWRtaW46YWRtaW4="]) throws -> HTTPRawResponse {
        try send("POST", "\(base)/sessions", body: "{}", headers: headers)
    }

    func token() throws -> String {
        let r = try login()
        try #require(r.status == 200)
        return try #require(r.header("X-FM-Data-Access-Token"))
    }
}

extension HTTPRawResponse {
    var json: JSON? { try? JSON.parse(body) }
    var code: String? { json?["messages"]?.arrayValue?.first?["code"]?.stringValue }
}

@Suite struct FaultPlayTests {
    @Test func statusFaultAnswersStatusBodyAndRetryAfter() throws {
        let e = try RawEmulator()
        e.emulator.inject(.status(503, body: "busy", contentType: "text/plain", retryAfter: "2"))
        let r = try e.send("GET", "/fmi/data/vLatest/productInfo")
        #expect(r.status == 503)
        #expect(r.header("Retry-After") == "2")
        #expect(r.header("Content-Type") == "text/plain")
        #expect(String(decoding: r.body, as: UTF8.self) == "busy")

        e.emulator.inject(.status(500, body: #"{"messages":[{"code":"812","message":"Exceeded host's capacity"}],"response":{}}"#))
        let fm = try e.send("GET", "/fmi/data/vLatest/productInfo")
        #expect(fm.status == 500)
        #expect(fm.code == "812")
        #expect(fm.header("Content-Type") == "application/json")
        #expect(fm.header("Retry-After") == nil)
        #expect(try e.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
    }

    @Test func resetConnectionSendsNoByteAndTheRequestRan() throws {
        let e = try RawEmulator()
        let token = try e.token()
        let before = e.emulator.recordCount(inTable: "Contacts")
        e.emulator.inject(.resetConnection)
        let c = try e.client()
        try c.send(e.requestText("POST", "\(e.base)/layouts/Contacts/records", token: token, body: #"{"fieldData":{"name":"Reset"}}"#))
        var byte: UInt8 = 0
        let n = recv(c.fd, &byte, 1, 0)
        let error = errno
        #expect(n == -1)
        #expect(error == ECONNRESET)
        #expect(e.emulator.recordCount(inTable: "Contacts") == before + 1)
        // The next connection is served normally.
        #expect(try e.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
    }

    @Test func dripDeliversTheWholeAnswerIncludingALogin() throws {
        let e = try RawEmulator()
        let normal = try e.send("GET", "/fmi/data/vLatest/productInfo")
        e.emulator.inject(.drip(bytesPerSecond: 4000))
        let dripped = try e.send("GET", "/fmi/data/vLatest/productInfo")
        #expect(dripped.status == 200)
        #expect(dripped.body == normal.body)
        #expect(dripped.header("Content-Length") == String(normal.body.count))

        e.emulator.inject(.drip(bytesPerSecond: 4000), matching: "/sessions")
        let login = try e.login()
        #expect(login.status == 200)
        let token = try #require(login.header("X-FM-Data-Access-Token"))
        #expect(login.json?["response"]?["token"]?.stringValue == token)
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).status == 200)
    }

    @Test func aSlowDripHoldsNeitherTheLockNorOtherConnections() throws {
        let e = try RawEmulator()
        e.emulator.inject(.drip(bytesPerSecond: 1))
        let slow = try e.client()
        try slow.send(e.requestText("GET", "/fmi/data/vLatest/productInfo"))
        // The head arrives at once; the body is still dripping.
        let status = try #require(String(bytes: readHead(slow), encoding: .utf8))
        #expect(status.hasPrefix("HTTP/1.1 200"))
        #expect(status.contains("Content-Length: "))
        // Meanwhile other connections are served, through the state lock.
        let token = try e.token()
        #expect(try e.send("GET", "\(e.base)/layouts/Contacts/records", token: token).status == 200)
        // The client going away ends the drip; the emulator stays healthy.
        #if canImport(Glibc)
        _ = shutdown(slow.fd, Int32(SHUT_RDWR))
        #else
        _ = shutdown(slow.fd, SHUT_RDWR)
        #endif
        #expect(try e.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
    }

    /// Reads from `client` up to the end of the header block.
    private func readHead(_ client: HTTPRawClient) throws -> [UInt8] {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.reversed().starts(with: [0x0A, 0x0D, 0x0A, 0x0D]) {
            guard recv(client.fd, &byte, 1, 0) == 1 else { throw HTTPTestError(description: "closed in the head") }
            head.append(byte)
        }
        return head
    }

    @Test func gzipIsRealGzipThatURLSessionDecodes() async throws {
        let e = try RawEmulator()
        let normal = try e.send("GET", "/fmi/data/vLatest/productInfo")
        e.emulator.inject(.gzip)
        let raw = try e.send("GET", "/fmi/data/vLatest/productInfo")
        #expect(raw.header("Content-Encoding") == "gzip")
        #expect(Array(raw.body.prefix(3)) == [0x1f, 0x8b, 0x08])
        #expect(raw.body != normal.body)

        e.emulator.inject(.gzip)
        let session = makeHTTPTestSession()
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "http://127.0.0.1:\(e.port)/fmi/data/vLatest/productInfo"))
        let (data, response) = try await session.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(data == normal.body)
    }

    @Test func gzipFramingOfEmptyAndMultiBlockBodies() {
        #expect(Gzip.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        let empty = [UInt8](Gzip.encode(Data()))
        #expect(empty == [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0x01, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0])
        let big = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let encoded = [UInt8](Gzip.encode(big))
        // header + two stored blocks (5-byte heads) + trailer
        #expect(encoded.count == 10 + 5 + 65_535 + 5 + (70_000 - 65_535) + 8)
        #expect(encoded[10] == 0)                       // first block not final
        #expect(encoded[10 + 5 + 65_535] == 1)          // second block final
        #expect(Array(encoded.suffix(4)) == [0x70, 0x11, 0x01, 0x00]) // 70 000 little-endian
    }

    @Test func html401InvalidatesTheTokenAndLoginsPassItBy() throws {
        let e = try RawEmulator()
        e.emulator.inject(.html401)
        let token = try e.token()   // the login carries no token: the fault stays queued
        let r = try e.send("GET", "\(e.base)/layouts", token: token)
        #expect(r.status == 401)
        #expect(r.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: r.body, as: UTF8.self).contains("<html>"))
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).code == "952")
    }

    @Test func killSessionAnswers112AndTheTokenIsGone() throws {
        let e = try RawEmulator()
        let token = try e.token()
        e.emulator.inject(.killSession, matching: "/records")
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).status == 200)
        let r = try e.send("GET", "\(e.base)/layouts/Contacts/records", token: token)
        #expect(r.status == 500)
        #expect(r.code == "112")
        #expect(r.json?["messages"]?.arrayValue?.first?["message"]?.stringValue == "Window is missing")
        let after = try e.send("GET", "\(e.base)/layouts/Contacts/records", token: token)
        #expect(after.status == 401)
        #expect(after.code == "952")
        #expect(e.emulator.activeSessionCount == 0)
    }

    @Test func expireSessionInjectedTwiceExpiresTwiceAcrossReLogins() throws {
        let e = try RawEmulator()
        e.emulator.inject(.expireSession, count: 2)
        for _ in 0..<2 {
            let token = try e.token()
            #expect(try e.send("GET", "\(e.base)/layouts", token: token).code == "952")
        }
        let token = try e.token()
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).status == 200)
    }

    @Test func faultsOnLogoutUseThePathToken() throws {
        let e = try RawEmulator()
        let token = try e.token()
        e.emulator.inject(.killSession)
        let r = try e.send("DELETE", "\(e.base)/sessions/\(token)")
        #expect(r.code == "112")
        #expect(e.emulator.activeSessionCount == 0)
        #expect(e.emulator.logoutCount == 0)
    }
}

@Suite struct SessionBehaviourTests {
    @Test func maxSessionsIsSettableAndAnswers956() throws {
        let e = try RawEmulator()
        #expect(e.emulator.maxSessions == 5)   // the schema's limits.maxSessions
        e.emulator.maxSessions = 1
        _ = try e.token()
        let r = try e.login()
        #expect(r.status == 500)
        #expect(r.code == "956")
        #expect(r.json?["messages"]?.arrayValue?.first?["message"]?.stringValue
                == "Maximum number of database or Admin API sessions exceeded (*)")
        e.emulator.maxSessions = nil
        for _ in 0..<6 { _ = try e.token() }
        #expect(e.emulator.activeSessionCount == 7)
    }

    @Test func restartForgetsTokensAndKeepsData() throws {
        let e = try RawEmulator()
        let token = try e.token()
        #expect(try e.send("POST", "\(e.base)/layouts/Contacts/records", token: token, body: #"{"fieldData":{"name":"Kept"}}"#).status == 200)
        let count = e.emulator.recordCount(inTable: "Contacts")
        e.emulator.restart()
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).code == "952")
        #expect(e.emulator.recordCount(inTable: "Contacts") == count)
        #expect(e.emulator.activeSessionCount == 0)
    }

    @Test func loginAndLogoutCountsAndTheLoggedToken() throws {
        let e = try RawEmulator()
        let a = try e.token()
        let b = try e.token()
        #expect(try e.login(headers: ["Authorization: Basic \(Data("admin:wrong".utf8).base64EncodedString())"]).code == "212")
        #expect(try e.send("GET", "\(e.base)/layouts", token: a).status == 200)
        #expect(try e.send("GET", "\(e.base)/layouts", token: b).status == 200)
        #expect(try e.send("DELETE", "\(e.base)/sessions/\(a)").status == 200)
        #expect(try e.send("DELETE", "\(e.base)/sessions/\(a)").code == "952")
        #expect(e.emulator.loginCount == 2)
        #expect(e.emulator.logoutCount == 1)
        let log = e.emulator.requestLog
        #expect(log.map(\.token) == [nil, nil, nil, a, b, a, a])
        #expect(Set(log.compactMap(\.token)).count == 2)
    }

    @Test func clarisIDLogin() throws {
        let e = try RawEmulator()
        let fmid = ["Authorization: FMID claris-token-1"]
        let refused = try e.login(headers: fmid)
        #expect(refused.status == 401)
        #expect(refused.code == "212")
        e.emulator.acceptClarisIDToken("claris-token-1")
        let ok = try e.login(headers: fmid)
        #expect(ok.status == 200)
        let token = try #require(ok.header("X-FM-Data-Access-Token"))
        #expect(ok.json?["response"]?["token"]?.stringValue == token)
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).status == 200)
        e.emulator.revokeClarisIDToken("claris-token-1")
        #expect(try e.login(headers: fmid).code == "212")
        #expect(e.emulator.loginCount == 1)
    }

    @Test func oauthLogin() throws {
        let e = try RawEmulator()
        let headers = ["X-FM-Data-OAuth-Request-Id: req-1", "X-FM-Data-OAuth-Identifier: ident-1"]
        #expect(try e.login(headers: headers).code == "212")
        e.emulator.acceptOAuth(requestId: "req-1", identifier: "ident-1")
        let ok = try e.login(headers: headers)
        #expect(ok.status == 200)
        let token = try #require(ok.header("X-FM-Data-Access-Token"))
        #expect(ok.json?["response"]?["token"]?.stringValue == token)
        #expect(try e.login(headers: ["X-FM-Data-OAuth-Request-Id: req-1", "X-FM-Data-OAuth-Identifier: other"]).code == "212")
        #expect(try e.login(headers: []).code == "10")
        #expect(e.emulator.loginCount == 1)
    }

    @Test func resetReloadsTheSchemaAndForgetsEverything() throws {
        let e = try RawEmulator()
        let seeded = e.emulator.records(inTable: "Contacts").count
        let token = try e.token()
        #expect(try e.send("POST", "\(e.base)/layouts/Contacts/records", token: token, body: #"{"fieldData":{"name":"Gone"}}"#).status == 200)
        e.emulator.inject(.html502, count: 3)
        e.emulator.maxSessions = 2
        e.emulator.serviceTime = 0.001
        e.emulator.serializesSessions = true
        e.emulator.acceptClarisIDToken("t")
        e.emulator.reset()
        #expect(e.emulator.records(inTable: "Contacts").count == seeded)
        #expect(e.emulator.activeSessionCount == 0)
        #expect(e.emulator.requestLog.isEmpty)
        #expect(e.emulator.loginCount == 0)
        #expect(e.emulator.maxSessions == 5)
        #expect(e.emulator.serviceTime == 0)
        #expect(e.emulator.serializesSessions == false)
        #expect(try e.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
        #expect(try e.login(headers: ["Authorization: FMID t"]).code == "212")
        #expect(try e.send("GET", "\(e.base)/layouts", token: token).code == "952")
    }
}

@Suite struct TrafficTests {
    /// Sends `tokens.count` concurrent requests (one connection each), waits until the emulator holds
    /// `inFlight` of them and queues `waiting`, then releases them; returns the statuses.
    private func holdAndRelease(_ e: RawEmulator, tokens: [String], inFlight: Int, waiting: Int) throws -> [Int] {
        e.emulator.resetMaxInFlight()
        e.emulator.serviceTime = 600   // released by hand below; longer than any wait for the queue
        var clients: [HTTPRawClient] = []
        for token in tokens {
            let c = try e.client()
            try c.send(e.requestText("GET", "\(e.base)/layouts", token: token))
            clients.append(c)
        }
        let reached = e.emulator.core.traffic.waitFor(inFlight: inFlight, waiting: waiting, timeout: 300)
        #expect(reached)
        e.emulator.serviceTime = 0
        return try clients.map { try $0.readResponse().status }
    }

    @Test func serviceTimeHoldsRequestsAndMaxInFlightCountsThem() throws {
        let e = try RawEmulator()
        let tokens = try (0..<3).map { _ in try e.token() }
        let statuses = try holdAndRelease(e, tokens: tokens + tokens, inFlight: 6, waiting: 0)
        #expect(statuses == Array(repeating: 200, count: 6))
        #expect(e.emulator.maxInFlight == 6)
        e.emulator.resetMaxInFlight()
        #expect(e.emulator.maxInFlight == 0)
    }

    @Test func serializedSessionsRunOneRequestAtATimePerToken() throws {
        let e = try RawEmulator()
        let a = try e.token(), b = try e.token()
        e.emulator.serializesSessions = true
        let one = try holdAndRelease(e, tokens: [a, a, a, a], inFlight: 1, waiting: 3)
        #expect(one == [200, 200, 200, 200])
        #expect(e.emulator.maxInFlight == 1)
        let two = try holdAndRelease(e, tokens: [a, b, a, b, a], inFlight: 2, waiting: 3)
        #expect(two == [200, 200, 200, 200, 200])
        #expect(e.emulator.maxInFlight == 2)
    }

    @Test func aSessionsRequestsAreServedInArrivalOrder() throws {
        let e = try RawEmulator()
        let token = try e.token()
        e.emulator.serializesSessions = true
        e.emulator.serviceTime = 600   // released by hand below; longer than any wait for the queue
        var clients: [HTTPRawClient] = []
        for i in 1...4 {
            let c = try e.client()
            try c.send(e.requestText("POST", "\(e.base)/layouts/Contacts/records", token: token, body: #"{"fieldData":{"name":"fifo \#(i)"}}"#))
            clients.append(c)
            // The next request is sent only once this one is in flight or in line.
            #expect(e.emulator.core.traffic.waitFor(inFlight: 1, waiting: i - 1, timeout: 300))
        }
        e.emulator.serviceTime = 0
        #expect(try clients.map { try $0.readResponse().status } == [200, 200, 200, 200])
        let names = e.emulator.records(inTable: "Contacts").compactMap { $0["name"] as? String }.filter { $0.hasPrefix("fifo") }
        #expect(names == ["fifo 1", "fifo 2", "fifo 3", "fifo 4"])
    }

    @Test func aTinyServiceTimeStillAnswersEveryRequest() throws {
        let e = try RawEmulator()
        let token = try e.token()
        e.emulator.serviceTime = 0.001
        e.emulator.serializesSessions = true
        for _ in 0..<5 { #expect(try e.send("GET", "\(e.base)/layouts", token: token).status == 200) }
        #expect(e.emulator.maxInFlight >= 1)
    }
}

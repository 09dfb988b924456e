import Dispatch
import Foundation
import Testing
@testable import SwiftFMEmulator

/// The emulator is hard to knock over. Nothing here times anything: each test holds a request
/// at a known point with a hook, or counts entries and bytes.
@Suite struct HardeningTests {
    /// A big JSON POST is parsed outside the state lock: while its parse is held mid-way by a hook,
    /// another client's `productInfo` (which needs the lock) completes.
    @Test func bigPostDoesNotStallAConcurrentProductInfo() throws {
        let h = try Harness()
        let token = try h.login()
        let emulator = h.emulator
        // About 2 MiB of JSON (the mechanism, not the size, is under test).
        let big = Data((#"{"fieldData":{"name":""# + String(repeating: "x", count: 2 * 1024 * 1024) + #""}}"#).utf8)
        let productInfoStatus = LockedBox<Int?>(nil)
        let completedWhileHeld = LockedBox(false)
        emulator.core.beforeParseHook.withLock { hook in
            hook = { request in
                guard request.body.count > 1024 * 1024 else { return }
                // The big request is now between arrival and parse. Another client asks for productInfo.
                let done = DispatchSemaphore(value: 0)
                Thread {
                    let r = emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo", headers: []))
                    productInfoStatus.set(r.status)
                    done.signal()
                }.start()
                // If productInfo needed a lock held here, it could not finish while we wait (the timeout is
                // a hang guard, not a measurement).
                completedWhileHeld.set(done.wait(timeout: .now() + 300) == .success)
            }
        }
        let response = emulator.handler.handle(HTTPRequest(
            method: "POST", target: "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records",
            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: big))
        #expect(completedWhileHeld.value)
        #expect(productInfoStatus.value == 200)
        #expect(response.status == 200)
        #expect(emulator.recordCount(inTable: "Contacts") == 5)
    }

    @Test func requestLogIsBoundedByCountAndBytesAndKeepsBodiesOnlyWhenAsked() throws {
        let h = try Harness()
        try h.login()
        let emulator = h.emulator
        #expect(emulator.logsBodies == false)
        let body = #"{"fieldData":{"name":""# + String(repeating: "y", count: 100_000) + #""}}"#
        h.send("POST", "\(h.base)/layouts/Contacts/records", body: body)
        let kept = try #require(emulator.requestLog.last)
        #expect(kept.body.isEmpty)
        #expect(kept.bodyByteCount == body.utf8.count)
        #expect(emulator.requestLogBytes < 10_000)

        // Bodies kept on request, within the byte bound: 20 posts of 100 kB with a 1 MB bound.
        emulator.logsBodies = true
        emulator.maxLoggedBytes = 1_000_000
        for _ in 0..<20 { h.send("POST", "\(h.base)/layouts/Contacts/records", body: body) }
        #expect(emulator.requestLogBytes <= 1_000_000)
        let log = emulator.requestLog
        #expect(log.count >= 5 && log.count < 10)
        #expect(log.last?.body.count == body.utf8.count)

        // And by count.
        emulator.maxLoggedRequests = 3
        for _ in 0..<10 { h.send("GET", "/fmi/data/vLatest/productInfo", contentType: nil) }
        #expect(emulator.requestLog.count == 3)
        #expect(emulator.requestLog.allSatisfy { $0.decodedPath == "/fmi/data/vLatest/productInfo" })
        emulator.clearRequestLog()
        #expect(emulator.requestLogBytes == 0)
    }

    /// Every token the emulator issued is redacted from `--verbose` lines (the `onRequest` hook) and from
    /// a logged request's text, whatever it looks like.
    /// Every container download without a cookie is handed a new streaming cookie (the 302 before the
    /// bytes); the emulator keeps only the most recent ones, so a long run of downloads does not grow it
    /// (it once kept every cookie ever handed out). A recent cookie still opens the download.
    @Test func streamingCookiesStayBoundedOverManyDownloads() throws {
        let emulator = Emulator()
        let first = emulator.core.state.withLock { s -> String? in
            s.blobs["K"] = Blob(data: Data("bytes".utf8), contentType: "application/octet-stream", filename: "f.bin")
            let request = HTTPRequest(method: "GET", target: "/Streaming_SSL/MainDB/K.bin", headers: [("Host", "127.0.0.1")])
            var cookie: String?
            for _ in 0..<10_000 {
                let answer = s.streamContainer(request, name: "K.bin")
                cookie = answer.headers.first { $0.name == "Set-Cookie" }?.value
            }
            return cookie
        }
        #expect(emulator.core.state.withLock { $0.streamingCookies.count } <= 4096)
        let pair = try #require(first?.split(separator: ";").first.map(String.init))
        let withCookie = HTTPRequest(method: "GET", target: "/Streaming_SSL/MainDB/K.bin", headers: [("Host", "127.0.0.1"), ("Cookie", pair)])
        let answer = emulator.core.state.withLock { $0.streamContainer(withCookie, name: "K.bin") }
        #expect(answer.status == 200)
        #expect(answer.body == Data("bytes".utf8))
    }

    @Test func issuedTokensAreRedactedFromLogLines() throws {
        let h = try Harness()
        let lines = LockedBox<[String]>([])
        h.emulator.onRequest = { line in lines.set(lines.value + [line]) }
        let token = try h.login()
        h.send("DELETE", "\(h.base)/sessions/\(token)", bearer: false, contentType: nil)
        #expect(lines.value.last == "DELETE /fmi/data/vLatest/databases/Contacts/sessions/<token> → 200")
        let logged = try #require(h.emulator.requestLog.last)
        #expect(logged.description == "DELETE /fmi/data/vLatest/databases/Contacts/sessions/<token> → 200")
        // A token that is not 52 hex characters is still redacted once issued.
        var issued = IssuedTokens()
        issued.insert("custom-token-1")
        #expect(EmulatorCore.redact("/fmi/data/v1/databases/D/sessions/custom-token-1", issued: issued)
            == "/fmi/data/v1/databases/D/sessions/<token>")
        #expect(EmulatorCore.redact("/fmi/data/v1/databases/D/sessions/other", issued: issued) == "/fmi/data/v1/databases/D/sessions/other")
        #expect(!lines.value.joined().contains(token))
    }
}

/// Connection limits over real sockets: no sleeps, no timing assertions (the short idle timeout is
/// injected; the test blocks until the server acts).
@Suite struct ConnectionLimitTests {
    private static let productInfo = "GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test func idleConnectionsAreReaped() throws {
        let emulator = Emulator()
        emulator.connectionIdleTimeout = 0.2
        let url = try emulator.start()
        defer { emulator.stop() }
        let port = try #require(url.port.map(UInt16.init))
        let client = try HTTPRawClient(port: port)
        try client.send(Self.productInfo)
        #expect(try client.readResponse().status == 200)
        #expect(emulator.openConnectionCount == 1)
        // Silent now: the server closes the connection (the read blocks until it does).
        #expect(client.isClosedByServer())
        #expect(emulator.openConnectionCount == 0)
        // A connection that never sends a byte is reaped too.
        let silent = try HTTPRawClient(port: port)
        #expect(silent.isClosedByServer())
        #expect(emulator.openConnectionCount == 0)
    }
    // The cap closes the longest-idle connection first; a 503 needs every connection busy
    // (AbuseTests.connectionsBeyondTheCapAreRefusedWhenAllAreBusy).
}

/// A value shared between threads in a test.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func set(_ value: Value) { lock.lock(); stored = value; lock.unlock() }
}

import Foundation
import Testing
@testable import SwiftFMEmulator

// Injected faults are played in order, each matched against the percent-decoded path; delivery faults, an expired
// session, clearing faults, the request log and its hook.

@Suite struct FaultTests {
    @Test func fileMakerErrorIsConsumedInOrderAndMatchesDecodedPath() throws {
        let h = try Harness()
        try h.login()
        h.emulator.inject(.fileMakerError(code: "953"), count: 2, matching: "/layouts/My Layout/Odd")
        h.emulator.inject(.fileMakerError(code: "301", status: 500, message: "Busy"))
        // Not matching the first fault: takes the second (any request).
        let other = h.send("GET", "\(h.base)/layouts", contentType: nil)
        #expect(other.code == "301")
        #expect(other.message == "Busy")
        #expect(other.status == 500)
        for _ in 0..<2 {
            let a = h.send("GET", "\(h.base)/layouts/My%20Layout%2FOdd/records", contentType: nil)
            #expect(a.code == "953")
            #expect(a.message == "Exceeded limit on data the FileMaker Data API and OData can transmit (*)")
        }
        #expect(h.send("GET", "\(h.base)/layouts/My%20Layout%2FOdd/records", contentType: nil).status == 200)
    }

    @Test func deliveryFaults() throws {
        let h = try Harness()
        try h.login()
        let normal = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))

        h.emulator.inject(.delay(2.5))
        let delayed = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))
        #expect(delayed.delay == 2.5)
        #expect(delayed.body == normal.body)

        h.emulator.inject(.closeMidBody)
        let cut = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))
        #expect(cut.delivery == .closeMidBody)
        #expect(cut.body == normal.body)

        h.emulator.inject(.html502)
        let html = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))
        #expect(html.status == 502)
        #expect(html.headers.contains { $0.name == "Content-Type" && $0.value == "text/html" })

        h.emulator.inject(.truncatedJSON)
        let truncated = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))
        #expect(truncated.status == 200)
        #expect(truncated.body.count < normal.body.count)
        #expect(normal.body.starts(with: truncated.body))
        #expect((try? JSON.parse(truncated.body)) == nil)

        let after = h.emulator.handler.handle(HTTPRequest(method: "GET", target: "/fmi/data/vLatest/productInfo"))
        #expect(after.status == 200 && after.delay == 0 && after.delivery == .normal)
    }

    @Test func expireSessionFault() throws {
        let h = try Harness()
        try h.login()
        h.emulator.inject(.expireSession, matching: "/records")
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records", contentType: nil)
        #expect(a.status == 401)
        #expect(a.code == "952")
        #expect(h.emulator.activeSessionCount == 0)
    }

    @Test func clearFaults() throws {
        let h = try Harness()
        h.emulator.inject(.html502, count: 5)
        h.emulator.clearFaults()
        #expect(h.send("GET", "/fmi/data/vLatest/productInfo", contentType: nil).status == 200)
    }

    @Test func requestLogAndHook() throws {
        let h = try Harness()
        h.emulator.logsBodies = true
        let lines = LinesBox()
        h.emulator.onRequest = { lines.append($0) }
        let token = try h.login()
        h.send("GET", "\(h.base)/layouts/My%20Layout%2FOdd/records", contentType: nil)
        h.send("DELETE", "\(h.base)/sessions/\(token)", bearer: false, contentType: nil)
        let log = h.emulator.requestLog
        #expect(log.count == 3)
        #expect(log[0].method == "POST")
        #expect(log[0].header("authorization")?.hasPrefix("Basic ") == true)
        #expect(log[0].bodyText == "{}")
        #expect(log[1].target == "/fmi/data/vLatest/databases/Contacts/layouts/My%20Layout%2FOdd/records")
        #expect(log[1].decodedPath == "/fmi/data/vLatest/databases/Contacts/layouts/My Layout/Odd/records")
        #expect(log[1].status == 200)
        #expect(lines.values.count == 3)
        #expect(lines.values[2] == "DELETE /fmi/data/vLatest/databases/Contacts/sessions/<token> → 200")
        #expect(!lines.values.joined().contains(token))
        h.send("GET", "\(h.base)/layouts", contentType: nil)
        #expect(lines.values.last == "GET /fmi/data/vLatest/databases/Contacts/layouts → 401 (code 952)")
        h.emulator.clearRequestLog()
        #expect(h.emulator.requestLog.isEmpty)
        h.emulator.maxLoggedRequests = 2
        for _ in 0..<3 { h.send("GET", "/fmi/data/vLatest/productInfo", contentType: nil) }
        h.send("GET", "/fmi/data/vLatest/databases", contentType: nil)
        #expect(h.emulator.requestLog.map(\.decodedPath) == ["/fmi/data/vLatest/productInfo", "/fmi/data/vLatest/databases"])
    }
}

final class LinesBox: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ s: String) { lock.lock(); lines.append(s); lock.unlock() }
    var values: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}

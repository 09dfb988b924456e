import Foundation
import Testing
@testable import SwiftFMEmulator

/// A solution for the OData tests: `Customers` keyed by `code` (not empty + unique), `Orders` without a
/// key (ROWID), joined by `code = customer_code`.
let odataShopSchemaJSON = #"""
{
  "database": "Shop",
  "accounts": [ { "username": "admin", "password": "admin" } ],
  "tables": {
    "Customers": {
      "fields": {
        "code":   { "type": "text", "notEmpty": true, "unique": true },
        "name":   "text",
        "city":   "text",
        "joined": "date",
        "score":  "number",
        "alarm":  "time",
        "seen":   "timestamp",
        "photo":  "container",
        "phones": { "type": "text", "repetitions": 2 },
        "g_note": { "type": "text", "global": true }
      }
    },
    "Orders": {
      "fields": { "id": { "type": "number", "autoEnter": "serial" }, "customer_code": "text", "total": "number" }
    }
  },
  "relationships": [ { "left": "Customers", "right": "Orders", "match": { "code": "customer_code" } } ],
  "layouts": {
    "Customers": { "table": "Customers", "fields": ["code", "name", "city", "joined", "score", "alarm", "seen", "photo", "phones"] },
    "Orders": { "table": "Orders", "fields": ["id", "customer_code", "total"] }
  },
  "scripts": { "Echo": { "returns": "parameter" }, "Fail": { "error": "3" }, "Hello": { "returns": "Hello World" } },
  "records": {
    "Customers": [
      { "code": "ALFKI", "name": "Alfreds", "city": "Berlin", "joined": "01/15/2020", "score": 5, "alarm": "07:30:00", "seen": "11/02/2024 20:15:00" },
      { "code": "OBR", "name": "O'Brien & Sons", "city": "Dublin", "joined": "06/01/2021", "score": 3.5 },
      { "code": "ZOE", "name": "Zoë Café", "city": "Paris", "joined": "12/31/2019", "score": 4 },
      { "code": "NUL", "name": "", "city": "Berlin", "score": 1 }
    ],
    "Orders": [
      { "customer_code": "ALFKI", "total": 10 },
      { "customer_code": "ALFKI", "total": 25.5 },
      { "customer_code": "OBR", "total": 7 }
    ]
  }
}
"""#

/// Raw OData requests against an emulator (through its handler or over loopback HTTP).
final class ODataClient {
    let harness: Harness
    var authorization: String? = "Basic " + Data("admin:admin".utf8).base64EncodedString()
    var emulator: Emulator { harness.emulator }

    init(schemaJSON: String = odataShopSchemaJSON, via: Via = .handler) throws {
        harness = try Harness(schemaJSON: schemaJSON, db: "Shop", via: via)
    }

    /// Sends `method path` (path after `/fmi/odata/v4`, query string raw) and parses JSON answers.
    @discardableResult
    func send(_ method: String, _ path: String, body: String? = nil, headers: [(name: String, value: String)] = [],
              contentType: String? = "application/json") -> Answer {
        var h: [(name: String, value: String)] = [("Host", "127.0.0.1:3000")]
        if let authorization { h.append(("Authorization", authorization)) }
        if let contentType, body != nil { h.append(("Content-Type", contentType)) }
        h += headers
        let request = HTTPRequest(method: method, target: "/fmi/odata/v4" + path, headers: h, body: Data((body ?? "").utf8))
        let r = harness.exchange(request)
        return Answer(r)
    }

    /// Sends raw bytes.
    @discardableResult
    func sendData(_ method: String, _ path: String, body: Data, headers: [(name: String, value: String)]) -> Answer {
        var h: [(name: String, value: String)] = [("Host", "127.0.0.1:3000")]
        if let authorization { h.append(("Authorization", authorization)) }
        let r = harness.exchange(HTTPRequest(method: method, target: "/fmi/odata/v4" + path, headers: h + headers, body: body))
        return Answer(r)
    }

    /// Runs `send`; the first time the emulator is about to write OData rows meanwhile
    /// (``EmulatorState/odataWillWrite``), hands `other` to the emulator from another thread and waits for its
    /// answer, bounded: when the rows are written under the state lock, `other` cannot be answered until they
    /// are, and the wait ends without it. Returns `send`'s answer, `other`'s answer if it came meanwhile, and
    /// whether rows were written at all.
    func answering(_ other: HTTPRequest, whileRowsAreWritten send: () -> Answer) -> (answer: Answer, other: HTTPResponse?, wrote: Bool) {
        answering(other, at: \.odataWillWrite, during: send)
    }

    /// ``answering(_:whileRowsAreWritten:)`` at another test hook of the emulator's state (`hook`, such as
    /// ``EmulatorState/odataWillFilter``); `wrote` tells whether the hook was called at all.
    func answering(_ other: HTTPRequest, at hook: WritableKeyPath<EmulatorState, (@Sendable () -> Void)?>,
                   during send: () -> Answer) -> (answer: Answer, other: HTTPResponse?, wrote: Bool) {
        let handler = emulator.handler
        let armed = Locked(true)
        let answeredMeanwhile = Locked<HTTPResponse?>(nil)
        emulator.core.state.withLock {
            $0[keyPath: hook] = {
                guard armed.withLock({ let was = $0; $0 = false; return was }) else { return }
                let answer = Locked<HTTPResponse?>(nil)
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    let response = handler.handle(other)
                    answer.withLock { $0 = response }
                    done.signal()
                }
                guard done.wait(timeout: .now() + 300) == .success else { return }
                answeredMeanwhile.withLock { $0 = answer.withLock { $0 } }
            }
        }
        defer { emulator.core.state.withLock { $0[keyPath: hook] = nil } }
        let answer = send()
        return (answer, answeredMeanwhile.withLock { $0 }, !armed.withLock { $0 })
    }
}

extension Answer {
    /// `error.code` of an OData error body.
    var odataCode: String? { json?["error"]?["code"]?.stringValue }
    var odataMessage: String? { json?["error"]?["message"]?.stringValue }
    /// The rows of a collection.
    var rows: [JSON] { json?["value"]?.arrayValue ?? [] }
    var text: String { String(decoding: body, as: UTF8.self) }
}

extension JSON {
    /// A number's text (JSON number or kept decimal), for exact comparisons.
    var numberText: String? {
        switch self {
        case let .decimal(t): return t
        case let .number(n): return JSON.format(number: n)
        default: return nil
        }
    }
}

extension ODataClient {
    /// A request for another client, while a read is held: moves `NUL` (score 1) from Berlin to Paris.
    func moveNULToParis() -> HTTPRequest {
        HTTPRequest(method: "PATCH", target: "/fmi/odata/v4/Shop/Customers('NUL')",
                    headers: [("Host", "127.0.0.1:3000"), ("Authorization", authorization ?? ""), ("Content-Type", "application/json")],
                    body: Data(#"{"city":"Paris"}"#.utf8))
    }
}

/// Writes by `$filter` raced by another client while they match (ODataWriteByFilterOutsideLockTests, ODataWriteByFilterAttackTests).
extension ODataClient {
    /// Sends `write` on this thread; the first time a `$filter` starts matching meanwhile (``EmulatorState/odataWillFilter``),
    /// runs `meanwhile` on another thread and waits for it, bounded: when the matching holds the state lock, `meanwhile`
    /// cannot end until the write does, and the wait ends without it. The write's answer, whether `meanwhile` ended
    /// while the write was matching, and how many times a `$filter` started matching.
    func whileMatching(_ write: () -> Answer,
                       meanwhile: @escaping @Sendable () -> Void) -> (answer: Answer, ranMeanwhile: Bool, matches: Int) {
        let armed = Locked(true)
        let ran = Locked(false)
        let matches = Locked(0)
        emulator.core.state.withLock {
            $0.odataWillFilter = {
                matches.withLock { $0 += 1 }
                guard armed.withLock({ let was = $0; $0 = false; return was }) else { return }
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    meanwhile()
                    done.signal()
                }
                guard done.wait(timeout: .now() + 300) == .success else { return }
                ran.withLock { $0 = true }
            }
        }
        defer { emulator.core.state.withLock { $0.odataWillFilter = nil } }
        let answer = write()
        return (answer, ran.withLock { $0 }, matches.withLock { $0 })
    }

    /// `method path` with `body` as another client sends it to the handler (the Shop's credentials).
    static func otherClient(_ method: String, _ path: String, body: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString())]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method: method, target: "/fmi/odata/v4/Shop" + path, headers: headers, body: Data((body ?? "").utf8))
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFMEmulator

/// The §15 notation's solution: DB `Contacts`, layout `Contacts`, portal `notes` on TO `Notes`,
/// layout `My Layout/Odd`.
let contactsSchemaJSON = #"""
{
  "database": "Contacts",
  "accounts": [ { "username": "admin", "password": "admin" } ],
  "tables": {
    "Contacts": {
      "fields": {
        "id":        "number",
        "serial":    { "type": "number", "autoEnter": "serial" },
        "name":      "text",
        "drink":     "text",
        "date":      "date",
        "time":      "time",
        "stamp":     "timestamp",
        "portrait":  "container",
        "phones":    { "type": "text", "repetitions": 3 },
        "required":  { "type": "text", "autoEnter": { "value": "x" }, "notEmpty": true },
        "g_note_id": { "type": "number", "global": true },
        "secret":    "text"
      }
    },
    "Notes": {
      "fields": { "contact_id": "number", "note": "text" }
    }
  },
  "layouts": {
    "Contacts": {
      "table": "Contacts",
      "fields": ["id", "serial", "name", { "name": "drink", "valueList": "Drinks" }, "date", "time", "stamp", "portrait", "phones", "required", "g_note_id"],
      "portals": { "notes": { "table": "Notes", "match": { "serial": "contact_id" }, "fields": ["note"] } },
      "valueLists": { "Drinks": ["Tea", "Coffee", "Water"] }
    },
    "Slim": { "table": "Contacts", "fields": ["name"] },
    "My Layout/Odd": { "table": "Contacts", "fields": ["name"] },
    "NotesList": { "table": "Notes", "fields": ["contact_id", "note"] },
    "Folder A": { "folder": true, "layouts": ["Slim", "Folder B"] },
    "Folder B": { "folder": true, "layouts": ["NotesList"] }
  },
  "scripts": {
    "Echo": { "returns": "parameter" },
    "Fail": { "error": "3" },
    "Count": { "returns": "foundCount" },
    "Tools": { "folder": true, "scripts": ["Fail", "-", "Count"] }
  },
  "records": {
    "Contacts": [
      { "id": 1, "name": "John Doe", "drink": "Coffee", "date": "01/15/2020" },
      { "id": 2, "name": "John Smith", "drink": "Tea", "date": "02/22/2022" },
      { "id": 3, "name": "Joe Example", "drink": "Water", "date": "12/31/2021" },
      { "id": 4, "name": "David", "drink": "Tea", "date": "" }
    ],
    "Notes": [
      { "contact_id": 1, "note": "first note" },
      { "contact_id": 1, "note": "second note" },
      { "contact_id": 1, "note": "third note" },
      { "contact_id": 2, "note": "only note" }
    ]
  },
  "limits": { "maxSessions": 5, "sessionIdleSeconds": 900 }
}
"""#

/// One answer, parsed with the emulator's order-preserving JSON reader (exact JSON types).
struct Answer {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: Data
    var json: JSON?

    /// `response`, its body parsed when it is JSON.
    init(_ response: HTTPResponse) {
        self.init(status: response.status, headers: response.headers, body: response.body, json: try? JSON.parse(response.body))
    }

    init(status: Int, headers: [(name: String, value: String)], body: Data, json: JSON?) {
        self.status = status
        self.headers = headers
        self.body = body
        self.json = json
    }

    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
    var code: String? { json?["messages"]?.arrayValue?.first?["code"]?.stringValue }
    var message: String? { json?["messages"]?.arrayValue?.first?["message"]?.stringValue }
    var response: JSON { json?["response"] ?? .null }
    var data: [JSON] { response["data"]?.arrayValue ?? [] }
    var isEmptyResponse: Bool { response == .object([]) }
}

/// Expects FileMaker's answer to unknown parameters: HTTP 400, code 960, `Unknown parameter(s): <names>`, an empty response.
func expect960(_ a: Answer, _ names: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(a.status == 400, sourceLocation: sourceLocation)
    #expect(a.code == "960", sourceLocation: sourceLocation)
    #expect(a.message == "Unknown parameter(s): \(names)", sourceLocation: sourceLocation)
    #expect(a.isEmptyResponse, sourceLocation: sourceLocation)
}

/// How a ``Harness`` reaches the emulator.
enum Via: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Calls the emulator's handler directly: no sockets.
    case handler
    /// Real HTTP over loopback with URLSession (not the SwiftFM client), redirects not followed.
    case http

    var testDescription: String { rawValue }
}

/// Sends requests to an emulator, either through its handler or over real HTTP (see ``Via``).
final class Harness {
    let emulator: Emulator
    var token = ""
    let db: String
    let via: Via
    /// `scheme://host:port` requests go to: the `Host` header in handler mode, the listening address over HTTP.
    let origin: String
    private let session: URLSession?

    convenience init(schemaJSON: String = contactsSchemaJSON, db: String = "Contacts", via: Via = .handler) throws {
        try self.init(emulator: Emulator(schemaJSON: Data(schemaJSON.utf8)), db: db, via: via)
    }

    init(emulator: Emulator, db: String, via: Via = .handler) throws {
        self.emulator = emulator
        self.db = db
        self.via = via
        switch via {
        case .handler:
            origin = "http://127.0.0.1:3000"
            session = nil
        case .http:
            origin = try emulator.start().absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        }
    }

    deinit {
        // Only a harness that started the server stops it (stopping invalidates every token).
        if let session {
            // Every request of the harness has been answered by now. Not invalidateAndCancel: corelibs' reads its task
            // registry off its work queue, and a task still leaving it traps there (it crashed this suite's process once,
            // in ConformancePairsTests); this one invalidates on that queue.
            session.finishTasksAndInvalidate()
            emulator.stop()
        }
    }

    /// Sends one request the harness's way and returns the emulator's answer.
    func exchange(_ request: HTTPRequest) -> HTTPResponse {
        guard let session else { return emulator.handler.handle(request) }
        guard let url = URL(string: origin + request.target) else {
            Issue.record("cannot build a URL from \(request.target)")
            return HTTPResponse(status: 0)
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 300)
        urlRequest.httpMethod = request.method
        urlRequest.httpShouldHandleCookies = false
        for (name, value) in request.headers where name.caseInsensitiveCompare("Host") != .orderedSame {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if !request.body.isEmpty { urlRequest.httpBody = request.body }
        let answer = LockedAnswer()
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: urlRequest) { data, response, error in
            if let http = response as? HTTPURLResponse {
                let headers = http.allHeaderFields.compactMap { key, value -> (name: String, value: String)? in
                    guard let name = key as? String, let value = value as? String else { return nil }
                    return (name, value)
                }
                answer.set(HTTPResponse(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                Issue.record("no HTTP answer for \(request.method) \(request.target): \(String(describing: error))")
            }
            done.signal()
        }.resume()
        if done.wait(timeout: .now() + 300) == .timedOut { Issue.record("no answer within 300 s (hang guard)") }
        return answer.value ?? HTTPResponse(status: 0)
    }

    var base: String { "/fmi/data/vLatest/databases/\(db)" }

    @discardableResult
    func send(_ method: String, _ target: String, body: String? = nil, bearer: Bool = true,
              contentType: String? = "application/json", headers extra: [(name: String, value: String)] = []) -> Answer {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000")]
        if bearer, !token.isEmpty { headers.append(("Authorization", "Bearer \(token)")) }
        if let contentType, body != nil || method == "POST" || method == "PATCH" { headers.append(("Content-Type", contentType)) }
        headers += extra
        let request = HTTPRequest(method: method, target: target, headers: headers, body: Data((body ?? "").utf8))
        let r = exchange(request)
        return Answer(r)
    }

    func loginRequest(user: String = "admin", password: String = "admin", db: String? = nil, body: String? = "{}",
                      contentType: String? = "application/json") -> Answer {
        let basic = Data("\(user):\(password)".utf8).base64EncodedString()
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", "Basic \(basic)")]
        if let contentType { headers.append(("Content-Type", contentType)) }
        let request = HTTPRequest(method: "POST", target: "/fmi/data/vLatest/databases/\(db ?? self.db)/sessions",
                                  headers: headers, body: Data((body ?? "").utf8))
        let r = exchange(request)
        return Answer(r)
    }

    @discardableResult
    func login() throws -> String {
        let a = loginRequest()
        try #require(a.status == 200)
        token = try #require(a.response["token"]?.stringValue)
        return token
    }

    /// Creates a record on layout `Contacts` and returns its id.
    func create(_ fieldData: String, layout: String = "Contacts") throws -> String {
        let a = send("POST", "\(base)/layouts/\(layout)/records", body: #"{"fieldData":\#(fieldData)}"#)
        try #require(a.status == 200, "create failed: \(String(decoding: a.body, as: UTF8.self))")
        return try #require(a.response["recordId"]?.stringValue)
    }
}

func percentEncoded(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~")) ?? s
}

extension JSON {
    var numberValue: Double? { if case let .number(n) = self { return n }; return nil }
    var isString: Bool { stringValue != nil }
    var isBool: Bool { boolValue != nil }
    var isNumber: Bool { numberValue != nil || decimalText != nil }
    /// The exact text of a number the reader kept as a decimal (one a double would change).
    var decimalText: String? { if case let .decimal(t) = self { return t }; return nil }
}

/// Leaves redirects to the test (the container download must see the 302 and its cookie).
final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// The answer handed from URLSession's queue to the waiting test.
final class LockedAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: HTTPResponse?
    func set(_ response: HTTPResponse) { lock.lock(); stored = response; lock.unlock() }
    var value: HTTPResponse? { lock.lock(); defer { lock.unlock() }; return stored }
}

/// The emulator on the Contacts schema with its clock fixed in the middle of `year` (UTC): two-digit years are read
/// relative to it.
func contactsEmulator(clockIn year: Int) throws -> Emulator {
    var parts = DateComponents()
    parts.year = year
    parts.month = 6
    parts.day = 1
    parts.hour = 12
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
    let now = try #require(calendar.date(from: parts))
    return Emulator(schema: try EmulatorSchema(jsonData: Data(contactsSchemaJSON.utf8)), now: { now })
}

/// Sends `find` to `emulator` on another thread and holds it inside its matching (the `findWillMatch` hook) while
/// `during` runs; then lets it finish and removes the hook. Its answer, or `nil` when it never ended.
func whileMatching(_ find: HTTPRequest, in emulator: Emulator, during: () -> Void) -> HTTPResponse? {
    let handler = emulator.handler
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    emulator.core.state.withLock { s in
        s.findWillMatch = {
            entered.signal()
            _ = release.wait(timeout: .now() + 300)
        }
    }
    let answer = LockedAnswer()
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        answer.set(handler.handle(find))
        done.signal()
    }
    #expect(entered.wait(timeout: .now() + 300) == .success, "the find never started matching")
    during()
    release.signal()
    #expect(done.wait(timeout: .now() + 300) == .success, "the find never ended")
    emulator.core.state.withLock { $0.findWillMatch = nil }
    return answer.value
}


import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
import SwiftFM
import SwiftFMEmulator

/// The solution of the OData Claris ID, webhook and container end-to-end tests: `Customers` keyed by
/// `code` (not empty + unique, so `$metadata` declares it the key) with a container, on one layout.
let odataStudioSchema = Data(#"""
{
  "database": "Studio",
  "accounts": [ { "username": "admin", "password": "admin" } ],
  "tables": {
    "Customers": {
      "fields": {
        "code":  { "type": "text", "notEmpty": true, "unique": true },
        "name":  "text",
        "city":  "text",
        "score": "number",
        "photo": "container"
      }
    }
  },
  "layouts": { "Customers": { "table": "Customers", "fields": ["code", "name", "city", "score", "photo"] } },
  "records": {
    "Customers": [
      { "code": "ALFKI", "name": "Alfreds", "city": "Berlin", "score": 5 },
      { "code": "OBR", "name": "O'Brien & Sons", "city": "Dublin", "score": 3 },
      { "code": "ZOE", "name": "Zoë Café", "city": "Paris", "score": 4 }
    ]
  }
}
"""#.utf8)

/// A configuration for `database` at `url` with a generous deadline (a loaded 2-core machine).
func odataConfiguration(_ url: URL, database: String = "Studio", credentials: FMCredentials? = nil) -> FMConfiguration {
    var configuration = FMConfiguration(host: url.absoluteString, database: database, username: "admin", password: "admin")
    if let credentials { configuration.credentials = credentials }
    // A generous bound: a loaded 2-core machine runs many suites at once, and the deadline covers a Claris ID
    // sign-in, whose async steps wait their turn on a cooperative pool the other suites keep busy (CI saw 120 s pass).
    configuration.timeout = 600
    return configuration
}

/// Awaits a callback form's `(value?, code)` completion and checks it ran exactly once (one more turn of
/// the callback queue is waited for, so a second delivery queued behind the first is counted).
func odataOnce<V>(_ odata: FMOData, sourceLocation: SourceLocation = #_sourceLocation,
                  _ start: (@escaping @Sendable (V?, String) -> Void) -> Void) async -> (V?, String) {
    let counter = CallCounter()
    let box: UncheckedResult<V> = await withCheckedContinuation { continuation in
        start { value, code in
            if counter.hit() == 1 { continuation.resume(returning: UncheckedResult(value: value, code: code)) }
        }
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in odata.callbackQueue.async { done.resume() } }
    #expect(counter.value == 1, "completion ran \(counter.value) times", sourceLocation: sourceLocation)
    return (box.value, box.code)
}

/// A loopback HTTP receiver for webhook deliveries. `refuse` decides per request whether to answer 500
/// (else 200). Every request is kept; ``next()`` waits for the next one on the event itself.
final class ODataHookReceiver: HTTPHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var queued: [HTTPRequest] = []
    private var all: [HTTPRequest] = []
    private let arrived = DispatchSemaphore(value: 0)
    private let refuse: @Sendable (HTTPRequest) -> Bool
    private var server: HTTPServer?
    private(set) var url = ""

    init(refuse: @escaping @Sendable (HTTPRequest) -> Bool = { _ in false }) throws {
        self.refuse = refuse
        let server = HTTPServer(handler: self)
        self.server = server
        url = "http://127.0.0.1:\(try server.start())/hook"
    }

    func stop() { server?.stop() }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        lock.withLock {
            queued.append(request)
            all.append(request)
        }
        arrived.signal()
        return HTTPResponse(status: refuse(request) ? 500 : 200)
    }

    /// The next request received, waiting (off the cooperative pool) at most `seconds`; `nil` if none came.
    func next(within seconds: Double = 300) async -> HTTPRequest? {
        let arrived = self.arrived
        let came: Bool = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: arrived.wait(timeout: .now() + seconds) == .success) }
        }
        guard came else { return nil }
        return lock.withLock { queued.isEmpty ? nil : queued.removeFirst() }
    }

    /// Every request received so far.
    var received: [HTTPRequest] { lock.withLock { all } }
}

extension HTTPRequest {
    /// The delivery's rows (`value`), parsed.
    var hookRows: [[String: Any]] {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["value"] as? [[String: Any]] ?? []
    }

    /// The `code` of each delivered row, sorted.
    var hookCodes: [String] { hookRows.compactMap { $0["code"] as? String }.sorted() }
}

/// The built `fm-emulator` next to the test bundle (`swift build --build-tests` builds it).
let fmEmulatorBinary: URL? = {
    var directory = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("fm-emulator")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return nil
}()

struct FMEmulatorProcessError: Error, CustomStringConvertible { var description: String }

/// `fm-emulator` in its own process, on a schema file, with its control API; stopped by ``stop()``.
final class FMEmulatorProcess: @unchecked Sendable {
    private let process: ChildProcess
    private let schemaFile: URL
    private(set) var url = URL(fileURLWithPath: "/")
    private(set) var control = URL(fileURLWithPath: "/")

    init(schema: Data, arguments: [String]) throws {
        guard let executable = fmEmulatorBinary else { throw FMEmulatorProcessError(description: "fm-emulator is not built next to the tests") }
        schemaFile = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-odata-\(UUID().uuidString).json")
        try schema.write(to: schemaFile)
        process = try ChildProcess(executable, ["--schema", schemaFile.path, "--port", "0", "--control-port", "0"] + arguments,
                                       error: .discard)
        let lines = process.standardOutput.map { Self.lines(2, from: $0) } ?? []
        guard lines.count == 2, lines[0].hasPrefix("listening on "), lines[1].hasPrefix("control on "),
              let url = URL(string: String(lines[0].dropFirst("listening on ".count))),
              let control = URL(string: String(lines[1].dropFirst("control on ".count))) else {
            stop()
            throw FMEmulatorProcessError(description: "fm-emulator did not start: \(lines)")
        }
        self.url = url
        self.control = control
    }

    /// The first `count` lines of `handle` (fewer if it ends, or 300 s pass).
    private static func lines(_ count: Int, from handle: FileHandle) -> [String] {
        let result = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var bytes = Data()
            while bytes.filter({ $0 == 0x0A }).count < count {
                let chunk = handle.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            result.set(String(decoding: bytes, as: UTF8.self).split(separator: "\n").prefix(count).map(String.init))
            done.signal()
        }
        _ = done.wait(timeout: .now() + 300)
        return result.get()
    }

    /// A control API call (JSON in and out).
    func control(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
        var request = URLRequest(url: control.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = 300   // a child process on a loaded machine: the hang bound
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: schemaFile)
    }
}

import Foundation

// TEMPORARY (emu-http branch only): a stand-in for the FileMaker-logic helper's `Emulator`, with the
// public names `fm-emulator` uses, wired to `HTTPServer` with a trivial handler. The lead keeps the
// real Emulator.swift from the emu-fm branch when merging.

/// The FileMaker Data API emulator (temporary stand-in on the HTTP branch).
public final class Emulator: @unchecked Sendable {
    private let lock = NSLock()
    private var server: HTTPServer?
    private var hook: (@Sendable (String) -> Void)?

    /// Creates an emulator serving the built-in demo schema.
    public init() {}

    /// Creates an emulator serving the solution described by a schema file.
    /// - Throws: when the file cannot be read or is not a JSON object.
    public init(schemaFile: URL) throws {
        let data = try Data(contentsOf: schemaFile)
        guard try JSONSerialization.jsonObject(with: data) is [String: Any] else {
            throw CocoaError(.fileReadCorruptFile)
        }
    }

    /// Called with one line per request when set.
    public var onRequest: (@Sendable (String) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return hook }
        set { lock.lock(); hook = newValue; lock.unlock() }
    }

    /// Starts listening and returns the base URL.
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> URL {
        let server = HTTPServer(handler: StandInHandler(emulator: self))
        let bound = try server.start(host: host, port: port)
        lock.lock()
        self.server = server
        lock.unlock()
        let hostPart = host.contains(":") ? "[\(host)]" : host
        guard let url = URL(string: "http://\(hostPart):\(bound)") else {
            server.stop()
            throw CocoaError(.fileReadInvalidFileName)
        }
        return url
    }

    /// Stops listening.
    public func stop() {
        lock.lock()
        let s = server
        server = nil
        lock.unlock()
        s?.stop()
    }
}

private struct StandInHandler: HTTPHandler {
    let emulator: Emulator

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        emulator.onRequest?("\(request.method) \(request.target)")
        let body = Data(#"{"messages":[{"code":"0","message":"OK"}],"response":{}}"#.utf8)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }
}

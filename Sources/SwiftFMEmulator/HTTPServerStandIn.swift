import Foundation

// TEMPORARY stand-in so this branch compiles before the real HTTPServer lands.
// DELETE THIS FILE when merging the HTTP layer (it declares start/stop/port on the placeholder).

/// Thrown by the stand-in server.
struct HTTPServerUnavailable: Error {}

extension HTTPServer {
    /// Stand-in: always throws.
    func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 { throw HTTPServerUnavailable() }
    /// Stand-in: does nothing.
    func stop() {}
}

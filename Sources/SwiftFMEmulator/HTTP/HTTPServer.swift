import Foundation

/// A minimal HTTP/1.1 server over POSIX sockets (placeholder: implemented by the HTTP layer work).
public final class HTTPServer: Sendable {
    /// The handler that answers every request.
    public let handler: any HTTPHandler

    /// Creates a server that is not yet listening.
    public init(handler: any HTTPHandler) {
        self.handler = handler
    }
}

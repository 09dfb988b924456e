import Foundation

/// One request as the emulator received it, for assertions in tests.
public struct RecordedRequest: Sendable {
    /// The method (`GET`, `POST`, …).
    public let method: String
    /// The raw request target, percent-encoding intact.
    public let target: String
    /// The path with each segment percent-decoded once (segments joined with `/`, so an encoded
    /// `%2F` inside a name also shows as `/`).
    public let decodedPath: String
    /// The header fields in the order received.
    public let headers: [(name: String, value: String)]
    /// The body.
    public let body: Data
    /// The HTTP status the emulator answered.
    public let status: Int
    /// The session token the request carried (its `Bearer` token, or the token of a logout path), if any;
    /// count distinct values to see how many sessions a client used.
    public let token: String?

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body as UTF-8 text (empty when it is not UTF-8).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

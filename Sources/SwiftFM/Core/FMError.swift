import Foundation

/// The one error type of SwiftFM's typed and async surfaces.
///
/// It carries the FileMaker code (a string, as on the wire: `"401"`, `"952"`, …) or one of the
/// client-side codes below for failures that never reached FileMaker, the message, the HTTP
/// status when there was one, and a description of the underlying error. It is a struct, not an
/// enum, so new codes never break a caller's `switch`.
public struct FMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The FileMaker code, or a client-side code (`"-1001"` … `"-1012"`).
    public var code: String
    /// A human-readable message (FileMaker's own text when it sent one).
    public var message: String
    /// The HTTP status of the response, when a response arrived.
    public var httpStatus: Int?
    /// A description of the underlying error (transport, decoding, file system), when there was one.
    public var underlying: String?

    /// Creates an error.
    public init(code: String, message: String, httpStatus: Int? = nil, underlying: String? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.underlying = underlying
    }

    /// The FileMaker code as an integer, when it is one.
    public var numericCode: Int? { Int(code) }

    /// `true` for the client-side codes (failures that never got a FileMaker answer).
    public var isClientSide: Bool { code.hasPrefix("-10") && code.count == 5 }

    /// A one-line description; never contains credentials or tokens.
    public var description: String {
        var text = "FMError \(code): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus))" }
        if let underlying { text += " [\(underlying)]" }
        return text
    }
}

// MARK: - Client-side codes

extension FMError {
    /// The client-side codes: failures that never reached FileMaker or whose answer was unusable.
    /// Listed once here and in the README's table.
    public enum ClientCode {
        /// Missing or invalid configuration: no host, no database, no credentials, a URL that cannot be built.
        public static let invalidConfiguration = "-1001"
        /// An argument or payload the library cannot send (not JSON-serialisable, `null` field values, bad ranges).
        public static let invalidArgument = "-1002"
        /// The request failed in transport: connection refused, reset or closed, DNS failure, TLS error.
        public static let transport = "-1003"
        /// The request timed out.
        public static let timeout = "-1004"
        /// The request was cancelled by the caller (cancel handle or task cancellation).
        public static let cancelled = "-1005"
        /// The server answered something that is not JSON (for example an HTML 502 page from a proxy).
        public static let notJSON = "-1006"
        /// The server answered JSON of an unexpected shape: truncated, missing keys, wrong types.
        public static let malformedResponse = "-1007"
        /// A call that must return one record got none.
        public static let emptyResult = "-1008"
        /// A local file could not be read or written (container upload or download).
        public static let fileError = "-1009"
        /// A login succeeded on the wire but returned no token, or a call needs a token and none exists.
        public static let noToken = "-1010"
        /// The answer passed ``FMConfiguration/maxResponseBytes`` and was cancelled at the cap.
        public static let responseTooLarge = "-1011"
        /// The ``DataAPI`` is shutting down (``DataAPI/shutdown(grace:completion:)``): the call was not sent, or was
        /// stopped when the shutdown's grace period ended.
        public static let shuttingDown = "-1012"
        /// A Claris ID sign-in failed: Cognito refused it (the message is Cognito's, `underlying` names the
        /// exception, such as `"Cognito NotAuthorizedException"`) or a challenge could not be answered.
        public static let signInFailed = "-1013"
    }

    static func invalidConfiguration(_ message: String) -> FMError {
        FMError(code: ClientCode.invalidConfiguration, message: message)
    }
    static func invalidArgument(_ message: String) -> FMError {
        FMError(code: ClientCode.invalidArgument, message: message)
    }
    static func transport(_ underlying: String) -> FMError {
        FMError(code: ClientCode.transport, message: "The request failed before FileMaker answered", underlying: underlying)
    }
    static let cancelled = FMError(code: ClientCode.cancelled, message: "The request was cancelled")
    static func notJSON(status: Int?) -> FMError {
        FMError(code: ClientCode.notJSON, message: "The server answered something that is not JSON", httpStatus: status)
    }
    static func malformed(_ detail: String, status: Int?) -> FMError {
        FMError(code: ClientCode.malformedResponse, message: "Unexpected response: \(detail)", httpStatus: status)
    }
    static let emptyResult = FMError(code: ClientCode.emptyResult, message: "No record was returned")
    static func fileError(_ detail: String) -> FMError {
        FMError(code: ClientCode.fileError, message: detail)
    }
    static let noToken = FMError(code: ClientCode.noToken, message: "The login answer carried no token")
    static let shuttingDown = FMError(code: ClientCode.shuttingDown, message: "The DataAPI is shutting down")
}

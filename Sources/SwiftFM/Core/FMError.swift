import Foundation

/// The one error type of SwiftFM's typed and async surfaces.
///
/// It carries the FileMaker code (a string, as on the wire: `"401"`, `"952"`, …) or one of the
/// client-side codes below for failures that never reached FileMaker, the message, the HTTP
/// status when there was one, and a description of the underlying error. It is a struct, not an
/// enum, so new codes never break a caller's `switch`.
public struct FMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The FileMaker code, or a client-side code (`"-1001"` … `"-1014"`).
    public var code: String
    /// A human-readable message (FileMaker's own text when it sent one).
    public var message: String
    /// The HTTP status of the response, when a response arrived.
    public var httpStatus: Int?
    /// A description of the underlying error (transport, decoding, file system), when there was one.
    public var underlying: String?
    /// The code is one a server sent (FileMaker's OData codes share the client-side range).
    let sentByServer: Bool
    /// The wait a transient answer's `Retry-After` asked for, carried to the calls that waited for a login the
    /// answer failed (they retry, and must wait as the server asked). Not part of equality.
    var retryAfter: TimeInterval? = nil

    /// Creates an error.
    public init(code: String, message: String, httpStatus: Int? = nil, underlying: String? = nil) {
        self.init(code: code, message: message, httpStatus: httpStatus, underlying: underlying, sentByServer: false)
    }

    /// Creates an error; `sentByServer`: the code is the server's (see ``isClientSide``).
    init(code: String, message: String, httpStatus: Int?, underlying: String? = nil, sentByServer: Bool) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.underlying = underlying
        self.sentByServer = sentByServer
    }

    /// Two errors are equal when their code, message, HTTP status and underlying text are: an error a test
    /// writes out equals the one the server's answer made.
    public static func == (lhs: FMError, rhs: FMError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.httpStatus == rhs.httpStatus && lhs.underlying == rhs.underlying
    }

    /// The FileMaker code as an integer, when it is one.
    public var numericCode: Int? { Int(code) }

    /// `true` for the client-side codes (failures that never got a usable FileMaker answer); `false` for every
    /// code a server sent, FileMaker's OData codes in the same range (`-1002`, `-1020`, …) included.
    public var isClientSide: Bool { !sentByServer && Self.isClientSide(code) }

    /// The shape of the client-side codes: `"-10"` and two more characters (`"-1001"` … `"-1099"`).
    static func isClientSide(_ code: String) -> Bool { code.hasPrefix("-10") && code.count == 5 }

    /// A one-line description; never contains credentials or tokens. The HTTP status is named once: appended unless
    /// the message already says it (the client's hints for a container's 404 or another web server do). A control,
    /// line-separator or bidirectional-control character in an error made by a caller is replaced, as in a server's words.
    public var description: String {
        var text = "FMError \(code): \(message)"
        if let httpStatus, !Self.names(status: httpStatus, in: message) { text += " (HTTP \(httpStatus))" }
        if let underlying { text += " [\(underlying)]" }
        return Redaction.oneLine(text)
    }

    /// Whether `text` says "HTTP `status`" (not followed by another digit of any script: "HTTP 4040" and "HTTP 404٠"
    /// are not 404).
    private static func names(status: Int, in text: String) -> Bool {
        let words = "HTTP \(status)"
        var rest = text[...]
        while let found = rest.range(of: words) {
            guard let next = rest[found.upperBound...].first, next.isWholeNumber else { return true }
            rest = rest[found.upperBound...]
        }
        return false
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
        /// A container's streaming URL has expired: FileMaker answered it with a redirect loop (it does once the
        /// session the URL was read under is gone). Read the record again for a fresh URL.
        public static let containerURLExpired = "-1014"
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
    /// A container URL FileMaker answers with a redirect loop.
    static let containerURLExpired = FMError(
        code: ClientCode.containerURLExpired,
        message: "The container URL has expired (FileMaker answered it with a redirect loop): read the record again for a fresh URL")
}

// MARK: - A server's words in an error

extension FMError {
    /// A FileMaker code as a server wrote it, a string or an integer: an optional `-` and 1 to 9 ASCII digits
    /// without a leading zero, or `"0"` (spaces around it ignored), or `""`. `nil` for anything else, a code no
    /// FileMaker sends, so that a hostile answer cannot put text (line breaks, escape sequences, megabytes) where
    /// callers and log lines expect a number, nor a second spelling of a code (`"00"`, `"-0"`, `"0401"`) past a
    /// caller's `code == "0"` or `code == "401"`; the reader then answers `-1007`. FileMaker's OData service has
    /// negative codes of its own (`-1002`, `-1020`, …), so this check lets them pass; see ``dataAPICode(_:)``.
    static func serverCode(_ value: Any?) -> String? {
        if let number = value as? NSNumber {
            // No `abs`: it traps on Int.min, which a JSON number can be.
            guard String(cString: number.objCType) != "c", let integer = RawJSON.exactInt(number),
                  integer > -1_000_000_000, integer < 1_000_000_000 else { return nil }
            return String(integer)
        }
        guard let text = (value as? String)?.trimmingCharacters(in: .whitespaces) else { return nil }
        guard !text.isEmpty else { return text }
        let digits = (text.hasPrefix("-") ? text.dropFirst() : Substring(text)).utf8
        guard (1...9).contains(digits.count), digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              digits.first != UInt8(ascii: "0") || text == "0" else { return nil }
        return text
    }

    /// A code of the Data API as a server wrote it: ``serverCode(_:)``, and not in the client-side range
    /// (`-1000` … `-1099`), which the Data API never sends: a server's `"-1003"` would read as a failure in
    /// transport (``isClientSide``), and a login answered so would be retried as one.
    static func dataAPICode(_ value: Any?) -> String? {
        serverCode(value).flatMap { isClientSide($0) ? nil : $0 }
    }

    /// A script's error code as a server wrote it (a Data API `scriptError…`, an OData script's `code`):
    /// ``dataAPICode(_:)``, and not `""`. A script's own error is a FileMaker code (`Get(LastError)`), never a
    /// client-side one nor one of OData's engine codes, which come in an error body.
    static func scriptCode(_ value: Any?) -> String? {
        dataAPICode(value).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// An error's description as an ``FMError/underlying`` holds it: a decoding error's names the server's keys as
    /// sent (Swift prints a `DecodingError`'s path unescaped), so it is made printable and short too.
    static func underlyingText(_ error: any Error) -> String {
        serverText(String(describing: error), limit: 1_000)
    }

    /// A server's text (FileMaker's or Cognito's message, a Cognito exception's name, a record id or a field name
    /// in a decoding error) as an error holds it: at most `limit` characters (then `…`), every control,
    /// line-separator or bidirectional-control character (U+202E, U+2066, …) replaced by U+FFFD, so that it can
    /// neither forge a line in a caller's log, nor reorder the rest of one, nor fill one.
    static func serverText(_ text: String, limit: Int = 600) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else { return String(out) + "…" }
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: out.append("\u{FFFD}")
            default: out.append(scalar.properties.isBidiControl ? "\u{FFFD}" : scalar)
            }
            count += 1
        }
        return String(out)
    }
}

import Foundation

/// When and how SwiftFM retries a call that failed for a reason that is usually transient.
///
/// Retried: a connection refused, reset or closed before any answer; HTTP 502, 503 and 504; FileMaker
/// 812 ("Exceeded host's capacity") and 956 ("Maximum number of … sessions exceeded"); a failed name
/// lookup. The delay before retry *n* is drawn at random between zero and
/// `min(maxDelay, initialDelay × 2ⁿ⁻¹)` ("full jitter"); a `Retry-After` header (whole seconds as digits, or an
/// HTTP date; any other value, such as `1e3`, `+5` or `5.5`, is ignored as if absent) is honoured: the wait is never
/// shorter than the server asked, nor than that back-off (a `Retry-After: 0`
/// does not make a read riding out a 503 retry at once, again and again). A retry is never started when it
/// could not begin before the call's deadline (``FMConfiguration/timeout``): the call then completes at once
/// with the last failure's code. Each retry is logged. Never retried: a TLS failure (a handshake or
/// certificate the client rejects, a plain-HTTP server behind an `https://` host or the reverse), a timeout,
/// a cancel, a size cap and every other answer.
///
/// Only calls that cannot have changed data are retried by default: record reads, `_find`, metadata,
/// product info, session validation and container downloads. A create, edit, delete, duplicate, container
/// upload, globals write, script run (or a read that runs a script) is retried only when
/// ``retriesWrites`` is `true`, because one that reached the server may already have run. A read whose answer
/// broke off mid-body (a server restarting as it answered, a proxy cutting the connection) is sent again up to
/// ``maxAttempts``; a write whose answer broke off never is, whatever ``retriesWrites`` says: it was answered, so it ran.
///
/// **Riding out a restart.** With ``retriesReadsUntilDeadline`` (set in ``standard``, the default) a read
/// that meets a server that is away — a connection refused, reset or closed before any answer, or a 502,
/// 503 or 504 from the proxy in front — is not limited by ``maxAttempts``: it keeps retrying, with the
/// capped, jittered back-off, until it succeeds or its deadline comes, so a server restart of a few seconds
/// costs a read some latency, not a failure. ``maxAttempts`` bounds everything else: a read's 812, 956 or
/// failed name lookup, a write (with ``retriesWrites``), and a write whose login failed before anything
/// was sent. Fail fast with a shorter ``FMConfiguration/timeout`` or ``none``.
///
/// **First contact.** A connection that fails before any answer (refused, reset, closed, a name that does
/// not resolve) is retried, under any policy, only for a host (scheme, name and port) that has answered
/// this ``DataAPI`` and has not been unreachable for longer than 5 minutes since. Until then — a wrong
/// port, a server that is not running, a mistyped name — the first failure is the call's answer, at once,
/// with a message naming the host, the port and the cause.
public struct FMRetryPolicy: Sendable, Equatable, CustomStringConvertible {
    /// The most attempts of one call, the first included (1 means no retry).
    public var maxAttempts: Int
    /// The base of the exponential back-off, in seconds.
    public var initialDelay: TimeInterval
    /// The longest wait between two attempts, in seconds.
    public var maxDelay: TimeInterval
    /// Whether calls that may change data are retried too.
    public var retriesWrites: Bool
    /// Whether calls that cannot have changed data (reads, finds) keep retrying until their deadline,
    /// whatever ``maxAttempts`` says, when the server is away (a connection refused, reset or closed before
    /// any answer; HTTP 502, 503, 504).
    public var retriesReadsUntilDeadline: Bool

    /// Creates a policy. Values are clamped: at least 1 attempt, delays not negative.
    public init(maxAttempts: Int, initialDelay: TimeInterval = 0.25, maxDelay: TimeInterval = 8, retriesWrites: Bool = false,
                retriesReadsUntilDeadline: Bool = false) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay.isFinite ? max(0, initialDelay) : 0
        self.maxDelay = maxDelay.isFinite ? max(0, maxDelay) : 0
        self.retriesWrites = retriesWrites
        self.retriesReadsUntilDeadline = retriesReadsUntilDeadline
    }

    /// No retries.
    public static let none = FMRetryPolicy(maxAttempts: 1, initialDelay: 0, maxDelay: 0)

    /// The default, which rides out a server restart: a read or find that finds the server away (refused,
    /// reset, 502/503/504) retries until it succeeds or its deadline (``FMConfiguration/timeout``) comes,
    /// other transient failures make up to 3 attempts; the back-off before retry *n* is drawn between 0 and
    /// `min(2 s, 0.25 s × 2ⁿ⁻¹)` (full jitter); writes are not retried, except one whose login failed before
    /// anything was sent (up to 3 attempts).
    public static let standard = FMRetryPolicy(maxAttempts: 3, initialDelay: 0.25, maxDelay: 2, retriesWrites: false,
                                               retriesReadsUntilDeadline: true)

    /// The same as ``standard``, which now rides out a restart: reads and finds that find the server away
    /// retry until their deadline, other transient failures make up to 3 attempts, writes are not retried.
    /// The earlier default, where every retryable failure made at most 3 attempts, is
    /// `FMRetryPolicy(maxAttempts: 3)`.
    public static let untilDeadline = standard

    /// `"FMRetryPolicy(maxAttempts: …, …)"`.
    public var description: String {
        "FMRetryPolicy(maxAttempts: \(maxAttempts), initialDelay: \(initialDelay), maxDelay: \(maxDelay), retriesWrites: \(retriesWrites), "
            + "retriesReadsUntilDeadline: \(retriesReadsUntilDeadline))"
    }

    /// The wait before attempt `attempt + 1` after attempt `attempt` failed (1-based), honouring `retryAfter`.
    func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?, random: (ClosedRange<Double>) -> Double) -> TimeInterval {
        let exponent = Double(min(max(0, attempt - 1), 30))
        let ceiling = min(maxDelay, initialDelay * pow(2, exponent))
        let backoff = ceiling <= 0 ? 0 : random(0...ceiling)
        // `Retry-After` is the least wait, not the only one: a server that says 0 (or a date passed) while it is
        // away would otherwise be asked again at once, as often as the network allows, until the deadline.
        // The deadline still bounds a long one.
        guard let retryAfter else { return backoff }
        return max(retryAfter, backoff)
    }
}

/// What went wrong with one attempt, as the pipeline's classify stage sees it.
enum AttemptVerdict: Equatable {
    /// Not retryable: report it.
    case final
    /// The session is gone (952, 112, an HTML 401): renew it and replay once.
    case sessionLost
    /// Transient: retry under the policy, after `retryAfter` seconds when the server said so.
    case transient(retryAfter: TimeInterval?)
}

enum Classifier {
    /// Whether a failed login is transient (a server still restarting, its session cap): the calls waiting for it
    /// retry it under their policy, writes included, as nothing of theirs was sent.
    static func isTransientLoginFailure(_ error: FMError) -> Bool {
        if case .transient = verdict(for: error, beforeAnswer: error.code == FMError.ClientCode.transport, usedSession: false, headers: [:]) {
            return true
        }
        return false
    }

    /// Sorts a failed attempt. `usedSession`: the request carried a session token. `mayBeSentAgain`: the call
    /// cannot change data (``Endpoint/cannotChangeData``), so an answer that broke off is no reason to stop. `now`: the
    /// client's wall clock, read only for a `Retry-After` date in an answer without a `Date` header.
    static func verdict(for error: FMError, beforeAnswer: Bool, usedSession: Bool, headers: [String: String],
                        mayBeSentAgain: Bool = false, now: @autoclosure () -> Date = Date()) -> AttemptVerdict {
        if usedSession, isSessionLost(error) { return .sessionLost }
        // A TLS handshake with a plain-HTTP server, or a certificate the client rejects, fails the same way again.
        if error.isWrongScheme || error.isTLSFailure { return .final }
        // An answer that came but cannot be read (a malformed head, a body that does not decode) is no restart.
        if error.isMalformedAnswer { return .final }
        if error.code == FMError.ClientCode.transport, beforeAnswer { return .transient(retryAfter: nil) }
        // An answer that broke off (a server restarting mid-answer, a proxy cutting the connection): a read is sent
        // again; a write is not, whatever `retriesWrites` says: the server answered, so it ran.
        if isAnswerBrokeOff(error) { return mayBeSentAgain ? .transient(retryAfter: nil) : .final }
        let transientStatus = [502, 503, 504].contains(error.httpStatus ?? 0)
        if transientStatus || error.code == "812" || error.code == "956" {
            return .transient(retryAfter: retryAfter(headers, now: now()))
        }
        return .final
    }

    /// Whether a transient failure means the server is away (restarting): a connection refused, reset or
    /// closed before any answer, or a 502, 503 or 504. Reads ride these out under
    /// ``FMRetryPolicy/retriesReadsUntilDeadline``; a failed name lookup, an unreachable network, 812 and 956
    /// keep to ``FMRetryPolicy/maxAttempts``.
    static func serverAway(_ error: FMError) -> Bool {
        if [502, 503, 504].contains(error.httpStatus ?? 0) { return true }
        // An answer that broke off came from a server that is there: it keeps to maxAttempts.
        guard isTransportFailure(error), !error.isWrongScheme, !error.isTLSFailure, !error.isMalformedAnswer, !isAnswerBrokeOff(error) else {
            return false
        }
        switch error.urlErrorCode {
        case URLError.Code.cannotFindHost.rawValue, URLError.Code.dnsLookupFailed.rawValue,
             URLError.Code.notConnectedToInternet.rawValue, URLError.Code.badURL.rawValue, URLError.Code.unsupportedURL.rawValue:
            return false
        default:
            return true
        }
    }

    /// A connection that failed before any answer: refused, reset or closed, a name that did not resolve
    /// (not a TLS failure or a wrong scheme, which are never retried). The first-contact rule
    /// (``Reachability``) decides whether it is retried.
    static func isConnectionFailure(_ error: FMError) -> Bool {
        isTransportFailure(error) && !error.isWrongScheme && !error.isTLSFailure
    }

    /// The client's `-1003` for an answer whose head arrived and whose connection was then lost
    /// (``FMError/answerBrokeOff(_:code:description:underlying:)``): `networkConnectionLost` (closed, reset, a body
    /// shorter than its length), or corelibs' URLSession's code -1 with libcurl's words for the same. An answer that
    /// could not be read (a coding, a chunked body) is not one, nor any other failure after the head.
    static func isAnswerBrokeOff(_ error: FMError) -> Bool {
        guard isTransportFailure(error), !error.isTLSFailure, let code = error.urlErrorCode,
              code == URLError.Code.networkConnectionLost.rawValue || code == -1 else { return false }
        return error.message.hasPrefix(FMError.answerFromPrefix) && error.message.contains(FMError.brokeOffWords)
    }

    /// The client's `-1003`: not an answer whose own code is `-1003` (FileMaker's OData service has codes in the
    /// client-side range), which came from a server that answered.
    private static func isTransportFailure(_ error: FMError) -> Bool {
        error.code == FMError.ClientCode.transport && error.isClientSide
    }

    /// FileMaker codes a caller expects as an outcome, logged at `info`, not as a warning: 306 (the record
    /// changed since the `modId` sent: an optimistic-locking conflict) and 401 (no records match).
    static let expectedOutcomes: Set<String> = ["306", "401"]

    /// 952 (token unknown or expired), 112 (a session closed from the Admin Console mid-request) and an HTTP
    /// 401 whose body is not a FileMaker envelope (FileMaker Cloud after expiry).
    static func isSessionLost(_ error: FMError) -> Bool {
        if error.code == "952" || error.code == "112" { return true }
        // The client's codes for an unreadable body, not a server's own (OData's codes share their range).
        return error.httpStatus == 401 && error.isClientSide
            && (error.code == FMError.ClientCode.notJSON || error.code == FMError.ClientCode.malformedResponse)
    }

    /// `Retry-After` in seconds, or as an HTTP date (any of its three formats). Seconds are `1*DIGIT` (RFC 9110 §10.2.3), with optional spaces or
    /// tabs around them (``delaySeconds(_:)``); a date is a moment on the server's clock: the wait is that date less
    /// the answer's own `Date` header (the server's clock when it answered), so a client clock that is off does not
    /// change it; without a readable `Date` header, less `now` (the client's wall clock, the injected one). Any other
    /// value (`1e3`, `0x1p3`, `+5`, `5.5`, `-1`) is no `Retry-After`: `nil`, as when there is none.
    static func retryAfter(_ headers: [String: String], now: @autoclosure () -> Date) -> TimeInterval? {
        guard let raw = HTTPHeader.value("Retry-After", in: headers) else { return nil }
        let value = trimmingSpacesAndTabs(raw)
        if let seconds = delaySeconds(value) { return seconds }
        // A date starts with its day's name: nothing else is handed to the date parser (``httpDate(_:near:)``).
        let clock = now()
        guard let date = httpDate(value, near: clock) else { return nil }
        let answered = HTTPHeader.value("Date", in: headers).flatMap { httpDate(trimmingSpacesAndTabs($0), near: clock) }
        return Deadline.clamped(date.timeIntervalSince(answered ?? clock))
    }

    /// The formats of an HTTP-date, all of which a recipient accepts (RFC 9110 §5.6.7): the IMF-fixdate, the obsolete
    /// RFC 850 date and the asctime date (its day padded with a space, read once runs of spaces are one).
    private static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    /// `value` (UTF-8 bytes, starting with a letter) as an HTTP-date in any of ``httpDateFormats``, or `nil`. An RFC 850
    /// date's two-digit year is read within 50 years of `anchor` (the client's clock), as RFC 9110 says.
    private static func httpDate(_ value: ArraySlice<UInt8>, near anchor: Date) -> Date? {
        guard let first = value.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) else { return nil }
        let text = String(decoding: value, as: UTF8.self).split(separator: " ").joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.twoDigitStartDate = anchor.addingTimeInterval(-50 * 365.2425 * 86_400)
        for format in httpDateFormats {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `delay-seconds` (RFC 9110 §10.2.3): one or more ASCII digits and nothing else (`value`'s UTF-8 bytes), as
    /// seconds; a number past ``Deadline/longest`` is that (no overflow, however many digits). `nil` for anything else:
    /// a sign, a fraction, an exponent, a hexadecimal float, other scripts' digits, an empty value.
    static func delaySeconds(_ value: ArraySlice<UInt8>) -> TimeInterval? {
        guard !value.isEmpty else { return nil }
        let longest = UInt64(Deadline.longest)
        var seconds: UInt64 = 0
        for byte in value {
            guard (0x30...0x39).contains(byte) else { return nil }
            // Past the longest wait the digits only say "longer": no more is added (and nothing overflows).
            if seconds <= longest { seconds = seconds * 10 + UInt64(byte - 0x30) }
        }
        return TimeInterval(min(seconds, longest))
    }

    /// `value`'s UTF-8 bytes without the spaces and tabs around them (HTTP's optional whitespace), nothing else taken off.
    private static func trimmingSpacesAndTabs(_ value: String) -> ArraySlice<UInt8> {
        let bytes = Array(value.utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) }) else { return [] }
        return bytes[start...end]
    }
}

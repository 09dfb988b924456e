import Foundation

/// One line of SwiftFM's diagnostic log, handed to the ``DataAPI`` logging hook.
///
/// Messages and metadata never contain the password, the Basic value or a session token: URLs are reduced
/// to their path (tokens in a logout path are replaced by `<token>`) and header values are never logged.
///
/// The levels follow the server-side Swift guide (a library logs its detail at `debug`); see
/// <doc:TracingAndLogLevels>:
/// - ``Level/debug``: every request line (`→`) and every answer line (`←`), a cancelled exchange, an
///   answer of FileMaker's "no records match" (401), the outcome of a call that its deadline, a cancel or a
///   shutdown ended first, and a session call answered without a request because no token is held
///   (`validateSession`, `logout`).
/// - ``Level/info``: rare events of the client's life: a login, a session closed for idleness, a shutdown.
/// - ``Level/warning``: what a caller must see that SwiftFM recovers from or reports: a retry, a replay after a
///   lost session, a rejected token, an answer with a FileMaker error.
/// - ``Level/error``: a failure a caller must see, one line per failed call: the server could not be reached,
///   an answer that is not FileMaker's or cannot be read, a login failed or timed out, the new-session hook
///   failed, a call refused before it was sent (`-1002`, a request that could not be built). A cancel and a
///   shutdown log no error.
public struct FMLogEvent: Sendable, CustomStringConvertible {
    /// The severity of an event.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        /// Per-request detail: one line per request and per answer.
        case debug
        /// Rare events of the client's life: a login, an idle session closed, a shutdown.
        case info
        /// Something was retried or recovered (a re-login after 952), or an answer carried a FileMaker error.
        case warning
        /// A call failed in a way its caller must see (the server unreachable, a failed login).
        case error

        /// Orders levels by severity.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The level's name.
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// The severity.
    public var level: Level
    /// The redacted message.
    public var message: String
    /// The structured part of a call's lines (empty for the client's own lines): `fm.request_id` (the call's
    /// number, as in ``FMCallStart/requestID``), `fm.endpoint` (as in ``FMCallMetrics/endpoint``), `fm.layout`
    /// (when the call names one), `fm.table` (an ``FMOData`` call's table, when it names one), `fm.code` (`"0"` or the FileMaker or client code, on answers and failures)
    /// and `http.response.status_code` (on answers), and under them what ``FMConfiguration/logMetadataProvider``
    /// returned as the call began (the caller's context: ``FMLogMetadataProvider``). Redacted like the message.
    public var metadata: [String: String]

    /// Creates an event.
    public init(level: Level, message: String) {
        self.init(level: level, message: message, metadata: [:])
    }

    /// Creates an event with metadata.
    public init(level: Level, message: String, metadata: [String: String]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    /// `"[level] message"`.
    public var description: String { "[\(level)] \(message)" }

    /// `text` redacted as this event's message and metadata were: without the secrets the client knew as it logged the
    /// line (also escaped or wrapped over lines), the configured host and database name left as they are. For what a
    /// log handler adds to the line itself (SwiftFMServer's `Logger.fmLogHandler` redacts a swift-log logger's own
    /// metadata and its handler's metadata provider with it). An event made with an initialiser redacts nothing.
    public func redact(_ text: String) -> String { redactor?(text) ?? text }

    /// The client's redaction as it logged this line (``redact(_:)``); `nil` for an event made with an initialiser.
    var redactor: (@Sendable (String) -> String)?
}

/// The logging hook type of ``DataAPI``: called synchronously on whatever queue produced the event.
public typealias FMLogHandler = @Sendable (FMLogEvent) -> Void

/// Reads the caller's logging context as a call begins, for that call's log lines (``FMConfiguration/logMetadataProvider``):
/// a trace id or a request id of your own, kept in task-local values (a tracing `ServiceContext`) or thread-local state.
///
/// SwiftFM logs a call's lines on its own queues, where the caller's task-local values are not set, so a logger that
/// reads them as each line is logged finds nothing. Instead SwiftFM calls ``metadata()`` once as a call begins,
/// synchronously and where ``FMInstrumentation/startCall(_:)`` is called (the caller's thread for a callback method,
/// the caller's task for an `async` one), and adds what it returned to the ``FMLogEvent/metadata`` of every line of
/// that call, redacted like the rest (its keys too). SwiftFM's keys (`fm.request_id`, `fm.endpoint`, `fm.layout`,
/// `fm.table`, `fm.code`, `http.response.status_code`) are SwiftFM's alone: a value returned under one of them is
/// dropped, also from the lines where SwiftFM does not set it. A call begun inside ``metadata()`` (through the same
/// client, or in a task it starts) does not read it again and carries no caller's context. What is read is held by the
/// call and goes with it. See <doc:TracingAndLogLevels>.
///
/// ```swift
/// configuration.logMetadataProvider = FMLogMetadataProvider {
///     RequestContext.traceID.map { ["trace_id": $0] } ?? [:]   // a @TaskLocal of yours
/// }
/// ```
///
/// It is not called without a logging hook. Keep it quick: it runs as every call begins.
public final class FMLogMetadataProvider: Sendable {
    private let read: @Sendable () -> [String: String]

    /// A provider that calls `metadata` as each call begins.
    public init(_ metadata: @escaping @Sendable () -> [String: String]) {
        read = metadata
    }

    /// The caller's context, read now.
    public func metadata() -> [String: String] { read() }
}

/// Reads a caller's logging context (``FMLogMetadataProvider``) for one call, once, as it begins.
enum CallerLogContext {
    /// The keys SwiftFM sets on a call's lines (``FMLogEvent/metadata``): SwiftFM's alone, on every line, whether or not
    /// that line carries one (a request line has no `fm.code`), so that a reader keyed on them counts SwiftFM's values only.
    static let swiftFMKeys: Set<String> = ["fm.request_id", "fm.endpoint", "fm.layout", "fm.table", "fm.code", "http.response.status_code"]

    /// `true` while a provider runs (on its thread, and in a task it starts): a call it begins reads none.
    @TaskLocal static var reading = false

    /// What `provider` returns now, as a call's lines carry it: without SwiftFM's keys (``swiftFMKeys``), and with every
    /// secret in a key redacted (the values are redacted as each line is logged, as the message is: a key is redacted
    /// here because what the caller made up is no name of SwiftFM's). A call that the provider begins itself (a lookup
    /// through the same client) reads nothing: it would read the provider, which would begin a call, without end.
    static func read(_ provider: FMLogMetadataProvider, secrets: () -> [String]) -> [String: String] {
        guard !reading else { return [:] }
        let metadata = $reading.withValue(true) { provider.metadata() }
        guard !metadata.isEmpty else { return metadata }
        let secrets = secrets()
        // Kept as it is (no copy) unless something must go.
        guard metadata.keys.contains(where: { swiftFMKeys.contains($0) || Redaction.scrub($0, secrets: secrets) != $0 }) else {
            return metadata
        }
        var kept: [String: String] = [:]
        for (key, value) in metadata where !swiftFMKeys.contains(key) {
            let key = Redaction.scrub(key, secrets: secrets)
            if kept[key] == nil { kept[key] = value }
        }
        return kept
    }
}

/// Holds the log metadata provider inside ``FMConfiguration`` (compared by identity, so the configuration stays `Equatable`).
struct LogMetadataProviderBox: Sendable, Equatable {
    let provider: FMLogMetadataProvider?
    static func == (lhs: LogMetadataProviderBox, rhs: LogMetadataProviderBox) -> Bool { lhs.provider === rhs.provider }
}

/// Redaction helpers shared by logging and `description`s.
enum Redaction {
    static let placeholder = "<redacted>"

    /// A mirror of `subject` with one child, its redacted description: `dump`, `Mirror(reflecting:)` and
    /// `String(reflecting:)` then show no stored secret.
    static func mirror(of subject: Any, _ description: String) -> Mirror {
        Mirror(subject, children: ["redacted": description], displayStyle: .struct)
    }

    /// The path (and no query) of `url`, with the token segment of a session path replaced, and the file of a
    /// container's streaming URL named by its extension only: `container` for any URL of a container download
    /// (a redirect may lead anywhere), and always for FileMaker's `/Streaming_SSL/…` and `/Streaming/…` paths.
    /// A streaming URL is a capability: while its streaming session lives, anyone who has it gets the file.
    static func path(of url: URL?, container: Bool = false) -> String {
        guard let url else { return "<no url>" }
        let raw = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        var parts = raw.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // …/sessions/{token} (logout) carries the token in the path.
        for index in parts.indices.dropLast() where parts[index].lowercased() == "sessions" {
            parts[index + 1] = "<token>"
        }
        let streaming = parts.count > 2 && ["streaming", "streaming_ssl"].contains(parts[1].lowercased())
        if container || streaming, let last = parts.indices.last, !parts[last].isEmpty {
            parts[last] = "<container>" + fileExtension(parts[last])
        }
        let query = url.query.map { _ in "?…" } ?? ""
        return parts.joined(separator: "/") + query
    }

    /// `.png` of `name.png`: a dot and at most 8 letters or digits, else nothing (an extension is no secret; the
    /// name before it is).
    private static func fileExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return "" }
        let letters = name[name.index(after: dot)...]
        guard !letters.isEmpty, letters.count <= 8, letters.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return "." + letters
    }

    /// A host as configured, with any user info (`user:password@`) and any query or fragment replaced (`?key=…`:
    /// SwiftFM never sends them, and they are where API keys get written). A password may hold a raw `/`, `?`, `#` or
    /// `@`, and a host may hold an `@` in its path, query or fragment (`host/?email=a@b`), so the `@` that ends the
    /// user info is the one followed by a host[:port] (up to the next `/`, `?`, `#`):
    /// - when the text before the first `/`, `?`, `#` is no host[:port] (it holds an `@`, or a `:` followed by no
    ///   port), the user info runs to the last `@` followed by a host[:port] (the last `@` when none is), and all of
    ///   it is replaced: read any other way, the rest of it could be a password;
    /// - when it is a host[:port] (the host, as ``FMConfiguration`` resolves it), it is shown; when an `@` follows
    ///   and a host[:port] follows that `@`, everything after the host is replaced, and so is its port: read as user
    ///   info, `admin:1234/x@host` has the password `1234/x`.
    ///
    /// The scheme is the `scheme://` the host starts with (letters, digits, `+`, `-`, `.`), never a `://` further on:
    /// a host written without one may hold a URL in its query or fragment.
    static func host(_ host: String) -> String {
        let start = schemeSeparator(in: host)?.upperBound ?? host.startIndex
        let text = host[start...]
        let isMark: (Character) -> Bool = { $0 == "/" || $0 == "?" || $0 == "#" }
        let authorityEnd = text.firstIndex(where: isMark) ?? text.endIndex
        let ats = text.indices.filter { text[$0] == "@" }
        /// Whether a host[:port] follows the `@` at `at`, up to the next `/`, `?`, `#`.
        func hostFollows(_ at: String.Index) -> Bool {
            let rest = text[text.index(after: at)...]
            return isHostAndPort(rest[..<(rest.firstIndex(where: isMark) ?? rest.endIndex)])
        }
        let scheme = String(host[..<start])
        let authority = text[..<authorityEnd]
        if isHostAndPort(authority) {
            // The host as the resolver reads it; any `@` is after it.
            guard let last = ats.last, hostFollows(last) else { return scheme + hidingQuery(text) }
            var shown = String(authority)
            if let colon = portColon(authority) { shown = String(authority[...colon]) + placeholder }
            if authorityEnd < text.endIndex { shown += text[authorityEnd...authorityEnd] + placeholder }
            return scheme + shown
        }
        guard let at = ats.last(where: hostFollows) ?? ats.last else { return scheme + hidingQuery(text) }
        return scheme + placeholder + hidingQuery(text[at...])
    }

    /// `text` with what follows its first `?` or `#` replaced.
    private static func hidingQuery(_ text: Substring) -> String {
        guard let mark = text.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return String(text) }
        return String(text[...mark]) + placeholder
    }

    /// Whether `text` is a host and an optional port: a name (letters, digits, `-`, `.`, `_`, `~`, `%`) or an IPv6
    /// literal in brackets, then optionally `:` and 1 to 5 ASCII digits.
    static func isHostAndPort(_ text: Substring) -> Bool {
        var name = text
        if let colon = portColon(text) {
            let port = text[text.index(after: colon)...]
            guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
            name = text[..<colon]
        }
        guard let first = name.first else { return false }
        if first == "[" {
            guard name.count > 2, name.last == "]" else { return false }
            return name.dropFirst().dropLast().allSatisfy { $0.isASCII && ($0.isHexDigit || $0.isLetter || $0.isNumber || ":.%".contains($0)) }
        }
        return name.allSatisfy { ($0.isLetter || $0.isNumber) || "-._~%".contains($0) }
    }

    /// The `:` before the port of a host[:port] (after an IPv6 literal's `]`), or `nil`.
    private static func portColon(_ text: Substring) -> String.Index? {
        if text.first == "[" {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let after = text.index(after: close)
            return after < text.endIndex && text[after] == ":" ? after : nil
        }
        return text.firstIndex(of: ":")
    }

    /// The `://` of the scheme a host starts with (letters, digits, `+`, `-`, `.`, then `://`), or `nil`: a `://` further
    /// on (in a query, a fragment or a path) is not a scheme's. ``FMConfiguration``'s host is read by the same rule.
    static func schemeSeparator(in host: String) -> Range<String.Index>? {
        guard let separator = host.range(of: "://"),
              host[..<separator.lowerBound].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        return separator
    }

    /// A caller's or a server's text as a `description` shows it: on one line, every control, line-separator or
    /// bidirectional-control character replaced by U+FFFD (``FMError/serverText(_:limit:)``, not cut), so that printing
    /// a value can neither forge a line in a log, nor colour it, nor reorder it.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value >= 0x7F }) else { return text }
        return FMError.serverText(text, limit: .max)
    }

    /// The secrets of a base64 `user:pass` value: the value itself and the password inside it (a server may echo
    /// either).
    static func basicSecrets(_ encoded: String) -> [String] {
        let trimmed = encoded.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return [] }
        guard let pair = Data(base64Encoded: trimmed).map({ String(decoding: $0, as: UTF8.self) }), let colon = pair.firstIndex(of: ":") else {
            return [trimmed]
        }
        return [trimmed, String(pair[pair.index(after: colon)...])]
    }

    /// Removes every occurrence of each secret from `text`, in each of its forms (``forms(of:)``: as Swift's string
    /// escaping writes it, as a server's message prints it, in either normalisation form), and also wrapped over lines
    /// (``wrappedOccurrences(of:in:)``: `abc\r\n def` for `abcdef`).
    /// The occurrences are all found in `text` as given, then each run of text they cover (one occurrence, or several
    /// that overlap: a secret that begins or ends inside another, or overlaps itself) becomes one placeholder, so that
    /// no part of a secret is left beside another's, whatever their order.
    ///
    /// `shown`: texts the reader knows already (the client's configured host and database): an occurrence of a secret
    /// that lies inside one of them is left as it is, since redacting it there would say which part of a known name the
    /// secret is (the password `acme` of `fms.acme.com` shown as `fms.<redacted>.com`), also where the name is wrapped
    /// over lines as a secret may be (`fms.ac\r\nme.com`). So is one inside the start of a
    /// known name that a cut left just before a `…` (`fms.acme.co…`) when that start is longer than the occurrence
    /// (``cutNameStarts(_:shown:)``). Elsewhere it is redacted.
    static func scrub(_ text: String, secrets: [String], shown: [String] = []) -> String {
        let forms = secrets.filter { $0.count >= 4 }.flatMap(forms(of:))
        guard !forms.isEmpty, !text.isEmpty else { return text }
        // One NSString for every search (bridged once, not once per occurrence), in UTF-16 offsets.
        let string = NSString(string: text)
        func occurrences(of form: String) -> [NSRange] {
            var found: [NSRange] = []
            var from = 0
            while from < string.length {
                let range = string.range(of: form, options: [], range: NSRange(location: from, length: string.length - from))
                guard range.location != NSNotFound, range.length > 0 else { break }
                found.append(range)
                // Also an occurrence that begins inside this one (`abab` twice in `ababab`).
                from = range.location + 1
            }
            return found
        }
        var covered = forms.flatMap(occurrences(of:))
        let wrapped = mayWrap(text.utf16) ? Array(text.utf16) : nil
        if let wrapped { covered += wrappedOccurrences(of: forms, in: wrapped) }
        guard !covered.isEmpty else { return text }
        let names = shown.filter { !$0.isEmpty }
        if !names.isEmpty {
            let units = wrapped ?? Array(text.utf16)
            // A known name wrapped over lines is that name, as a secret wrapped is that secret.
            var known = names.flatMap(occurrences(of:))
            if wrapped != nil { known += wrappedOccurrences(of: names, in: units) }
            let cut = units.contains(0x2026) ? cutNameStarts(units, shown: names) : [:]
            covered = outside(covered, known: known, cut: cut)
            guard !covered.isEmpty else { return text }
        }
        covered.sort { $0.location < $1.location }
        var result = ""
        var shown = 0
        var run = covered[0]
        for range in covered.dropFirst() {
            if range.location < NSMaxRange(run) {
                run.length = max(NSMaxRange(run), NSMaxRange(range)) - run.location
                continue
            }
            result += string.substring(with: NSRange(location: shown, length: run.location - shown)) + placeholder
            shown = NSMaxRange(run)
            run = range
        }
        result += string.substring(with: NSRange(location: shown, length: run.location - shown)) + placeholder
        result += string.substring(from: NSMaxRange(run))
        return result
    }

    // MARK: Wrapped secrets

    /// A text's UTF-16 units as they read with its wraps taken out (``unwrapped(_:wrapAs:)``), each unit with the range of
    /// the text it stands for.
    struct Unwrapped {
        var units: [UInt16] = []
        /// The UTF-16 offset in the text where each unit begins, and where it ends.
        var starts: [Int] = []
        var ends: [Int] = []

        init() {}

        /// `units` as they are, each unit standing for itself.
        init(asIs units: [UInt16]) {
            self.units = units
            starts = Array(units.indices)
            ends = starts.map { $0 + 1 }
        }

        mutating func append(_ unit: UInt16, from start: Int, to end: Int) {
            units.append(unit)
            starts.append(start)
            ends.append(end)
        }
    }

    /// Whether the item of a wrap at `index` of `units` is a line break or a blank, and how many units it has; `nil` when
    /// no wrap holds it. A line break: CR, LF, VT, FF, NEL, U+2028, U+2029, U+FFFD (what ``FMError/serverText(_:limit:)``
    /// makes of each of them), or `\n` or `\r` as JSON and Swift escape one in a quoted string. A blank: a space, a tab or
    /// an escaped `\t` (folding whitespace). An escaped backslash (`\\`) is neither, nor is the `n` after it.
    private static func wrapItem(_ units: [UInt16], at index: Int) -> (lineBreak: Bool, count: Int)? {
        switch units[index] {
        case 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029, 0xFFFD: return (true, 1)
        case 0x20, 0x09: return (false, 1)
        case 0x5C where index + 1 < units.count:
            switch units[index + 1] {
            case 0x6E, 0x72: return (true, 2)
            case 0x74: return (false, 2)
            default: return nil
            }
        default: return nil
        }
    }

    /// Whether `units` hold a line break (``wrapItem(_:at:)``) at all: a text without one has no wrap to take out.
    static func mayWrap(_ units: some Sequence<UInt16>) -> Bool {
        var afterBackslash = false
        for unit in units {
            switch unit {
            case 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029, 0xFFFD: return true
            case 0x5C:
                afterBackslash.toggle()
                continue
            default:
                if afterBackslash, unit == 0x6E || unit == 0x72 { return true }
            }
            afterBackslash = false
        }
        return false
    }

    /// `units` with each wrap (a run of line breaks and blanks that holds a line break: ``wrapItem(_:at:)``) taken out, or
    /// replaced by `replacement` when one is given (a wrap that stood for a space). Blanks without a line break are text.
    /// One pass: a run of blanks is read once, whichever it is.
    static func unwrapped(_ units: [UInt16], wrapAs replacement: UInt16? = nil) -> Unwrapped {
        var view = Unwrapped()
        view.units.reserveCapacity(units.count)
        view.starts.reserveCapacity(units.count)
        view.ends.reserveCapacity(units.count)
        func keep(_ range: Range<Int>) {
            for index in range { view.append(units[index], from: index, to: index + 1) }
        }
        var index = 0
        while index < units.count {
            if units[index] == 0x5C, index + 1 < units.count, units[index + 1] == 0x5C {
                keep(index..<(index + 2))
                index += 2
                continue
            }
            var end = index
            var lineBreak = false
            while end < units.count, let item = wrapItem(units, at: end) {
                lineBreak = lineBreak || item.lineBreak
                end += item.count
            }
            if end == index {
                keep(index..<(index + 1))
                end = index + 1
            } else if !lineBreak {
                keep(index..<end)
            } else if let replacement {
                view.append(replacement, from: index, to: end)
            }
            index = end
        }
        return view
    }

    /// The occurrences of `forms` in `units` wrapped over lines: each found in the text with its wraps taken out
    /// (``unwrapped(_:wrapAs:)``: a column wrap, HTTP header folding, inside a secret), and, for a form with a space, with
    /// each wrap read as one space (a passphrase wrapped at a word). A form that holds a line break itself is left to the
    /// plain search. One pass over the text per form (Knuth–Morris–Pratt), after one pass to unwrap it.
    private static func wrappedOccurrences(of forms: [String], in units: [UInt16]) -> [NSRange] {
        let plain = unwrapped(units)
        var spaced: Unwrapped?
        var found: [NSRange] = []
        for form in forms {
            let pattern = Array(form.utf16)
            guard !mayWrap(pattern) else { continue }
            found += occurrences(of: pattern, in: plain)
            if pattern.contains(0x20) {
                let view = spaced ?? unwrapped(units, wrapAs: 0x20)
                spaced = view
                found += occurrences(of: pattern, in: view)
            }
        }
        return found
    }

    /// Every occurrence of `pattern` in `view` (overlapping ones too), as the range of the text it covers.
    private static func occurrences(of pattern: [UInt16], in view: Unwrapped) -> [NSRange] {
        guard !pattern.isEmpty, pattern.count <= view.units.count else { return [] }
        let border = borders(pattern)
        var found: [NSRange] = []
        var matched = 0
        for (index, unit) in view.units.enumerated() {
            while matched > 0, pattern[matched] != unit { matched = border[matched - 1] }
            if pattern[matched] == unit { matched += 1 }
            if matched == pattern.count {
                let first = index - matched + 1
                found.append(NSRange(location: view.starts[first], length: view.ends[index] - view.starts[first]))
                matched = border[matched - 1]
            }
        }
        return found
    }

    /// The start of a shown name that a cut left just before each `…` of `units` (the longest over all names), also
    /// wrapped over lines as a secret is found (``unwrapped(_:wrapAs:)``): for the offset of each such `…`, the offset
    /// where that start begins. That much of a name the reader knows, cut there (`fms.acm…` of `fms.acme.com`).
    /// One pass over the text per name and view.
    static func cutNameStarts(_ units: [UInt16], shown: [String]) -> [Int: Int] {
        let names = shown.filter { !$0.isEmpty }.map { Array($0.utf16) }
        guard !names.isEmpty else { return [:] }
        var views = [unwrapped(units)]
        if names.contains(where: { $0.contains(0x20) }) { views.append(unwrapped(units, wrapAs: 0x20)) }
        var earliest: [Int: Int] = [:]
        for view in views {
            for pattern in names {
                let border = borders(pattern)
                var matched = 0
                for (index, unit) in view.units.enumerated() {
                    if unit == 0x2026, matched > 0 {
                        let cut = view.starts[index], from = view.starts[index - matched]
                        earliest[cut] = min(earliest[cut] ?? from, from)
                    }
                    while matched > 0, matched == pattern.count || pattern[matched] != unit { matched = border[matched - 1] }
                    if matched < pattern.count, pattern[matched] == unit { matched += 1 }
                }
            }
        }
        return earliest
    }

    /// `covered` without each occurrence that lies inside an occurrence of a known name (`known`), or inside the start of
    /// a known name a cut left before a `…` (`cut`: from ``cutNameStarts(_:shown:)``) that is longer than it. Sorted
    /// sweeps, not each occurrence against each name's: a text may hold a host with the password in it many times over.
    static func outside(_ covered: [NSRange], known: [NSRange], cut: [Int: Int]) -> [NSRange] {
        let known = known.sorted { $0.location < $1.location }
        let starts = cut.map { (from: $0.value, to: $0.key) }.sorted { $0.from < $1.from }
        var kept: [NSRange] = []
        var nextKnown = 0, knownEnd = -1
        // The furthest end of a cut start that begins before the occurrence, and of one that begins where it does or
        // before.
        var nextBefore = 0, endBefore = -1, nextAtOrBefore = 0, endAtOrBefore = -1
        for secret in covered.sorted(by: { $0.location < $1.location }) {
            while nextKnown < known.count, known[nextKnown].location <= secret.location {
                knownEnd = max(knownEnd, NSMaxRange(known[nextKnown]))
                nextKnown += 1
            }
            while nextBefore < starts.count, starts[nextBefore].from < secret.location {
                endBefore = max(endBefore, starts[nextBefore].to)
                nextBefore += 1
            }
            while nextAtOrBefore < starts.count, starts[nextAtOrBefore].from <= secret.location {
                endAtOrBefore = max(endAtOrBefore, starts[nextAtOrBefore].to)
                nextAtOrBefore += 1
            }
            let end = NSMaxRange(secret)
            // Inside a cut start longer than it: one that begins before it and ends at or after its end, or one that
            // begins where it does and ends after it.
            if knownEnd >= end || endBefore >= end || endAtOrBefore > end { continue }
            kept.append(secret)
        }
        return kept
    }

    /// The forms of `secret` a text is searched for: as it is, as Swift's string escaping writes it (``escaped(_:)``), as
    /// ``FMError/serverText(_:limit:)`` prints it (a tab or line break of its own as U+FFFD: a server's message comes so),
    /// and in Unicode's composed and decomposed forms (`é` as one character, or as `e` and an accent: a server may
    /// give it back either way, and only the wrapped search compares unit by unit).
    static func forms(of secret: String) -> [String] {
        var forms = [secret]
        func add(_ form: String?) {
            // Unit by unit: `==` holds the two normalisation forms equal.
            if let form, !form.isEmpty, !forms.contains(where: { $0.utf16.elementsEqual(form.utf16) }) { forms.append(form) }
        }
        add(escaped(secret))
        add(oneLine(secret))
        if secret.utf8.contains(where: { $0 >= 0x80 }) {
            add(secret.precomposedStringWithCanonicalMapping)
            add(secret.decomposedStringWithCanonicalMapping)
        }
        return forms
    }

    /// `secret` as `String.debugDescription` writes it between its quotes (`pa\"ss` for `pa"ss`), or `nil` when that
    /// is `secret` itself: the form a string takes inside a swift-log metadata `.array` or `.dictionary` rendered as
    /// text (and in any `String(reflecting:)`), so that a password with a quote, a backslash or a control character
    /// in it is not shown escaped. Only a secret with such a character (or any non-ASCII one) is escaped again.
    static func escaped(_ secret: String) -> String? {
        guard secret.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 || $0 >= 0x7F }) else {
            return nil
        }
        let written = String(secret.debugDescription.dropFirst().dropLast())
        return written == secret ? nil : written
    }

    /// ``scrub(_:secrets:shown:)`` for a text a limit may have cut (``FMError/serverText(_:limit:)``): also the start of
    /// a secret (3 characters or more) just before a `…`, where a cut split it, so that a server cannot pad an
    /// echoed secret to leave all but its tail in the text; a start wrapped over lines too (`abc\r\n de…`,
    /// ``unwrapped(_:wrapAs:)``, and a passphrase's start wrapped at one of its spaces). A start that lies inside a longer start of a shown name cut there (`fms.acm…` of
    /// `fms.acme.com`, whose password is `acme`: ``cutNameStarts(_:shown:)``) is left, as a whole secret inside a shown
    /// name is: hiding it would point at it.
    ///
    /// One pass over the text per secret (two for one with a space; the longest start of the secret that ends where each unit ends, as
    /// Knuth–Morris–Pratt keeps it), not one search per length of every secret: a Claris ID token has over a thousand
    /// characters, and a server's cut text comes with every failure of a call.
    static func scrubCut(_ text: String, secrets: [String], shown: [String] = []) -> String {
        let result = scrub(text, secrets: secrets, shown: shown)
        guard result.utf16.contains(0x2026) else { return result }
        let units = Array(result.utf16)
        let unwrappedView = unwrapped(units)
        // For each `…` (by its offset), the offset from which the text before it is the start of a secret (the earliest
        // over all secrets).
        var hide: [Int: Int] = [:]
        var asIs: Unwrapped?
        var spaced: Unwrapped?
        // Records in `hide` each start of `secret` (one of a secret's forms) before a `…`.
        func hideStarts(of secret: String) {
            let start = Array(String(secret.dropLast()).utf16)
            // A secret that holds a line break itself is matched in the text as it is; one with a space also with each
            // wrap read as a space (a passphrase wrapped at a word, then cut).
            var views: [Unwrapped]
            if mayWrap(start) {
                let view = asIs ?? Unwrapped(asIs: units)
                asIs = view
                views = [view]
            } else {
                views = [unwrappedView]
                if start.contains(0x20) {
                    let view = spaced ?? unwrapped(units, wrapAs: 0x20)
                    spaced = view
                    views.append(view)
                }
            }
            let border = borders(start)
            for view in views {
                var matched = 0
                for (index, unit) in view.units.enumerated() {
                    if unit == 0x2026, matched >= 3 {
                        let cut = view.starts[index], from = view.starts[index - matched]
                        hide[cut] = min(hide[cut] ?? from, from)
                    }
                    while matched > 0, matched == start.count || start[matched] != unit { matched = border[matched - 1] }
                    if matched < start.count, start[matched] == unit { matched += 1 }
                }
            }
        }
        for secret in secrets where secret.count >= 4 {
            for form in forms(of: secret) { hideStarts(of: form) }
        }
        guard !hide.isEmpty else { return result }
        let names = cutNameStarts(units, shown: shown)
        // Each hidden start runs from where it begins to its `…`; starts that overlap (a secret with a `…` of its own)
        // are hidden as one.
        let hidden = hide.filter { cut, from in
            !(names[cut].map { $0 < from } ?? false)
        }.map { (from: $0.value, to: $0.key) }.sorted { $0.from < $1.from }
        guard !hidden.isEmpty else { return result }
        var out = ""
        var shownFrom = 0
        var run = hidden[0]
        for range in hidden.dropFirst() {
            if range.from <= run.to {
                run.to = max(run.to, range.to)
                continue
            }
            out += String(decoding: units[shownFrom..<run.from], as: UTF16.self) + placeholder
            shownFrom = run.to
            run = range
        }
        out += String(decoding: units[shownFrom..<run.from], as: UTF16.self) + placeholder
        out += String(decoding: units[run.to...], as: UTF16.self)
        return out
    }

    /// Knuth–Morris–Pratt's failure function of `pattern`: for each prefix, the length of its longest proper prefix
    /// that is also its suffix.
    private static func borders<Unit: Equatable>(_ pattern: [Unit]) -> [Int] {
        var border = [Int](repeating: 0, count: pattern.count)
        var length = 0
        for index in pattern.indices.dropFirst() {
            while length > 0, pattern[index] != pattern[length] { length = border[length - 1] }
            if pattern[index] == pattern[length] { length += 1 }
            border[index] = length
        }
        return border
    }
}

/// Emits events to an optional hook, scrubbing known secrets as a second line of defence. Lines below
/// `minimum` (``FMConfiguration/logLevel``) are not even formatted.
struct Logger: Sendable {
    let handler: FMLogHandler?
    var minimum: FMLogEvent.Level = .debug
    /// The secrets the client knows from its configuration and its sessions (read as each line is logged).
    private let known: @Sendable () -> [String]
    /// The tokens the client sent in an `Authorization` header that ``known`` may not hold (a Claris ID provider's,
    /// an explicit Basic value): ``remember(_:)``. Only with a hook: without one there is nothing to redact, and
    /// nothing is kept.
    private let sent: SentSecrets?

    /// Names the reader knows already (the configured host and database), in which a secret is not redacted
    /// (``Redaction/scrub(_:secrets:shown:)``).
    let shown: [String]

    init(handler: FMLogHandler?, minimum: FMLogEvent.Level = .debug, shown: [String] = [],
         secrets: @escaping @Sendable () -> [String]) {
        self.handler = handler
        self.minimum = minimum
        self.shown = shown
        self.known = secrets
        self.sent = handler == nil ? nil : SentSecrets()
    }

    /// Every secret to scrub: the known ones and those sent (``remember(_:)``).
    var secrets: @Sendable () -> [String] {
        guard let sent else { return known }
        return { [known] in known() + sent.values }
    }

    /// `secret` was sent in an `Authorization` header: the client's lines (and errors) hide it from now on. Nothing is
    /// done without a hook.
    func remember(_ secret: String) {
        sent?.add(secret)
    }

    var isEnabled: Bool { handler != nil }

    /// `true` when a line at `level` reaches the hook.
    func isEnabled(_ level: FMLogEvent.Level) -> Bool { handler != nil && level >= minimum }

    func log(_ level: FMLogEvent.Level, _ message: @autoclosure () -> String,
             metadata: @autoclosure () -> [String: String] = [:]) {
        guard let handler, level >= minimum else { return }
        let secrets = secrets()
        var event = FMLogEvent(level: level, message: Redaction.scrub(message(), secrets: secrets, shown: shown),
                               metadata: metadata().mapValues { Redaction.scrub($0, secrets: secrets, shown: shown) })
        event.redactor = { [shown] text in Redaction.scrub(text, secrets: secrets, shown: shown) }
        handler(event)
    }

    /// The one error line of a call that failed after its last exchange was answered, whose own lines are therefore
    /// `debug` (one failed call, one error line): a page walk that a page it cannot use ended (`PageSource`), an OData
    /// walk whose next link leads where it went (`FMOData.walkLooped`), a container download its redirects ended
    /// (`DataAPI.followContainer`). `KIND failed: ERROR` at error, with `fm.endpoint` (`kind`) and `fm.code`, and
    /// `fm.layout` and `fm.request_id` when given: each of those callers gives the number of the request whose answer
    /// ended the call (the page, the hop), so that its line names it as every call's failure line names its request;
    /// and `context`, the caller's logging context read as the operation began (``FMLogMetadataProvider``), under
    /// SwiftFM's keys; nothing is formatted without a hook.
    func logCallFailed(_ kind: String, _ error: FMError, layout: String? = nil, requestID: UInt64? = nil,
                       context: [String: String] = [:]) {
        guard isEnabled(.error) else { return }
        var metadata = context
        metadata["fm.endpoint"] = kind
        metadata["fm.code"] = error.code
        if let layout { metadata["fm.layout"] = layout }
        if let requestID { metadata["fm.request_id"] = String(requestID) }
        log(.error, "\(kind) failed: \(error)", metadata: metadata)
    }
}

/// The secrets a client sent in `Authorization` headers that its configuration does not name (``Logger/remember(_:)``):
/// the last ``limit`` distinct ones, so that memory stays bounded however long the client lives and however often its
/// provider gives a new token (a Claris ID token lives an hour: the ones a server can still echo are the last few).
final class SentSecrets: Sendable {
    static let limit = 8
    private let stored = Locked<[String]>([])

    var values: [String] { stored.withLock { $0 } }

    func add(_ secret: String) {
        guard secret.count >= 4 else { return }
        stored.withLock { list in
            guard list.last != secret else { return }
            list.removeAll { $0 == secret }
            list.append(secret)
            if list.count > Self.limit { list.removeFirst(list.count - Self.limit) }
        }
    }
}

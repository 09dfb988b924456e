import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The first-contact rule: which hosts have answered this client, and since when one has been unreachable.
///
/// A read that meets a host that is away (a connection refused, reset or closed before any answer) rides it
/// out under ``FMRetryPolicy/retriesReadsUntilDeadline`` only when the host has answered this ``DataAPI``
/// before — it is restarting — and has not been unreachable for longer than ``window``. Until then (a wrong
/// port, a host that does not resolve, a server that is not running) the first failure is the answer: no
/// retry, no back-off. Any HTTP answer, whatever its status, counts as an answer.
///
/// One entry per origin (`host:port`), at most ``maxOrigins`` (a container URL may name another host); past
/// that the origin that answered least recently is forgotten, which only means it is treated as new again (the
/// client's own host, answering every call, stays).
final class Reachability: Sendable {
    /// How long a host that answered before may stay unreachable and still be ridden out: 5 minutes, longer
    /// than a FileMaker Server restart, timed on the elapsed clock (a sleep counts, a wall-clock step does not). After
    /// that, connection failures to it fail fast again until it answers.
    static let window: TimeInterval = 300
    /// The most origins remembered.
    static let maxOrigins = 64

    private struct Entry {
        /// The first connection failure since the host last answered, if any, on the elapsed clock.
        var unreachableSince: TimeInterval?
        /// The answer's place in the order of answers (a count, not the clock, which may go back).
        var turn: UInt64
    }

    private struct Table {
        var entries: [String: Entry] = [:]
        /// The turn the next answer gets.
        var nextTurn: UInt64 = 0
    }

    /// What the rule says for one connection failure.
    enum Standing: Equatable {
        /// The host answered before and is within the window: ride it out.
        case rideOut
        /// The host has never answered this client.
        case neverAnswered
        /// The host answered once, but has been unreachable for longer than the window.
        case awayTooLong
    }

    private let table = Locked(Table())
    /// Whether the Data API (not another web server) has answered this client at its configured host.
    private let dataAPIAnswered = Locked(false)
    /// The elapsed clock (``SessionClock``).
    private let elapsed: @Sendable () -> TimeInterval
    /// The configured host's prefix and origin: a call's answer finds its origin by comparing bytes instead of
    /// parsing its URL.
    private let home: OriginPrefix?

    /// The rule for a client whose calls go to `home` (its configured host, `nil` when it has none), timed on `elapsed`
    /// (seconds).
    init(elapsed: @escaping @Sendable () -> TimeInterval, home: URLComponents? = nil) {
        self.elapsed = elapsed
        var root = home
        root?.percentEncodedPath = "/"
        root?.percentEncodedQuery = nil
        root?.fragment = nil
        self.home = root?.url.flatMap(OriginPrefix.init)
    }

    /// The origin of `url`, read from its first bytes when it is at the configured host.
    private func key(_ url: URL?) -> String? {
        guard let home, let url else { return url?.connectionOrigin }
        return home.origin(of: url) ?? url.connectionOrigin
    }

    /// The host behind `url` answered (any HTTP status).
    func answered(_ url: URL?) {
        guard let origin = key(url) else { return }
        table.withLock { table in
            if table.entries[origin] == nil, table.entries.count >= Self.maxOrigins,
               let oldest = table.entries.min(by: { $0.value.turn < $1.value.turn })?.key {
                table.entries[oldest] = nil
            }
            table.entries[origin] = Entry(unreachableSince: nil, turn: table.nextTurn)
            table.nextTurn &+= 1
        }
    }

    /// The Data API (not another web server) answered at the configured host: an accepted answer or FileMaker's
    /// JSON. Every call but a container download goes to that one host, so one flag says it (set once; read first,
    /// so a call costs a read).
    func spokeDataAPI() {
        dataAPIAnswered.withLock { if !$0 { $0 = true } }
    }

    /// Whether the Data API has answered at the configured host (its "No FileMaker Data API" hints are then wrong).
    var hasSpokenDataAPI: Bool { dataAPIAnswered.withLock { $0 } }

    /// A connection to the host behind `url` failed before any answer.
    func unreachable(_ url: URL?) {
        guard let origin = key(url) else { return }
        let time = elapsed()
        table.withLock { table in
            guard var entry = table.entries[origin] else { return }
            // The first failure since the last answer; a clock set back since then (a test's elapsed clock that follows
            // its wall clock) restarts the count.
            if let since = entry.unreachableSince, since <= time { return }
            entry.unreachableSince = time
            table.entries[origin] = entry
        }
    }

    /// Whether a connection failure to the host behind `url` may be ridden out.
    func standing(_ url: URL?) -> Standing {
        guard let origin = key(url) else { return .neverAnswered }
        let time = elapsed()
        return table.withLock { table in
            guard var entry = table.entries[origin] else { return .neverAnswered }
            guard let since = entry.unreachableSince else { return .rideOut }
            if since > time {
                // The clock went back (a test's elapsed clock that follows its wall clock): the outage counts from now, so
                // it is ridden out one window at most (not for as long as the clock went back).
                entry.unreachableSince = time
                table.entries[origin] = entry
                return .rideOut
            }
            return time - since < Self.window ? .rideOut : .awayTooLong
        }
    }
}

extension FMError {
    /// The host of `url` as a message names it, or `nil` without one: `URL.host` decodes percent-escapes, and a
    /// container's URL or a redirect's `Location` is the server's, so it is made printable and short
    /// (``serverText(_:limit:)``).
    static func hostName(of url: URL?) -> String? {
        guard let host = url?.host, !host.isEmpty else { return nil }
        return serverText(host, limit: 255)
    }

    /// `host:port` of `url` for a message (`the host` without one); the port is the scheme's when none is written.
    static func address(of url: URL?) -> String {
        guard let url, let host = hostName(of: url) else { return "the host" }
        let port = url.connectionPort
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// What a transport failure means, in words: "connection refused", "no such host", "certificate not
    /// trusted: …" (with the remedy), "TLS handshake failed: …".
    static func cause(code: Int, description: String) -> String {
        // Foundation's text for a code it has no words for ("The operation could not be completed. (…)") says nothing.
        let said = description.hasPrefix("The operation could not be completed") || description.isEmpty ? nil : description
        switch code {
        case URLError.Code.cannotConnectToHost.rawValue: return "connection refused"
        case URLError.Code.cannotFindHost.rawValue, URLError.Code.dnsLookupFailed.rawValue: return "no such host"
        case URLError.Code.networkConnectionLost.rawValue: return "the connection closed before an answer"
        case URLError.Code.notConnectedToInternet.rawValue: return "no network connection"
        case URLError.Code.secureConnectionFailed.rawValue: return "TLS handshake failed" + (said.map { ": \($0)" } ?? "")
        case URLError.Code.serverCertificateHasBadDate.rawValue:
            return "certificate not trusted: it has expired (or this machine's clock is wrong)"
        case URLError.Code.serverCertificateNotYetValid.rawValue:
            return "certificate not trusted: it is not valid yet (or this machine's clock is wrong)"
        case URLError.Code.serverCertificateUntrusted.rawValue, URLError.Code.serverCertificateHasUnknownRoot.rawValue:
            // A key that matches no pin is not helped by trusting an authority: the transport's words say what to do.
            if description.contains("pinnedPublicKeys") { return "certificate not trusted: \(description)" }
            // A transport that named the remedy itself (FMCurlTransport: the per-client bundle, the system store, a
            // public authority) is not given a second one.
            if description.contains("FMConfiguration.tls.caCertificates") { return "certificate not trusted: \(description)" }
            return "certificate not trusted: \(said ?? "no certificate authority this machine trusts signed it"). \(trustRemedy)"
        case URLError.Code.clientCertificateRejected.rawValue:
            // A certificate or key this client cannot use (FMCurlTransport's words name the setting) never reached the
            // server: the transport's words say what to do.
            if description.contains("FMConfiguration.tls.clientCertificate") { return "client certificate not usable: \(description)" }
            return "the server rejected the client certificate"
        case URLError.Code.clientCertificateRequired.rawValue: return "the server requires a client certificate"
        case -1 where description.localizedCaseInsensitiveContains("certificate"):
            if description.contains("FMConfiguration.tls.caCertificates") { return "certificate not trusted: \(description)" }
            return "certificate not trusted: \(description). \(trustRemedy)"
        case -1 where description.contains("SSL") || description.contains("TLS"):
            return "TLS handshake failed: \(description)"
        default:
            return said ?? "\(urlErrorName(code))"
        }
    }

    /// What to do about a certificate the client does not trust, as a sentence.
    static var trustRemedy: String { trustRemedyClause.prefix(1).uppercased() + trustRemedyClause.dropFirst() }

    /// What to do about a certificate the client does not trust, as a clause ("add its certificate authority …"): the
    /// one text of it, which ``trustRemedy`` and FMCurlTransport's advice for curl's result 60 both read.
    static var trustRemedyClause: String {
        #if canImport(Darwin)
        "trust its certificate authority in the system trust store (the keychain), decide trust yourself with "
            + "FMURLSessionTransport(serverTrust:), or give the server a certificate from a public authority"
        #else
        "add its certificate authority to the system trust store (copy it to /usr/local/share/ca-certificates and run "
            + "update-ca-certificates), or give the server a certificate from a public authority"
        #endif
    }

    /// How every connection failure's message starts, before the address.
    static let connectionFailurePrefix = "The request to "

    /// A connection failure: `The request to HOST:PORT failed before FileMaker answered: CAUSE`.
    static func connectionFailure(_ url: URL?, cause: String, underlying: String) -> FMError {
        FMError(code: ClientCode.transport,
                message: "\(connectionFailurePrefix)\(address(of: url)) failed before FileMaker answered: \(cause)", underlying: underlying)
    }

    /// A connection failure after the answer's head arrived: `The answer from HOST:PORT broke off: CAUSE`. FileMaker
    /// did answer, so the words of a failure before any answer ("connection closed before an answer") would mislead.
    static func answerBrokeOff(_ url: URL?, code: Int, description: String, underlying: String) -> FMError {
        let cause = code == URLError.Code.networkConnectionLost.rawValue
            ? "the connection closed before the whole answer arrived" : cause(code: code, description: description)
        return FMError(code: ClientCode.transport, message: "\(answerFromPrefix)\(address(of: url))\(brokeOffWords)\(cause)", underlying: underlying)
    }

    /// How the message of an answer that broke off or could not be read starts, before the address.
    static let answerFromPrefix = "The answer from "

    /// What follows the address in the message of an answer that broke off.
    static let brokeOffWords = " broke off: "

    /// An answer whose head arrived but whose body cannot be read (a content coding that is corrupt, a chunked body
    /// that does not parse): `The answer from HOST:PORT could not be read: CAUSE`. It came whole as far as the
    /// connection goes, so neither "broke off" nor "failed before FileMaker answered" would be true.
    static func unreadableAnswer(_ url: URL?, cause: String, underlying: String) -> FMError {
        FMError(code: ClientCode.transport, message: "\(answerFromPrefix)\(address(of: url)) could not be read: \(cause)", underlying: underlying)
    }

    /// A deadline that passed, naming where the call went: `The request to HOST:PORT timed out after N s`
    /// (`-1004`). `seconds` is the deadline (``FMConfiguration/timeout`` unless the call set its own), `nil`
    /// when the transport gave up on its own (its idle timeout).
    static func timeout(_ url: URL?, after seconds: TimeInterval?) -> FMError {
        let bound = seconds.flatMap { $0.isFinite ? " after \(($0 * 1000).rounded() / 1000) s" : nil } ?? ""
        return FMError(code: ClientCode.timeout, message: "\(connectionFailurePrefix)\(address(of: url)) timed out\(bound)")
    }

    /// ``timeout(_:after:)`` for `endpoint`: its URL, or the configured host's when the URL cannot be built.
    static func timeout<Value>(_ endpoint: Endpoint<Value>, _ configuration: FMConfiguration, after seconds: TimeInterval?) -> FMError {
        let url = (try? RequestBuilder.url(for: endpoint, configuration: configuration).get())
            ?? (try? configuration.resolvedBase().get().url)
        return timeout(url, after: seconds)
    }

    /// This error with a note appended to its message (`; …`).
    func noting(_ note: String) -> FMError {
        var copy = self
        copy.message += "; \(note)"
        return copy
    }
}

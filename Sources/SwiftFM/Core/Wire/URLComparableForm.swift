import Foundation

extension URL {
    /// This URL's text in RFC 3986's normal form (its syntax- and scheme-based normalization, sections 6.2.2 and 6.2.3),
    /// so that two spellings of one URL compare equal: the scheme and the host lowercased, the scheme's default port
    /// (80 for `http`, 443 for `https`) dropped when written, a percent-encoded unreserved character (a letter, a digit,
    /// `-`, `.`, `_`, `~`) decoded and the hex digits of every other escape uppercased, the path's dot segments removed
    /// (`/a/./b` and `/a/x/../b` are `/a/b`, `%2E` counting as a dot: section 5.2.4), an empty path written `/`, and
    /// no fragment (it is never sent). Everything else is kept as written: the path's case, the query (its `./` and
    /// `../` included), an escaped reserved character (`%2F` is not `/`), the user info. Resolved against its base first.
    ///
    /// A container download compares the URLs its redirects lead to by it (`DataAPI.followContainer`): a server that
    /// spells the URL asked for anew on each turn is still a loop.
    var comparableForm: String {
        let text = absoluteString
        guard let colon = text.firstIndex(of: ":") else { return Self.foldingEscapes(text[...]) }
        let scheme = text[..<colon].lowercased()
        var rest = text[text.index(after: colon)...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        guard rest.hasPrefix("//") else { return scheme + ":" + Self.foldingEscapes(rest) }
        rest = rest.dropFirst(2)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = Self.comparableAuthority(rest[..<end], scheme: scheme)
        var tail = Self.foldingEscapes(rest[end...])
        if !tail.hasPrefix("/") { tail = "/" + tail }
        let query = tail.firstIndex(of: "?") ?? tail.endIndex
        return scheme + "://" + authority + Self.removingDotSegments(tail[..<query]) + tail[query...]
    }

    /// `path` (it starts with `/`; its escapes folded, so `%2E` is a dot by now) without its dot segments, as RFC 3986's
    /// remove_dot_segments (section 5.2.4) leaves it: a segment `.` is dropped, a segment `..` drops the one before it
    /// (none above the root), and a path that ends in either ends with `/`. One pass over the path, each segment kept
    /// or dropped once, whatever the path holds.
    static func removingDotSegments(_ path: Substring) -> String {
        guard path.contains(".") else { return String(path) }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var kept: [Substring] = []
        kept.reserveCapacity(segments.count)
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { kept.append("") }
            case "..":
                _ = kept.popLast()
                if isLast { kept.append("") }
            default:
                kept.append(segment)
            }
        }
        return "/" + kept.joined(separator: "/")
    }

    /// `userinfo@host:port` with the host lowercased and the scheme's default port dropped.
    private static func comparableAuthority(_ authority: Substring, scheme: String) -> String {
        var userInfo = ""
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = foldingEscapes(authority[...at])
            hostPort = authority[authority.index(after: at)...]
        }
        // The port follows the host's `:` (an IPv6 literal's own colons are inside its brackets).
        let hostEnd = hostPort.hasPrefix("[") ? (hostPort.firstIndex(of: "]").map(hostPort.index(after:)) ?? hostPort.endIndex)
            : (hostPort.firstIndex(of: ":") ?? hostPort.endIndex)
        let host = foldingEscapes(hostPort[..<hostEnd]).lowercased()
        var port = hostPort[hostEnd...]
        if port.hasPrefix(":") { port = port.dropFirst() }
        let defaultPort = scheme == "http" ? 80 : scheme == "https" ? 443 : nil
        let number = !port.isEmpty && port.allSatisfy { $0.isASCII && $0.isNumber } ? Int(port) : nil
        if port.isEmpty || (number != nil && number == defaultPort) { return userInfo + host }
        return userInfo + host + ":" + (number.map(String.init) ?? String(port))
    }

    /// `text` with each percent-encoded unreserved character decoded and the hex of every other escape uppercased.
    private static func foldingEscapes(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let value = high << 4 | low
                if isUnreserved(value) {
                    out.append(value)
                } else {
                    out += [byte, hexDigit(high), hexDigit(low)]
                }
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// RFC 3986's unreserved characters: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

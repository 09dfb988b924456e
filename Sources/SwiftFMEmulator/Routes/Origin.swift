import Foundation

extension EmulatorState {
    /// `scheme://host[:port]` the client used to reach the emulator, for the URLs the emulator writes
    /// (container URLs and the container redirect's `Location`), as a real server behind a proxy does:
    /// 1. ``publicURL`` when set (the operator's explicit choice);
    /// 2. else what a reverse proxy says: `X-Forwarded-Proto` (`http` or `https`) and `X-Forwarded-Host`,
    ///    the first value of each when a chain of proxies sent a list; a value that is not a plausible
    ///    scheme or host is ignored;
    /// 3. else the scheme the emulator serves (`http`, or `https` with ``Emulator/tls``) and the request's `Host`,
    ///    else `fallbackHost`.
    func origin(of request: HTTPRequest, fallbackHost: String) -> String {
        if let publicURL, let origin = EmulatorState.origin(of: publicURL) { return origin }
        let proto = EmulatorState.firstForwardedValue(request.header("X-Forwarded-Proto"))?.lowercased()
        let scheme = proto == "https" || proto == "http" ? proto ?? servedScheme : servedScheme
        let forwardedHost = EmulatorState.firstForwardedValue(request.header("X-Forwarded-Host")).flatMap {
            EmulatorState.isPlausibleHost($0) ? $0 : nil
        }
        return "\(scheme)://\(forwardedHost ?? request.header("Host") ?? fallbackHost)"
    }

    /// `scheme://host[:port]` of an absolute http(s) URL; `nil` for anything else.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = url.host, !host.isEmpty else { return nil }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// The first item of a comma-separated forwarding header, trimmed; `nil` when absent or empty.
    static func firstForwardedValue(_ header: String?) -> String? {
        guard let header, let first = header.split(separator: ",", omittingEmptySubsequences: false).first else { return nil }
        let value = trimSpaces(String(first))
        return value.isEmpty ? nil : value
    }

    /// Whether `text` can be a `host[:port]` (a name, an IPv4 address or a bracketed IPv6 address): ASCII
    /// letters, digits, `.`, `-`, `_`, `:`, `[`, `]`, at most 255 characters.
    static func isPlausibleHost(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 255 else { return false }
        return text.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") || c == UInt8(ascii: "_") || c == UInt8(ascii: ":")
                || c == UInt8(ascii: "[") || c == UInt8(ascii: "]")
        }
    }
}

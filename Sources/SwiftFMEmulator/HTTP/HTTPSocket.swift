#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

// Thin, internal wrappers over the POSIX socket calls the HTTP layer needs, so the rest of the
// code reads the same on Linux (Glibc) and Apple platforms (Darwin).

enum HTTPSocket {
    #if canImport(Glibc)
    static let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    static let streamType = SOCK_STREAM
    static let sendFlags: Int32 = 0
    #endif

    /// The current `errno` as a readable message.
    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// Marks `fd` close-on-exec (Darwin has no `SOCK_CLOEXEC`).
    static func setCloseOnExec(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFD)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// Sets an integer socket option, ignoring failure (all options set here are optimisations).
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Options for an accepted connection: no Nagle delay, no SIGPIPE on Darwin.
    static func configureAccepted(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        #if canImport(Darwin)
        setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
    }

    /// Sets or clears `O_NONBLOCK`.
    static func setNonBlocking(_ fd: Int32, _ on: Bool) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0 else { return }
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    /// Accepts one connection from a non-blocking listener; returns a blocking, close-on-exec
    /// descriptor, or -1 with `errno` set (`EAGAIN` when the queue is empty).
    static func acceptConnection(_ listenFD: Int32) -> Int32 {
        // accept4 is not visible through Glibc's module map; mark close-on-exec right after.
        let fd = accept(listenFD, nil, nil)
        if fd >= 0 {
            setCloseOnExec(fd)
            // BSD sockets inherit O_NONBLOCK from the listener; connections use blocking I/O.
            setNonBlocking(fd, false)
        }
        return fd
    }

    /// Writes all of `bytes`, retrying partial writes, `EINTR` and `EAGAIN`. Returns `false` when
    /// the peer went away or the socket failed.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var base = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let n = send(fd, base, remaining, sendFlags)
            if n > 0 {
                remaining -= n
                base += n
                continue
            }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                if e == EAGAIN || e == EWOULDBLOCK {
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&p, 1, 1000)
                    continue
                }
            }
            return false
        }
        return true
    }

    /// Writes all of `bytes` (see ``writeAll(_:_:)-(Int32,UnsafeRawBufferPointer)``).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Reads what is available (blocking until something is) into `buffer`. Returns the count,
    /// 0 at end of stream, or -1 on an error other than `EINTR`.
    static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            return -1
        }
    }

    /// Waits until `fd` is readable (or closed, or failed); `false` when `timeout` seconds pass first.
    static func waitReadable(_ fd: Int32, timeout: TimeInterval) -> Bool {
        wait(fd, for: Int16(POLLIN), until: monotonicSeconds() + timeout)
    }

    /// Polls `fd` for `events` until `deadline` (``monotonicSeconds()``): `true` when it is ready, closed or failed (the
    /// next read or write reports a failure), `false` when the deadline passed first. A wall clock that jumps moves
    /// nothing.
    static func wait(_ fd: Int32, for events: Int16, until deadline: Double) -> Bool {
        var p = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { return false }
            p.revents = 0
            let rc = poll(&p, 1, Int32(min(remaining * 1000, 3_600_000).rounded(.up)))
            if rc > 0 { return true }
            if rc == 0 { continue }
            if errno == EINTR { continue }
            return true  // let the read or write report the error
        }
    }

    /// Shuts both directions of `fd` down, waking any thread blocked on it.
    static func shutdownBoth(_ fd: Int32) {
        #if canImport(Glibc)
        _ = shutdown(fd, Int32(SHUT_RDWR))
        #else
        _ = shutdown(fd, SHUT_RDWR)
        #endif
    }

    /// Shuts the sending direction of `fd` down (a FIN to the peer).
    static func shutdownWrite(_ fd: Int32) {
        #if canImport(Glibc)
        _ = shutdown(fd, Int32(SHUT_WR))
        #else
        _ = shutdown(fd, SHUT_WR)
        #endif
    }

    /// Closes `fd`, ignoring errors.
    static func closeFD(_ fd: Int32) {
        _ = close(fd)
    }

    /// The address `host` means to the server: an IPv6 address without the brackets of a URL (`[::1]` is `::1`),
    /// an empty host and `localhost` as `127.0.0.1`; anything else as it is. The one rule for binding and for
    /// naming what was bound (``Emulator``'s URLs).
    static func bindName(_ host: String) -> String {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.isEmpty || name.lowercased() == "localhost" { name = "127.0.0.1" }
        return name
    }

    /// Resolves `host` to an IPv4 or IPv6 socket address (numeric addresses, `localhost`, or a name
    /// resolved through `getaddrinfo`, IPv4 preferred).
    static func resolve(host: String, port: UInt16) -> HTTPSocketAddress? {
        let name = bindName(host)
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            var sa = sockaddr_in()
            #if canImport(Darwin)
            sa.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr = v4
            return .v4(sa)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            var sa = sockaddr_in6()
            #if canImport(Darwin)
            sa.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
            #endif
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            sa.sin6_addr = v6
            return .v6(sa)
        }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        guard let addr = first.pointee.ai_addr, first.pointee.ai_family == AF_INET else { return nil }
        var sa = addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        sa.sin_port = port.bigEndian
        return .v4(sa)
    }
}

/// A resolved socket address to bind.
enum HTTPSocketAddress {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    var family: Int32 {
        switch self {
        case .v4: return AF_INET
        case .v6: return AF_INET6
        }
    }

    /// Calls `bind` with this address.
    func bind(to fd: Int32) -> Int32 {
        switch self {
        case .v4(var sa):
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    #if canImport(Glibc)
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    #else
                    Darwin.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    #endif
                }
            }
        case .v6(var sa):
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    #if canImport(Glibc)
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    #else
                    Darwin.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    #endif
                }
            }
        }
    }

    /// The port a bound socket actually got (for port 0).
    static func boundPort(of fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        default:
            return nil
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import SwiftFMEmulator

// `start(host:)` and `startControl(host:)` take an IPv6 address with or without the brackets of a URL
// (`fm-emulator --host [::1]`, as it is written in the URL the emulator prints) and an empty host as loopback; each
// answers a URL that works, never "invalid emulator schema: cannot form a URL for host"; `localhost` is named as the
// address it binds, 127.0.0.1.

@Suite("The host given to start may be written as in a URL")
struct StartHostBracketRuleTests {
    /// Whether this machine can bind IPv6 loopback at all (CI containers may lack it).
    static let hasIPv6Loopback: Bool = {
        let emulator = Emulator()
        defer { emulator.stop() }
        return (try? emulator.start(host: "::1")) != nil
    }()

    @Test("[::1] binds IPv6 loopback; the URLs name it once bracketed, and the Data API answers there",
          .enabled(if: hasIPv6Loopback, "no IPv6 loopback here"))
    func bracketedIPv6() throws {
        let emulator = Emulator()
        defer { emulator.stopControl(); emulator.stop() }
        let url = try emulator.start(host: "[::1]")
        #expect(url.absoluteString.hasPrefix("http://[::1]:"), "\(url)")
        let control = try emulator.startControl(host: "[::1]")
        #expect(control.absoluteString.hasPrefix("http://[::1]:"), "\(control)")
        // FoundationNetworking's URLSession refuses IPv6 literal URLs on Linux (-1000): a raw request over IPv6 instead.
        let port = try #require(url.port.map(UInt16.init))
        let status = try Self.statusLine(ipv6LoopbackPort: port, path: "/fmi/data/vLatest/productInfo")
        #expect(status.hasPrefix("HTTP/1.1 200 "), "\(status)")
    }

    /// The status line of `GET path` sent to [::1]:port.
    static func statusLine(ipv6LoopbackPort port: UInt16, path: String) throws -> String {
        #if canImport(Glibc)
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET6, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw HTTPTestError(description: "socket failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in6()
        #if canImport(Darwin)
        address.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
        #endif
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        inet_pton(AF_INET6, "::1", &address.sin6_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        guard connected == 0 else { throw HTTPTestError(description: "connect failed: \(errno)") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: [::1]:\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
            throw HTTPTestError(description: "send failed: \(errno)")
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !received.contains(UInt8(ascii: "\r")) {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[0..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        return String(text.prefix { $0 != "\r" })
    }

    @Test("An empty host is loopback, as the server binds it")
    func emptyHost() throws {
        let emulator = Emulator()
        defer { emulator.stopControl(); emulator.stop() }
        let url = try emulator.start(host: "")
        #expect(url.absoluteString.hasPrefix("http://127.0.0.1:"), "\(url)")
        let control = try emulator.startControl(host: "")
        #expect(control.absoluteString.hasPrefix("http://127.0.0.1:"), "\(control)")
    }

    /// `localhost` binds 127.0.0.1 only, so the URL names 127.0.0.1: a client whose `localhost` resolves to `::1`
    /// first (Node 18 and later) would be refused at the URL the emulator printed.
    @Test("localhost is named as what it binds, 127.0.0.1", arguments: ["localhost", "LocalHost"])
    func localhostIsNamedAsBound(host: String) throws {
        let emulator = Emulator()
        defer { emulator.stopControl(); emulator.stop() }
        let url = try emulator.start(host: host)
        #expect(url.absoluteString.hasPrefix("http://127.0.0.1:"), "\(url)")
        let control = try emulator.startControl(host: host)
        #expect(control.absoluteString.hasPrefix("http://127.0.0.1:"), "\(control)")
    }
}

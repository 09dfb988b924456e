#if canImport(Glibc)
import Glibc
import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The emulator serves HTTPS itself (``Emulator/tls``), no proxy in front. Contract:
/// - a client trusting the certificate's CA (``FMTLSOptions/caCertificates``) logs in, reads, uploads and downloads a
///   container (past 1 MiB, so the body is written from its own storage) over one TLS port, and container URLs say
///   `https`;
/// - a client that does not trust it fails with SwiftFM's certificate error;
/// - a bad key or certificate fails the start, naming the file, and nothing listens;
/// - a client that fails its handshake (plain HTTP on the TLS port) or says nothing costs its own connection only:
///   the next client is served, and the silent one is closed after the header timeout.
/// Linux only: TLS loads the system's OpenSSL 3 (libssl.so.3) at run time.
@Suite("The emulator serves HTTPS with its own certificate")
struct EmulatorServesHTTPSWithItsOwnCertificateTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")
    static let ca = fixtures.appendingPathComponent("ca.pem")
    static let certificate = fixtures.appendingPathComponent("server.pem")
    static let key = fixtures.appendingPathComponent("server-key.pem")
    static let otherKey = fixtures.appendingPathComponent("other-key.pem")

    /// The demo emulator over HTTPS with the fixture certificate.
    func startHTTPS(headerTimeout: TimeInterval? = nil) throws -> (Emulator, URL) {
        let emulator = Emulator()
        emulator.tls = EmulatorTLS(certificateFile: Self.certificate, keyFile: Self.key)
        if let headerTimeout { emulator.connectionHeaderTimeout = headerTimeout }
        return (emulator, try emulator.start())
    }

    func client(_ url: URL, trusting ca: URL?) -> DataAPI {
        let configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin", timeout: 60)
        return DataAPI(configuration: configuration, transport: FMCurlTransport(tls: FMTLSOptions(caCertificates: ca)))
    }

    @Test func aClientTrustingTheCALogsInReadsAndMovesAContainer() async throws {
        let (emulator, url) = try startHTTPS()
        defer { emulator.stop() }
        #expect(url.scheme == "https" && url.absoluteString.hasPrefix("https://127.0.0.1:"), "\(url)")
        let api = client(url, trusting: Self.ca)
        let artists = try await api.getRecords(layout: "Artists", limit: 2)
        #expect(!artists.records.isEmpty)
        let created = try await api.createRecord(layout: "Artists", fieldData: ["name": "Over TLS"])
        let id = try #require(Int(created.recordId))
        var payload = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        payload.append(Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }))
        _ = try await api.uploadContainer(layout: "Artists", recordId: id, field: "headshot", data: payload, fileName: "big.png")
        let record = try await api.getRecord(layout: "Artists", recordId: id)
        let text = try #require((record.records.first?["fieldData"] as? [String: Any])?["headshot"] as? String)
        #expect(text.hasPrefix(url.absoluteString + "/Streaming_SSL/"), "container URLs use https: \(text)")
        let downloaded = try await api.downloadContainer(url: try #require(URL(string: text)))
        #expect(downloaded == payload)
        try await api.logout()
    }

    /// The fault modes that cut or slow the answer act over TLS as over plain HTTP: an answer cut mid-body is a
    /// broken-off answer, a reset a transport error, a dripped answer arrives whole; the next call is served.
    @Test func faultsThatCutOrSlowTheAnswerWorkOverTLS() async throws {
        let (emulator, url) = try startHTTPS()
        defer { emulator.stop() }
        var configuration = FMConfiguration(host: url.absoluteString, database: "Music", username: "admin", password: "admin", timeout: 60)
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: FMCurlTransport(tls: FMTLSOptions(caCertificates: Self.ca)))
        let whole = try await api.getRecords(layout: "Artists", limit: 5).records.count
        emulator.inject(.closeMidBody, count: 1, matching: "/records")
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read whose answer was cut succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport && error.message.contains("broke off"), "\(error)")
        }
        emulator.inject(.resetConnection, count: 1, matching: "/records")
        do {
            _ = try await api.getRecords(layout: "Artists", limit: 5)
            Issue.record("a read whose connection was reset succeeded")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport, "\(error)")
        }
        emulator.inject(.drip(bytesPerSecond: 100_000), count: 1, matching: "/records")
        #expect(try await api.getRecords(layout: "Artists", limit: 5).records.count == whole)
        #expect(try await api.getRecords(layout: "Artists", limit: 5).records.count == whole)
    }

    @Test func aClientNotTrustingTheCAFailsWithTheCertificateError() async throws {
        let (emulator, url) = try startHTTPS()
        defer { emulator.stop() }
        do {
            _ = try await client(url, trusting: nil).getRecords(layout: "Artists", limit: 1)
            Issue.record("a certificate the client does not trust was accepted")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.transport, "\(error)")
            #expect("\(error)".contains("certificate") && "\(error)".contains("caCertificates"), "\(error)")
        }
        // The failed handshake cost nothing else: a trusting client is served next.
        #expect(try await !client(url, trusting: Self.ca).getRecords(layout: "Artists", limit: 1).records.isEmpty)
    }

    @Test func aKeyThatDoesNotMatchRefusesToStartNamingTheFile() throws {
        let emulator = Emulator()
        emulator.tls = EmulatorTLS(certificateFile: Self.certificate, keyFile: Self.otherKey)
        #expect {
            try emulator.start()
        } throws: { error in
            "\(error)".contains(Self.otherKey.path) && "\(error)".contains("does not match")
        }
        #expect(emulator.baseURL == nil)
    }

    @Test func aMissingOrUnusableFileRefusesToStartNamingIt() throws {
        let missing = Self.fixtures.appendingPathComponent("no-such-file.pem")
        // A key file given as the certificate: readable, but no certificate in it.
        for (certificate, key, named) in [(missing, Self.key, missing), (Self.certificate, missing, missing),
                                          (Self.key, Self.key, Self.key)] {
            let emulator = Emulator()
            emulator.tls = EmulatorTLS(certificateFile: certificate, keyFile: key)
            #expect {
                try emulator.start()
            } throws: { error in
                "\(error)".contains(named.path)
            }
            #expect(emulator.baseURL == nil)
        }
    }

    @Test func plainHTTPOnTheTLSPortFailsAndTheNextClientIsServed() async throws {
        let (emulator, url) = try startHTTPS()
        defer { emulator.stop() }
        let port = try #require(url.port)
        let socket = try RawSocket(port: UInt16(port))
        defer { socket.close() }
        socket.send("GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = try #require(socket.readUntilClosed(), "the connection stayed open")
        #expect(!answer.starts(with: Array("HTTP/1.1 200".utf8)), "plain HTTP was answered on the TLS port")
        #expect(try await !client(url, trusting: Self.ca).getRecords(layout: "Artists", limit: 1).records.isEmpty)
    }

    /// A handshake on the accepting thread would hold every later client behind the silent one for the whole header
    /// timeout (10 minutes here, past the client's 60 s deadline).
    @Test func aClientThatSaysNothingBlocksNoOne() async throws {
        let (emulator, url) = try startHTTPS(headerTimeout: 600)
        defer { emulator.stop() }
        let silent = try RawSocket(port: UInt16(try #require(url.port)))
        defer { silent.close() }
        #expect(try await !client(url, trusting: Self.ca).getRecords(layout: "Artists", limit: 1).records.isEmpty)
        let again = try RawSocket(port: UInt16(try #require(url.port)))
        defer { again.close() }
        #expect(try await !client(url, trusting: Self.ca).getRecords(layout: "Artists", limit: 1).records.isEmpty)
    }

    @Test func aClientThatSaysNothingIsClosedAfterTheHeaderTimeout() async throws {
        let (emulator, url) = try startHTTPS(headerTimeout: 1)
        defer { emulator.stop() }
        let silent = try RawSocket(port: UInt16(try #require(url.port)))
        defer { silent.close() }
        // The server closes it, without a byte (the read waits up to 120 s for that).
        #expect(silent.readUntilClosed() == [])
    }
}

/// A blocking TCP connection to 127.0.0.1, for clients that misbehave.
final class RawSocket: Sendable {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            _ = Glibc.close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        // A bound for every read: a server that never closes fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything the server sends until it closes (or resets) the connection; `nil` when 120 s pass without a byte
    /// and it is still open.
    func readUntilClosed() -> [UInt8]? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received.append(contentsOf: buffer[0..<n])
                continue
            }
            if n == 0 { return received }
            let e = errno
            if e == EINTR { continue }
            return e == EAGAIN || e == EWOULDBLOCK ? nil : received
        }
    }

    func close() {
        _ = Glibc.close(fd)
    }
}
#endif

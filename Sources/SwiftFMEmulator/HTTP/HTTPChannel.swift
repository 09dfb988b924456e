#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFMTLS
import Foundation

/// HTTPS for ``HTTPServer`` and ``Emulator``: the PEM files of the server's certificate and private key.
///
/// The server then speaks TLS (1.2 or later) on its port, and nothing else: a plain-HTTP request there is answered in
/// plain HTTP, `400` saying the port speaks HTTPS, and closed. TLS uses the system's OpenSSL 3 (`libssl.so.3`, which FoundationNetworking already
/// loads on Linux), loaded when the server starts; where it cannot be loaded (Apple platforms, a system without
/// OpenSSL 3) starting fails with ``HTTPServerError``, as do a missing or unreadable file, one that is not a regular
/// file of at most 1 MiB (a FIFO, a device, a directory) and a key that does not match the certificate, the message
/// naming the file.
///
/// ```swift
/// emulator.tls = EmulatorTLS(certificateFile: URL(fileURLWithPath: "server.pem"),
///                            keyFile: URL(fileURLWithPath: "server-key.pem"))
/// let url = try emulator.start()   // https://127.0.0.1:PORT
/// ```
public struct EmulatorTLS: Sendable, Equatable {
    /// The server's certificate in PEM, optionally followed by the intermediate certificates of its chain.
    public var certificateFile: URL
    /// The certificate's private key in PEM, not encrypted with a passphrase.
    public var keyFile: URL

    /// Creates TLS options from the certificate (or chain) file and the private key file, both PEM.
    public init(certificateFile: URL, keyFile: URL) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}

/// A loaded server TLS context (OpenSSL's `SSL_CTX`), shared by the connections of one server run; sessions keep
/// their own reference to it, so freeing it while one still runs is safe.
final class TLSContext: @unchecked Sendable {
    // @unchecked: OpenSSL's SSL_CTX is safe to share once configured; it is never changed after init.
    let pointer: UnsafeMutableRawPointer

    /// Loads OpenSSL and the files of `tls`, or throws a message naming what is wrong.
    init(_ tls: EmulatorTLS) throws {
        var buffer = [CChar](repeating: 0, count: 512)
        guard fmtls_load(&buffer, buffer.count) == 0 else {
            #if os(Linux)
            let reason = TLSContext.text(buffer)
            throw HTTPServerError(message: "HTTPS needs OpenSSL's libssl.so.3, which could not be loaded (\(reason)); "
                                  + "install OpenSSL 3, or serve plain HTTP behind a TLS front")
            #else
            throw HTTPServerError(message: "HTTPS needs OpenSSL's libssl.so.3, which is loaded on Linux only; on this "
                                  + "platform serve plain HTTP, behind a TLS front if needed")
            #endif
        }
        for (what, file) in [("certificate", tls.certificateFile), ("key", tls.keyFile)] {
            try TLSContext.checkFile(file, what: what)
        }
        guard let context = fmtls_context_new(tls.certificateFile.path, tls.keyFile.path, &buffer, buffer.count) else {
            throw HTTPServerError(message: TLSContext.text(buffer))
        }
        pointer = context
    }

    deinit {
        fmtls_context_free(pointer)
    }

    /// The largest certificate or key file accepted: a PEM chain is a few KiB.
    static let maxFileBytes = 1 << 20

    /// Throws unless `file` is a regular file of at most ``maxFileBytes`` that can be opened for reading, naming it.
    /// Opened without waiting (`O_NONBLOCK`), so a FIFO cannot hold the start until a writer comes; a device
    /// (`/dev/zero`), a directory or a huge file never reaches OpenSSL, which would read it to its end.
    static func checkFile(_ file: URL, what: String) throws {
        let descriptor = open(file.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let e = errno
            throw HTTPServerError(message: "cannot read the TLS \(what) \(file.path): \(HTTPSocket.errorText(e))", code: e)
        }
        defer { _ = close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let e = errno
            throw HTTPServerError(message: "cannot read the TLS \(what) \(file.path): \(HTTPSocket.errorText(e))", code: e)
        }
        let kind: String? = switch status.st_mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR, S_IFBLK: "a device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
        if let kind {
            throw HTTPServerError(message: "cannot read the TLS \(what) \(file.path): it is \(kind), not a PEM file")
        }
        guard status.st_size <= maxFileBytes else {
            throw HTTPServerError(message: "cannot read the TLS \(what) \(file.path): it has \(status.st_size) bytes, "
                                  + "more than the \(maxFileBytes) a PEM file has")
        }
    }

    /// The NUL-terminated text a C call wrote into `buffer`.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// One connection's TLS session (OpenSSL's `SSL`) over a non-blocking socket; used by its connection thread only.
final class TLSSession {
    private let pointer: UnsafeMutableRawPointer
    private let fd: Int32
    /// Kept alive while the session is (the session holds its own reference too).
    private let context: TLSContext

    /// A session on `fd`, which is made non-blocking: every wait is a poll with a deadline. `nil` when out of memory.
    init?(context: TLSContext, fd: Int32) {
        guard let session = fmtls_session_new(context.pointer, fd) else { return nil }
        HTTPSocket.setNonBlocking(fd, true)
        self.pointer = session
        self.fd = fd
        self.context = context
    }

    deinit {
        fmtls_session_free(pointer)
    }

    /// Runs the handshake until done (`true`), failed, or `deadline` (monotonic seconds) passed.
    func handshake(until deadline: Double) -> Bool {
        while true {
            let result = handshakeStep()
            if result == 1 { return true }
            guard result == FMTLS_WANT_READ || result == FMTLS_WANT_WRITE,
                  wait(for: result, until: deadline) else { return false }
        }
    }

    /// What the last read stopped on: OpenSSL is called again once the socket is ready for it.
    private var readWants = FMTLS_WANT_READ

    /// Reads what is available into `buffer`, waiting until `deadline` (monotonic seconds) for the socket. Bytes
    /// OpenSSL already holds (`SSL_pending`) are read without a wait: a poll of the socket alone would miss them.
    /// When the socket's bytes make no application data yet (part of a record), returns ``HTTPChannelRead/encrypted``
    /// at once, so that the caller's deadlines see the client sending as a plain read would.
    func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: Double) -> HTTPChannelRead {
        if fmtls_pending(pointer) == 0 {
            guard wait(for: readWants, until: deadline) else { return .closed }
        }
        let n = fmtls_read(pointer, buffer.baseAddress, Int32(clamping: buffer.count))
        if n > 0 {
            readWants = FMTLS_WANT_READ
            return .bytes(Int(n))
        }
        guard n == FMTLS_WANT_READ || n == FMTLS_WANT_WRITE else { return .closed }
        readWants = n
        return .encrypted
    }

    /// Advances the handshake without waiting: 1 when done, `FMTLS_WANT_READ`/`_WRITE`, or `FMTLS_FAILED`.
    func handshakeStep() -> Int32 {
        var error = [CChar](repeating: 0, count: 256)
        return fmtls_accept(pointer, &error, error.count)
    }

    /// One write of all of `bytes` (at most 1 MiB) without waiting: the count, `FMTLS_WANT_READ`/`_WRITE` (call again
    /// with the same bytes once the socket is ready), or `FMTLS_FAILED`.
    func writeStep(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        fmtls_write(pointer, bytes.baseAddress, Int32(clamping: bytes.count))
    }

    /// Writes all of `bytes` (in records of at most 1 MiB per call); `false` when the peer went away or the session
    /// failed. A peer that reads nothing holds the write as it holds a plain socket's blocking send: until the
    /// connection is shut down (server stop, eviction) or fails.
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let length = Int32(min(bytes.count - offset, 1 << 20))
            let n = fmtls_write(pointer, base + offset, length)
            if n > 0 {
                offset += Int(n)
                continue
            }
            guard n == FMTLS_WANT_READ || n == FMTLS_WANT_WRITE else { return false }
            // Retried with the same arguments, as OpenSSL requires after a WANT.
            guard wait(for: n, until: .infinity) else { return false }
        }
        return true
    }

    /// Sends TLS's close_notify (without waiting for the peer's) and, unless `keepNonBlocking`, makes the socket
    /// blocking again, for the plain-socket steps of a close (shutdown, draining unread bytes).
    func closeNotify(keepNonBlocking: Bool = false) {
        fmtls_shutdown(pointer)
        if !keepNonBlocking { HTTPSocket.setNonBlocking(fd, false) }
    }

    /// Polls the socket for what `want` (`FMTLS_WANT_READ` or `_WRITE`) names until `deadline`: `true` when it is
    /// ready or failed (the next OpenSSL call reports a failure), `false` when the deadline passed.
    private func wait(for want: Int32, until deadline: Double) -> Bool {
        HTTPSocket.wait(fd, for: want == FMTLS_WANT_WRITE ? Int16(POLLOUT) : Int16(POLLIN), until: deadline)
    }
}

/// What one read of an ``HTTPChannel`` brought.
enum HTTPChannelRead: Equatable {
    /// This many bytes of the request stream, in the buffer.
    case bytes(Int)
    /// Bytes of the connection arrived but none of the request stream yet (part of a TLS record, or a record without
    /// application data): the client is sending, which counts for the deadlines as a plain byte does.
    case encrypted
    /// The peer closed, the connection failed, or the time ran out.
    case closed
}

/// How a connection reads and writes: the plain socket, or a TLS session over it. Everything above (keep-alive,
/// bodies, streamed containers, the fault modes) goes through it; the plain path calls the socket directly.
struct HTTPChannel {
    let fd: Int32
    /// The session when the server speaks TLS.
    let tls: TLSSession?

    /// Writes all of `bytes`; `false` when the peer went away or the connection failed.
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let tls { return tls.writeAll(bytes) }
        return HTTPSocket.writeAll(fd, bytes)
    }

    /// Writes all of `bytes`.
    func writeAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll($0) }
    }

    /// Waits at most `timeout` seconds for bytes and reads what is there.
    func read(into buffer: UnsafeMutableRawBufferPointer, timeout: TimeInterval) -> HTTPChannelRead {
        if let tls { return tls.read(into: buffer, until: monotonicSeconds() + timeout) }
        guard HTTPSocket.waitReadable(fd, timeout: timeout) else { return .closed }
        let n = HTTPSocket.readSome(fd, into: buffer)
        return n > 0 ? .bytes(n) : .closed
    }

    /// Before a graceful close: TLS's close_notify, and the socket blocking again (nothing for a plain socket).
    func prepareClose() {
        tls?.closeNotify()
    }
}

#if canImport(Glibc)
import Glibc
import Foundation
import Testing
@testable import SwiftFMEmulator
import TestSupport

/// The TLS certificate and key must be regular files of at most 1 MiB (a PEM chain is a few KiB): anything else — a
/// FIFO (whose open would wait for a writer for ever), a device such as `/dev/zero` (an endless read), a directory, a
/// file of gigabytes — fails the start with ``HTTPServerError`` naming the file, at once; `fm-emulator` then exits 1
/// with that message. Before, a FIFO hung the start and `/dev/zero` was handed to OpenSSL.
@Suite("TLS files are regular files of sane size", .serialized)
struct TLSFilesAreRegularFilesOfSaneSizeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")
    static let certificate = fixtures.appendingPathComponent("server.pem")
    static let key = fixtures.appendingPathComponent("server-key.pem")

    /// A scratch directory with a FIFO, a 4 GiB sparse file and a directory in it.
    struct Scratch {
        let directory: URL
        var fifo: URL { directory.appendingPathComponent("fifo.pem") }
        var huge: URL { directory.appendingPathComponent("huge.pem") }
        var folder: URL { directory.appendingPathComponent("folder.pem") }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-files-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try #require(mkfifo(directory.appendingPathComponent("fifo.pem").path, 0o600) == 0)
            let fd = open(directory.appendingPathComponent("huge.pem").path, O_CREAT | O_WRONLY, 0o600)
            try #require(fd >= 0 && ftruncate(fd, 4 << 30) == 0)
            _ = close(fd)
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("folder.pem"), withIntermediateDirectories: false)
        }

        /// Opens the FIFO for writing without waiting, so that a start blocked opening it for reading goes on.
        func releaseFIFO() {
            let fd = open(fifo.path, O_WRONLY | O_NONBLOCK)
            if fd >= 0 { _ = close(fd) }
        }

        func remove() {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Starts a TLS server with `certificate` and `key` on another thread: its error's message, `"started"`, or nil
    /// when it did not finish within 120 s.
    static func startMessage(certificate: URL, key: URL, release: () -> Void) -> String? {
        let outcome = HTTPOrderLog()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let server = HTTPServer(handler: Echo(), tls: EmulatorTLS(certificateFile: certificate, keyFile: key))
            do {
                _ = try server.start()
                server.stop()
                outcome.append("started")
            } catch {
                outcome.append("\(error)")
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success else {
            release()
            _ = done.wait(timeout: .now() + 120)
            return nil
        }
        return outcome.entries.first
    }

    struct Echo: HTTPHandler {
        func handle(_ request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 200, body: Data()) }
    }

    @Test("A FIFO, a device, a directory or a huge file fails the start naming it", arguments: ["fifo", "device", "folder", "huge"])
    func notARegularFileOfSaneSize(kind: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let bad: URL
        switch kind {
        case "fifo": bad = scratch.fifo
        case "device": bad = URL(fileURLWithPath: "/dev/zero")
        case "folder": bad = scratch.folder
        default: bad = scratch.huge
        }
        for (certificate, key) in [(bad, Self.key), (Self.certificate, bad)] {
            let message = Self.startMessage(certificate: certificate, key: key, release: scratch.releaseFIFO)
            #expect(message != nil, "the start hung on \(bad.path)")
            #expect(message?.contains(bad.path) == true && message != "started", "\(String(describing: message))")
        }
    }

    @Test("fm-emulator exits 1 naming a certificate or key that is not a regular file of sane size",
          .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
    func theExecutableExits1() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for bad in [scratch.fifo.path, "/dev/zero", scratch.huge.path] {
            let emulator = try HTTPEmulatorProcess(["--port", "0", "--tls-certificate", Self.certificate.path, "--tls-key", bad])
            let status = emulator.waitForExit()
            if status == nil { scratch.releaseFIFO() }
            #expect(status == 1, "\(bad): \(String(describing: status))")
            let text = emulator.standardErrorText
            #expect(text.contains(bad) && !text.contains("listening on"), "\(text)")
        }
    }
}
#endif

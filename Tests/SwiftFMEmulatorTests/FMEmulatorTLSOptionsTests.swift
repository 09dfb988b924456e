#if canImport(Glibc)
import Foundation
import Testing
import SwiftFMEmulator
import TestSupport

/// `fm-emulator --tls-certificate FILE --tls-key FILE` serves HTTPS: its `listening on` line keeps its format with the
/// `https` scheme; a key that does not match, or a file it cannot read, ends it at start with exit status 1 and a
/// message naming the file; one option without the other is a bad argument (usage, exit status 2).
@Suite("fm-emulator's TLS options", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct FMEmulatorTLSOptionsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")
    static let certificate = fixtures.appendingPathComponent("server.pem").path
    static let key = fixtures.appendingPathComponent("server-key.pem").path
    static let otherKey = fixtures.appendingPathComponent("other-key.pem").path

    @Test func theListeningLineSaysHTTPS() throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--tls-certificate", Self.certificate, "--tls-key", Self.key])
        let line = emulator.firstLine()
        emulator.process.terminate()
        #expect(line?.hasPrefix("listening on https://127.0.0.1:") == true, "\(String(describing: line))")
        #expect(emulator.waitForExit() == 0)
    }

    @Test("A key or certificate it cannot use exits 1 naming the file", arguments: [
        [Self.certificate, Self.otherKey, Self.otherKey],
        [Self.certificate, Self.fixtures.appendingPathComponent("absent.pem").path, Self.fixtures.appendingPathComponent("absent.pem").path],
        [Self.fixtures.appendingPathComponent("absent.pem").path, Self.key, Self.fixtures.appendingPathComponent("absent.pem").path],
    ])
    func anUnusableFileExits1NamingIt(files: [String]) throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--tls-certificate", files[0], "--tls-key", files[1]])
        #expect(emulator.waitForExit() == 1)
        let text = emulator.standardErrorText
        #expect(text.contains(files[2]) && !text.contains("listening on"), "\(text)")
    }

    @Test("One TLS option without the other is a bad argument", arguments: [
        ["--tls-certificate", Self.certificate], ["--tls-key", Self.key], ["--tls-key="],
    ])
    func oneWithoutTheOther(arguments: [String]) throws {
        let emulator = try HTTPEmulatorProcess(arguments)
        #expect(emulator.waitForExit() == 2)
        #expect(emulator.standardErrorText.contains("usage: fm-emulator"))
    }
}
#endif

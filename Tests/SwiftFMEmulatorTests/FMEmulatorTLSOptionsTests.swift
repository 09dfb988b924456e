#if canImport(Glibc)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
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

    /// The control API stays plain HTTP while the Data API serves HTTPS, and says so: its own line names its `http`
    /// URL, which answers plain HTTP (the harness's back door on loopback, not a client under test).
    @Test func theControlLineSaysHTTPAndAnswersPlainHTTP() async throws {
        let emulator = try HTTPEmulatorProcess(["--port", "0", "--control", "--tls-certificate", Self.certificate, "--tls-key", Self.key])
        defer {
            emulator.process.terminate()
            _ = emulator.waitForExit()
        }
        let lines = emulator.firstLines(2)
        #expect(lines.first?.hasPrefix("listening on https://127.0.0.1:") == true, "\(lines)")
        let control = try #require(lines.dropFirst().first { $0.hasPrefix("control on http://") }, "no plain control line in \(lines)")
        let url = try #require(URL(string: String(control.dropFirst("control on ".count)) + "/v1/settings"))
        let session = makeHTTPTestSession()
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
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

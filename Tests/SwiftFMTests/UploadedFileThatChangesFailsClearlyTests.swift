#if canImport(Glibc)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Testing
@testable import SwiftFM

// Contract: an OData container upload from a file URL over FMCurlTransport sends the file as it was when the upload
// started, or fails: a file that shrinks, grows or is written to while it is sent ends the upload before its last
// byte, with -1009 naming the file; the server never gets a whole body made of two versions (nor waits for bytes that
// never come). Before, a file that shrank left the server waiting for the rest of its Content-Length (the call hung
// until a deadline), and one that grew or was rewritten went out whole, mixing old and new bytes.

@Suite("An uploaded file that changes fails clearly")
struct UploadedFileThatChangesFailsClearlyTests {
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case shrinks, grows, isRewritten
        var testDescription: String { rawValue }
    }

    /// A one-request server that reads the request's head and the first `pauseAfter` bytes of its body, waits until
    /// the test says go on, then reads the rest: answers `204` with `fmodata.affected_rows: 1` when the whole body
    /// came, and closes.
    final class PausingServer: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        let paused = DispatchSemaphore(value: 0)
        let goOn = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var _bodyReceived = 0
        private var _contentLength = -1
        var bodyReceived: Int { lock.withLock { _bodyReceived } }
        var contentLength: Int { lock.withLock { _contentLength } }

        init(pauseAfter: Int) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, listen(fd, 4) == 0 else {
                close(fd)
                throw URLError(.cannotConnectToHost)
            }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
            listener = fd
            let listener = fd
            Thread { [self] in
                defer { finished.signal() }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                defer { close(client) }
                serve(client, pauseAfter: pauseAfter)
            }.start()
        }

        private func serve(_ client: Int32, pauseAfter: Int) {
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var head: String?
            var body = 0
            var didPause = false
            while true {
                if head == nil, let end = pending.range(of: Data("\r\n\r\n".utf8)) {
                    let text = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                    head = text
                    body = pending.count - end.upperBound
                    let length = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                        .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                    lock.withLock { _contentLength = length }
                }
                if head != nil {
                    lock.withLock { _bodyReceived = body }
                    if !didPause && body >= pauseAfter {
                        didPause = true
                        paused.signal()
                        _ = goOn.wait(timeout: TestBound.deadline)
                    }
                    if body >= contentLength {
                        let answer = "HTTP/1.1 204 No Content\r\nfmodata.affected_rows: 1\r\nConnection: close\r\n\r\n"
                        _ = answer.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                        return
                    }
                }
                let want = head == nil || didPause ? buffer.count : min(buffer.count, max(1, pauseAfter - body))
                let n = read(client, &buffer, want)
                guard n > 0 else { return }   // the client closed
                if head == nil { pending.append(contentsOf: buffer[0..<n]) } else { body += n }
            }
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    /// Failed before: shrinks — no completion until the hang guard's bound (the server waited for the rest of the
    /// body); grows, isRewritten — the upload succeeded, its body mixing the two versions.
    @Test(arguments: Change.allCases)
    func theUploadFailsNamingTheFile(_ change: Change) async throws {
        let size = 32 << 20
        let source = UploadSourceMustBeARegularFileTests.temporary("changing.png")
        try Data(repeating: 0x41, count: size).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        // Far less than the file: curl has read only part of it when the server pauses (socket buffers are a few MB).
        let server = try PausingServer(pauseAfter: 64 * 1024)
        defer { server.stop() }
        var configuration = FMConfiguration(host: "http://127.0.0.1:\(server.port)", database: "DB", username: "admin", password: "pw",
                                            timeout: 3600)
        configuration.containerTimeout = 3600
        let api = DataAPI(configuration: configuration, transport: FMCurlTransport(idleTimeout: 3600),
                          callbackQueue: DispatchQueue(label: "changing.callbacks"))
        let recorder = Recorder<(Int?, String, FMError?)>()
        FMOData(sharing: api).uploadContainer(in: "contacts", key: .number(1), field: "photo", fileURL: source,
                                              mimeType: "application/octet-stream") { rows, code in
            recorder.record((rows, code, FMError.current))
        }
        #expect(await onOwnThread { server.paused.wait(timeout: TestBound.deadline) } == .success, "the body started")
        let file = try FileHandle(forWritingTo: source)
        switch change {
        case .shrinks:
            try file.truncate(atOffset: UInt64(size / 2))
        case .grows:
            try file.seekToEnd()
            try file.write(contentsOf: Data(repeating: 0x42, count: 4096))
        case .isRewritten:
            try file.seek(toOffset: UInt64(size - 4096))
            try file.write(contentsOf: Data(repeating: 0x42, count: 4096))
        }
        try file.close()
        server.goOn.signal()
        let value = try #require(await recorder.value().first)
        #expect(value.0 == nil && value.1 == FMError.ClientCode.fileError, "\(value.1) \(String(describing: value.2))")
        #expect(value.2?.message.contains(source.path) == true, "\(String(describing: value.2?.message))")
        #expect(value.2?.message.contains("changed while it was uploaded") == true)
        #expect(await onOwnThread { server.finished.wait(timeout: TestBound.deadline) } == .success)
        #expect(server.contentLength == size, "the length announced is the file's when the upload started")
        #expect(server.bodyReceived < size, "the server never got a whole body")
    }

    /// Held: a file that stays as it was is sent whole.
    @Test func aFileThatStaysAsItWasIsSentWhole() async throws {
        let size = 4 << 20
        let source = UploadSourceMustBeARegularFileTests.temporary("steady.png")
        try Data(repeating: 0x41, count: size).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let server = try PausingServer(pauseAfter: 64 * 1024)
        defer { server.stop() }
        server.goOn.signal()
        var configuration = FMConfiguration(host: "http://127.0.0.1:\(server.port)", database: "DB", username: "admin", password: "pw",
                                            timeout: 3600)
        configuration.containerTimeout = 3600
        let api = DataAPI(configuration: configuration, transport: FMCurlTransport(idleTimeout: 3600),
                          callbackQueue: DispatchQueue(label: "steady.callbacks"))
        let recorder = Recorder<(Int?, String)>()
        FMOData(sharing: api).uploadContainer(in: "contacts", key: .number(1), field: "photo", fileURL: source,
                                              mimeType: "application/octet-stream") { rows, code in recorder.record((rows, code)) }
        let value = try #require(await recorder.value().first)
        #expect(value.0 == 1 && value.1 == "0", "\(value)")
        #expect(server.bodyReceived == size)
    }
}
#endif

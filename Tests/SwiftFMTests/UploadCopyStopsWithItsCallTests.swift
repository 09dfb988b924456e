import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a Data API upload from a file URL copies the file into its temporary multipart body chunk by chunk, and
// a cancel or the call's deadline ends that copy at the next chunk: the call completes once (-1005 or -1004), the
// rest of the file is never read, and the temporary body is removed. Before, the whole file was copied (a large one
// for minutes) after the caller had been told the call had ended, holding its concurrency slot meanwhile.

@Suite("An upload's copy stops with its call")
struct UploadCopyStopsWithItsCallTests {
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case cancel, deadline
        var testDescription: String { rawValue }
    }

    /// What the copy was seen doing.
    final class Copy: @unchecked Sendable {
        private let lock = NSLock()
        private var body: URL?
        private var copied: [Int64] = []
        func record(_ url: URL, _ bytes: Int64) -> Bool {
            lock.withLock {
                body = url
                copied.append(bytes)
                return copied.count == 1
            }
        }
        var temporaryBody: URL? { lock.withLock { body } }
        var chunks: [Int64] { lock.withLock { copied } }
    }

    /// Failed before: the copy went on to the file's end (64 chunks) after the call had completed.
    @Test(arguments: Ending.allCases)
    func theCopyEndsAtTheNextChunk(_ ending: Ending) async throws {
        // 64 MiB of a sparse file: nothing on disk, read as zeros.
        let size: UInt64 = 64 << 20
        let source = UploadSourceMustBeARegularFileTests.temporary("sparse.bin")
        #expect(FileManager.default.createFile(atPath: source.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: source) }
        let file = try FileHandle(forWritingTo: source)
        try file.truncate(atOffset: size)
        try file.close()

        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        // One request at a time: a later call is sent only once the upload gave its slot back (its copy ended).
        configuration.maxConcurrentRequests = 1
        // An hour, unless the deadline is what ends the call.
        configuration.containerTimeout = ending == .deadline ? 1 : 3600
        configuration.timeout = 3600
        let harness = Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            if request.url?.path.hasSuffix("/records") == true { return .json(200, Bodies.value("after")) }
            return nil   // the upload itself must never be sent
        }
        let handle = FMRequest()
        let done = Recorder<String>()
        let completed = DispatchSemaphore(value: 0)
        let copy = Copy()
        var endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "photo", repetition: 1, fileURL: source,
                                                 fileName: nil, mimeType: nil)
        endpoint.bodyCopied = { body, bytes in
            guard copy.record(body, bytes) else { return }
            // After the first chunk: the call ends (cancelled, or its deadline passes while the copy waits here).
            if ending == .cancel { handle.cancel() }
            _ = completed.wait(timeout: TestBound.deadline)
        }
        var options = CallOptions(accepting: { $0 == 200 }, handle: handle)
        options.isTransfer = true
        harness.api.perform(endpoint, options: options) { result in
            done.record(result.testFailureCode ?? "0")
            completed.signal()
        }
        let code = await done.value().first
        #expect(code == (ending == .cancel ? FMError.ClientCode.cancelled : FMError.ClientCode.timeout), "\(String(describing: code))")

        // Sent once the upload's slot is free, so after its copy ended.
        let after = Recorder<String>()
        harness.api.perform(TestEndpoints.records()) { after.record($0.testValue ?? $0.testFailureCode ?? "?") }
        #expect(await after.value() == ["after"])

        #expect(copy.chunks == [1 << 20], "the copy stopped at the chunk after its call ended: \(copy.chunks.count) chunks")
        let body = try #require(copy.temporaryBody)
        #expect(!FileManager.default.fileExists(atPath: body.path), "the temporary body is removed")
        #expect(done.values.count == 1, "completed once")
        #expect(harness.stub.count("POST", "/photo/1") == 0, "the upload was never sent")
    }
}

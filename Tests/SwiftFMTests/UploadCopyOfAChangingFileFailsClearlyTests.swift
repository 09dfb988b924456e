import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a Data API upload from a file URL sends the file as it was when its copy into the multipart body began, or
// fails: a file that grows or is written to while it is copied fails the call with -1009 naming the file ("changed
// while it was uploaded"), and nothing is sent — the rule of the OData upload over FMCurlTransport. Before, the copy
// took the size the file had when opened and went on: a file still being written went out cut short, or mixing old and
// new bytes, and the call succeeded.

@Suite("An upload's copy of a changing file fails clearly")
struct UploadCopyOfAChangingFileFailsClearlyTests {
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case grows, isRewritten
        var testDescription: String { rawValue }
    }

    /// A client whose uploads are answered "0" (deadlines of an hour: the copy, not the clock, is the subject).
    private static func harness() -> Harness {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.containerTimeout = 3600
        return Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, #"{"response":{"modId":"2"},"messages":[{"code":"0","message":"OK"}]}"#)
        }
    }

    @Test(arguments: Change.allCases)
    func theUploadFailsNamingTheFile(_ change: Change) async throws {
        let size = 3 << 20   // three chunks
        let source = UploadSourceMustBeARegularFileTests.temporary("changing-copy.png")
        try Data(repeating: 0x41, count: size).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let harness = Self.harness()
        var endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "photo", repetition: 1, fileURL: source,
                                                 fileName: nil, mimeType: nil)
        let changed = Locked(false)
        endpoint.bodyCopied = { _, _ in
            guard changed.withLock({ state -> Bool in defer { state = true }; return !state }) else { return }
            // After the first chunk: another writer changes the file.
            guard let file = try? FileHandle(forWritingTo: source) else { return }
            switch change {
            case .grows:
                _ = try? file.seekToEnd()
                try? file.write(contentsOf: Data(repeating: 0x42, count: 4096))
            case .isRewritten:
                try? file.seek(toOffset: UInt64(size - 4096))
                try? file.write(contentsOf: Data(repeating: 0x42, count: 4096))
            }
            try? file.close()
        }
        var options = CallOptions(accepting: { $0 == 200 }, handle: FMRequest())
        options.isTransfer = true
        let done = Recorder<Result<FMEditResult, FMError>>()
        harness.api.perform(endpoint, options: options) { done.record($0) }
        let result = try #require(await done.value().first)
        guard case .failure(let error) = result else {
            Issue.record("the upload succeeded with a file that changed while it was copied")
            return
        }
        #expect(error.code == FMError.ClientCode.fileError, "\(error)")
        #expect(error.message.contains(source.path) && error.message.contains("changed while it was uploaded"), "\(error.message)")
        #expect(harness.stub.count("POST", "/photo/1") == 0, "nothing was sent")
        let errors = harness.logs.values.filter { $0.level == .error }
        #expect(errors.count == 1, "\(errors.map(\.message))")
    }

    /// Held: a file that stays as it was is sent.
    @Test func aSteadyFileIsSent() async throws {
        let source = UploadSourceMustBeARegularFileTests.temporary("steady-copy.png")
        try Data(repeating: 0x41, count: 3 << 20).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let harness = Self.harness()
        let done = Recorder<String>()
        harness.api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: source) { _, code in done.record(code) }
        #expect(await done.value().first == "0")
        #expect(harness.stub.count("POST", "/photo/1") == 1)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM
import SwiftFMEmulator

// Contract: an OData container upload from a file URL over FMURLSessionTransport follows the rule of every upload
// streamed from a file (`FileSnapshot`): the server gets the file as it was when the upload started, or nothing, and
// a file that changes while it is taken fails the call with -1009 naming the file ("changed while it was uploaded"),
// as over FMCurlTransport and the Data API's multipart path. URLSession reads the file by its path on its own
// schedule and can be told of no change, so SwiftFM sends it a private copy taken under that rule (the Data API
// path's copy). Before, URLSession streamed the caller's file unchecked: a file rewritten while it was sent was
// stored as whatever bytes URLSession happened to read, and the call succeeded.

@Suite("An OData upload of a changing file over URLSession fails clearly")
struct ODataUploadOfAChangingFileOverURLSessionTests {
    /// A file of `size` bytes of 0x41 with a PNG signature.
    private static func makeFile(_ size: Int) throws -> (URL, Data) {
        var bytes = Data(repeating: 0x41, count: size)
        bytes.replaceSubrange(0..<8, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-changing-\(UUID().uuidString).png")
        try bytes.write(to: url)
        return (url, bytes)
    }

    /// Rewrites the last 4 KiB of `url` (same size, new bytes).
    private static func rewriteTail(_ url: URL, size: Int) {
        guard let file = try? FileHandle(forWritingTo: url) else { return }
        try? file.seek(toOffset: UInt64(size - 4096))
        try? file.write(contentsOf: Data(repeating: 0x42, count: 4096))
        try? file.close()
    }

    private static func client(_ url: URL, transport: any FMTransport) -> (DataAPI, FMOData) {
        var configuration = odataConfiguration(url)
        configuration.containerTimeout = 600
        let api = DataAPI(configuration: configuration, transport: transport)
        return (api, FMOData(sharing: api))
    }

    /// The file changes while its copy is taken: -1009 naming the file, and no PATCH reaches the server.
    /// Failed before: the upload succeeded (no snapshot was taken, so nothing compared the file).
    @Test func aFileThatChangesWhileItIsTakenFailsNamingIt() async throws {
        let size = 3 << 20   // three chunks of the copy
        let (source, _) = try Self.makeFile(size)
        defer { try? FileManager.default.removeItem(at: source) }
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        let (api, odata) = Self.client(url, transport: FMURLSessionTransport(idleTimeout: 600))
        let call = odata.uploadCall(in: "Customers", key: "ALFKI", field: "photo", body: .file(source, contentType: "image/png"),
                                    fileName: "photo.png")
        var endpoint = odata.endpoint(call, headers: nil)
        let first = Once()
        endpoint.bodyCopied = { _, _ in
            // After the first chunk: another writer rewrites the file's end.
            guard first.claim() else { return }
            Self.rewriteTail(source, size: size)
        }
        var options = CallOptions(accepting: call.accepting)
        options.isTransfer = true
        let result: Result<Int, FMError> = await withCheckedContinuation { continuation in
            api.perform(endpoint, options: options) { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = result else {
            Issue.record("the upload succeeded with a file that changed while it was sent: \(result)")
            return
        }
        #expect(error.code == FMError.ClientCode.fileError, "\(error)")
        #expect(error.message.contains(source.path) && error.message.contains("changed while it was uploaded"), "\(error)")
        #expect(!emulator.requestLog.contains { $0.method == "PATCH" }, "nothing is sent")
    }

    /// The file is rewritten once the transport has the request (URLSession reads it afterwards, on its own schedule):
    /// the server stores the file as it was when the upload started. Failed before: the server stored the rewritten
    /// bytes URLSession read, and the call succeeded.
    @Test func aFileRewrittenWhileURLSessionSendsItIsStoredAsItWas() async throws {
        let size = 8 << 20
        let (source, original) = try Self.makeFile(size)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-changing-out-\(UUID().uuidString).png")
        defer { for file in [source, output] { try? FileManager.default.removeItem(at: file) } }
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        let transport = RewritingTransport(base: FMURLSessionTransport(idleTimeout: 600)) { Self.rewriteTail(source, size: size) }
        let (_, odata) = Self.client(url, transport: transport)
        let (rows, code) = await odataOnce(odata) { done in
            odata.uploadContainer(in: "Customers", key: "ALFKI", field: "photo", fileURL: source, mimeType: "image/png") { done($0, $1) }
        }
        #expect(transport.rewrites == 1, "the file was rewritten while the upload was sent")
        if code == FMError.ClientCode.fileError { return }   // refused, naming the file: the rule allows it
        #expect(code == "0" && rows == 1, "\(code)")
        _ = try await odata.downloadContainer(from: "Customers", key: "ALFKI", field: "photo", to: output)
        let stored = try Data(contentsOf: output)
        #expect(stored.count == original.count)
        #expect(stored == original, "the server stored bytes the file did not have when the upload started")
    }
}

/// Hands every request to `base`, then (once, for the first request with a body file) runs `change`: the caller's
/// file changes while the transport sends it.
final class RewritingTransport: FMTransport, @unchecked Sendable {
    private let base: any FMTransport
    private let change: @Sendable () -> Void
    private let lock = NSLock()
    private var done = 0
    var rewrites: Int { lock.withLock { done } }

    init(base: any FMTransport, change: @escaping @Sendable () -> Void) {
        self.base = base
        self.change = change
    }

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        let task = base.send(request, events: events)
        if request.bodyFile != nil, lock.withLock({ () -> Bool in defer { done += 1 }; return done == 0 }) { change() }
        return task
    }
}

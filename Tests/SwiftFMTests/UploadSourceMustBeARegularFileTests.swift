import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a container upload from a file URL reads its source only when it is a regular file (a symlink to one
// is fine). Anything else — a FIFO, a device (`/dev/null`, `/dev/zero`, `/dev/urandom`), a directory, a missing
// path, a symlink loop — completes once with -1009 naming the path, sends nothing, and never blocks the calling
// thread (a FIFO without a writer is not opened for a blocking read) nor reads an endless source, through the
// Data API and OData.

@Suite("Upload source must be a regular file")
struct UploadSourceMustBeARegularFileTests {
    /// The longest an upload may take to complete: the hang bound (a refused one completes before anything is
    /// sent, in milliseconds; a loaded machine only slows it down).
    static let bound = TestBound.seconds

    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])

    static func temporary(_ tag: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-upload-source-\(tag)-\(UUID().uuidString)")
    }

    /// A FIFO nobody writes to: opening it for a blocking read waits for ever.
    static func makeFIFO() throws -> URL {
        let url = temporary("fifo")
        try #require(mkfifo(url.path, 0o600) == 0)
        return url
    }

    /// Releases a reader blocked in `open` on `fifo` (a test that failed), then removes it.
    static func removeFIFO(_ fifo: URL) {
        let fd = open(fifo.path, O_WRONLY | O_NONBLOCK)
        if fd >= 0 { close(fd) }
        unlink(fifo.path)
    }

    static func harness() -> Harness {
        Harness(store: FMMemoryTokenStore(FMStoredToken(token: "live", expiry: Date().addingTimeInterval(3600)))) { request in
            if request.httpMethod == "PATCH" { return .json(204, "") }
            return .json(200, #"{"response":{"modId":"2"},\#(Canned.ok)}"#)
        }
    }

    enum Route: String, CaseIterable, CustomTestStringConvertible {
        case dataAPI, odata
        var testDescription: String { rawValue }
    }

    /// Starts one upload of `source` through `route` on a thread of its own (the call must not block it) and
    /// returns its completion's code and message, or `nil` when none came within ``bound``. The test's task waits
    /// without blocking a thread of the cooperative pool.
    static func upload(_ source: URL, _ route: Route, on harness: Harness) async -> (code: String, message: String)? {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<[(String, String)]>([])
        let api = harness.api
        Thread {
            switch route {
            case .dataAPI:
                api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: source) { _, code in
                    outcome.withLock { $0.append((code, "")) }
                    done.signal()
                }
            case .odata:
                FMOData(sharing: api).uploadContainer(in: "contacts", key: .number(1), field: "photo", fileURL: source) { _, code in
                    outcome.withLock { $0.append((code, "")) }
                    done.signal()
                }
            }
        }.start()
        guard await onOwnThread({ done.wait(timeout: .now() + bound) }) == .success else { return nil }
        harness.drain()
        let values = outcome.value
        #expect(values.count == 1, "completed \(values.count) times")
        return values.first
    }

    /// The message of an async upload's error (the code is the callback's).
    static func message(_ source: URL, _ route: Route, on harness: Harness) async -> String {
        do {
            switch route {
            case .dataAPI: _ = try await harness.api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: source)
            case .odata: _ = try await FMOData(sharing: harness.api).uploadContainer(in: "contacts", key: .number(1), field: "photo", fileURL: source)
            }
            return "uploaded"
        } catch {
            return (error as? FMError).map { "\($0.code) \($0.message)" } ?? "\(error)"
        }
    }

    /// Failed before: the Data API's upload blocked its caller in `open(2)` for ever (reading the first bytes to
    /// infer the MIME type), and so did OData's.
    @Test(arguments: Route.allCases)
    func aFIFOIsRefusedWithoutBlockingTheCaller(_ route: Route) async throws {
        let fifo = try Self.makeFIFO()
        defer { Self.removeFIFO(fifo) }
        let harness = Self.harness()
        let outcome = await Self.upload(fifo, route, on: harness)
        #expect(outcome?.code == FMError.ClientCode.fileError, "completed with \(String(describing: outcome))")
        #expect(harness.stub.requests.isEmpty, "nothing is sent")
    }

    /// Failed before: `/dev/null` went out as an empty file (and `/dev/zero` as an endless one).
    @Test(arguments: Route.allCases)
    func aDeviceIsRefused(_ route: Route) async throws {
        let harness = Self.harness()
        let outcome = await Self.upload(URL(fileURLWithPath: "/dev/null"), route, on: harness)
        #expect(outcome?.code == FMError.ClientCode.fileError, "completed with \(String(describing: outcome))")
        let message = await Self.message(URL(fileURLWithPath: "/dev/null"), route, on: harness)
        #expect(message.hasPrefix(FMError.ClientCode.fileError) && message.contains("/dev/null") && message.contains("regular file"), "\(message)")
        #expect(harness.stub.requests.isEmpty, "nothing is sent")
    }

    /// Failed before (the Data API's upload copied `/dev/zero` into its temporary body file until the disk was full; the
    /// process was stopped by a file size limit): an endless device is refused before a byte of it is read.
    @Test(arguments: Route.allCases, ["/dev/zero", "/dev/urandom"])
    func anEndlessDeviceIsRefusedUnread(_ route: Route, _ path: String) async throws {
        let harness = Self.harness()
        let outcome = await Self.upload(URL(fileURLWithPath: path), route, on: harness)
        #expect(outcome?.code == FMError.ClientCode.fileError, "completed with \(String(describing: outcome))")
        #expect(harness.stub.requests.isEmpty, "nothing is sent")
    }

    /// Held before: a directory, a missing path and a symlink loop are refused with -1009, naming the path.
    @Test(arguments: Route.allCases)
    func aDirectoryAMissingFileOrASymlinkLoopIsRefused(_ route: Route) async throws {
        let directory = Self.temporary("dir")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        let loop = Self.temporary("loop")
        try #require(symlink(loop.path, loop.path) == 0)
        defer {
            try? FileManager.default.removeItem(at: directory)
            unlink(loop.path)
        }
        let harness = Self.harness()
        for source in [directory, Self.temporary("missing"), loop] {
            let outcome = await Self.upload(source, route, on: harness)
            #expect(outcome?.code == FMError.ClientCode.fileError, "\(source.lastPathComponent): \(String(describing: outcome))")
            let message = await Self.message(source, route, on: harness)
            #expect(message.contains(source.path), "\(message)")
        }
        #expect(harness.stub.requests.isEmpty, "nothing is sent")
    }

    /// Held before: a symlink to a regular file and an empty regular file are uploaded as they are.
    @Test(arguments: Route.allCases)
    func aSymlinkToAFileAndAnEmptyFileAreUploaded(_ route: Route) async throws {
        let file = Self.temporary("file.png")
        try Self.png.write(to: file)
        let link = Self.temporary("link.png")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let empty = Self.temporary("empty.txt")
        try Data().write(to: empty)
        defer { for url in [file, link, empty] { try? FileManager.default.removeItem(at: url) } }
        let harness = Self.harness()
        #expect(await Self.upload(link, route, on: harness)?.code == "0")
        #expect(await Self.upload(empty, route, on: harness)?.code == "0")
        let bodies = harness.stub.requests.map { $0.httpBody ?? Data() }
        #expect(bodies.count == 2)
        if bodies.count == 2 {
            #expect(bodies[0].range(of: Self.png) != nil, "the link's target was sent")
            #expect(route == .odata ? bodies[1].isEmpty : bodies[1].count > 0)
        }
    }
}

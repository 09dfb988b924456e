import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a container download into a file that does not complete successfully — cancelled (even after its last
// byte arrived), out of time, broken off, refused by the file system — leaves nothing behind: no partial file next
// to the destination, and the destination as it was (absent, or its earlier content). Only a completed download
// replaces the destination, in one step. Through the Data API and OData, over both real transports.

@Suite("Download leaves no partial file")
struct DownloadLeavesNoPartialFileTests {
    static let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    static let containerURL = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/photo.bin?RCType=EmbeddedRCFileProcessor")!

    /// A fresh directory of its own, so that anything left in it is seen.
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return url
    }

    static func contents(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    enum Route: String, CaseIterable, CustomTestStringConvertible {
        case dataAPI, odata
        var testDescription: String { rawValue }
    }

    /// Failed before (a `.….swiftfm-….part` file stayed next to the destination): the call is cancelled after its
    /// exchange streamed the whole body into the partial file and before the call took the answer (here from the log
    /// line of that answer, which is written in between).
    @Test(arguments: Route.allCases)
    func aDownloadCancelledAfterItsLastByteLeavesNothing(_ route: Route) throws {
        let handle = Locked<FMRequest?>(nil)
        let handleSet = DispatchSemaphore(value: 0)
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        // Answered on another queue, after the call returned its handle.
        let stub = StubTransport { _ in .body(200, Self.bytes, contentType: "application/octet-stream") }
        let api = DataAPI(configuration: configuration, transport: stub, callbackQueue: DispatchQueue(label: "download.callbacks"),
                          tokenStore: FMMemoryTokenStore(FMStoredToken(token: "live", expiry: Date().addingTimeInterval(3600)))) { event in
            guard event.message.contains("streamed to a file") else { return }
            _ = handleSet.wait(timeout: .now() + TestBound.seconds)
            handle.value?.cancel()
        }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        try Data("earlier".utf8).write(to: target)
        let recorder = Recorder<(URL?, String)>()
        let request = switch route {
        case .dataAPI:
            api.downloadContainer(url: Self.containerURL, to: target) { url, code in recorder.record((url, code)) }
        case .odata:
            FMOData(sharing: api).downloadContainer(from: "contacts", key: .number(1), field: "photo", to: target) { url, code in
                recorder.record((url, code))
            }
        }
        handle.withLock { $0 = request }
        handleSet.signal()
        let outcome = recorder.wait().first
        #expect(outcome?.0 == nil && outcome?.1 == FMError.ClientCode.cancelled)
        #expect(try Data(contentsOf: target) == Data("earlier".utf8), "the destination is as it was")
        #expect(Self.contents(directory) == ["photo.bin"], "nothing is left beside the destination")
    }
}


extension DownloadLeavesNoPartialFileTests {
    /// One download of `server`'s answer into `target` through `route`; its URL and code. `progress` may cancel it
    /// through the handle it is given (known before the first progress report).
    static func download(_ api: DataAPI, _ server: HostileServer, _ route: Route, to target: URL,
                         progress: (@Sendable (FMRequest) -> Void)? = nil) async -> (URL?, String) {
        let handle = Locked<FMRequest?>(nil)
        let known = DispatchSemaphore(value: 0)
        var report: (@Sendable (Int64, Int64) -> Void)?
        if let progress {
            report = { _, _ in
                _ = known.wait(timeout: .now() + TestBound.seconds)
                known.signal()
                if let request = handle.value { progress(request) }
            }
        }
        let recorder = Recorder<(URL?, String)>()
        let request = switch route {
        case .dataAPI:
            api.downloadContainer(url: URL(string: server.url + "/Streaming/photo.bin")!, to: target, progress: report) { url, code in
                recorder.record((url, code))
            }
        case .odata:
            FMOData(sharing: api).downloadContainer(from: "contacts", key: .number(1), field: "photo", to: target, progress: report) { url, code in
                recorder.record((url, code))
            }
        }
        handle.withLock { $0 = request }
        known.signal()
        return await recorder.value().first ?? (nil, "no completion")
    }

    static func api(_ server: HostileServer, _ wire: Wire, containerTimeout: TimeInterval = 60) -> DataAPI {
        HostileServerTests().makeAPI(server, wire, timeout: 60) { $0.containerTimeout = containerTimeout }
    }

    /// Held: a body that ends before its `Content-Length` is a failure, and nothing of it is left.
    @Test(arguments: Route.allCases, Wire.allCases)
    func aBodyShorterThanItsLengthLeavesNothing(_ route: Route, _ wire: Wire) async throws {
        let server = HostileServer { _, _ in
            .answerAndClose(HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "4096"])
                            + String(repeating: "x", count: 100))
        }
        defer { server.stop() }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        try Data("earlier".utf8).write(to: target)
        let (url, code) = await Self.download(Self.api(server, wire), server, route, to: target)
        #expect(url == nil && code != "0", "\(code)")
        #expect(try Data(contentsOf: target) == Data("earlier".utf8))
        #expect(Self.contents(directory) == ["photo.bin"])
    }

    /// A download whose answer broke off is sent again (a call that cannot change data, under the retry policy): the
    /// second, whole answer is the file, with nothing of the first left in it or beside it.
    @Test(arguments: Route.allCases, Wire.allCases)
    func aDownloadWhoseAnswerBrokeOffIsSentAgainWhole(_ route: Route, _ wire: Wire) async throws {
        let whole = String(repeating: "w", count: 4096)
        let answered = Locked(0)
        let server = HostileServer { _, _ in
            let first = answered.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            let head = HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "4096"])
            return .answerAndClose(head + (first ? String(repeating: "x", count: 100) : whole))
        }
        defer { server.stop() }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        let (url, code) = await Self.download(Self.api(server, wire), server, route, to: target)
        #expect(code == "0" && url != nil, "\(code)")
        #expect(try Data(contentsOf: target) == Data(whole.utf8))
        #expect(Self.contents(directory) == ["photo.bin"])
        #expect(answered.value == 2)
    }

    /// Held: a download out of time mid-body (its body dripped) leaves nothing.
    @Test(arguments: Route.allCases, Wire.allCases)
    func aDownloadOutOfTimeMidBodyLeavesNothing(_ route: Route, _ wire: Wire) async throws {
        let server = HostileServer { _, _ in
            .drip(head: HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "100000"]),
                  body: Data(repeating: 1, count: 100_000), interval: 0.2)
        }
        defer { server.stop() }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        let late = await Self.download(Self.api(server, wire, containerTimeout: 2), server, route, to: target)
        #expect(late.0 == nil && late.1 == FMError.ClientCode.timeout, "\(late.1)")
        #expect(Self.contents(directory).isEmpty)
    }

    /// Held: a destination that is a directory, or in a directory that does not exist, is -1009 naming it; the
    /// directory and its content stay.
    @Test(arguments: Route.allCases, Wire.allCases)
    func anUnwritableDestinationIsAFileErrorThatLeavesNothing(_ route: Route, _ wire: Wire) async throws {
        let server = HostileServer { _, _ in
            .answer(HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "4"]) + "data")
        }
        defer { server.stop() }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
        try Data("inside".utf8).write(to: target.appendingPathComponent("kept.txt"))
        let api = Self.api(server, wire)
        let (url, code) = await Self.download(api, server, route, to: target)
        #expect(url == nil && code == FMError.ClientCode.fileError, "\(code)")
        #expect(Self.contents(directory) == ["photo.bin"])
        #expect(Self.contents(target) == ["kept.txt"])
        let nowhere = directory.appendingPathComponent("missing/photo.bin")
        let (none, missing) = await Self.download(api, server, route, to: nowhere)
        #expect(none == nil && missing == FMError.ClientCode.fileError, "\(missing)")
        #expect(Self.contents(directory) == ["photo.bin"])
    }

    /// Held: two downloads into one destination at once each complete, and the destination holds one whole answer.
    @Test(arguments: Wire.allCases)
    func twoDownloadsIntoOneDestinationLeaveOneWholeFile(_ wire: Wire) async throws {
        let first = String(repeating: "a", count: 300_000), second = String(repeating: "b", count: 200_000)
        let server = HostileServer { _, index in
            let body = index % 2 == 0 ? first : second
            return .answer(HostileServer.head("200 OK", ["Content-Type": "application/octet-stream", "Content-Length": "\(body.utf8.count)"]) + body)
        }
        defer { server.stop() }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("photo.bin")
        let api = Self.api(server, wire)
        async let a = Self.download(api, server, .dataAPI, to: target)
        async let b = Self.download(api, server, .dataAPI, to: target)
        let codes = await [a.1, b.1]
        #expect(codes == ["0", "0"])
        let written = try Data(contentsOf: target)
        #expect(written == Data(first.utf8) || written == Data(second.utf8))
        #expect(Self.contents(directory) == ["photo.bin"])
    }
}

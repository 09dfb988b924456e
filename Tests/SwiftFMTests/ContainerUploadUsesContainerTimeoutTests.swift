import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a Data API container upload (from bytes or from a file, callback or async) is bounded by
// `FMConfiguration.containerTimeout`, like every container transfer (and like OData's upload), not by `timeout`:
// an upload whose answer keeps coming for longer than `timeout` completes. The silence allowed between two bytes is
// still `timeout`.

@Suite("Container upload uses containerTimeout")
struct ContainerUploadUsesContainerTimeoutTests {
    enum Source: String, CaseIterable, CustomTestStringConvertible {
        case data, file, asyncFile
        var testDescription: String { rawValue }
    }

    /// Failed before (-1004 "timed out after 3.0 s", with `timeout` 3 s: the upload had `timeout` as its deadline).
    @Test(arguments: Source.allCases, Wire.allCases)
    func anUploadLongerThanTimeoutCompletes(_ source: Source, _ wire: Wire) async throws {
        // The answer trickles in over about 12 s (a byte every 0.15 s: never silent for `timeout`, 5 s).
        let answer = Data(#"{"response":{"modId":"2"},"messages":[{"code":"0","message":"OK"}]}"#.utf8) + Data(repeating: 0x20, count: 10)
        let server = HostileServer { _, _ in
            .drip(head: HostileServer.head("200 OK", ["Content-Type": "application/json", "Content-Length": "\(answer.count)"]),
                  body: answer, interval: 0.15)
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, wire, timeout: 5) { $0.containerTimeout = 600 }
        let file = UploadSourceMustBeARegularFileTests.temporary("photo.png")
        try UploadSourceMustBeARegularFileTests.png.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let code: String
        switch source {
        case .data, .file:
            let recorder = Recorder<String>()
            if source == .data {
                api.uploadContainer(layout: "L", recordId: 1, field: "photo", data: UploadSourceMustBeARegularFileTests.png,
                                    fileName: "photo.png") { _, code in recorder.record(code) }
            } else {
                api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: file) { _, code in recorder.record(code) }
            }
            code = await recorder.value().first ?? "no completion"
        case .asyncFile:
            do {
                code = try await api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: file).modId == "2" ? "0" : "modId?"
            } catch {
                code = (error as? FMError).map { "\($0.code) \($0.message)" } ?? "\(error)"
            }
        }
        #expect(code == "0", "\(code)")
    }
}

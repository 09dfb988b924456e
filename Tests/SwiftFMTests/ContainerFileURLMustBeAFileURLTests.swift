import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: the local file of a container transfer — an upload's source, a streamed download's destination — must be
// a file URL. Any other URL (`https://…`, a container URL passed in the wrong place) is -1002, with nothing read,
// written or sent: its path is never taken for a local path.

@Suite("Container file URL must be a file URL")
struct ContainerFileURLMustBeAFileURLTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// Failed before: the download was written to the URL's path on the local disk, and the upload sent the local
    /// file at the URL's path.
    @Test(arguments: Route.allCases)
    func aNonFileURLIsAnInvalidArgument(_ route: Route) throws {
        let bytes = Data("container bytes".utf8)
        let harness = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "live", expiry: Date().addingTimeInterval(3600)))) { request in
            if request.httpMethod == "GET" { return .body(200, bytes, contentType: "application/octet-stream") }
            if request.httpMethod == "PATCH" { return .json(204, "") }
            return .json(200, #"{"response":{"modId":"2"},\#(Canned.ok)}"#)
        }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("photo.png")
        try UploadSourceMustBeARegularFileTests.png.write(to: source)
        let remoteTarget = try #require(URL(string: "https://example.invalid" + directory.appendingPathComponent("x.bin").path))
        let remoteSource = try #require(URL(string: "https://example.invalid" + source.path))
        let recorder = Recorder<String>(expecting: 2)
        switch route {
        case .dataAPI:
            harness.api.downloadContainer(url: DownloadLeavesNoPartialFileTests.containerURL, to: remoteTarget) { _, code in recorder.record(code) }
            harness.api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: remoteSource) { _, code in recorder.record(code) }
        case .odata:
            let odata = FMOData(sharing: harness.api)
            odata.downloadContainer(from: "contacts", key: .number(1), field: "photo", to: remoteTarget) { _, code in recorder.record(code) }
            odata.uploadContainer(in: "contacts", key: .number(1), field: "photo", fileURL: remoteSource) { _, code in recorder.record(code) }
        }
        #expect(recorder.wait() == [FMError.ClientCode.invalidArgument, FMError.ClientCode.invalidArgument])
        #expect(DownloadLeavesNoPartialFileTests.contents(directory) == ["photo.png"], "nothing was written locally")
        #expect(harness.stub.requests.isEmpty, "nothing is sent")
    }
}

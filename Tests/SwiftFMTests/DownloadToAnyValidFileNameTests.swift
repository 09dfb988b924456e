import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a streamed container download can be written to any destination whose name the file system accepts:
// the partial file beside it keeps its name within the file system's limit (255 bytes), whatever the destination's
// length and script, through the Data API and OData.

@Suite("Download to any valid file name")
struct DownloadToAnyValidFileNameTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// Names of 255 bytes (the longest a file name can be), ASCII and multi-byte, and a short one.
    static let names = [String(repeating: "a", count: 251) + ".png", String(repeating: "é", count: 125) + ".bin", "x"]

    /// Failed before (-1009 "Cannot create …part": the partial file's name was the destination's plus 51 bytes,
    /// past the limit, for any destination name longer than 204 bytes).
    @Test(arguments: Route.allCases)
    func aDestinationWithTheLongestNameIsWritten(_ route: Route) throws {
        let bytes = Data("container bytes".utf8)
        let harness = Harness(store: FMMemoryTokenStore(FMStoredToken(token: "live", expiry: Date().addingTimeInterval(3600)))) { _ in
            .body(200, bytes, contentType: "application/octet-stream")
        }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in Self.names {
            let target = directory.appendingPathComponent(name)
            let recorder = Recorder<(URL?, String)>()
            switch route {
            case .dataAPI:
                harness.api.downloadContainer(url: DownloadLeavesNoPartialFileTests.containerURL, to: target) { recorder.record(($0, $1)) }
            case .odata:
                FMOData(sharing: harness.api).downloadContainer(from: "contacts", key: .number(1), field: "photo", to: target) {
                    recorder.record(($0, $1))
                }
            }
            let outcome = recorder.wait().first
            #expect(outcome?.1 == "0" && outcome?.0 == target, "\(name.utf8.count) bytes: \(String(describing: outcome))")
            #expect((try? Data(contentsOf: target)) == bytes)
        }
        #expect(Set(DownloadLeavesNoPartialFileTests.contents(directory)) == Set(Self.names), "no partial file is left")
    }
}

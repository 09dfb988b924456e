import Foundation
import Testing
@testable import SwiftFM

/// A container download into a file fails after its last answer was read when the finished file cannot be moved to
/// its destination (`-1009`: a directory stands there, the disk refuses the rename). That failure is the call's, and
/// like every failed call it logs one error line: `KIND failed: …` with `fm.code`, the `fm.request_id` of the request
/// whose answer was written (the number on its `→` and `←` lines) and the caller's logging context; the answer's own
/// lines are `debug`, as they say nothing failed. Through the Data API and OData.
@Suite("Log metadata: a download whose file cannot be placed logs its failure")
struct ADownloadThatCannotBePlacedLogsItsFailureTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    /// Failed before: the call completed with -1009 and logged no error line (its only lines were the answer's, 200).
    @Test(arguments: Route.allCases)
    func theFailureLineNamesTheRequestAndCarriesTheContext(_ route: Route) throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.logMetadataProvider = FMLogMetadataProvider { ["trace_id": "download"] }
        let harness = Harness(configuration: configuration, store: FMMemoryTokenStore(FMStoredToken(token: "live", expiry: .distantFuture))) { _ in
            .body(200, Data("container bytes".utf8), contentType: "application/octet-stream")
        }
        let directory = try DownloadLeavesNoPartialFileTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A directory that is not empty stands at the destination: the finished file cannot replace it.
        let target = directory.appendingPathComponent("taken")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: target.appendingPathComponent("inside"))
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
        #expect(outcome?.0 == nil && outcome?.1 == FMError.ClientCode.fileError, "\(String(describing: outcome))")
        let events = harness.logs.values
        let errors = events.filter { $0.level == .error }
        #expect(errors.count == 1, "\(events.map(\.message))")
        let answer = events.last { $0.message.hasPrefix("← ") }
        let line = errors.first
        #expect(line?.metadata["fm.code"] == FMError.ClientCode.fileError, "\(String(describing: line?.metadata))")
        #expect(answer?.metadata["fm.request_id"] != nil && line?.metadata["fm.request_id"] == answer?.metadata["fm.request_id"],
                "\(String(describing: line?.metadata)) vs \(String(describing: answer?.metadata))")
        #expect(line?.metadata["trace_id"] == "download")
        #expect(line?.message.contains("failed") == true && line?.message.contains("taken") == true, "\(String(describing: line?.message))")
    }
}

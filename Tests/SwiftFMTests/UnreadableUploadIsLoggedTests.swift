import Foundation
import Testing
@testable import SwiftFM

/// An upload whose file cannot be read fails (`-1009`) before anything is sent, and says so in the log once, at
/// `error`, as a request that cannot be built does (`… not sent: …`): a call that fails logs its failure (the
/// level table of TracingAndLogLevels). Its line names the file's path and no secret.
@Suite("Log levels: an upload whose file cannot be read logs its failure")
struct UnreadableUploadIsLoggedTests {
    private static let missing = URL(fileURLWithPath: "/nonexistent-swiftfm-test/photo.png")

    private static func errors(_ h: Harness) -> [String] {
        h.logs.values.filter { $0.level == .error }.map(\.message)
    }

    @Test func aDataAPIUploadLogsOneError() async {
        let h = Harness(store: FirstContactRuleTests.loggedIn) { _ in .json(200, Bodies.ok) }
        await #expect(throws: FMError.self) {
            _ = try await h.api.uploadContainer(layout: "L", recordId: 1, field: "Photo", fileURL: Self.missing)
        }
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.contains("not sent") == true && errors.first?.contains(Self.missing.path) == true,
                "\(errors)")
        #expect(h.stub.requests.isEmpty)
    }

    @Test func anODataUploadLogsOneError() async {
        let h = Harness { _ in .json(200, "{}") }
        let odata = FMOData(sharing: h.api)
        await #expect(throws: FMError.self) {
            _ = try await odata.uploadContainer(in: "T", key: 1, field: "Photo", fileURL: Self.missing, mimeType: "image/png")
        }
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.contains("not sent") == true && errors.first?.contains(Self.missing.path) == true,
                "\(errors)")
        #expect(h.stub.requests.isEmpty)
    }
}

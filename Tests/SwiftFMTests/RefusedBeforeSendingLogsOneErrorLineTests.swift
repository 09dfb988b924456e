import Foundation
import Testing
@testable import SwiftFM

/// A call refused before anything is sent (`-1002`: a record id that is not one, a layout name too long for a URL,
/// a URL that is not a file URL) failed: its caller must see it, so it logs exactly one `error` line, shaped as
/// the other lines of calls not sent (`<call> not sent: FMError -1002: <why>`), naming the call by its kind and
/// holding no secret (the level table of TracingAndLogLevels: one failure, one error line). It logged nothing.
@Suite("Log levels: a call refused before sending logs one error line")
struct RefusedBeforeSendingLogsOneErrorLineTests {
    private static let password = "s3cret-pass"

    private static func harness() -> Harness {
        Harness(store: FirstContactRuleTests.loggedIn) { _ in .json(200, Bodies.ok) }
    }

    /// Every line of `h` at error, after checking that no line holds the password or the token.
    private static func errors(_ h: Harness, sourceLocation: SourceLocation = #_sourceLocation) -> [FMLogEvent] {
        let all = h.logs.values
        let secretFree = all.allSatisfy { event in
            let text = event.message + event.metadata.values.joined()
            return !text.contains(password) && !text.contains("tok\"") && !text.contains("Bearer")
        }
        #expect(secretFree, "\(all)", sourceLocation: sourceLocation)
        return all.filter { $0.level == .error }
    }

    /// Exactly one error line, naming the call (`kind not sent: …`), with the code in the text and in `fm.code`.
    private static func expectOneNotSentLine(_ h: Harness, call kind: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = Self.errors(h, sourceLocation: sourceLocation)
        #expect(errors.count == 1, "\(errors.map(\.message))", sourceLocation: sourceLocation)
        #expect(errors.first?.message.hasPrefix("\(kind) not sent: FMError -1002: ") == true, "\(errors.map(\.message))",
                sourceLocation: sourceLocation)
        #expect(errors.first?.metadata["fm.code"] == FMError.ClientCode.invalidArgument, sourceLocation: sourceLocation)
        #expect(errors.first?.metadata["fm.endpoint"] == kind, sourceLocation: sourceLocation)
        #expect(h.stub.requests.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func aRecordIdThatIsNotOneLogsOneError() async {
        let h = Self.harness()
        await #expect(throws: FMError.self) { _ = try await h.api.getRecord(layout: "Contacts", recordId: "12x") }
        Self.expectOneNotSentLine(h, call: "GET layouts/{}/records/{}")
        #expect(h.logs.values.first { $0.level == .error }?.metadata["fm.layout"] == "Contacts")
    }

    @Test func aRecordIdThatIsNotOneLogsOneErrorThroughTheCallback() {
        let h = Self.harness()
        let done = Recorder<String>()
        h.api.deleteRecord(layout: "Contacts", recordId: "-3") { _, code in done.record(code) }
        #expect(done.wait().first == FMError.ClientCode.invalidArgument)
        Self.expectOneNotSentLine(h, call: "DELETE layouts/{}/records/{}")
    }

    @Test func aLayoutNameTooLongForAURLLogsOneError() async {
        let h = Self.harness()
        let layout = String(repeating: "L", count: RequestBuilder.maxURLBytes + 1)
        await #expect(throws: FMError.self) { _ = try await h.api.bridge(TestEndpoints.records(layout)) }
        Self.expectOneNotSentLine(h, call: "GET layouts/{}/records")
    }

    @Test func anUploadFromAURLThatIsNotAFileURLLogsOneError() async throws {
        let h = Self.harness()
        let web = try #require(URL(string: "https://example.com/photo.png"))
        await #expect(throws: FMError.self) {
            _ = try await h.api.uploadContainer(layout: "Contacts", recordId: 1, field: "Photo", fileURL: web)
        }
        // Refused as it was built (the path is not read): named by the call that refused it.
        Self.expectOneNotSentLine(h, call: "POST uploadContainer")
    }

    /// A find refused as it was built (no query) is named `POST find` (it was named after a private helper).
    @Test func aFindWithoutAQueryIsNamedFind() async {
        let h = Self.harness()
        await #expect(throws: FMError.self) { _ = try await h.api.find(layout: "Contacts", request: FMFindRequest(queries: [])) }
        Self.expectOneNotSentLine(h, call: "POST find")
    }

    @Test func aDownloadToAURLThatIsNotAFileURLLogsOneError() async throws {
        let h = Self.harness()
        let container = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor"))
        let web = try #require(URL(string: "https://example.com/photo.png"))
        await #expect(throws: FMError.self) { _ = try await h.api.downloadContainer(url: container, to: web) }
        Self.expectOneNotSentLine(h, call: "GET {container}")
    }

    @Test func anODataDownloadToAURLThatIsNotAFileURLLogsOneError() async throws {
        let h = Self.harness()
        let odata = FMOData(sharing: h.api)
        let web = try #require(URL(string: "https://example.com/photo.png"))
        await #expect(throws: FMError.self) {
            _ = try await odata.downloadContainer(from: "Contacts", key: 1, field: "Photo", to: web)
        }
        let errors = Self.errors(h)
        #expect(errors.count == 1 && errors.first?.message.contains(" not sent: FMError -1002: ") == true, "\(errors.map(\.message))")
        #expect(h.stub.requests.isEmpty)
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// One failed call, one error line — for an OData page walk too: a walk that a next link leading where it already went
/// ends (`-1007`) fails its caller, and logs that once at `error`, with `fm.code` and the page call's name; the
/// callback form binds the error behind its code (``FMError/current``), as every `(value?, code)` completion does.
/// Before, nothing was logged (each page's own call had succeeded), and `forEachPage` completed with `-1007` and no
/// `FMError.current`.
@Suite("Log levels: an OData walk that loops logs one error line")
struct AnODataWalkThatLoopsLogsOneErrorLineTests {
    static func errors(_ setup: ODataHarness) -> [FMLogEvent] {
        setup.harness.logs.values.filter { $0.level == .error }
    }

    static func expectOneLoopLine(_ setup: ODataHarness, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = Self.errors(setup)
        #expect(errors.count == 1, "\(errors.map(\.message))", sourceLocation: sourceLocation)
        #expect(errors.first?.message.contains("already followed") == true, "\(errors.map(\.message))", sourceLocation: sourceLocation)
        #expect(errors.first?.metadata["fm.code"] == FMError.ClientCode.malformedResponse, sourceLocation: sourceLocation)
    }

    @Test func theAsyncWalkLogsOneError() async {
        let setup = ODataPageCycleTests.cyclingServer(again: ODataBodies.base + "/contacts?$skiptoken=2")
        await #expect(throws: FMError.self) {
            for try await _ in setup.odata.pages(from: "contacts") {}
        }
        Self.expectOneLoopLine(setup)
    }

    @Test func theCallbackWalkLogsOneErrorAndBindsIt() async {
        let setup = ODataPageCycleTests.cyclingServer(again: ODataBodies.base + "/contacts?$skiptoken=2")
        let done = Recorder<(String, FMError?)>()
        setup.odata.forEachPage(from: "contacts", page: { _ in true }) { _, code in done.record((code, FMError.current)) }
        let value = await done.value().first
        #expect(value?.0 == FMError.ClientCode.malformedResponse)
        #expect(value?.1?.code == FMError.ClientCode.malformedResponse && value?.1?.message.contains("already followed") == true,
                "\(String(describing: value?.1))")
        Self.expectOneLoopLine(setup)
    }
}

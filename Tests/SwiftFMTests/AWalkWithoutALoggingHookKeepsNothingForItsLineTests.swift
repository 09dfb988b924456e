import Foundation
import Testing
@testable import SwiftFM

/// What a walk keeps only for its log line (the number of each page's request, for the line of a walk that page ends)
/// is made only when that line can be logged: an OData walk without a logging hook, or whose hook is above `error`…
/// never (`error` is the highest level), allocates nothing per page for it. With a hook, it is there, and the line
/// names the page (``WalkErrorLinesCarryTheRequestIDTests``).
@Suite("Cost: a walk without a logging hook keeps nothing for its line")
struct AWalkWithoutALoggingHookKeepsNothingForItsLineTests {
    /// Failed before (did not compile): every page of an OData walk allocated a holder for its request's number, with
    /// or without a hook.
    @Test func theHolderIsMadeOnlyWithAHook() {
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        let silent = FMOData(sharing: DataAPI(configuration: configuration, transport: StubTransport()))
        #expect(silent.walkRequestHolder() == nil)
        let logged = FMOData(sharing: DataAPI(configuration: configuration, transport: StubTransport(), logger: { _ in }))
        #expect(logged.walkRequestHolder() != nil)
    }
}

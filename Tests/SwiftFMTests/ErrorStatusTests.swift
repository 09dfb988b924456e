import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// An HTTP error status is never a success: whatever code its body carries (`"0"`, none, empty), the call
/// completes with -1007 and the status, on the callback and the async surface.
@Suite("Error statuses are never a success")
struct ErrorStatusTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture)) }

    static let successBodies = [
        #"{"messages":[{"code":"0","message":"OK"}],"response":{}}"#,
        #"{"messages":[{"code":"0"}]}"#,
        #"{"messages":[{"code":0,"message":"OK"}],"response":{}}"#,
        #"{"messages":[{"code":"","message":""}],"response":{}}"#,
        #"{"messages":[{"message":"no code"}],"response":{}}"#,
    ]

    /// An error status whose body says `"0"` (or no code) completes with `-1007` and the status, on every
    /// surface: never `(nil, "0")`, never a thrown error whose code is `"0"`.
    @Test(arguments: [404, 500, 400, 403, 409], [0, 1, 2, 3, 4])
    func anErrorStatusNeverCompletesWithCodeZero(status: Int, body: Int) async throws {
        let text = Self.successBodies[body]
        let h = Harness(store: Self.loggedIn) { _ in .json(status, text) }
        let callback = Recorder<(Bool, String, FMError?)>()
        h.api.getRecords(layout: "Contacts") { found, code in callback.record((found == nil, code, FMError.current)) }
        let (noValue, code, current) = try #require(await callback.value().first)
        #expect(noValue && code == FMError.ClientCode.malformedResponse, "HTTP \(status) \(text): \(code)")
        #expect(current?.code == FMError.ClientCode.malformedResponse && current?.httpStatus == status)
        do {
            _ = try await h.api.getRecords(layout: "Contacts")
            Issue.record("HTTP \(status) returned a value")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.malformedResponse && error.httpStatus == status)
            #expect(body == 4 || error.message.contains("HTTP \(status)"), "the message says what came")
        }
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// Every way a call can end, provoked through the stub transport, against the rule of the level table of
/// TracingAndLogLevels: a call that fails logs exactly one `error` line; a call that succeeds logs none; and
/// so does a call ended by its caller's own doing (a cancel: "a cancelled exchange" is `debug`) or its owner's
/// (a shutdown: `info`), and an answer with a FileMaker error (`warning`: the caller judges FileMaker's codes,
/// many of which are outcomes). Deadlines are fired by hand (``HeldDeadlines``); calls are given an hour.
@Suite("Log levels: every failed call logs one error line")
struct EveryFailedCallLogsOneErrorLineTests {
    enum Ending: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case success
        case refusedConnection
        case deadline
        case cancelledByTheCaller
        case reloginRefusedAfterTheSessionWasLost
        case proxyAnswering503
        case errorPageThatIsNotJSON
        case malformedBody
        case answerTooLarge
        case invalidArgument
        case fileMakerError
        case shutdown

        var testDescription: String { rawValue }

        /// The code the call completes with (`nil`: a success).
        var code: String? {
            switch self {
            case .success: nil
            case .refusedConnection: FMError.ClientCode.transport
            case .deadline: FMError.ClientCode.timeout
            case .cancelledByTheCaller: FMError.ClientCode.cancelled
            case .reloginRefusedAfterTheSessionWasLost: "212"
            case .proxyAnswering503, .errorPageThatIsNotJSON: FMError.ClientCode.notJSON
            case .malformedBody: FMError.ClientCode.malformedResponse
            case .answerTooLarge: FMError.ClientCode.responseTooLarge
            case .invalidArgument: FMError.ClientCode.invalidArgument
            case .fileMakerError: "105"
            case .shutdown: FMError.ClientCode.shuttingDown
            }
        }

        /// How many error lines the call logs.
        var errorLines: Int {
            switch self {
            case .success, .cancelledByTheCaller, .shutdown, .fileMakerError: 0
            default: 1
            }
        }

        /// The server's answer to the call (logins answer a token, logouts OK).
        var answer: StubAnswer {
            switch self {
            case .success, .invalidArgument: .json(200, Bodies.value("ok"))
            case .refusedConnection: .failure(.cannotConnectToHost)
            case .deadline, .cancelledByTheCaller, .shutdown: .hold
            case .reloginRefusedAfterTheSessionWasLost: .json(401, Bodies.expired)
            case .proxyAnswering503: .body(503, Data("<html><body>503 Service Unavailable</body></html>".utf8), contentType: "text/html")
            case .errorPageThatIsNotJSON: .body(500, Data("<html><body>Internal Server Error</body></html>".utf8), contentType: "text/html")
            case .malformedBody: .json(200, #"{"response":{"value":"#)
            case .answerTooLarge: .json(200, Bodies.value(String(repeating: "x", count: 4096)))
            case .fileMakerError: .json(500, #"{"messages":[{"code":"105","message":"Layout is missing"}],"response":{}}"#)
            }
        }
    }

    @Test(arguments: Ending.allCases)
    func oneErrorLinePerFailedCall(_ ending: Ending) async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        configuration.retry = .none
        if ending == .answerTooLarge { configuration.maxResponseBytes = 1024 }
        let arrived = DispatchSemaphore(value: 0)
        let h = Harness(configuration: configuration, store: FirstContactRuleTests.loggedIn) { request in
            if isLogin(request) {
                return ending == .reloginRefusedAfterTheSessionWasLost ? .json(401, Bodies.badLogin) : .json(200, Bodies.login())
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            arrived.signal()
            return ending.answer
        }
        let deadlines = HeldDeadlines(h.api)
        let done = Recorder<Result<String, FMError>>()
        let handle: FMRequest
        switch ending {
        case .invalidArgument:
            handle = h.api.getRecord(layout: "Contacts", recordId: "not-a-record-id") { _, code in
                done.record(code == "0" ? .success("ok") : .failure(FMError(code: code, message: "")))
            }
        default:
            handle = h.api.perform(TestEndpoints.records()) { done.record($0) }
        }
        switch ending {
        case .deadline, .cancelledByTheCaller, .shutdown:
            #expect(await onOwnThread { arrived.wait(timeout: TestBound.deadline) } == .success)
            switch ending {
            case .deadline: deadlines.fire()
            case .cancelledByTheCaller: handle.cancel()
            default: await h.api.shutdown(grace: 0)
            }
        default:
            break
        }
        let result = try #require(await done.value().first)
        #expect(result.testFailureCode == ending.code, "\(result)")
        if [.deadline, .cancelledByTheCaller, .shutdown].contains(ending) {
            // The stopped exchange reports (and logs) before its transport task is cancelled.
            let held = h.stub.tasks.first
            #expect(await onOwnThread { held?.waitUntilCancelled(deadline: TestBound.deadline) } == true)
        }
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.count == ending.errorLines, "\(h.logs.values.map(\.description))")
        // The error line is the result's: its code is the one the call completed with.
        if ending.errorLines == 1 { #expect(errors.first?.metadata["fm.code"] == ending.code, "\(errors.map(\.description))") }
        #expect(h.stub.unexpected.isEmpty)
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// The level table of TracingAndLogLevels: a shutdown logs no error (its owner's doing, as a cancel is the caller's) —
/// also when the calls it ends were waiting for a login that the shutdown's grace cut short: the login's end
/// (`-1008`) is not "login failed" at `error`, and the calls waiting for it log no error line of their own.
@Suite("Log levels: a shutdown during a login logs no error")
struct AShutdownDuringALoginLogsNoErrorTests {
    @Test func aLoginCutShortByTheShutdownLogsNoError() async {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 3600
        let loginArrived = DispatchSemaphore(value: 0)
        let h = Harness(configuration: configuration) { request in
            if isLogin(request) {
                loginArrived.signal()
                return .hold
            }
            return .json(200, Bodies.ok)
        }
        let done = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { done.record($0) }
        #expect(await onOwnThread { loginArrived.wait(timeout: TestBound.deadline) } == .success)
        await h.api.shutdown(grace: 0)
        let code = await done.value().first?.testFailureCode
        #expect(code == FMError.ClientCode.shuttingDown || code == FMError.ClientCode.cancelled, "\(String(describing: code))")
        let errors = h.logs.values.filter { $0.level == .error }
        #expect(errors.isEmpty, "\(errors.map(\.message))")
    }
}

import Foundation
import Testing
@testable import SwiftFM

/// The contract: the warning that a token file cannot be written is logged after the store's write lock is released, as
/// every other line of the package is logged outside its locks. A log handler may then call the client back — a logout,
/// a login, anything that writes the token store — and nothing waits on itself. On main the warning was logged while the
/// token-store lock was held: a handler that logged out on it deadlocked the thread that wrote the token (a call's
/// login, here), for good.
@Suite("A token store warning is logged outside the store's lock")
struct ATokenStoreWarningIsLoggedOutsideTheStoresLockTests {
    @Test func aHandlerThatLogsOutOnTheWarningDoesNotDeadlock() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-no-such-dir-\(UUID().uuidString)")
        let store = FMFileTokenStore(url: missing.appendingPathComponent("t.token"))
        let api = Locked<DataAPI?>(nil)
        let handled = DispatchSemaphore(value: 0)
        let logger: FMLogHandler = { event in
            guard event.level == .warning, event.message.contains("token store cannot write") else { return }
            // Writes the token store (a clear) from inside the handler.
            api.value?.logout { _, _ in }
            handled.signal()
        }
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login("tok")) }
            return .json(200, Bodies.value("ok"))
        }
        let client = DataAPI(configuration: FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin",
                                                            password: "pw"),
                             transport: stub, tokenStore: store, logger: logger)
        api.withLock { $0 = client }
        // The login's token is written (and fails) on the thread of the call's login.
        DispatchQueue.global().async { client.perform(TestEndpoints.records()) { _ in } }
        #expect(handled.wait(timeout: .now() + 60) == .success, "the log handler never returned: the token write waits on itself")
    }
}

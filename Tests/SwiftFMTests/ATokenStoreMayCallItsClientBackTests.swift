import Foundation
import Testing
@testable import SwiftFM

/// The contract: a token store is user code, and SwiftFM calls it holding none of its own locks, so a store may call its
/// client back — `logout()` from inside `save` (a store that ends the session it cannot keep), or from the description
/// of the error its `trySave` throws — and both calls end: the login that wrote the store, and the logout it started.
/// Writes still land in the order the client decided them: the logout's clear, decided after the login's token, is
/// what the store holds at the end. On main the store was written under the client's write-order lock, and a logout
/// from inside `save` asked for that lock again on the same thread: the login never ended (a deadlock).
@Suite("A token store may call its client back")
struct ATokenStoreMayCallItsClientBackTests {
    /// A store that calls its client's `logout` from the first save of a token: from `save` itself, or from the
    /// description of the error `trySave` then throws.
    final class CallingBackStore: FMTokenStore, @unchecked Sendable {
        struct Refused: Error, CustomStringConvertible {
            let onDescribe: @Sendable () -> Void
            var description: String {
                onDescribe()
                return "the vault refused the write"
            }
        }

        private let lock = NSLock()
        private var stored: FMStoredToken?
        private var calledBack = false
        private let fromDescription: Bool
        weak var api: DataAPI?
        let logoutEnded = DispatchSemaphore(value: 0)

        init(fromDescription: Bool) { self.fromDescription = fromDescription }

        func load() -> FMStoredToken? { lock.withLock { stored } }
        func save(_ token: FMStoredToken?) { try? trySave(token) }
        func trySave(_ token: FMStoredToken?) throws {
            let first = lock.withLock { () -> Bool in
                stored = token
                defer { if token != nil { calledBack = true } }
                return token != nil && !calledBack
            }
            guard first else { return }
            let logout: @Sendable () -> Void = { [weak self] in
                guard let self, let api = self.api else { return }
                api.logout { _, _ in self.logoutEnded.signal() }
            }
            if fromDescription { throw Refused(onDescribe: logout) }
            logout()
        }
    }

    static let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")

    /// Logs in on a thread of its own (a deadlock there must not stop the test) and says whether it ended.
    static func loginEnds(_ api: DataAPI) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { api.login { _, _ in done.signal() } }
        return done.wait(timeout: TestBound.deadline) == .success
    }

    @Test(arguments: [false, true])
    func aLogoutFromInsideSaveEndsAndItsClearIsKept(fromDescription: Bool) throws {
        let store = CallingBackStore(fromDescription: fromDescription)
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let lines = KeptEvents()
        let api = DataAPI(configuration: Self.configuration, transport: stub, tokenStore: store, logger: { lines.keep($0) })
        store.api = api

        try #require(Self.loginEnds(api), "the login whose save called logout never ended")
        #expect(store.logoutEnded.wait(timeout: TestBound.deadline) == .success, "the logout started in save never ended")
        // The logout was decided after the login: its clear is the last write.
        #expect(store.load() == nil)
        #expect(!api.isActiveToken())
        #expect(stub.count("DELETE", "/sessions/\(Bodies.token)") == 1)
    }
}

/// The contract kept by the writes made holding no lock: writes from many threads at once still land in the order the
/// client decided them, whatever the store's own pace, so the store ends holding the client's current token.
@Suite("Token-store writes from many threads land in the order decided")
struct TokenStoreWritesFromManyThreadsLandInOrderTests {
    /// A store that records every write and lets other threads run in the middle of each.
    final class SlowStore: FMTokenStore, @unchecked Sendable {
        private let lock = NSLock()
        private var stored: FMStoredToken?
        private var inside = 0
        private(set) var overlapped = false
        func load() -> FMStoredToken? { lock.withLock { stored } }
        func save(_ token: FMStoredToken?) {
            lock.withLock { inside += 1; if inside > 1 { overlapped = true } }
            for _ in 0..<50 { sched_yield() }
            lock.withLock { stored = token; inside -= 1 }
        }
    }

    @Test func theStoreEndsHoldingTheCurrentToken() {
        for _ in 0..<20 {
            let store = SlowStore()
            let stub = StubTransport { request in
                if isLogin(request) { return .json(200, Bodies.login()) }
                return .json(200, Bodies.value("ok"))
            }
            let api = DataAPI(configuration: ATokenStoreMayCallItsClientBackTests.configuration, transport: stub, tokenStore: store)
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for index in 0..<25 { _ = api.sessions.adoptToken("token-\(thread)-\(index)-0123456789") }
            }
            #expect(store.load()?.token == api.currentToken)
            #expect(!store.overlapped, "two writes ran at once")
        }
    }
}

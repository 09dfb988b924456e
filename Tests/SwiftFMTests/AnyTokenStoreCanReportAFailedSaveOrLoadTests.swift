import Foundation
import Testing
@testable import SwiftFM

/// The contract: any token store — a Keychain, a Redis or a database store of a user's own, not only `FMFileTokenStore` —
/// can tell SwiftFM that a save or a load failed, and why, by throwing from ``FMTokenStore/trySave(_:)`` or
/// ``FMTokenStore/tryLoad()``. SwiftFM then logs one `warning` per distinct problem (not one per call; a success ends the
/// problem, so a later failure is told again), outside any lock, with the token redacted; the call goes on (the session
/// in memory, or a login instead of the stored token). A store that implements only `load` and `save` compiles unchanged
/// and is never warned about. On main SwiftFM asked only `FMFileTokenStore` why it failed: a store of a user's own whose
/// save failed was silent.
@Suite("Any token store can report a failed save or load")
struct AnyTokenStoreCanReportAFailedSaveOrLoadTests {
    /// What a store of a user's own throws (not an ``FMTokenStoreError``: any error will do).
    struct KeychainFailure: Error, CustomStringConvertible {
        var status: Int
        var token: String
        var description: String { "SecItemAdd failed with status \(status) for \(token)" }
    }

    /// A store whose save fails with `status` while it is set, saying the token it was given (a careless message).
    final class FailingKeychainStore: FMTokenStore, @unchecked Sendable {
        private let lock = NSLock()
        private var stored: FMStoredToken?
        private var failing: Int?
        private(set) var saves = 0

        func fail(with status: Int?) { lock.withLock { failing = status } }
        func load() -> FMStoredToken? { lock.withLock { stored } }
        func save(_ token: FMStoredToken?) { try? trySave(token) }
        func trySave(_ token: FMStoredToken?) throws {
            try lock.withLock {
                saves += 1
                if let failing { throw KeychainFailure(status: failing, token: token?.token ?? "-") }
                stored = token
            }
        }
    }

    struct Unreachable: Error, CustomStringConvertible {
        var description: String { "redis://cache:6379 refused the connection" }
    }

    /// A store whose load fails, always, with a reason.
    final class UnreachableStore: FMTokenStore, @unchecked Sendable {
        private let lock = NSLock()
        private(set) var loads = 0
        func load() -> FMStoredToken? { try? tryLoad() }
        func save(_ token: FMStoredToken?) {}
        func tryLoad() throws -> FMStoredToken? {
            lock.withLock { loads += 1 }
            throw Unreachable()
        }
    }

    /// A store as written before ``FMTokenStore/tryLoad()`` and ``FMTokenStore/trySave(_:)`` existed: `load` and `save`
    /// only. It compiles unchanged; the defaults call it, and it is never warned about.
    final class OnlyLoadAndSave: FMTokenStore, @unchecked Sendable {
        private let lock = NSLock()
        private var stored: FMStoredToken?
        private(set) var saves = 0
        func load() -> FMStoredToken? { lock.withLock { stored } }
        func save(_ token: FMStoredToken?) { lock.withLock { saves += 1; stored = token } }
    }

    static let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")

    /// Runs one call and waits for its end.
    static func call(_ api: DataAPI) {
        let done = DispatchSemaphore(value: 0)
        api.perform(TestEndpoints.records()) { _ in done.signal() }
        #expect(done.wait(timeout: TestBound.deadline) == .success, "the call never ended")
    }

    /// An explicit login (a store write), waited for.
    static func login(_ api: DataAPI) {
        let done = DispatchSemaphore(value: 0)
        api.login { _, _ in done.signal() }
        #expect(done.wait(timeout: TestBound.deadline) == .success, "the login never ended")
    }

    static func tokenStoreWarnings(_ lines: KeptEvents) -> [String] {
        lines.all.filter { $0.level == .warning && $0.message.contains("token store") }.map(\.message)
    }

    @Test func aCustomStoreWhoseSaveFailsIsWarnedAboutOncePerProblem() throws {
        let store = FailingKeychainStore()
        store.fail(with: -25308)
        let logins = Locked(0)
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login("tok-\(logins.withLock { $0 += 1; return $0 })-0123456789")) }
            return .json(200, Bodies.value("ok"))
        }
        let lines = KeptEvents()
        let api = DataAPI(configuration: Self.configuration, transport: stub, tokenStore: store, logger: { lines.keep($0) })

        Self.call(api)    // logs in: the save fails
        Self.login(api)   // a new token: the save fails the same way
        Self.login(api)
        var warnings = Self.tokenStoreWarnings(lines)
        #expect(store.saves >= 3)
        #expect(warnings.count == 1, "\(warnings)")
        let warning = try #require(warnings.first)
        #expect(warning.contains("-25308"), "the warning does not say why: \(warning)")
        #expect(!warning.contains("tok-"), "the warning shows the token: \(warning)")

        // Another problem is told; the same one again after a success is told again too.
        store.fail(with: -34018)
        Self.login(api)
        store.fail(with: nil)
        Self.login(api)
        store.fail(with: -34018)
        Self.login(api)
        warnings = Self.tokenStoreWarnings(lines)
        #expect(warnings.count == 3, "\(warnings)")
        #expect(warnings.dropFirst().allSatisfy { $0.contains("-34018") && !$0.contains("tok-") }, "\(warnings)")
        #expect(stub.unexpected.isEmpty)
    }

    @Test func aStoreWithOnlyLoadAndSaveWorksAndIsNeverWarnedAbout() throws {
        let store = OnlyLoadAndSave()
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let lines = KeptEvents()
        let api = DataAPI(configuration: Self.configuration, transport: stub, tokenStore: store, logger: { lines.keep($0) })
        Self.call(api)
        Self.login(api)
        #expect(store.saves >= 2)
        #expect(store.load()?.token == Bodies.token)
        // The defaults are the store's own load and save, and never throw.
        let token = FMStoredToken(token: "another-token-0123456789", expiry: .distantFuture)
        try store.trySave(token)
        #expect(try store.tryLoad() == token)
        #expect(Self.tokenStoreWarnings(lines).isEmpty, "\(Self.tokenStoreWarnings(lines))")
    }

    /// The file store says why through the same requirements: a missing file is no token (no problem), a file that
    /// holds no stored token is a problem naming the file, warned about once however often it is read.
    @Test func theFileStoreReportsAnUnreadableFileThroughTheSameRequirements() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("music.token")
        let store = FMFileTokenStore(url: file)
        #expect(try store.tryLoad() == nil)
        try Data("not a token".utf8).write(to: file)
        #expect(throws: FMTokenStoreError.self) { try store.tryLoad() }
        #expect(store.load() == nil)

        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let lines = KeptEvents()
        let api = DataAPI(configuration: Self.configuration, transport: stub, tokenStore: store, logger: { lines.keep($0) })
        #expect(!api.isActiveToken())
        #expect(!api.isActiveToken())
        let warnings = Self.tokenStoreWarnings(lines)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("cannot read \(file.path)") == true, "\(warnings)")
        Self.call(api)   // logs in and writes the file: the token is read back
        #expect(store.load()?.token == Bodies.token)
    }

    @Test func aCustomStoreWhoseLoadFailsIsWarnedAboutOnceAndTheClientLogsIn() throws {
        let store = UnreachableStore()
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        let lines = KeptEvents()
        let api = DataAPI(configuration: Self.configuration, transport: stub, tokenStore: store, logger: { lines.keep($0) })

        #expect(!api.isActiveToken())   // reads the store again
        #expect(api.tokenExpiry == nil)
        Self.call(api)                  // reads it again, logs in
        #expect(store.loads >= 3)
        let warnings = Self.tokenStoreWarnings(lines)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("read") == true, "\(warnings)")
        #expect(warnings.first?.contains("redis://cache:6379 refused the connection") == true, "\(warnings)")
        #expect(stub.count("POST", "/sessions") == 1)
    }
}

/// The log events of a client, kept for the test.
final class KeptEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [FMLogEvent] = []
    func keep(_ event: FMLogEvent) { lock.withLock { events.append(event) } }
    var all: [FMLogEvent] { lock.withLock { events } }
}

import Foundation
import Testing
@testable import SwiftFM

/// A call's deadlines, held instead of armed: the test ends the call by its deadline at the moment it chooses
/// (``fire()`` runs the timer's own closure, as the clock thread would), with no wait and no timing.
final class HeldDeadlines: @unchecked Sendable {
    private let lock = NSLock()
    private var fires: [@Sendable () -> Void] = []

    /// Every call of `api` (its logins included) from now on arms a deadline held here; none fires by itself.
    init(_ api: DataAPI) {
        api.context.sender.armDeadline.withLock {
            $0 = { [self] _, fire in
                lock.withLock { fires.append(fire) }
                return Deadline.after(seconds: .infinity) {}
            }
        }
    }

    /// How many deadlines were armed.
    var count: Int { lock.withLock { fires.count } }

    /// Fires the deadline armed last (the call's, once its session is leased: no login armed one after it).
    func fire() {
        lock.withLock { fires.last }?()
    }

    /// Fires the deadline armed `index`-th, from 0 (a call's own is armed before the login it starts).
    func fire(at index: Int) {
        lock.withLock { fires.indices.contains(index) ? fires[index] : nil }?()
    }
}

/// A log that a test can wait on: every line is kept, and ``wait(for:)`` returns once a line holding a fragment
/// was written (bounded by ``TestBound``), so a test reads the lines a call writes after its result was delivered.
final class WatchedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [FMLogEvent] = []
    private var waiters: [(String, DispatchSemaphore)] = []

    var handler: FMLogHandler {
        { [self] event in
            let woken = lock.withLock { () -> [DispatchSemaphore] in
                events.append(event)
                return waiters.filter { event.message.contains($0.0) }.map(\.1)
            }
            for semaphore in woken { semaphore.signal() }
        }
    }

    var values: [FMLogEvent] { lock.withLock { events } }

    /// `true` once a line holding `fragment` was written; `false` when none came within the bound.
    func wait(for fragment: String) async -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let seen = lock.withLock { () -> Bool in
            if events.contains(where: { $0.message.contains(fragment) }) { return true }
            waiters.append((fragment, semaphore))
            return false
        }
        if seen { return true }
        return await onOwnThread { semaphore.wait(timeout: TestBound.deadline) } == .success
    }
}

/// One failure, one error line, whichever end comes first: a call's deadline may pass while its answer (or its
/// failure) is being classified, and only one result is delivered (``CallState``). The log follows that result:
/// the deadline's "timed out" line when the deadline delivered, the answer's line when the answer did; the line
/// of the outcome that lost is detail (`debug`). The deadline is fired by hand (``HeldDeadlines``) at the point
/// of the race: inside the answer's decoding, or as the failure's own line is written.
@Suite("Log levels: a deadline racing an answer logs one error line")
struct DeadlineRacingAnAnswerLogsOneErrorLineTests {
    private static let password = "s3cret-pass"

    private static func configuration() -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: password)
        configuration.timeout = 3600   // a deadline far past any wait here: only `HeldDeadlines.fire()` passes it
        configuration.retry = .none
        return configuration
    }

    /// An endpoint whose answer is read by `read` (the test's code, run inside the call's classification) and
    /// then found malformed (`-1007`): the call's own failure, at error.
    private static func unreadable(_ read: @escaping @Sendable () -> Void) -> Endpoint<String> {
        Endpoint(.get, .database, ["layouts", "Contacts", "records"]) { _ in
            read()
            throw FMError.malformed("the test's answer cannot be read", status: 200)
        }
    }

    /// The deadline passes while the answer is read: the deadline delivers `-1004` and says so once; the answer
    /// that could not be read is no longer the call's result, and not an error line too.
    @Test func theDeadlinePassingWhileTheAnswerIsReadIsTheOneError() async {
        let log = WatchedLog()
        let stub = StubTransport { _ in .json(200, Bodies.ok) }
        let api = DataAPI(configuration: Self.configuration(), transport: stub, tokenStore: FirstContactRuleTests.loggedIn, logger: log.handler)
        let deadlines = HeldDeadlines(api)
        let done = Recorder<Result<String, FMError>>()
        api.perform(Self.unreadable { deadlines.fire() }) { done.record($0) }
        #expect(await done.value().first?.testFailureCode == FMError.ClientCode.timeout)
        // The answer's outcome is said after the deadline delivered: wait for its line before counting.
        #expect(await log.wait(for: "could not be read: -1007"))
        let errors = log.values.filter { $0.level == .error }
        #expect(errors.count == 1 && errors.first?.message.hasPrefix("GET layouts/{}/records timed out: ") == true,
                "\(errors.map(\.message))")
        #expect(log.values.contains { $0.level == .debug && $0.message.contains("could not be read: -1007") },
                "the outcome that lost is still there, as detail: \(log.values.map(\.description))")
    }

    /// A cancel while the answer is read: the call delivers `-1005`, the caller's own doing, which is no error
    /// (a cancelled exchange is `debug`); the answer it cancelled is not an error line either.
    @Test func aCancelWhileTheAnswerIsReadLogsNoError() async {
        let log = WatchedLog()
        let stub = StubTransport { _ in .json(200, Bodies.ok) }
        let api = DataAPI(configuration: Self.configuration(), transport: stub, tokenStore: FirstContactRuleTests.loggedIn, logger: log.handler)
        let handle = FMRequest()
        var options = CallOptions()
        options.handle = handle
        let done = Recorder<Result<String, FMError>>()
        api.perform(Self.unreadable { handle.cancel() }, options: options) { done.record($0) }
        #expect(await done.value().first?.testFailureCode == FMError.ClientCode.cancelled)
        #expect(await log.wait(for: "could not be read: -1007"))
        let errors = log.values.filter { $0.level == .error }
        #expect(errors.isEmpty, "\(errors.map(\.message))")
    }

    /// The deadline passes as the failure that ends the call (a first contact refused) is being said: one result
    /// is delivered, and the one error line is that result's.
    @Test func theDeadlinePassingAsAFailureIsSaidLeavesOneError() async {
        let logs = Recorder<FMLogEvent>(expecting: 0)
        let fireAtTheFirstError = Locked<(@Sendable () -> Void)?>(nil)
        let stub = StubTransport { _ in .failure(.cannotConnectToHost) }
        let api = DataAPI(configuration: Self.configuration(), transport: stub, tokenStore: FirstContactRuleTests.loggedIn,
                          logger: { event in
                              logs.record(event)
                              if event.level == .error, let fire = fireAtTheFirstError.withLock({ $0.take() }) { fire() }
                          })
        let deadlines = HeldDeadlines(api)
        fireAtTheFirstError.withLock { $0 = { deadlines.fire() } }
        let done = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { done.record($0) }
        let delivered = await done.value().first?.testFailureCode
        let errors = logs.values.filter { $0.level == .error }
        #expect(errors.count == 1, "\(errors.map(\.message))")
        #expect(errors.first?.metadata["fm.code"] == delivered, "the error line is the delivered result's: \(String(describing: delivered)) \(errors.map(\.message))")
    }
}

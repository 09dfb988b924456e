// Contract: calls that start while a ServiceGroup shuts FMService down, before, during and after its graceful
// shutdown begins, each complete exactly once, with their records or with -1012 (never another code, never
// hanging); the group's run returns, and every session the pool opened is logged out, none left on the server.
import Foundation
import Logging
import ServiceLifecycle
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

@Suite struct CallsRacingAGracefulShutdownEachCompleteOnce {
    /// 4 callers, each starting calls back to back (over a pool of 3 sessions) while the group shuts down.
    /// Held on main.
    @Test func callersRacingTheShutdown() async throws {
        try await Emulator.withRunning { emulator in
            var configuration = try configuration(for: emulator)
            configuration.sessionPoolSize = 3
            let api = DataAPI(configuration: configuration)
            let group = ServiceGroup(services: [FMService(api, grace: 60)], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            let outcomes = Outcomes()
            let someSucceeded = Signal()
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                for _ in 0..<4 {
                    tasks.addTask {
                        // Until a call is refused (each started once the previous one completed); a bound, so that a
                        // failure of another kind cannot loop for ever.
                        for _ in 0..<100_000 {
                            do {
                                _ = try await api.getRecords(layout: "Artists", limit: 1)
                                if outcomes.add("0") >= 8 { someSucceeded.fire() }
                            } catch let error as FMError {
                                _ = outcomes.add(error.code)
                                if error.code == FMError.ClientCode.shuttingDown { return }
                            }
                        }
                    }
                }
                #expect(await someSucceeded.wait())
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()   // bounded by the grace and the timeout: every call completes
            }
            let codes = outcomes.all
            #expect(Set(codes).isSubset(of: ["0", FMError.ClientCode.shuttingDown]), "\(Set(codes))")
            #expect(codes.filter { $0 == FMError.ClientCode.shuttingDown }.count == 4)
            #expect(emulator.activeSessionCount == 0)
            #expect(emulator.logoutCount >= 1 && emulator.logoutCount <= 3)
        }
    }
}

private final class Outcomes: @unchecked Sendable {
    // @unchecked: `codes` under `lock`.
    private let lock = NSLock()
    private var codes: [String] = []
    /// Adds one completion's code; returns how many successes there are.
    func add(_ code: String) -> Int { lock.withLock { codes.append(code); return codes.filter { $0 == "0" }.count } }
    var all: [String] { lock.withLock { codes } }
}

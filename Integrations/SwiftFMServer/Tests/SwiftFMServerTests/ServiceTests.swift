import Foundation
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import SwiftFM
import SwiftFMEmulator
import SwiftFMServer
import Testing

@Suite struct ServiceTests {
    /// In a ServiceGroup, graceful shutdown lets a call in flight finish, refuses new calls with -1012, logs
    /// the session out, and then the group's run returns.
    @Test func drainsInFlightCallsAndRefusesNewOnes() async throws {
        let emulator = Emulator()
        try emulator.start()
        defer { emulator.stop() }

        // The first records request is held at the emulator until the test lets it go.
        let held = HeldFirstRequest(on: emulator)
        let shuttingDown = Signal()
        let api = DataAPI(configuration: try configuration(for: emulator), logger: { event in
            if event.message.hasPrefix("shutting down") { shuttingDown.fire() }
        })
        let group = ServiceGroup(services: [FMService(api, grace: 60)], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let inFlight = Task { try await api.getRecords(layout: "Artists", limit: 1) }
            #expect(await held.arrived.wait())

            await group.triggerGracefulShutdown()
            #expect(await shuttingDown.wait())
            await #expect(throws: FMError.self) {
                do { _ = try await api.getRecords(layout: "Artists", limit: 1) } catch let error as FMError {
                    #expect(error.code == FMError.ClientCode.shuttingDown)
                    throw error
                }
            }
            #expect(emulator.logoutCount == 0)   // still draining: the session is not logged out under the call

            held.release()
            let found = try await inFlight.value
            #expect(found.records.count == 1)
            try await tasks.next()   // the group's run returns once the client is shut down
        }
        #expect(emulator.logoutCount == 1)
        #expect(emulator.activeSessionCount == 0)
    }

    /// Cancelled while it drains (a ServiceGroup escalates to cancellation once its
    /// `maximumGracefulShutdownDuration` passed), the service cuts the grace short: the call in flight
    /// completes at once with -1012, the session is logged out and `run()` returns. Failed on main: the call
    /// stayed in flight and `run()` waited for the whole 600 s grace.
    @Test func cancellationWhileDrainingCutsTheGraceShort() async throws {
        let emulator = Emulator()
        try emulator.start()
        defer { emulator.stop() }
        let held = HeldFirstRequest(on: emulator)
        defer { held.release() }
        let shuttingDown = Signal()
        var configuration = try configuration(for: emulator)
        configuration.timeout = 600   // only the shutdown ends the held call
        let api = DataAPI(configuration: configuration, logger: { event in
            if event.message.hasPrefix("shutting down") { shuttingDown.fire() }
        })
        let ended = Signal()
        let inFlight = Task {
            defer { ended.fire() }
            return try await api.getRecords(layout: "Artists", limit: 1)
        }
        #expect(await held.arrived.wait())

        let returned = Signal()
        await testGracefulShutdown { trigger in
            let run = Task {
                try await FMService(api, grace: 600).run()
                returned.fire()
            }
            trigger.triggerGracefulShutdown()
            #expect(await shuttingDown.wait())
            run.cancel()
            await expectCutShort(inFlight, ended: ended, held: held)
            held.release()
            #expect(await returned.wait(seconds: 60))
        }
        #expect(emulator.logoutCount == 1)
        #expect(emulator.activeSessionCount == 0)
    }

    /// The same through a ServiceGroup: its `maximumGracefulShutdownDuration` (1 s) passes while the client
    /// drains with a 600 s grace; the group cancels the service, which ends the call in flight with -1012, and
    /// the group's run returns. Failed on main (the call stayed in flight until the emulator let it go).
    @Test func aGroupsMaximumGracefulShutdownDurationBoundsTheDrain() async throws {
        let emulator = Emulator()
        try emulator.start()
        defer { emulator.stop() }
        let held = HeldFirstRequest(on: emulator)
        defer { held.release() }
        var configuration = try configuration(for: emulator)
        configuration.timeout = 600   // only the shutdown ends the held call
        let api = DataAPI(configuration: configuration)
        var groupConfiguration = ServiceGroupConfiguration(services: [.init(service: FMService(api, grace: 600))],
                                                           logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(1)
        let group = ServiceGroup(configuration: groupConfiguration)

        let ended = Signal()
        let inFlight = Task {
            defer { ended.fire() }
            return try await api.getRecords(layout: "Artists", limit: 1)
        }
        let returned = Signal()
        let run = Task {
            defer { returned.fire() }
            try await group.run()
        }
        #expect(await held.arrived.wait())
        await group.triggerGracefulShutdown()
        await expectCutShort(inFlight, ended: ended, held: held)
        held.release()
        #expect(await returned.wait(seconds: 60))
        _ = try? await run.value
        #expect(emulator.logoutCount == 1)
    }

    /// Cancelling the group (no graceful shutdown) still shuts the client down: calls then are refused.
    @Test func cancellationShutsTheClientDown() async throws {
        try await Emulator.withRunning { emulator in
            let api = DataAPI(configuration: try configuration(for: emulator))
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let service = FMService(api)
            let run = Task { try await service.run() }
            run.cancel()
            try await run.value
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "Artists", limit: 1) }
            #expect(emulator.logoutCount == 1)
        }
    }

    /// Any other client joins through its shutdown closure: called once, with the grace, on graceful
    /// shutdown; the DataAPI beside it is shut down too.
    @Test func anyClientThroughItsShutdown() async throws {
        try await Emulator.withRunning { emulator in
            let api = DataAPI(configuration: try configuration(for: emulator))
            _ = try await api.getRecords(layout: "Artists", limit: 1)
            let graces = GraceLog()
            let group = ServiceGroup(services: [FMService(api, grace: 7), FMService(grace: 3) { grace in graces.append(grace) }],
                                     logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                await group.triggerGracefulShutdown()
                try await tasks.next()
            }
            #expect(graces.all == [3])
            #expect(emulator.logoutCount == 1)
            await #expect(throws: FMError.self) { _ = try await api.getRecords(layout: "Artists", limit: 1) }
        }
    }
}

/// The held call `inFlight` ends (`ended`) with -1012, its drain cut short, within a generous 60 s, far below
/// the 600 s grace and timeout (before the fix it stayed in flight); if it does not, the held request is let
/// go so that the test ends.
private func expectCutShort<Value: Sendable>(_ inFlight: Task<Value, any Error>, ended: Signal, held: HeldFirstRequest) async {
    let cut = await ended.wait(seconds: 60)
    #expect(cut)
    if !cut { held.release() }
    await #expect(throws: FMError.self) {
        do { _ = try await inFlight.value } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.shuttingDown)
            throw error
        }
    }
}

private final class GraceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var graces: [TimeInterval?] = []
    func append(_ grace: TimeInterval?) { lock.withLock { graces.append(grace) } }
    var all: [TimeInterval?] { lock.withLock { graces } }
}

import Foundation
import Testing
@testable import SwiftFM

/// A call's phase and its one exactly-once transition (`CallState`): every (phase, event) pair, with the
/// next phase and the actions the call carries out, in order.
@Suite("Call state")
struct CallStateTests {
    /// The machine with plain values: a lease is a name, work and timers are numbers.
    typealias State = CallState<Int, String, Int, Int>

    static let lost = FMError(code: "952", message: "Invalid token")

    /// Reaches each phase from a fresh call, its deadline timer (100) armed.
    static var phases: [(name: String, path: [State.Event])] { [
        ("queued", [.deadlineArmed(100)]),
        ("waitingForSession", [.deadlineArmed(100), .started, .leaseRequested(7, attempt: 1)]),
        ("inFlight", [.deadlineArmed(100), .started, .leaseRequested(7, attempt: 1), .leased("L"), .sent(1, attempt: 1), .sent(2, attempt: 1)]),
        ("backingOff", [.deadlineArmed(100), .started, .leaseRequested(7, attempt: 1), .leased("L"), .sent(1, attempt: 1), .backOff(wait: 0.5), .backoffArmed(200, backoff: 1)]),
        ("done", [.deadlineArmed(100), .started, .cancelled]),
    ] }

    /// Every event, with the values it hands in: a second timer (300), pool id 9, lease M, work 3.
    static var events: [(name: String, event: State.Event)] { [
        ("started", .started),
        ("deadlineArmed", .deadlineArmed(300)),
        ("leaseRequested", .leaseRequested(9, attempt: 1)),
        ("leaseRequestedEarlier", .leaseRequested(9, attempt: 0)),
        ("leased", .leased("M")),
        ("noSessionNeeded", .noSessionNeeded),
        ("sent", .sent(3, attempt: 1)),
        ("sentEarlier", .sent(3, attempt: 0)),
        ("answered", .answered(.success(42))),
        ("answeredFailure", .answered(.failure(lost))),
        ("loginFailed", .loginFailed(lost)),
        ("sessionLostReplayable", .sessionLost(lost, mayReplay: true)),
        ("sessionLostFinal", .sessionLost(lost, mayReplay: false)),
        ("backOff", .backOff(wait: 0.5)),
        ("backoffArmed", .backoffArmed(300, backoff: 1)),
        ("backoffEnded", .backoffEnded(backoff: 1)),
        ("backoffArmedEarlier", .backoffArmed(300, backoff: 0)),
        ("backoffEndedEarlier", .backoffEnded(backoff: 0)),
        ("cancelled", .cancelled),
        ("deadlinePassed", .deadlinePassed(.timeout(nil, after: 1))),
        ("shutdown", .shutdown(.shuttingDown)),
    ] }

    /// (phase, event) → (next phase, actions). Every pair appears once.
    static let table: [String: (phase: String, actions: [String])] = {
        var t: [String: (String, [String])] = [:]
        // What ending does from each phase before the delivery: the timers, the pool, the lease.
        let giveBack = [
            "queued": ["cancelTimer(100)"],
            "waitingForSession": ["cancelTimer(100)", "withdraw(7)"],
            "inFlight": ["cancelTimer(100)", "release(L)"],
            "backingOff": ["cancelTimer(100)", "cancelTimer(200)"],
        ]
        let unchanged = ["queued": "queued", "waitingForSession": "waitingForSession(7)", "inFlight": "inFlight(L, [1, 2])",
                         "backingOff": "backingOff(200)"]
        for phase in ["queued", "waitingForSession", "inFlight", "backingOff"] {
            let same = unchanged[phase]!
            let back = giveBack[phase]!
            let stops: (String) -> [String] = { code in phase == "inFlight" ? ["stop(1, \(code))", "stop(2, \(code))"] : [] }
            t["\(phase).answered"] = ("done", back + ["unregister", "deliver(42)"])
            t["\(phase).answeredFailure"] = ("done", back + ["unregister", "deliver(952)"])
            t["\(phase).loginFailed"] = ("done", back + ["unregister", "deliver(952)"])
            t["\(phase).sessionLostFinal"] = ("done", back + ["unregister", "deliver(952)"])
            t["\(phase).cancelled"] = ("done", back + ["unregister", "deliver(-1005)"] + stops("-1005"))
            t["\(phase).deadlinePassed"] = ("done", back + ["unregister", "deliver(-1004)"] + stops("-1004"))
            t["\(phase).shutdown"] = ("done", back + ["unregister", "deliver(-1012)"] + stops("-1012"))
            t["\(phase).deadlineArmed"] = (same, ["cancelTimer(100)"])   // a second deadline replaces the first
            // A report of an earlier back-off (none came before in these paths but the one in backingOff, #1).
            t["\(phase).backoffArmedEarlier"] = (same, ["cancelTimer(300)"])
            t["\(phase).backoffEndedEarlier"] = (same, [])
            // A report of an earlier attempt (#0: every path but queued has started attempt #1): its pool place is
            // withdrawn and its work stopped; the phase does not change.
            t["\(phase).leaseRequestedEarlier"] = (same, ["withdraw(9)"])
            t["\(phase).sentEarlier"] = (same, ["stop(3, -1005)"])
        }
        // queued
        t["queued.started"] = ("queued", ["attempt"])
        t["queued.leaseRequested"] = ("queued", ["withdraw(9)"])   // attempt #1 has not started
        t["queued.leaseRequestedEarlier"] = ("waitingForSession(9)", [])
        t["queued.leased"] = ("inFlight(M, [])", ["send(M)"])
        t["queued.noSessionNeeded"] = ("inFlight(nil, [])", ["send(nil)"])
        t["queued.sent"] = ("queued", ["stop(3, -1005)"])
        t["queued.sentEarlier"] = ("inFlight(nil, [3])", [])   // a OneShot's task (attempt #0)
        t["queued.sessionLostReplayable"] = ("done", ["cancelTimer(100)", "unregister", "deliver(952)"])
        t["queued.backOff"] = ("backingOff(nil)", ["armBackoff(0.5)"])
        t["queued.backoffArmed"] = ("queued", ["cancelTimer(300)"])
        t["queued.backoffEnded"] = ("queued", [])
        // waitingForSession
        t["waitingForSession.started"] = ("waitingForSession(7)", [])
        t["waitingForSession.leaseRequested"] = ("waitingForSession(7)", [])
        t["waitingForSession.leased"] = ("inFlight(M, [])", ["send(M)"])
        t["waitingForSession.noSessionNeeded"] = ("waitingForSession(7)", [])
        t["waitingForSession.sent"] = ("waitingForSession(7)", ["stop(3, -1005)"])
        t["waitingForSession.sessionLostReplayable"] = ("done", ["cancelTimer(100)", "withdraw(7)", "unregister", "deliver(952)"])
        t["waitingForSession.backOff"] = ("backingOff(nil)", ["armBackoff(0.5)"])
        t["waitingForSession.backoffArmed"] = ("waitingForSession(7)", ["cancelTimer(300)"])
        t["waitingForSession.backoffEnded"] = ("waitingForSession(7)", [])
        // inFlight
        t["inFlight.started"] = ("inFlight(L, [1, 2])", [])
        t["inFlight.leaseRequested"] = ("inFlight(L, [1, 2])", [])
        t["inFlight.leased"] = ("inFlight(L, [1, 2])", ["release(M)"])
        t["inFlight.noSessionNeeded"] = ("inFlight(L, [1, 2])", [])
        t["inFlight.sent"] = ("inFlight(L, [1, 2, 3])", [])
        t["inFlight.sessionLostReplayable"] = ("queued", ["release(L)", "attempt(front)"])
        t["inFlight.backOff"] = ("backingOff(nil)", ["release(L)", "armBackoff(0.5)"])
        t["inFlight.backoffArmed"] = ("inFlight(L, [1, 2])", ["cancelTimer(300)"])
        t["inFlight.backoffEnded"] = ("inFlight(L, [1, 2])", [])
        // backingOff
        t["backingOff.started"] = ("backingOff(200)", [])
        t["backingOff.leaseRequested"] = ("backingOff(200)", [])
        t["backingOff.leased"] = ("backingOff(200)", ["release(M)"])
        t["backingOff.noSessionNeeded"] = ("backingOff(200)", [])
        t["backingOff.sent"] = ("backingOff(200)", ["stop(3, -1005)"])
        t["backingOff.sessionLostReplayable"] = ("done", ["cancelTimer(100)", "cancelTimer(200)", "unregister", "deliver(952)"])
        t["backingOff.backOff"] = ("backingOff(200)", [])
        t["backingOff.backoffArmed"] = ("backingOff(200)", ["cancelTimer(300)"])
        t["backingOff.backoffEnded"] = ("queued", ["attempt"])
        // done: what an event hands in goes straight back; nothing is delivered again.
        for (name, _) in events { t["done.\(name)"] = ("done", []) }
        t["done.deadlineArmed"] = ("done", ["cancelTimer(300)"])
        t["done.leaseRequested"] = ("done", ["withdraw(9)"])
        t["done.leased"] = ("done", ["release(M)"])
        t["done.sent"] = ("done", ["stop(3, -1005)"])
        t["done.sentEarlier"] = ("done", ["stop(3, -1005)"])
        t["done.leaseRequestedEarlier"] = ("done", ["withdraw(9)"])
        t["done.backoffArmed"] = ("done", ["cancelTimer(300)"])
        t["done.backoffArmedEarlier"] = ("done", ["cancelTimer(300)"])
        return t
    }()

    @Test func everyPhaseAndEventGoesWhereTheTableSays() throws {
        #expect(Self.table.count == Self.phases.count * Self.events.count, "the table has one row per (phase, event)")
        for (phaseName, path) in Self.phases {
            for (eventName, event) in Self.events {
                var state = State()
                for step in path { _ = state.handle(step) }
                let actions = state.handle(event).map(Self.describe)
                let row = try #require(Self.table["\(phaseName).\(eventName)"], "no row for \(phaseName).\(eventName)")
                #expect(Self.describe(state.phase) == row.phase, "\(phaseName) + \(eventName)")
                #expect(actions == row.actions, "\(phaseName) + \(eventName)")
            }
        }
    }

    @Test func aCallIsReplayedOnceAfterALostSessionAndLeasesAtTheFrontFromThen() {
        var state = State()
        _ = state.handle(.started)
        _ = state.handle(.leased("L"))
        #expect(state.handle(.sessionLost(Self.lost, mayReplay: true)).map(Self.describe) == ["release(L)", "attempt(front)"])
        #expect(state.replayed && state.attempts == 2)
        _ = state.handle(.leased("M"))
        #expect(state.handle(.backOff(wait: 1)).map(Self.describe) == ["release(M)", "armBackoff(1.0)"])
        #expect(state.handle(.backoffEnded(backoff: 1)).map(Self.describe) == ["attempt(front)"])
        _ = state.handle(.leased("N"))
        // A second lost session ends the call.
        #expect(state.handle(.sessionLost(Self.lost, mayReplay: true)).map(Self.describe) == ["release(N)", "unregister", "deliver(952)"])
        #expect(state.attempts == 3)
    }

    @Test func aBackoffTimerThatFiresBeforeItIsRecordedStillStartsTheNextAttempt() {
        var state = State()
        _ = state.handle(.started)
        _ = state.handle(.noSessionNeeded)
        _ = state.handle(.backOff(wait: 0))
        #expect(state.handle(.backoffEnded(backoff: 1)).map(Self.describe) == ["attempt"])
        #expect(state.handle(.backoffArmed(300, backoff: 1)).map(Self.describe) == ["cancelTimer(300)"])
        #expect(Self.describe(state.phase) == "queued")
    }

    /// Back-offs of 0 s on a busy machine: the first timer fires, the next attempt fails and backs off again,
    /// and only then does the first arming report arrive. It must not take the place of the second timer
    /// (which the second report would then cancel, leaving the call to wait for its deadline: -1004 where
    /// the read should have ridden out the restart).
    @Test func aLateReportOfAnEarlierBackoffNeitherArmsNorCancelsTheNextOne() {
        var state = State()
        _ = state.handle(.started)
        _ = state.handle(.noSessionNeeded)
        #expect(state.handle(.backOff(wait: 0)).map(Self.describe) == ["armBackoff(0.0)"])
        #expect(state.handle(.backoffEnded(backoff: 1)).map(Self.describe) == ["attempt"])
        _ = state.handle(.noSessionNeeded)
        #expect(state.handle(.backOff(wait: 0)).map(Self.describe) == ["armBackoff(0.0)"])
        #expect(state.handle(.backoffArmed(301, backoff: 1)).map(Self.describe) == ["cancelTimer(301)"])
        #expect(Self.describe(state.phase) == "backingOff(nil)")
        #expect(state.handle(.backoffArmed(302, backoff: 2)).isEmpty)
        #expect(Self.describe(state.phase) == "backingOff(302)")
        #expect(state.handle(.backoffEnded(backoff: 1)).isEmpty, "a late firing of the first timer")
        #expect(state.handle(.backoffEnded(backoff: 2)).map(Self.describe) == ["attempt"])
    }

    /// A replay on a busy machine: the first attempt's exchange is reported as sent only after its 952 answer
    /// moved the call on to the replay. That late report must not make the replay "in flight" without a
    /// session (the replay's lease would then be handed straight back and the call would wait for its
    /// deadline, never sent again); the same for a late pool id of the first attempt.
    @Test func aLateReportOfAnEarlierAttemptDoesNotStallTheNextOne() {
        var state = State()
        #expect(state.handle(.started).map(Self.describe) == ["attempt"])
        #expect(state.handle(.leased("L")).map(Self.describe) == ["send(L)"])
        #expect(state.handle(.sessionLost(Self.lost, mayReplay: true)).map(Self.describe) == ["release(L)", "attempt(front)"])
        #expect(state.handle(.sent(1, attempt: 1)).map(Self.describe) == ["stop(1, -1005)"])
        #expect(state.handle(.leaseRequested(7, attempt: 1)).map(Self.describe) == ["withdraw(7)"])
        #expect(Self.describe(state.phase) == "queued")
        #expect(state.handle(.leaseRequested(8, attempt: 2)).isEmpty)
        #expect(state.handle(.leased("M")).map(Self.describe) == ["send(M)"])
        #expect(state.handle(.sent(2, attempt: 2)).isEmpty)
        #expect(Self.describe(state.phase) == "inFlight(M, [2])")
    }

    @Test func aPoolThatAnswersBeforeItsQueueIdLeavesNothingToWithdraw() {
        var state = State()
        _ = state.handle(.started)
        #expect(state.handle(.leased("L")).map(Self.describe) == ["send(L)"])
        #expect(state.handle(.leaseRequested(9, attempt: 1)).isEmpty)
        #expect(state.handle(.cancelled).map(Self.describe) == ["release(L)", "unregister", "deliver(-1005)"])
    }

    @Test func aDeadlineThatFiresBeforeItIsRecordedEndsTheCallAndTheTimerIsCancelled() {
        var state = State()
        #expect(state.handle(.deadlinePassed(.timeout(nil, after: 1))).map(Self.describe) == ["unregister", "deliver(-1004)"])
        #expect(state.handle(.deadlineArmed(100)).map(Self.describe) == ["cancelTimer(100)"])
        #expect(state.handle(.started).isEmpty, "a call that ended never starts an attempt")
    }

    /// Any order of events, however unlikely: one delivery, and every lease handed in given back once by the
    /// end. A fixed seed: the same sequences every run.
    @Test func anyEventSequenceDeliversOnceAndGivesEveryLeaseBack() {
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        for _ in 0..<20_000 {
            var state = State()
            var leases = 0
            var released: [String: Int] = [:]
            var deliveries = 0
            func run(_ event: State.Event) {
                for action in state.handle(event) {
                    switch action {
                    case .deliver: deliveries += 1
                    case .releaseLease(let lease): released[lease, default: 0] += 1
                    default: break
                    }
                }
            }
            for _ in 0..<next(12) {
                var event = Self.events[next(Self.events.count)].event
                if case .leased = event { leases += 1; event = .leased("lease\(leases)") }
                run(event)
            }
            run([State.Event.cancelled, .deadlinePassed(.timeout(nil, after: 1)), .shutdown(.shuttingDown), .answered(.success(1))][next(4)])
            #expect(deliveries == 1)
            #expect(released.count == leases && released.values.allSatisfy { $0 == 1 }, "leases \(leases), released \(released)")
        }
    }

    static func describe(_ phase: State.Phase) -> String {
        switch phase {
        case .queued: "queued"
        case .waitingForSession(let id): "waitingForSession(\(id))"
        case .inFlight(let lease, let work): "inFlight(\(lease ?? "nil"), \(work))"
        case .backingOff(let timer): "backingOff(\(timer.map(String.init) ?? "nil"))"
        case .done: "done"
        }
    }

    static func describe(_ action: State.Action) -> String {
        switch action {
        case .startAttempt(let front, _): front ? "attempt(front)" : "attempt"
        case .send(let lease, _): "send(\(lease ?? "nil"))"
        case .armBackoff(let wait, _): "armBackoff(\(wait))"
        case .cancelTimer(let timer): "cancelTimer(\(timer))"
        case .withdrawFromPool(let id): "withdraw(\(id))"
        case .releaseLease(let lease): "release(\(lease))"
        case .unregister: "unregister"
        case .deliver(.success(let value)): "deliver(\(value))"
        case .deliver(.failure(let error)): "deliver(\(error.code))"
        case .stop(let work, let error): "stop(\(work), \(error.code))"
        }
    }
}

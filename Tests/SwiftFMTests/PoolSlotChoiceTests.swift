import Foundation
import Testing
@testable import SwiftFM

/// The pool's choice of a session for a call (`SessionPool.slot(for:in:now:perSession:)`), rewritten without
/// arrays for the fast path, must choose exactly as the first version did: the lowest free open slot (for a
/// replay, one opened after its own was lost); with several calls per session, the least busy below the limit
/// (the first of equals); past the server's session cap (956, sharing, no login in flight), the least busy open
/// one. Both the fast path (nobody waiting) and the walk over the waiters are run on random pool states and
/// compared with that first version, kept here as the reference.
@Suite("Session pool: the slot choice against the reference")
struct PoolSlotChoiceTests {
    private static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// A small deterministic generator (SplitMix64): the same seed, the same states.
    struct Generator: RandomNumberGenerator {
        var seed: UInt64
        mutating func next() -> UInt64 {
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The first version of the choice (before the fast path), over a copy of the pool's state.
    static func referenceChoice(after: UInt64?, in state: SessionPool.State, perSession: Int) -> Int? {
        let after = after ?? 0
        let open = state.slots.indices.filter {
            state.slots[$0].machine.validToken(now: now) != nil && (after == 0 || state.slots[$0].opened > after)
        }
        var chosen = open.first { state.slots[$0].busy == 0 }
        if chosen == nil, perSession > 1 {
            chosen = open.filter { state.slots[$0].busy < perSession }.min { state.slots[$0].busy < state.slots[$1].busy }
        }
        if chosen == nil, let ceiling = state.ceiling, ceiling.sharing, ceiling.until > SessionClock.following(now), open.count >= ceiling.limit,
           !state.slots.contains(where: { $0.machine.isLoggingIn }) {
            chosen = open.min { state.slots[$0].busy < state.slots[$1].busy }
        }
        return chosen
    }

    /// A random pool state: slots without a token, open, expired or logging in, random loads and openings, a
    /// random loss mark and session cap.
    static func randomState(size: Int, perSession: Int, using rng: inout Generator) -> SessionPool.State {
        var slots: [SessionPool.Slot] = []
        for _ in 0..<size {
            var machine = SessionStateMachine<SessionWaiter>(now: now)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: break   // no token
            case 1: _ = machine.adopt(token: "old", expiry: now.addingTimeInterval(-1))   // expired
            case 2: _ = machine.acquire(now: now, stored: nil, force: false, waiter: { _ in })   // logging in
            default: _ = machine.adopt(token: "tok", expiry: now.addingTimeInterval(3600))   // open
            }
            slots.append(SessionPool.Slot(machine: machine, busy: Int.random(in: 0...(perSession + 1), using: &rng),
                                          lastUse: SessionClock.following(now), poolLogin: nil, opened: UInt64.random(in: 0...6, using: &rng)))
        }
        var state = SessionPool.State(slots: slots)
        state.openings = 6
        state.lostMark = UInt64.random(in: 0...6, using: &rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: state.ceiling = nil
        case 1: state.ceiling = (Int.random(in: 1...size, using: &rng), SessionClock.following(now) + -1, true)   // over
        case 2: state.ceiling = (Int.random(in: 1...size, using: &rng), SessionClock.following(now) + 60, false)  // a pause
        default: state.ceiling = (Int.random(in: 1...size, using: &rng), SessionClock.following(now) + 60, true)  // 956
        }
        return state
    }

    /// Nobody waiting: the call takes at once the slot the reference chooses (no id), or queues when it chooses none.
    @Test func theFastPathChoosesAsTheReference() {
        var rng = Generator(seed: 0x5EED_F00D)
        var (leased, queued) = (0, 0)
        for trial in 0..<4_000 {
            let size = Int.random(in: 1...6, using: &rng)
            let perSession = [1, 1, 2, 3].randomElement(using: &rng)!
            let state = Self.randomState(size: size, perSession: perSession, using: &rng)
            let front = Bool.random(using: &rng)
            let expected = Self.referenceChoice(after: front ? state.lostMark : nil, in: state, perSession: perSession)
            let pool = SessionPool(size: size, idleTimeout: 300, callsPerSession: perSession, stored: nil, now: Self.now)
            pool.state.withLock { $0 = state }
            let busyBefore = state.slots.map(\.busy)
            let (id, plan) = pool.lease(now: Self.now, stored: nil, front: front) { _ in }
            if let expected {
                leased += 1
                #expect(id == nil && plan.grants.map(\.1.slot) == [expected], "trial \(trial): expected slot \(expected)")
                var busy = busyBefore
                busy[expected] += 1
                #expect(pool.busyCounts == busy, "trial \(trial)")
            } else {
                queued += 1
                #expect(id != nil && plan.grants.isEmpty && pool.waitingCount == 1, "trial \(trial): expected to queue")
                #expect(pool.busyCounts == busyBefore, "trial \(trial)")
            }
        }
        // Both outcomes were exercised, many times.
        #expect(leased > 500 && queued > 500, "leased \(leased), queued \(queued)")
    }

    /// Calls waiting (some of them replays): the walk hands out sessions in order exactly as the reference walk
    /// (a waiter none serves stops it, unless a replay, which the calls behind it pass).
    @Test func theWalkOverTheWaitersChoosesAsTheReference() {
        var rng = Generator(seed: 0xC0FF_EE00)
        var granted = 0
        for trial in 0..<3_000 {
            let size = Int.random(in: 1...6, using: &rng)
            let perSession = [1, 1, 2, 3].randomElement(using: &rng)!
            var state = Self.randomState(size: size, perSession: perSession, using: &rng)
            let served = Locked<[Int]>([])
            var afters: [UInt64?] = []
            for number in 0..<Int.random(in: 1...6, using: &rng) {
                let after: UInt64? = Int.random(in: 0..<3, using: &rng) == 0 ? UInt64.random(in: 0...6, using: &rng) : nil
                afters.append(after)
                let place = state.waiters.nextPlace()
                state.waiters.append(place, SessionPool.Waiter(after: after, owner: nil, deliver: { _ in served.withLock { $0.append(number) } }))
            }
            // The reference walk, on a copy.
            var reference = state
            var expected: [(waiter: Int, slot: Int)] = []
            for (number, after) in afters.enumerated() {
                guard let slot = Self.referenceChoice(after: after, in: reference, perSession: perSession) else {
                    if after != nil { continue }
                    break
                }
                reference.slots[slot].busy += 1
                expected.append((number, slot))
            }
            let pool = SessionPool(size: size, idleTimeout: 300, callsPerSession: perSession, stored: nil, now: Self.now)
            pool.state.withLock { $0 = state }
            let plan = pool.wake(now: Self.now, stored: nil)
            plan.deliverToWaiters()
            granted += expected.count
            #expect(served.withLock { $0 } == expected.map(\.waiter), "trial \(trial)")
            #expect(plan.grants.map(\.1.slot) == expected.map(\.slot), "trial \(trial)")
            #expect(pool.busyCounts == reference.slots.map(\.busy), "trial \(trial)")
            #expect(pool.waitingCount == afters.count - expected.count, "trial \(trial)")
        }
        #expect(granted > 1_000, "granted \(granted)")
    }
}
